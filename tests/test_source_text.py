"""Code, comments, docstrings and test names say what the code does, not the project's history;
tests import what the package exports from where it exports it.

A citation of an issue by its number (the word issue and a number, an item number, "#42") or a
test named after a list position (``test_3_...``) points at a tracker a reader of the code may
not have; the history belongs in the commit messages. This scans every Python file of the
library, the tests, the example graphs and the benchmarks.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("inferact_langgraph", "tests", "graphs", "bench")

# What cites the project's history: an issue (with or without "#"), an item of an issue's list,
# a bare "#12" reference, and tests numbered after such a list.
HISTORY = {
    "issue number": re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE),
    "item number": re.compile(r"\bitems?\s+\d+\b", re.IGNORECASE),
    "#N reference": re.compile(r"(?<![\w&/#'\"])#\d+\b"),
    "numbered test name": re.compile(r"\bdef test_\d+_"),
}


def history_citations(text: str) -> list[tuple[int, str, str]]:
    """``(line number, kind, line)`` for each line of ``text`` that cites history."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in HISTORY.items():
            if pattern.search(line):
                found.append((number, kind, line.strip()))
    return found


def _sources() -> list[Path]:
    return sorted(p for folder in SCANNED for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # The word and the number are joined here so that this file does not cite one itself.
        ("# Off-path cost (" + "issue" + " 13): hooks are plain functions", "issue number"),
        ('"""The generic preset (Issue #14, item 5)."""', "issue number"),
        ("    # item 9: the echoed template line", "item number"),
        ("# see #42 for the discussion", "#N reference"),
        ("def test_11_a_score_outside_0_1_fails_closed(kind):", "numbered test name"),
    ],
)
def test_each_kind_of_history_citation_is_found(text: str, kind: str) -> None:
    assert [k for _, k, _ in history_citations(text)].count(kind) == 1


@pytest.mark.parametrize(
    "text",
    [
        "# labels 1 = off track: risk >= 0.5 flags rows 0, 3, 4",
        "color = '#ff0000'  # a hex colour is no reference",
        'print(f"Order #{n} placed")',
        "def test_three_calls_in_one_message(kind):",
    ],
)
def test_behaviour_text_is_not_taken_for_a_citation(text: str) -> None:
    assert history_citations(text) == []


def test_no_source_file_cites_an_issue_or_numbers_its_tests() -> None:
    sources = _sources()
    assert len(sources) > 50  # the scan reached the package and the tests
    this = Path(__file__).resolve()
    problems = [
        f"{path.relative_to(ROOT)}:{number}: {kind}: {line}"
        for path in sources
        if path.resolve() != this  # its own examples are citations on purpose
        for number, kind, line in history_citations(path.read_text(encoding="utf-8"))
    ]
    assert not problems, "say what the code does, not which issue asked for it:\n" + "\n".join(
        problems
    )


# -- tests use the public names --------------------------------------------------------------------

#: The packages whose ``__all__`` is a public promise.
PUBLIC = ("inferact_langgraph", "inferact_langgraph.critics", "inferact_langgraph.testing",
          "inferact_langgraph.examples")  # fmt: skip


def private_imports_of_public_names(path: Path, public: set[str]) -> list[str]:
    """``line: module.name`` for each name imported from a private module (``_x``) that a
    public package also exports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if not any(part.startswith("_") for part in node.module.split(".")):
            continue
        found += [f"{node.lineno}: {node.module}.{a.name}" for a in node.names if a.name in public]
    return found


def _public_names() -> set[str]:
    return {name for package in PUBLIC for name in importlib.import_module(package).__all__}


def test_tests_import_public_names_from_the_public_packages() -> None:
    public = _public_names()
    problems = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line in private_imports_of_public_names(path, public)
    ]
    assert not problems, "import these from the package that exports them:\n" + "\n".join(
        problems
    )


def test_a_private_import_of_a_public_name_is_found(tmp_path: Path) -> None:
    test = tmp_path / "test_x.py"
    test.write_text(
        "from inferact_langgraph._critical import critical\n"
        "from inferact_langgraph._parsing import parse_topk\n"
        "from inferact_langgraph import with_inferact\n"
    )
    found = private_imports_of_public_names(test, _public_names())
    assert found == ["1: inferact_langgraph._critical.critical"]
