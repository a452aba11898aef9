"""``inferact eval`` end to end with typer's CliRunner and a scripted critic model."""

from __future__ import annotations

import json

import pytest
from _eval_fakes import eval_args, paper_judge, records, write_jsonl
from conftest import says
from typer.testing import CliRunner

from inferact_langgraph import _factory as factory
from inferact_langgraph.cli import app
from inferact_langgraph.testing import ScriptedChatModel, prompt_text

pytest.importorskip("inferact_langgraph.critics.multistep")

runner = CliRunner()


SEEN: dict = {}


@pytest.fixture
def scripted(monkeypatch):
    """Replace the model built from --model by one scripted model; return it."""
    model = ScriptedChatModel(responder=paper_judge)
    SEEN.clear()

    def build_model(name, *, base_url=None, api_key=None, **kw):
        SEEN.update(name=name, base_url=base_url, api_key=api_key)
        return model

    monkeypatch.setattr(factory, "build_model", build_model)
    return model


def _args(data, out, cache, *extra):
    return [
        "eval",
        "--data",
        str(data),
        "--critic",
        "inferact",
        "--critic",
        "multistep:product",
        "--critic",
        "standard",
        "--critic",
        "self_consistency",
        "--model",
        "openai:gpt-4o",
        "--preset",
        "hotpotqa",
        "--dev-split",
        "0.3",
        "--seed",
        "0",
        "--concurrency",
        "4",
        "--cache",
        str(cache),
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]


def test_eval_end_to_end_then_rerun_from_cache(tmp_path, scripted):
    data = write_jsonl(tmp_path / "t.jsonl", records(12, prices=True))
    out, cache = tmp_path / "report", tmp_path / "cache.sqlite"
    result = runner.invoke(app, _args(data, out, cache))
    assert result.exit_code == 0, result.output
    # 12 trajectories x (inferact 3 + multistep 1 + standard 1 + self-consistency 5)
    assert scripted.calls == 12 * 10
    for needle in (
        "Table 1",
        "inferact",
        "multistep:product",
        "standard",
        "self_consistency",
        "dev→test",
        "Appendix D",
        "report.json",
    ):
        assert needle in result.output
    saved = json.loads((out / "report.json").read_text())
    assert saved["interrupted"] is False
    assert set(saved["critics"]) == {
        "inferact",
        "multistep:product",
        "standard",
        "self_consistency",
    }
    assert saved["critics"]["inferact"]["usage"]["per_trajectory"]["model_calls"] == 3
    assert saved["critics"]["self_consistency"]["usage"]["per_trajectory"]["model_calls"] == 5
    assert set(saved["critics"]["multistep:product"]["aggregations"]) == {
        "min",
        "max",
        "mean",
        "product",
    }
    assert saved["meta"]["model"] == "openai:gpt-4o" and saved["meta"]["preset"] == "hotpotqa"
    assert (out / "pr_curves.png").exists()
    # A re-run (say, for a new metric) costs zero model calls.
    scripted.reset()
    again = runner.invoke(app, _args(data, tmp_path / "report2", cache))
    assert again.exit_code == 0, again.output
    assert scripted.calls == 0
    saved2 = json.loads((tmp_path / "report2" / "report.json").read_text())
    assert saved2["meta"]["run"]["model_calls"] == 0 and saved2["meta"]["run"]["cached"] == 48
    assert saved2["critics"]["inferact"]["metrics"] == saved["critics"]["inferact"]["metrics"]


def test_base_url_and_key_are_passed_and_the_key_is_not_reported(tmp_path, scripted):
    data = write_jsonl(tmp_path / "t.jsonl", records(4))
    result = runner.invoke(
        app,
        eval_args(
            data,
            tmp_path / "r",
            "--base-url",
            "http://h:8000/v1",
            "--api-key",
            "sk-very-secret",
            model="openai:llama3",
        ),
    )
    assert result.exit_code == 0, result.output
    assert SEEN == {
        "name": "openai:llama3",
        "base_url": "http://h:8000/v1",
        "api_key": "sk-very-secret",
    }
    assert "sk-very-secret" not in (tmp_path / "r" / "report.json").read_text()


