"""Shared fixtures. The network is blocked for every test (pytest-socket, see pyproject)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Real data shipped with the tests (tests/data/README.md: provenance and licences).
TEST_DATA = ROOT / "tests" / "data"
#: The 90 real HotPotQA ReAct trajectories (Reflexion's logs, MIT).
SHARED_DATA = TEST_DATA / "hotpotqa-react-trial1.jsonl"
#: A capable model's answers to the 450 requests `inferact eval` sent for them.
ANSWERS = TEST_DATA / "hotpotqa-trial1-capable-model-answers.jsonl"
#: Appendix A of the InferAct paper (the prompts), lines 235-384 of the paper's text.
PAPER_APPENDIX_A = TEST_DATA / "inferact-2024-appendix-a.txt"
PAPER_APPENDIX_A_FIRST_LINE = 235


#: Characters rich draws around Typer's error boxes; never part of a message.
_BOX_CHARS = "│╭╮╰╯─┃┏┓┗┛━"


def says(output: str, phrase: str) -> bool:
    """Whether a CLI's output contains ``phrase`` however the terminal wrapped it.

    Rich wraps a long error inside its box at the terminal's width, folding a path mid-word,
    so the phrase is compared with the box characters and all white space removed.
    """
    squeezed = "".join(ch for ch in output if ch not in _BOX_CHARS)
    return "".join(phrase.split()) in "".join(squeezed.split())


@pytest.fixture(autouse=True)
def _fixed_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees the same terminal width, whatever terminal runs the suite.

    Rich (through Typer) wraps at ``COLUMNS``; pinning it keeps a test's output the same in an
    80-column terminal, a wide one and CI. Tests that check wrapping set their own width.
    """
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("LINES", raising=False)


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file, one per non-blank line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def hotpotqa_records() -> list[dict]:
    """The 90 real HotPotQA ReAct trajectories (tests/data)."""
    return read_jsonl(SHARED_DATA)


@pytest.fixture(scope="session")
def capable_model_answers() -> list[dict]:
    """The 450 recorded requests and a capable model's answers (tests/data)."""
    return read_jsonl(ANSWERS)


# Worker scripts and the server app are run as programs by the tests, never imported by pytest
# (doctest collection would otherwise import them and run their top level).
collect_ignore_glob = ["workers/*.py", "server_app/*.py"]
