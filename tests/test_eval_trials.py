"""``inferact trials`` (paper 5.2, Table 2, Figure 4): offline, scripted models only."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from inferact_langgraph.cli import app
from inferact_langgraph.eval.trials import (
    POST_EXECUTION,
    TrialsError,
    parse_tasks,
    run_trials,
)
from inferact_langgraph.examples.registry import make_env, make_scripted_actor, oracle_feedback
from inferact_langgraph.testing import ScriptedChatModel, prompt_text

ENVS = ("webshop", "hotpotqa", "alfworld")


class Actors:
    """An actor factory that keeps the scripted actors, to inspect their prompts."""

    def __init__(self) -> None:
        self.models: dict[tuple[str, int], ScriptedChatModel] = {}

    def __call__(self, name: str, env, task: int) -> ScriptedChatModel:
        model = make_scripted_actor(name, env, task)
        self.models[(name, task)] = model
        return model

    def first_calls(self, name: str, task: int) -> list[str]:
        """The text of each trial's first actor call (no AI message yet in its prompt)."""
        prompts = self.models[(name, task)].prompts
        return [prompt_text(p) for p in prompts if not any(isinstance(m, AIMessage) for m in p)]


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("feedback", ["nl", "binary"])
def test_oracle_critic_and_upper_bound_solve_by_trial_2(env: str, feedback: str) -> None:
    report = run_trials(env, tasks=[0, 1], critics=["inferact"], feedback=feedback, max_trials=3)
    assert report.methods["inferact"].cumulative == [0.0, 1.0, 1.0]
    assert report.methods[POST_EXECUTION].cumulative == [0.0, 1.0, 1.0]
    for run in report.methods["inferact"].runs:
        first, second = run.trials
        assert (first.outcome, first.flagged, first.decision) == ("rejected", True, "reject")
        assert first.action_correct is False and first.feedback
        assert second.outcome == "success" and second.memory_entries_at_start == 1
    for run in report.methods[POST_EXECUTION].runs:
        assert [t.outcome for t in run.trials] == ["failed", "success"]
        assert run.trials[0].flagged is False  # no critic: nothing is ever flagged
    assert report.offline


def test_nl_feedback_reaches_next_trials_first_model_call() -> None:
    actors = Actors()
    report = run_trials(
        "webshop",
        tasks=[0],
        critics=["inferact"],
        feedback="nl",
        max_trials=2,
        upper_bound=False,
        actor_factory=actors,
    )
    trial1 = report.methods["inferact"].runs[0].trials[0]
    expected = oracle_feedback("webshop", make_env("webshop"), 0)
    assert trial1.feedback == expected and trial1.feedback_source == "template"
    first_calls = actors.first_calls("webshop", 0)
    assert len(first_calls) == 2
    assert expected not in first_calls[0]
    assert expected in first_calls[1]
    assert "Feedback from earlier trials of this task" in first_calls[1]


def test_binary_feedback_is_rejection_then_self_reflection() -> None:
    actors = Actors()
    reflector = ScriptedChatModel(replies=["I answered with the wrong entity. Plan: verify both."])
    report = run_trials(
        "hotpotqa",
        tasks=[2],
        critics=["inferact"],
        feedback="binary",
        max_trials=2,
        upper_bound=False,
        actor_factory=actors,
        reflection_model=reflector,
    )
    trial1 = report.methods["inferact"].runs[0].trials[0]
    assert trial1.outcome == "rejected"
    assert trial1.feedback_source == "reflection:actor"
    assert trial1.feedback == "I answered with the wrong entity. Plan: verify both."
    # the reflection prompt (Reflexion-style) saw the failed chain and the "incorrect" signal
    (prompt,) = reflector.prompts
    text = prompt_text(prompt)
    assert "was incorrect" in text and "Action 1:" in text and "finish(" in text
    first_calls = actors.first_calls("hotpotqa", 2)
    assert "I answered with the wrong entity" in first_calls[1]
    # no NL text from the gold answer leaks into the binary path
    gold = make_env("hotpotqa").task(2)["gold_answer"]
    assert gold not in first_calls[1].split("Feedback from earlier trials")[1]
    assert report.labels["feedback"].startswith("binary")


def test_binary_default_reflection_is_labelled_scripted() -> None:
    report = run_trials(
        "alfworld", tasks=[0], critics=["inferact"], feedback="binary", max_trials=2
    )
    assert report.methods["inferact"].runs[0].trials[0].feedback_source == "reflection:scripted"
    assert "scripted" in report.labels["reflection"]


def test_nl_feedback_from_an_llm_uses_the_a5_prompt() -> None:
    actors = Actors()
    writer = ScriptedChatModel(replies=["Feedback: Wrong item. Buy the 66 x 66 inch shades."])
    report = run_trials(
        "webshop",
        tasks=[0],
        critics=["inferact"],
        feedback="nl",
        max_trials=2,
        actor_factory=actors,
        feedback_model=writer,
    )
    assert report.methods["inferact"].cumulative == [0.0, 1.0]
    record = report.methods["inferact"].runs[0].trials[0]
    assert (record.feedback, record.feedback_source) == (
        "Wrong item. Buy the 66 x 66 inch shades.",
        "llm",
    )
    prompt = prompt_text(writer.prompts[0])
    env = make_env("webshop")
    assert "An Actor agent is helping the user shop online" in prompt
    assert env.task(0)["instruction"] in prompt and env.task(0)["gold"]["asin"] in prompt
    assert "The incorrect action chain is: Action 1:" in prompt and "buy_now(" in prompt
    assert "Buy the 66 x 66 inch shades" in actors.first_calls("webshop", 0)[1]
    assert "LLM" in report.labels["feedback"]


