"""``inferact demo`` end to end, offline, with a simulated human; and no hang without a TTY."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferact_langgraph.cli import app
from inferact_langgraph.examples.demo_models import ENVIRONMENTS


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
    result = CliRunner().invoke(app, ["demo", "webshop", "--db", str(tmp_path / "d.sqlite")],
                                input="")
    assert result.exit_code != 0
    assert "not a terminal" in result.output and "--auto-feedback" in result.output


def test_demo_thread_resumes_a_finished_session(tmp_path):
    db = tmp_path / "demo.sqlite"
    runner = CliRunner()
    first = runner.invoke(app, ["demo", "hotpotqa", "--auto-feedback", "--db", str(db),
                                "--thread", "s1"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["demo", "hotpotqa", "--auto-feedback", "--db", str(db),
                                "--thread", "s1"])
    assert again.exit_code == 0, again.output
    assert "thread s1 is finished" in again.output


def test_demo_rejects_unknown_env(tmp_path):
    result = CliRunner().invoke(app, ["demo", "chess", "--auto-feedback",
                                      "--db", str(tmp_path / "d.sqlite")])
    assert result.exit_code != 0
    assert "unknown environment" in result.output


def test_demo_interactive_reject_then_success(tmp_path, monkeypatch):
    from pathlib import Path

    from inferact_langgraph.demo import run_demo

    answers = iter(["r", "Rejected: buy the 66 x 66 inch shade, not the custom size one."])
    monkeypatch.setattr("builtins.input", lambda *a, **k: next(answers))
    code = run_demo("webshop", db=Path(tmp_path / "d.sqlite"), stdin_isatty=True)
    assert code == 0