def test_bad_records_are_listed_or_fatal(tmp_path, scripted):
    recs = records(6)
    data = write_jsonl(tmp_path / "t.jsonl", [*recs[:3], "{oops", *recs[3:]])
    ok = runner.invoke(
        app,
        eval_args(data, tmp_path / "r"),
    )
    assert ok.exit_code == 0, ok.output
    assert "line 4: invalid JSON" in ok.output
    saved = json.loads((tmp_path / "r" / "report.json").read_text())
    assert saved["meta"]["bad_records"] == [
        {"line": 4, "message": saved["meta"]["bad_records"][0]["message"]}
    ]
    fail = runner.invoke(
        app,
        eval_args(data, tmp_path / "r2", "--on-bad-record", "fail"),
    )
    assert fail.exit_code == 1
    assert "line 4" in fail.output and "invalid JSON" in fail.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dev-split", "1.5"], "--dev-split must be between 0 and 1"),
        (["--dev-split", "0"], "--dev-split must be between 0 and 1"),
        (["--concurrency", "0"], "--concurrency"),
        (["--on-bad-record", "ignore"], "--on-bad-record"),
        (["--timeout", "-1"], "--timeout must be greater than 0"),
        (["--thought-tools", "think, ,scratch pad"], "expected tool names separated by commas"),
    ],
)
def test_bad_flags_give_clear_errors(tmp_path, scripted, extra, message):
    data = write_jsonl(tmp_path / "t.jsonl", records(2))
    result = runner.invoke(
        app, ["eval", "--data", str(data), "--critic", "standard", "--model", "m", *extra]
    )
    assert result.exit_code == 2
    assert message in " ".join(result.output.split()).replace("│", "").replace("  ", " ") or (
        message in result.output
    )


def test_unknown_critic_and_missing_file(tmp_path, scripted):
    data = write_jsonl(tmp_path / "t.jsonl", records(2))
    result = runner.invoke(
        app, ["eval", "--data", str(data), "--critic", "judge", "--model", "m", "--no-progress"]
    )
    assert result.exit_code == 2
    assert "unknown critic spec 'judge'" in result.output
    twice = runner.invoke(
        app,
        [
            "eval",
            "--data",
            str(data),
            "--critic",
            "standard",
            "--critic",
            "standard",
            "--model",
            "m",
        ],
    )
    assert twice.exit_code == 2 and "more than once" in twice.output
    missing = runner.invoke(
        app,
        ["eval", "--data", str(tmp_path / "nope.jsonl"), "--critic", "standard", "--model", "m"],
    )
    assert missing.exit_code == 2 and says(missing.output, "does not exist")


def test_model_errors_are_reported_as_bad_model(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = write_jsonl(tmp_path / "t.jsonl", records(2))
    result = runner.invoke(
        app, ["eval", "--data", str(data), "--critic", "standard", "--model", "openai:gpt-4o"]
    )
    assert result.exit_code == 2
    assert "--model" in result.output and "cannot build the model" in result.output


def test_build_model_for_an_openai_compatible_server():
    model = factory.build_model("openai:qwen2.5", base_url="http://h:1/v1", api_key="k")
    assert (model.model_name, model.openai_api_base) == ("qwen2.5", "http://h:1/v1")
    with pytest.raises(factory.ModelSetupError, match="provider"):
        factory.build_model("nosuchprovider:x")


def test_max_tokens_reaches_the_model(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from inferact_langgraph import _factory as model_factory
    from inferact_langgraph.cli import app

    seen = {}
    real = model_factory.build_model

    def spy(model, **kwargs):
        seen.update(kwargs)
        return real(model, **kwargs)

    monkeypatch.setattr(model_factory, "build_model", spy)
    data = tmp_path / "d.jsonl"
    data.write_text('{"task": "t", "steps": [{"action": "Finish[x]"}], "label": "correct"}\n')
    CliRunner().invoke(
        app,
        eval_args(
            data,
            tmp_path / "r",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--max-tokens",
            "64",
            "--timeout",
            "0.5",
            "--max-retries",
            "0",
            model="openai:m",
        ),
    )
    assert seen.get("max_tokens") == 64


@pytest.mark.parametrize(("option", "seen"), [([], False), (["--thought-tools", ""], True)])
def test_think_steps_are_left_out_unless_no_thought_tools_are_named(
    tmp_path, scripted, option, seen
):
    """A ``think(...)`` step is the agent's reasoning: by default no critic sees it."""
    record = {
        "task": "cancel R1",
        "steps": [
            {"action": 'get(id="R1")', "observation": "R1: economy"},
            {"action": 'think(thought="THINK-SECRET cancel it")', "observation": ""},
            {"action": 'cancel(id="R1")', "observation": None},
        ],
        "label": "correct",
    }
    data = write_jsonl(tmp_path / "t.jsonl", [record])
    args = ["eval", "--data", str(data), "--critic", "standard", "--model", "m", "--no-cache"]
    args += ["--no-progress", "--no-calibrate", "--out", str(tmp_path / "r"), *option]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    prompts = " ".join(prompt_text(p) for p in scripted.prompts)
    assert ("THINK-SECRET" in prompts) is seen and 'cancel(id="R1")' in prompts


def test_the_cli_default_thought_tools_are_the_librarys():
    import inspect

    from inferact_langgraph.cli import eval_command
    from inferact_langgraph.trajectory import THOUGHT_TOOLS

    default = inspect.signature(eval_command).parameters["thought_tools"].default
    assert set(default.split(",")) == set(THOUGHT_TOOLS)
