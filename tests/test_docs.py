"""Every ```python block of README.md and docs/*.md runs, offline, so the docs cannot drift.

How the blocks are run:

* Each block of README.md runs alone, in a fresh namespace: a reader copies one section's
  block and it runs (:func:`test_each_readme_block_runs_alone`).
* Each page of ``docs/`` is one test. Its ```python blocks run in order in one namespace, like
  the cells of a notebook, and that namespace starts with what README.md's blocks defined
  (``guarded``, ``cfg``, ``buy_now`` ...), so a page can say "your guarded graph" and mean the
  quick start's.
* Model strings become scripted models in ONE place, :data:`DOC_MODELS` below:
  ``langchain.chat_models.init_chat_model`` (which ``create_agent``, the critics and
  ``inferact_langgraph._factory.build_model`` all call for a string) is patched to build them.
  No key is needed and no model is called. A new model string in the docs fails with a message
  pointing here.
* Each file runs in its own temporary working directory: what a block writes stays there.
* A block that cannot run offline (a shell command, a Postgres server) is fenced ```text or
  ```bash, never ```python; a Python fence spelled otherwise (```py, ```python3) fails
  :func:`test_python_blocks_are_fenced_python`, so no block can slip past this test.

New pages (any ``docs/*.md``) are picked up automatically.
"""

from __future__ import annotations

