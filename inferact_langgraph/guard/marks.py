"""Marking tools as critical: the ``@critical`` decorator and the spec it attaches.

A critical tool is one whose call cannot be undone (buy, pay, delete, submit, heat). Only calls
to critical tools reach the critic; every other tool call runs as before, with no model call.

Example:
    >>> from langchain_core.tools import tool
    >>> @critical(risk=lambda args: "high" if args["price"] > 60 else "low")
    ... @tool
    ... def buy_now(asin: str, price: float) -> str:
    ...     '''Buy a product.'''
    ...     return f"bought {asin}"
    >>> spec = critical_spec(buy_now)
    >>> spec.risk_for({"asin": "B01", "price": 90.0}), spec.applies({"price": 1.0})
    ('high', True)
    >>> @critical
    ... def delete_file(path: str) -> str:
    ...     '''Delete a file.'''
    ...     return "deleted"
    >>> delete_file.name, critical_spec(delete_file).risk_for({})
    ('delete_file', None)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, overload

from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["CriticalSpec", "critical", "critical_spec", "resolve_critical_tools"]

RiskLevel = Literal["low", "medium", "high"]
_RISK_LEVELS = ("low", "medium", "high")
_SPEC_ATTR = "_inferact_critical"


@dataclass(frozen=True)
class CriticalSpec:
    """How a critical tool is checked.

    Attributes:
        risk: A fixed risk level, or a function of the call's arguments returning one.
            ``"high"`` adds the paper's risk-aware sentence to the critic's prompts.
        when: A predicate on the arguments; the call is checked only when it returns True
            (e.g. ``lambda a: a["price"] > 60``). ``None``: always checked.
        description: Shown to the human in the review request.
    """

    risk: RiskLevel | Callable[[Mapping[str, Any]], RiskLevel | None] | None = None
    when: Callable[[Mapping[str, Any]], bool] | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        if self.risk is not None and not callable(self.risk) and self.risk not in _RISK_LEVELS:
            raise ValueError(
                f"risk must be one of {_RISK_LEVELS}, a function, or None; got {self.risk!r}"
            )
        if self.when is not None and not callable(self.when):
            raise TypeError(f"when must be a function of the tool's arguments, got {self.when!r}")

    def applies(self, args: Mapping[str, Any]) -> bool:
        """Whether a call with these arguments must be checked.

        A ``when`` predicate that raises counts as True: a failing check never lets a critical
        call through unchecked.
        """
        if self.when is None:
            return True
        try:
            return bool(self.when(args))
        except Exception:  # noqa: BLE001 - fail safe: check the call
            return True

    def risk_for(self, args: Mapping[str, Any]) -> RiskLevel | None:
        """The risk level of a call; a risk function that fails or answers nonsense is "high"."""
        if self.risk is None or isinstance(self.risk, str):
            return self.risk
        try:
            level = self.risk(args)
        except Exception:  # noqa: BLE001 - fail safe
            return "high"
        return level if level in _RISK_LEVELS or level is None else "high"


@overload
def critical(tool: BaseTool | Callable[..., Any], /) -> BaseTool: ...
@overload
def critical(
    *,
    risk: RiskLevel | Callable[[Mapping[str, Any]], RiskLevel | None] | None = None,
    when: Callable[[Mapping[str, Any]], bool] | None = None,
    description: str | None = None,
) -> Callable[[BaseTool | Callable[..., Any]], BaseTool]: ...


def critical(
    tool: BaseTool | Callable[..., Any] | None = None,
    /,
    *,
    risk: RiskLevel | Callable[[Mapping[str, Any]], RiskLevel | None] | None = None,
    when: Callable[[Mapping[str, Any]], bool] | None = None,
    description: str | None = None,
) -> Any:
    """Mark a tool as critical: its calls are checked by the critic before they run.

    Works above ``@tool`` (marks that tool) and on a plain function (makes it a tool first).
    Used bare (``@critical``) or with options (``@critical(risk="high")``).

    The mark is a lock: wherever the tool is run from, it runs only with a verdict or an
    approval for that exact call from a guarded graph, once; otherwise it raises
    :class:`~inferact_langgraph.errors.UnauthorizedCriticalCall`. To run it on purpose
    outside a guard (a test, a script), use :func:`~inferact_langgraph.allow_critical_calls`.

    Args:
        tool: The tool or function (when used bare).
        risk: ``"low"``, ``"medium"``, ``"high"``, or a function of the arguments.
        when: Only check calls for which this predicate on the arguments is true.
        description: Shown to the human when the call is reviewed.

    Returns:
        The marked ``BaseTool`` (or a decorator that returns it).
    """
    spec = CriticalSpec(risk=risk, when=when, description=description)

    def mark(target: BaseTool | Callable[..., Any]) -> BaseTool:
        if isinstance(target, BaseTool):
            marked = target
        elif callable(target):
            marked = StructuredTool.from_function(target)
        else:
            raise TypeError(f"@critical expects a tool or a function, got {type(target).__name__}")
        # Pydantic tools keep unknown attributes in __dict__; object.__setattr__ skips validation.
        object.__setattr__(marked, _SPEC_ATTR, spec)
        static_risk = spec.risk if isinstance(spec.risk, str) else None
        marked.metadata = {**(marked.metadata or {}), "inferact_critical": True}
        if static_risk:
            marked.metadata["inferact_risk"] = static_risk
        # The mark is the lock: the tool itself refuses to run without an authorization.
        from inferact_langgraph.guard.authorization import lock_tool

        lock_tool(marked, spec.applies)
        return marked

    if tool is not None:
        return mark(tool)
    return mark


def critical_spec(tool: Any) -> CriticalSpec | None:
    """The spec attached by ``@critical``, or ``None`` if the tool is not marked."""
    return getattr(tool, _SPEC_ATTR, None)


def resolve_critical_tools(
    tools: Iterable[Any] = (),
    names: Iterable[str] | Mapping[str, CriticalSpec] | None = None,
) -> dict[str, CriticalSpec]:
    """Map tool names to specs: tools marked with ``@critical`` plus tools named by the user.

    Args:
        tools: Tools to scan for ``@critical`` marks.
        names: Names of tools the user does not own (checked always), or a mapping from
            names to specs.

    Example:
        >>> sorted(resolve_critical_tools([], ["buy_now", "delete"]))
        ['buy_now', 'delete']
    """
    specs: dict[str, CriticalSpec] = {}
    for tool in tools:
        spec = critical_spec(tool)
        if spec is not None:
            specs[getattr(tool, "name", str(tool))] = spec
    if isinstance(names, Mapping):
        for name, spec in names.items():
            if not isinstance(spec, CriticalSpec):
                raise TypeError(f"critical[{name!r}] must be a CriticalSpec, got {spec!r}")
            specs[name] = spec
    elif names is not None:
        if isinstance(names, str):
            raise TypeError("critical= takes a list of tool names, not a single string")
        for name in names:
            specs.setdefault(name, CriticalSpec())
    return specs
