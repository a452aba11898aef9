"""Safe template filling: fields are substituted in one pass, values are never re-scanned.

``str.format`` would crash (or worse, expand fields) on braces inside a trajectory, a web page or
a user's task. :func:`fill` only looks at the template's own ``{field}`` markers.
"""

from __future__ import annotations

import re

__all__ = ["fields_of", "fill"]

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fields_of(template: str) -> set[str]:
    """The field names a template uses.

    Example:
        >>> sorted(fields_of("The task is: {instruction} {trajectory}"))
        ['instruction', 'trajectory']
    """
    return set(_FIELD.findall(template))


def fill(template: str, **values: object) -> str:
    """Substitute ``{field}`` markers of ``template``; braces inside the values are kept as is.

    Raises:
        KeyError: The template uses a field that was not given.

    Example:
        >>> fill("Task: {task}. Chain: {chain}", task="{chain}", chain='f(x={"a": 1})')
        'Task: {chain}. Chain: f(x={"a": 1})'
    """
    missing = fields_of(template) - set(values)
    if missing:
        raise KeyError(f"template fields without a value: {sorted(missing)}")
    return _FIELD.sub(lambda m: str(values[m.group(1)]), template)
