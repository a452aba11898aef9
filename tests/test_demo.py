"""``inferact demo`` end to end, offline, with a simulated human; and no hang without a TTY."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferact_langgraph.cli import app
from inferact_langgraph.examples.registry import ENVIRONMENTS


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_demo_auto_feedback_runs_offline(name, tmp_path):
    db = tmp_path / "demo.sqlite"
    result = CliRunner().invoke(app, ["demo", name, "--auto-feedback", "--db", str(db)])
    out = result.output
    assert result.exit_code == 0, out
    assert "actor: scripted policy" in out
    assert "scripted oracle answers (offline demo)" in out and "not live judgement" in out
    assert "InferAct check of" in out and "DOUBT: ask the human" in out  # a check
    assert "decision (simulated human, --auto-feedback)" in out  # a decision
    assert "Trial 2" in out and "memory: feedback from an earlier trial" in out  # a 2nd trial
    assert "trial 2: SUCCESS" in out
    assert db.exists()


def test_demo_without_tty_and_without_auto_feedback_fails_at_once(tmp_path):
    result = CliRunner().invoke(
        app, ["demo", "webshop", "--db", str(tmp_path / "d.sqlite")], input=""
    )
    assert result.exit_code != 0
    assert "not a terminal" in result.output and "--auto-feedback" in result.output


def test_demo_thread_of_a_finished_session_is_shown_and_not_run_again(tmp_path):
    import sqlite3

    db = tmp_path / "demo.sqlite"
    runner = CliRunner()
    first = runner.invoke(
        app, ["demo", "hotpotqa", "--auto-feedback", "--db", str(db), "--thread", "s1"]
    )
    assert first.exit_code == 0, first.output

    def checkpoints() -> list[tuple[str, int]]:
        with sqlite3.connect(db) as conn:
            return conn.execute(
                "SELECT thread_id, count(*) FROM checkpoints GROUP BY thread_id ORDER BY 1"
            ).fetchall()

    before = checkpoints()
    again = runner.invoke(
        app, ["demo", "hotpotqa", "--auto-feedback", "--db", str(db), "--thread", "s1"]
    )
    assert again.exit_code == 0, again.output
    out = " ".join(again.output.split())
    assert "thread s1 is finished: nothing is run again" in out
    assert "finish({\"answer\": \"Pizza Inn\"}): reject by human (p=0.10)" in out
    assert "outcome: not successful" in out and "--thread s1-trial2" in out
    assert "Trial" not in out  # no trial ran
    assert checkpoints() == before  # no step of any thread, no new thread


def test_demo_rejects_unknown_env(tmp_path):
    result = CliRunner().invoke(
        app, ["demo", "chess", "--auto-feedback", "--db", str(tmp_path / "d.sqlite")]
    )
    assert result.exit_code != 0
    assert "unknown environment" in result.output


def test_demo_interactive_reject_then_success(tmp_path, monkeypatch):
    from pathlib import Path

    from inferact_langgraph._demo import run_demo

    answers = iter(["r", "Rejected: buy the 66 x 66 inch shade, not the custom size one."])
    monkeypatch.setattr("builtins.input", lambda *a, **k: next(answers))
    code = run_demo("webshop", db=Path(tmp_path / "d.sqlite"), stdin_isatty=True)
    assert code == 0


# ---------------------------------------------------------------------------- the review prompt
GOLD_EDIT = '{"asin": "B0SHD66X66", "options": {"color": "white"}, "price": 72.99}'


def run_interactive(tmp_path, monkeypatch, answers, **options):
    """Run the webshop demo at a (fake) terminal that types ``answers``; return (code, output).

    An exception instance among the answers is raised by ``input()`` (Ctrl-C, end of input).
    """
    import io
    from pathlib import Path

    from rich.console import Console

    from inferact_langgraph._demo import run_demo

    typed = iter(answers)

    def fake_input(*_args, **_kwargs):
        answer = next(typed, None)
        if answer is None:
            raise AssertionError("the demo asked for more input than the test scripted")
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr("builtins.input", fake_input)
    out = io.StringIO()
    options.setdefault("db", Path(tmp_path / "d.sqlite"))
    code = run_demo("webshop", stdin_isatty=True, console=Console(file=out, width=1000), **options)
    assert next(typed, None) is None, "the demo did not ask for every scripted answer"
    return code, out.getvalue()


def test_review_prompt_asks_again_on_anything_unrecognised(tmp_path, monkeypatch):
    answers = ["x", "", "apple", "  REJECT ", "buy the 66 x 66 inch one, in white"]
    code, out = run_interactive(tmp_path, monkeypatch, answers)
    assert out.count("is not an answer: type a (approve), e (edit) or r (reject)") == 3
    assert "'apple' is not an answer" in out  # a word starting with "a" never approves
    assert "decision: reject" in out and "decision: approve" not in out
    assert "buy the 66 x 66 inch one, in white" in out  # the feedback reached trial 2's memory
    assert code == 0 and "trial 2: SUCCESS" in out


@pytest.mark.parametrize("word", ["approve", "Approve", "a"])
def test_review_prompt_accepts_words_and_letters(tmp_path, monkeypatch, word):
    code, out = run_interactive(tmp_path, monkeypatch, [word])
    assert "decision: approve" in out and "is not an answer" not in out
    assert code == 1  # the approved purchase was the wrong product: the trial failed


def test_edit_asks_again_for_bad_json_then_shows_the_recheck(tmp_path, monkeypatch):
    answers = ["edit", "", "e", "not json", "[1]", GOLD_EDIT]
    code, out = run_interactive(tmp_path, monkeypatch, answers)
    assert "not JSON" in out and "the arguments must be a JSON object" in out
    recheck = out.index("Re-check of your edit:")
    assert "InferAct check of buy_now" in out[recheck:]
    assert "OK: the action runs" in out[recheck:]
    assert code == 0 and "trial 1: SUCCESS" in out
    # the edited call is shown as edited, without the thought written for the original call
    assert 'Action (as you edited it): buy_now({"asin": "B0SHD66X66"' in out
    assert out.count("I will buy it.") == 1


def test_an_edit_the_critic_still_doubts_shows_the_recheck_and_asks_again(tmp_path, monkeypatch):
    doubtful = '{"asin": "B0SHDCUSTM", "options": {"color": "white"}, "price": 45.99}'
    answers = ["e", doubtful, "r", "the 66 x 66 inch shade, please"]
    code, out = run_interactive(tmp_path, monkeypatch, answers)
    assert "Re-check of your edit: score p(user's task) = 0.10" in out
    assert "DOUBT again" in out
    assert out.count("InferAct asks you") == 2
    assert code == 0 and "trial 2: SUCCESS" in out


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), EOFError()])
def test_ctrl_c_at_the_review_prints_how_to_resume_and_the_hint_works(tmp_path, monkeypatch, stop):
    import re
    from pathlib import Path

    code, out = run_interactive(tmp_path, monkeypatch, [stop])
    assert code == 130
    assert "nothing was approved" in out
    hint = re.search(r"resume with: inferact demo webshop --task 0 --thread (\S+) --db (\S+)", out)
    assert hint, out
    thread, db = hint.group(1), Path(hint.group(2))
    assert db == tmp_path / "d.sqlite"

    code, out = run_interactive(
        tmp_path, monkeypatch, ["r", "66 x 66 inch, white"], thread=thread, db=db
    )
    assert f"resuming thread {thread}" in out
    assert code == 0 and "trial 2: SUCCESS" in out


def test_ctrl_c_at_the_feedback_prompt_names_the_thread_and_decides_nothing(tmp_path, monkeypatch):
    import re

    code, out = run_interactive(tmp_path, monkeypatch, ["r", KeyboardInterrupt()])
    assert code == 130 and "decision:" not in out  # the half-typed rejection was not sent
    thread = re.search(r"--thread (\S+)", out).group(1)
    code, out = run_interactive(tmp_path, monkeypatch, ["a"], thread=thread)
    assert "InferAct asks you" in out and "decision: approve" in out  # still pending


def test_a_later_trials_thread_counts_as_that_trial(tmp_path, monkeypatch):
    # a resume hint printed during trial 2 names the thread "<base>-trial2"
    _code, out = run_interactive(tmp_path, monkeypatch, ["a"], thread="mine-trial2")
    assert "Trial 2 (thread mine-trial2)" in out and "Trial 1" not in out
    # the closing hint names the thread that ran, which shows it and never runs it again
    assert "--thread mine-trial2 " in " ".join(out.split())