import contextlib
import io
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from inferact_langgraph.testing import (
    ScriptedChatModel,
    answer_critic_prompt,
    is_critic_prompt,
    prompt_text,
)

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it starts (1-based line of its first code line), its code."""

    path: Path
    line: int
    info: str
    code: str


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order, with its info string (``python``...)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, ticks = opening["indent"], opening["ticks"]
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if (
                closing
                and closing["ticks"].startswith(ticks[0] * len(ticks))
                and not closing["info"].strip()
            ):
                break
            # a block inside a list item is indented like its fence: strip that indent
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        blocks.append(Block(path, i + 2, opening["info"].strip(), "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def python_blocks(path: Path) -> list[Block]:
    """The blocks this test runs: fenced ```python (the info string's first word)."""
    return [b for b in fenced_blocks(path) if b.info.split()[:1] == ["python"]]


# ---------------------------------------------------------------------------- scripted models
# The docs' story: a shop with a 66x66 inch blackout shade (B0SHD66X66, $72.99) and a cheaper
# custom-size one (B0SHDCUSTM, $45.99). The user asks for 66x66 inch shades under $90; the actor
# buys the custom-size one first, and the critic doubts it.
DOUBTED_ITEMS = ("B0SHDCUSTM",)
SHOP_INFERRED_TASKS = (
    "i need a custom size blackout shade, and price lower than 50.00 dollars",
    "i am looking for a cheap window shade that can be cut to any size",
    "i want a white roller blind for a small window",
)


def doc_critic_p_task(pending_action: str) -> float:
    """The scripted critic's p(user's task): it doubts a call that names a doubted item."""
    return 0.1 if any(item in pending_action for item in DOUBTED_ITEMS) else 0.9


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "tool_call"}


def shop_actor(messages: list[BaseMessage]) -> AIMessage:
    """The scripted shopper: search, buy the custom-size shade, then the 66x66 one if refused.

    Anything else (a tool that failed or does not exist in the page's agent) ends the run with
    a final answer, so a page whose agent has other tools gets an answer, not a loop.
    """
    tools = [m for m in messages if isinstance(m, ToolMessage)]
    bought = [
        c["args"].get("asin")
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] == "buy_now"
    ]
    if not tools:
        return AIMessage("", tool_calls=[_call("search", {"query": "66x66 blackout shades"})])
    last = tools[-1]
    if last.name == "search" and last.status != "error" and not bought:
        return AIMessage("", tool_calls=[_call("buy_now", {"asin": "B0SHDCUSTM", "price": 45.99})])
    refused = last.name == "buy_now" and last.status == "error"
    if refused and "B0SHD66X66" not in bought:  # the feedback is in context: buy the right one
        return AIMessage("", tool_calls=[_call("buy_now", {"asin": "B0SHD66X66", "price": 72.99})])
    return AIMessage(f"{'Stopped' if last.status == 'error' else 'Done'}. {last.content}")


def doc_model(messages: list[BaseMessage]) -> AIMessage | str:
    """One model string plays both roles: critic prompts are answered as a critic, else act."""
    text = prompt_text(messages)
    if is_critic_prompt(text):
        return answer_critic_prompt(
            text, p_task=doc_critic_p_task, inferred_tasks=SHOP_INFERRED_TASKS
        )
    return shop_actor(messages)


#: THE place where the docs' model strings become scripted models (actor and critic alike).
DOC_MODELS: dict[str, Any] = {
    "openai:gpt-4o": doc_model,
    "openai:gpt-4o-mini": doc_model,
}


def init_scripted_model(model: str, *, model_provider: str | None = None, **_: Any) -> Any:
    """Stands in for ``init_chat_model`` while the docs run."""
    key = f"{model_provider}:{model}" if model_provider else model
    if key not in DOC_MODELS:
        raise KeyError(
            f"the docs use the model string {key!r}: add it to DOC_MODELS in tests/test_docs.py "
            f"(known: {', '.join(sorted(DOC_MODELS))})"
        )
    return ScriptedChatModel(responder=DOC_MODELS[key])


@pytest.fixture
def scripted_doc_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Patch every path from a model string to a chat model (they all use init_chat_model).

    ``create_agent``, middlewares and others bind ``init_chat_model`` when they are imported,
    so every loaded module's binding is replaced, as well as the two it is imported from.
    """
    import sys

    import langchain.chat_models
    import langchain.chat_models.base

    original = langchain.chat_models.base.init_chat_model
    for module in list(sys.modules.values()):
        if getattr(module, "__dict__", {}).get("init_chat_model") is original:
            monkeypatch.setattr(module, "init_chat_model", init_scripted_model)
    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_scripted_model)
    monkeypatch.setattr(langchain.chat_models.base, "init_chat_model", init_scripted_model)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


# ---------------------------------------------------------------------------- running
#: What a file's blocks must print (beyond running without an error): the story happened.
EXPECTED_OUTPUT: dict[str, tuple[str, ...]] = {
    "README.md": (
        "InferAct doubts this call",  # the quick start printed the review request
        "B0SHDCUSTM",
        "Done. Order placed: B0SHD66X66",  # after the rejection, the right purchase
    ),
    "docs/calibration.md": (  # a doubt rejected, then a spot check approved: two labels
        "B0SHDCUSTM reject False flagged 1.0",
        "The critic passed this; you are checking it",
        "B0SHD66X66 approve True spot check 1.0",
    ),
    "docs/howto.md": ("2 [BadRecord(line=3, ",),  # two usable runs, the bad line listed
    "docs/trials.md": ("[0.0, 1.0, 1.0]",),  # the cumulative success the page's comment shows
    "docs/schemas.md": (
        "[('buy_now', {'asin': 'B0SHDCUSTM', 'price': 45.99}, 0.",  # the calibrated score
        "'wrong size: I need 66x66 inch')]",
    ),
}


def run_blocks(blocks: list[Block], namespace: dict[str, Any]) -> None:
    for block in blocks:
        # padded so that a traceback names the Markdown file and its line
        source = "\n" * (block.line - 1) + block.code
        code = compile(source, str(block.path.relative_to(ROOT)), "exec")
        try:
            exec(code, namespace)
        except Exception as exc:
            raise AssertionError(
                f"the ```python block at {block.path.relative_to(ROOT)}:{block.line} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc


README_BLOCKS = python_blocks(README)
#: What each README block prints alone, by the heading of its section.
README_BLOCK_OUTPUT: dict[str, tuple[str, ...]] = {
    "Quickstart": EXPECTED_OUTPUT["README.md"],
    "The critic on its own": ("0.1 True ['i need a custom size blackout shade",),
}


def readme_section(block: Block) -> str:
    """The heading of the README section a block is in."""
    lines = README.read_text(encoding="utf-8").splitlines()[: block.line]
    return next(line.lstrip("# ") for line in reversed(lines) if line.startswith("## "))


