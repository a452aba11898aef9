"""A new user's first hour with the ``inferact`` command, through the installed console script.

Each test runs the real ``inferact`` executable in a subprocess (on a pseudo-terminal where a
person would type), in a fresh directory, and reads its output with :func:`cli_support.flat`,
so no check depends on the terminal's width.
"""

from __future__ import annotations

import re
import shlex
import sqlite3
from pathlib import Path

import pytest
from cli_support import flat, run_cli, run_in_terminal

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
REVIEW_PROMPT = "[a]pprove / [e]dit / [r]eject with feedback?"


def _checkpoints(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT thread_id, count(*) FROM checkpoints GROUP BY thread_id ORDER BY 1"
        ).fetchall()


def test_the_demos_closing_hint_shows_the_finished_thread_and_buys_nothing(tmp_path) -> None:
    demo = run_cli(["demo", "webshop", "--auto-feedback", "--db", "d.sqlite"], cwd=tmp_path)
    out = flat(demo.stdout)
    assert demo.returncode == 0, out
    assert "trial 2: SUCCESS" in out
    hint = re.search(r"nothing runs again\) with: (inferact demo .*? --db d\.sqlite)", out)
    assert hint, out
    before = _checkpoints(tmp_path / "d.sqlite")

    shown = run_cli(shlex.split(hint.group(1))[1:], cwd=tmp_path)  # as printed, no terminal
    out = flat(shown.stdout)
    assert shown.returncode == 0, out + shown.stderr
    assert "is finished: nothing is run again" in out
    assert re.search(r'buy_now\(\{"asin": "B0SHD66X66".*\}\): approve by critic \(p=0\.90\)', out)
    assert "outcome: SUCCESS" in out
    assert "To try the task again in a new thread" in out
    assert "inferact demo webshop --task 0 --db d.sqlite" in out  # no --thread: a new one
    assert "Trial" not in out and "Order" not in out and "Action:" not in out
    assert _checkpoints(tmp_path / "d.sqlite") == before  # no step ran, no thread was added

    # The session's first thread (the rejected purchase) is shown the same way.
    first = hint.group(1).split("--thread ")[1].split()[0].removesuffix("-trial2")
    shown = run_cli(["demo", "webshop", "--thread", first, "--db", "d.sqlite"], cwd=tmp_path)
    out = flat(shown.stdout)
    assert re.search(r'buy_now\(\{"asin": "B0SHDCUSTM".*\}\): reject by human \(p=0\.10\)', out)
    assert "outcome: not successful" in out
    assert f"next trial ran in another thread; see it with: {hint.group(1)}" in out
    assert _checkpoints(tmp_path / "d.sqlite") == before


def test_the_demo_says_it_uses_remembered_feedback_and_fresh_asks_you_again(tmp_path) -> None:
    assert run_cli(["demo", "webshop", "--auto-feedback"], cwd=tmp_path).returncode == 0

    # The README's interactive demo, after the README's --auto-feedback demo: it says why
    # nobody is asked, and how to start clean.
    code, raw = run_in_terminal(["demo", "webshop"], cwd=tmp_path)
    out = flat(raw)
    assert code == 0, out
    assert "using remembered feedback" in out
    assert "1 feedback entry from earlier runs of this task in .inferact-demo.sqlite" in out
    assert "To start clean: add --fresh, or run inferact memory clear --db" in out
    assert REVIEW_PROMPT not in out and "trial 1: SUCCESS" in out

    # --fresh forgets it: the critic doubts the wrong purchase again and you are asked.
    code, raw = run_in_terminal(
        ["demo", "webshop", "--fresh"],
        cwd=tmp_path,
        answers=[(REVIEW_PROMPT, "r"), ("feedback for the agent:", "wrong size: 66x66 inch")],
    )
    out = flat(raw)
    assert code == 0, out
    assert "--fresh: forgot 1 remembered feedback entry for this task" in out
    assert "using remembered feedback" not in out.split("Trial 1")[0]
    assert "InferAct asks you" in out and "decision: reject" in out
    assert "trial 2: SUCCESS" in out