def test_missed_wrong_action_ends_the_task() -> None:
    yes_man = ScriptedChatModel(replies=["The answer is: Correct\nConfidence: 0.9"], cycle=True)
    report = run_trials(
        "hotpotqa", tasks=[0], critics=["standard"], max_trials=3, critic_model=yes_man
    )
    run = report.methods["standard"].runs[0]
    assert [t.outcome for t in run.trials] == ["missed"]
    assert run.trials[0].flagged is False and run.trials[0].action_correct is False
    assert report.methods["standard"].cumulative == [0.0, 0.0, 0.0]
    assert report.methods[POST_EXECUTION].cumulative == [0.0, 1.0, 1.0]
    assert report.labels["critic_model"] == "live model"


def test_flagged_right_action_is_approved() -> None:
    doubter = ScriptedChatModel(replies=["The answer is: Incorrect\nConfidence: 0.9"], cycle=True)
    report = run_trials(
        "alfworld",
        tasks=[1],
        critics=["standard"],
        max_trials=3,
        critic_model=doubter,
        upper_bound=False,
    )
    first, second = report.methods["standard"].runs[0].trials
    assert first.outcome == "rejected"
    assert (second.flagged, second.decision, second.outcome) == (True, "approve", "success")


@pytest.mark.parametrize("spec", ["standard", "self_consistency", "multistep:product"])
def test_baseline_oracle_models_drive_each_critic(spec: str) -> None:
    report = run_trials("hotpotqa", tasks=[1], critics=[spec], max_trials=2, upper_bound=False)
    assert report.methods[spec].cumulative == [0.0, 1.0]
    assert report.methods[spec].runs[0].trials[0].critic_calls >= 1


def test_json_report_shape(tmp_path) -> None:
    report = run_trials("alfworld", tasks="0,2", critics=["inferact", "standard"], max_trials=2)
    paths = report.write(tmp_path, plot=False)
    data = json.loads(paths["json"].read_text())
    assert data["schema"] == "inferact-trials/1"
    assert (data["env"], data["tasks"], data["feedback"], data["max_trials"]) == (
        "alfworld",
        [0, 2],
        "nl",
        2,
    )
    assert data["offline_scripted"] is True and "oracle" in data["labels"]["critic_model"]
    assert list(data["methods"]) == ["inferact", "standard", POST_EXECUTION]
    method = data["methods"]["inferact"]
    assert method["kind"] == "critic" and method["cumulative_success"] == [0.0, 1.0]
    assert method["solved"] == 2 and method["counts"]["rejected"] == 2
    trial = method["tasks"][0]["trials"][0]
    assert {
        "trial",
        "thread",
        "outcome",
        "success",
        "action",
        "action_correct",
        "flagged",
        "score",
        "decision",
        "feedback",
        "feedback_source",
    } <= set(trial)
    assert data["methods"][POST_EXECUTION]["kind"] == "upper_bound"


def test_plot_is_written(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    report = run_trials("hotpotqa", tasks=[0], max_trials=2)
    paths = report.write(tmp_path)
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"


def test_parse_tasks_and_bad_options() -> None:
    assert parse_tasks("all", 3) == [0, 1, 2]
    assert parse_tasks("2, 0,2", 3) == [2, 0]
    with pytest.raises(TrialsError, match="out of range"):
        parse_tasks("7", 3)
    with pytest.raises(TrialsError, match="indices"):
        parse_tasks("a,b", 3)
    with pytest.raises(TrialsError, match="unknown critic"):
        run_trials("webshop", critics=["judge"])
    with pytest.raises(TrialsError, match="unknown environment"):
        run_trials("chess")
    with pytest.raises(TrialsError, match="binary or nl"):
        run_trials("webshop", feedback="loud")  # type: ignore[arg-type]


def test_cli_end_to_end(tmp_path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "trials",
            "--env",
            "webshop",
            "--tasks",
            "0,1",
            "--critic",
            "inferact",
            "--critic",
            "standard",
            "--feedback",
            "binary",
            "--max-trials",
            "2",
            "--no-plot",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Cumulative success rate" in result.output and "post-execution" in result.output
    assert "OFFLINE / SCRIPTED" in result.output and "oracle" in result.output
    data = json.loads((out / "trials.json").read_text())
    assert data["methods"]["inferact"]["cumulative_success"] == [0.0, 1.0]
    assert data["feedback"] == "binary"


def test_cli_bad_tasks_is_a_usage_error(tmp_path) -> None:
    result = CliRunner().invoke(
        app, ["trials", "--env", "hotpotqa", "--tasks", "99", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "out of range" in result.output


def test_docs_trials_table_is_the_one_a_fresh_run_gives() -> None:
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "bench"
    sys.path.insert(0, str(bench))
    import bench_replay_eval
    import bench_trials_doc

    committed = bench_replay_eval.block_in(bench_trials_doc.DOC, bench_trials_doc.KEY)
    assert committed is not None, "docs/trials.md lost its generated table"
    fresh = bench_trials_doc.render(bench_trials_doc.run_all())
    assert committed == fresh, "run `python bench/bench_trials_doc.py` to regenerate it"


def test_trials_table_is_never_cut_when_piped(capsys) -> None:
    from inferact_langgraph.eval.trials import render_trials

    report = run_trials("hotpotqa", tasks=[0], critics=["inferact"], feedback="binary")
    render_trials(report)  # stdout is captured: not a terminal
    text = capsys.readouterr().out
    assert "…" not in text
    for needle in ("trial 1", "solved", "rejected", "missed", "post-execution (no critic)"):
        assert needle in text