@pytest.mark.parametrize("block", README_BLOCKS, ids=[f"README.md:{b.line}" for b in README_BLOCKS])
def test_each_readme_block_runs_alone(block, scripted_doc_models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_blocks([block], {"__name__": "__docs__"})  # a fresh namespace: nothing carried over
    for expected in README_BLOCK_OUTPUT[readme_section(block)]:
        assert expected in out.getvalue(), (block.line, expected, out.getvalue()[-3000:])


def test_every_readme_block_has_its_expected_output():
    # a new README block says what it must print, or this test names it
    assert {readme_section(b) for b in README_BLOCKS} == set(README_BLOCK_OUTPUT)


DOC_PAGES = [p for p in DOC_FILES if p != README]


@pytest.mark.parametrize("path", DOC_PAGES, ids=[str(p.relative_to(ROOT)) for p in DOC_PAGES])
def test_every_python_block_runs(path, scripted_doc_models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_blocks(README_BLOCKS, namespace)  # docs pages continue the README
        run_blocks(python_blocks(path), namespace)
    name = str(path.relative_to(ROOT))
    for expected in EXPECTED_OUTPUT.get(name, ()):
        assert expected in out.getvalue(), (name, expected, out.getvalue()[-3000:])


def lost_values(block: Block) -> list[str]:
    """Top-level bare expressions that are not calls: a notebook shows them, a script does not."""
    import ast

    tree = ast.parse(block.code)
    return [
        f"{block.path.name}:{block.line + node.lineno - 1}: {ast.unparse(node)}"
        for node in tree.body
        if isinstance(node, ast.Expr)
        and not isinstance(node.value, ast.Call | ast.Await | ast.Constant)
    ]


@pytest.mark.parametrize("path", DOC_FILES, ids=[str(p.relative_to(ROOT)) for p in DOC_FILES])
def test_no_block_computes_a_value_that_a_script_would_not_show(path):
    lost = [line for block in python_blocks(path) for line in lost_values(block)]
    assert not lost, f"print these (or assign them), a script shows nothing: {lost}"


def test_the_readme_and_the_testing_guide_have_python_blocks():
    # if extraction broke, every file would pass with nothing run
    assert len(python_blocks(README)) >= 2
    assert len(python_blocks(ROOT / "docs" / "testing.md")) >= 3


@pytest.mark.parametrize("path", DOC_FILES, ids=[str(p.relative_to(ROOT)) for p in DOC_FILES])
def test_python_blocks_are_fenced_python(path):
    other_python = [
        f"{path.name}:{b.line} (```{b.info})"
        for b in fenced_blocks(path)
        if b.info.split()[:1] and b.info.split()[0] in ("py", "python3", "py3", "ipython", "pycon")
    ]
    assert not other_python, f"fence Python as ```python so that test_docs runs it: {other_python}"


def test_fenced_blocks_reads_indented_and_nested_fences(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n* item\n\n  ```python\n  x = 1\n  ```\n\n````text\n```python\nnot code\n```\n"
        "````\n\n```bash\nls\n```\n"
    )
    blocks = fenced_blocks(page)
    assert [(b.info, b.line, b.code) for b in blocks] == [
        ("python", 6, "x = 1\n"),
        ("text", 10, "```python\nnot code\n```\n"),
        ("bash", 16, "ls\n"),
    ]
    assert [b.code for b in python_blocks(page)] == ["x = 1\n"]


def test_a_failing_block_names_its_file_and_line(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nx = 1\n```\n\n```python\ny = x + undefined\n```\n")
    with pytest.raises(AssertionError, match=r"page\.md:8 failed: NameError"):
        run_blocks(python_blocks(page), {})


def test_an_unknown_model_string_points_to_doc_models(scripted_doc_models):
    from langchain.chat_models import init_chat_model

    with pytest.raises(KeyError, match="add it to DOC_MODELS"):
        init_chat_model("anthropic:claude-x")


def test_the_readme_opens_with_the_demo_and_the_test_commands_and_both_are_true(tmp_path):
    import shlex
    import tomllib

    from typer.testing import CliRunner

    from inferact_langgraph.cli import app

    first = fenced_blocks(README)[0]
    assert first.info == "bash" and first.line <= 5
    demo, tests = [line for line in first.code.splitlines() if not line.startswith("#")]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # the test command installs extras that exist, then runs pytest with the project's config
    extras = re.search(r"pip install -e '\.\[([\w,-]+)\]'", tests)
    assert extras and set(extras.group(1).split(",")) <= set(
        pyproject["project"]["optional-dependencies"]
    )
    assert tests.rstrip().endswith("python -m pytest -q")
    # the demo command, as written (its default --db redirected), runs offline and succeeds
    command = shlex.split(demo.split("&&")[-1])
    assert command[0] in pyproject["project"]["scripts"]
    result = CliRunner().invoke(app, [*command[1:], "--db", str(tmp_path / "demo.sqlite")])
    assert result.exit_code == 0, result.output
    assert "trial 2: SUCCESS" in result.output