def test_eval_and_trials_without_the_eval_extra_say_what_to_install(tmp_path) -> None:
    blocked = tmp_path / "no_eval_extra"
    (blocked / "sklearn").mkdir(parents=True)
    (blocked / "sklearn" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'sklearn'\", name='sklearn')\n"
    )
    data = tmp_path / "runs.jsonl"
    data.write_text('{"task": "t", "steps": [{"action": "a"}], "label": "correct"}\n')
    for args in (
        ["eval", "--data", str(data), "--critic", "inferact", "--model", "openai:gpt-4o"],
        ["trials", "--env", "webshop", "--tasks", "0"],
    ):
        result = run_cli(args, cwd=tmp_path, PYTHONPATH=str(blocked))
        assert result.returncode == 2, result.stderr
        assert result.stdout == "" and "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines() == [
            f"error: `inferact {args[0]}` needs the [eval] extra (sklearn is missing): "
            "pip install 'inferact-langgraph[eval]'"
        ]


def test_the_howto_installs_the_eval_extra_before_its_first_eval_snippet() -> None:
    howto = (ROOT / "docs" / "howto.md").read_text()
    install = howto.index("pip install -e '.[eval]'")
    assert install < howto.index("from inferact_langgraph.eval")


def test_memory_list_reads_the_demos_database_without_db_and_says_what_db_takes(
    tmp_path,
) -> None:
    nothing = run_cli(["memory", "list", "--user", "alice"], cwd=tmp_path)
    err = flat(nothing.stderr)
    assert nothing.returncode == 2
    assert "no --db given and no .inferact-demo.sqlite (the demo's database)" in err
    assert "a PostgreSQL DSN" in err and "http://127.0.0.1:2024" in err

    assert run_cli(["demo", "webshop", "--auto-feedback"], cwd=tmp_path).returncode == 0
    listed = run_cli(["memory", "list"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "reading .inferact-demo.sqlite" in flat(listed.stderr)
    assert flat(listed.stderr).endswith("1 entry")
    assert "shared buy_now task: 'i need 66 inch by 66 inch" in flat(listed.stdout)
    alice = run_cli(["memory", "list", "--user", "alice"], cwd=tmp_path)
    assert alice.returncode == 0 and alice.stdout == ""  # the demo remembers no user's feedback


def test_the_readmes_memory_commands_name_their_store() -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    commands = re.findall(r"`(inferact memory (?:list|clear)[^`]*)`", readme)
    assert commands, "the README shows no memory command"
    assert all("--db" in c for c in commands if "list" in c), commands


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (["demo"], ["--auto-feedback", "--fresh"]),
        (["eval"], ["--risk-aware", "--no-cache", "--progress", "--calibrate"]),
        (["trials"], ["--upper-bound", "--plot"]),
        (["memory", "list"], ["--shared", "--json"]),
    ],
)
def test_help_shows_flags_as_flags_and_repeatable_options_with_an_example(
    tmp_path, command, flags
) -> None:
    # Rich shortens option names to fit a narrow terminal ("--no-upper-bou…"): the help is
    # read at a fixed width, whatever the terminal running the tests.
    result = run_cli([*command, "--help"], cwd=tmp_path, COLUMNS="120")
    out = flat(result.stdout)
    assert result.returncode == 0, result.stderr
    for flag in flags:
        assert re.search(rf"{flag}\b", out), (flag, out)
        assert not re.search(rf"{flag}(/--no-[\w-]+)?\s*(--no-[\w-]+\s*)?<bool>", out), out
    assert "list[str]" not in out
    if command[0] in ("eval", "trials"):
        assert "--critic SPEC" in out
        assert "repeatable, e.g. --critic inferact --critic standard" in out
