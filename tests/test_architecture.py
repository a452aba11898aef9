"""The package's shape, checked: who may spell a state key, touch LangGraph's privates, import what.

* Only ``guard/state.py`` spells a key of the guard's state; everyone else uses its constants.
* Only ``guard/_compat.py`` touches a private LangGraph or LangChain name.
* The guard imports nothing of the research harness, the example environments, the apps or
  the test doubles.
* Every exception of the package is defined in ``errors.py``, under ``InferActError``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import inferact_langgraph
from inferact_langgraph.errors import InferActError
from inferact_langgraph.guard.state import KEYS

PACKAGE = Path(inferact_langgraph.__file__).parent
GUARD = PACKAGE / "guard"
STATE_MODULE = GUARD / "state.py"
COMPAT_MODULE = GUARD / "_compat.py"

THIRD_PARTY = ("langgraph", "langchain", "langchain_core", "langsmith")
# Private names of LangGraph that are reached as attributes or values, not by an import.
PRIVATE_USES = {
    "_add_schema",
    "_messages_key",
    "_replace",
    "_mark_invalid_resume",
    "_handle_tool_errors",
    "_wrap_tool_call",
    "_awrap_tool_call",
    "__pregel_checkpointer",
    "RunnableCallable",
    "tool_call_with_context",
    "waiting_edges",
    "inferact_guard",
}
# What the guard must never import: the research harness, the example environments, the apps
# and the test doubles.
NOT_FOR_THE_GUARD = (
    "inferact_langgraph.eval",
    "inferact_langgraph.examples",
    "inferact_langgraph.inbox",
    "inferact_langgraph.cli",
    "inferact_langgraph.testing",
    "inferact_langgraph.replay",
    "inferact_langgraph._demo",
    "inferact_langgraph._memory_cli",
    "inferact_langgraph._factory",
)


def _sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts)


def _tree(path: Path, source: str | None = None) -> ast.Module:
    text = path.read_text(encoding="utf-8") if source is None else source
    return ast.parse(text, filename=str(path))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', '?')}"


def _imported_modules(tree: ast.Module) -> list[tuple[ast.AST, str, list[str]]]:
    """Every import of a module (at any depth): (node, module, names imported from it)."""
    found: list[tuple[ast.AST, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node, node.module, [alias.name for alias in node.names]))
    return found


def state_key_spellings(path: Path, source: str | None = None) -> list[str]:
    """Places in ``path`` where a state key is written as a string literal."""
    return [
        f"{_where(path, node)} spells {node.value!r}"
        for node in ast.walk(_tree(path, source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KEYS
    ]


def private_langgraph_uses(path: Path, source: str | None = None) -> list[str]:
    """Places in ``path`` that import or use a private LangGraph / LangChain name."""
    tree = _tree(path, source)
    found = []
    for node, module, names in _imported_modules(tree):
        if module.split(".")[0] not in THIRD_PARTY:
            continue
        private = [p for p in module.split(".") if p.startswith("_")]
        private += [n for n in names if n.startswith("_") and n != "__future__"]
        if module.startswith("langgraph.utils"):  # re-exports without an __all__
            private.append(module)
        if private:
            found.append(f"{_where(path, node)} imports {module}: {private}")
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        if name in PRIVATE_USES:
            found.append(f"{_where(path, node)} uses {name}")
    return found


def forbidden_guard_imports(path: Path, source: str | None = None) -> list[str]:
    """Imports in ``path`` of what the guard must never import."""
    found = []
    for node, module, names in _imported_modules(_tree(path, source)):
        targets = [module] + [f"{module}.{n}" for n in names]
        for target in targets:
            if any(target == bad or target.startswith(bad + ".") for bad in NOT_FOR_THE_GUARD):
                found.append(f"{_where(path, node)} imports {target}")
    return found


# ---------------------------------------------------------------------------- the checks
def test_only_the_state_module_spells_a_state_key():
    found = [hit for p in _sources(PACKAGE) if p != STATE_MODULE for hit in state_key_spellings(p)]
    assert not found, "use the constants of inferact_langgraph.guard.state:\n" + "\n".join(found)


def test_only_the_compat_module_touches_a_private_langgraph_name():
    found = [
        hit for p in _sources(PACKAGE) if p != COMPAT_MODULE for hit in private_langgraph_uses(p)
    ]
    assert not found, "wrap it in inferact_langgraph/guard/_compat.py:\n" + "\n".join(found)


def test_the_guard_imports_no_harness_example_app_or_test_double():
    found = [hit for p in _sources(GUARD) for hit in forbidden_guard_imports(p)]
    assert not found, "\n".join(found)


def test_loading_the_guard_loads_no_harness_example_app_or_test_double():
    code = (
        "import sys\n"
        "import inferact_langgraph.guard.graph, inferact_langgraph.guard.middleware\n"
        "import inferact_langgraph.guard.resume\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout.split()
    assert "inferact_langgraph.guard.graph" in loaded
    assert not [m for m in loaded if m.startswith(NOT_FOR_THE_GUARD)]


def _modules() -> list[str]:
    names = [inferact_langgraph.__name__]
    for info in pkgutil.walk_packages(inferact_langgraph.__path__, prefix="inferact_langgraph."):
        if ".data" not in info.name:
            names.append(info.name)
    return names


def test_every_exception_is_defined_in_errors_under_the_root():
    outside, rootless = [], []
    for name in _modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, BaseException) or not cls.__module__.startswith(
                inferact_langgraph.__name__
            ):
                continue
            if cls.__module__ != "inferact_langgraph.errors":
                outside.append(f"{cls.__module__}.{cls.__qualname__}")
            if not issubclass(cls, InferActError):
                rootless.append(f"{cls.__module__}.{cls.__qualname__}")
    assert not outside, f"define these in inferact_langgraph/errors.py: {sorted(set(outside))}"
    assert not rootless, f"derive these from InferActError: {sorted(set(rootless))}"


# ---------------------------------------------------------------------------- the checks work
@pytest.mark.parametrize(
    ("source", "check", "expected"),
    [
        ('x = state.get("inferact_checks")\n', state_key_spellings, "spells 'inferact_checks'"),
        ('"""Docs may name inferact_checks."""\n', state_key_spellings, None),
        ("from langgraph.errors import _mark_invalid_resume\n", private_langgraph_uses, "imports"),
        ("from langgraph._internal._runnable import X\n", private_langgraph_uses, "imports"),
        ("def f(b):\n    b._add_schema(int)\n", private_langgraph_uses, "uses _add_schema"),
        ("from langgraph.errors import GraphInterrupt\n", private_langgraph_uses, None),
        ("from inferact_langgraph.testing import X\n", forbidden_guard_imports, "testing"),
        ("def f():\n    from inferact_langgraph import cli\n", forbidden_guard_imports, "cli"),
        ("from inferact_langgraph.trajectory import Trajectory\n", forbidden_guard_imports, None),
    ],
)
def test_each_check_finds_what_it_looks_for(source, check, expected):
    hits = check(GUARD / "_probe.py", source)  # read as a guard module; nothing is written
    assert bool(hits) == (expected is not None), hits
    if expected is not None:
        assert expected in hits[0]


def _drawn(tree: str, indent: int) -> list[str]:
    """The modules a layout tree draws at this indent (one per line, its first word)."""
    lines = [line for line in tree.splitlines() if line.strip()]
    drawn = [line.split()[0] for line in lines if len(line) - len(line.lstrip()) == indent]
    return sorted(name for name in drawn if name.endswith(".py"))


def test_the_readme_layout_draws_every_module_of_the_package_and_the_guard_once():
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    tree = readme[readme.index("inferact_langgraph/\n") :]
    tree = tree[: tree.index("```")]
    assert _drawn(tree, 2) == sorted(p.name for p in PACKAGE.glob("*.py"))
    guard = sorted(p.name for p in GUARD.glob("*.py") if p.name != "__init__.py")
    assert _drawn(tree, 4) == guard
