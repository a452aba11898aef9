"""What `inferact eval` prints: loud failures, thresholds in the critic's direction, nothing
cut short, files named only when written, costs, and no curve hidden behind another."""

from __future__ import annotations

import ast
import io
import json
import random
import socket

import pytest
from _eval_fakes import TableCritic, eval_args, records, write_jsonl
from rich.console import Console
from typer.testing import CliRunner

from inferact_langgraph import _factory as factory
from inferact_langgraph.cli import app
from inferact_langgraph.critics import Usage, Verdict
from inferact_langgraph.eval import (
    best_threshold,
    build_report,
    cost_threshold,
    critic_threshold,
    evaluate_critics,
    load_dataset,
    output_console,
    paste_line,
    pr_curves,
    render_tables,
)
from inferact_langgraph.eval.runner import Outcome
from inferact_langgraph.replay import ReplayChatModel, Transcript

pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning")
runner = CliRunner()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def use_critics(monkeypatch, critics) -> None:
    """``inferact eval`` runs these critics, whatever --critic and --model say."""
    monkeypatch.setattr(factory, "build_model", lambda *a, **k: None)
    monkeypatch.setattr(factory, "build_critics", lambda *a, **k: critics)


# --------------------------------------------------------------------------- fails loudly
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_endpoint_down_exits_non_zero_prints_the_first_error_and_names_no_missing_plot(tmp_path):
    data = write_jsonl(tmp_path / "t.jsonl", records(4))
    out = tmp_path / "report"
    out.mkdir()
    (out / "pr_curves.png").write_bytes(b"an earlier run's plot")
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    result = runner.invoke(
        app,
        eval_args(
            data,
            out,
            "--base-url",
            url,
            "--api-key",
            "k",
            "--max-retries",
            "0",
            "--timeout",
            "5",
            model="openai:m",
        ),
    )
    assert result.exit_code == 1, result.output
    assert "every check of critic 'standard' failed (4 of 4)" in result.output
    assert "Connection error" in result.output  # the cause, not only inside report.json
    assert "plot:" not in result.output and "reliability:" not in result.output
    assert not (out / "pr_curves.png").exists(), "a stale plot is not left to be mistaken"
    assert f"report: {out / 'report.json'}" in result.output
    saved = json.loads((out / "report.json").read_text())
    assert saved["critics"]["standard"]["first_error"].startswith("r0: CriticModelError")


def test_some_failed_checks_are_reported_with_the_first_error(tmp_path, monkeypatch):
    scores = {f"q{i}": (0.2 if i % 2 == 0 else 0.8) for i in range(8)}
    critic = TableCritic(scores=scores, fail={"q3"})
    use_critics(monkeypatch, {"table": critic})
    data = write_jsonl(tmp_path / "t.jsonl", records(8))
    result = runner.invoke(app, eval_args(data, tmp_path / "r"))
    assert result.exit_code == 0, result.output
    assert "table: 1 of 8 checks failed" in result.output
    assert "r3: CriticParseError: no probability found" in result.output
    assert f"plot: {tmp_path / 'r' / 'pr_curves.png'}" in result.output
    assert (tmp_path / "r" / "pr_curves.png").exists()


# ---------------------------------------------------------------- the critic's direction
def _report(scores, labels, *, dev_split=None, name="c", **kw):
    recs = [
        {
            "id": f"r{i}",
            "task": f"q{i}",
            "steps": [{"action": "Finish[x]"}],
            "label": "incorrect" if y else "correct",
        }
        for i, y in enumerate(labels)
    ]
    data = load_dataset(recs)
    results = {
        name: {
            f"r{i}": Outcome(
                name,
                f"r{i}",
                Verdict(critic=name, score=s, threshold=0.5, usage=Usage(model_calls=1)),
            )
            for i, s in enumerate(scores)
        }
    }
    return build_report(data, results, dev_split=dev_split, **kw)


@pytest.mark.parametrize("seed", range(5))
def test_printed_threshold_flags_exactly_what_the_figures_count(seed):
    rng = random.Random(seed)
    labels = [rng.random() < 0.6 for _ in range(60)]
    # scores on a 0.005 grid (as models write them), with float noise from averaging
    scores = [round(rng.uniform(0, 0.99) / 0.005) * 0.005 * 3 / 3 for _ in labels]
    report = _report(scores, labels)
    summary = report.critics["c"]
    choice, paper = summary.thresholds["paper"], summary.metrics["paper"]
    flagged = [
        Verdict(critic="c", score=s, threshold=choice.critic_threshold).flagged for s in scores
    ]
    assert sum(flagged) == paper.tp + paper.fp
    assert sum(f and y for f, y in zip(flagged, labels, strict=True)) == paper.tp
    text = _render(report)
    assert f" {choice.critic_threshold:.6g} " in text
    assert "flags when score < threshold" in text.replace("the critic flags", "flags")


def test_critic_threshold_is_the_score_side_of_the_risk_threshold():
    # risk >= 0.455 flags scores 0.545 and 0.1; 0.55 is not flagged
    assert critic_threshold([0.455, 0.45, 0.9], 0.455) == pytest.approx(0.548)
    assert critic_threshold([0.2, 0.8], 0.9) == 0.0  # nothing flagged
    assert critic_threshold([0.0, 0.5], 0.0) == 1.0  # a score of 1.0 cannot be flagged
    report = _report([1.0, 0.2, 0.9], [True, True, False])  # best F1: flag all three
    assert report.critics["c"].thresholds["paper"].critic_threshold == 1.0
    assert any("scored 1.0" in note for note in report.critics["c"].notes)
    choice = best_threshold([1, 0, 1, 0], [0.9, 0.3, 0.6, 0.1])
    assert 0.4 < choice.critic_threshold < 0.7  # flags scores 0.1 and 0.4, not 0.7


def test_paste_lines_are_python_and_name_the_critic_settings():
    line = paste_line("inferact", 0.55, {"model": "openai:gpt-4o", "preset": "hotpotqa"})
    assert line == (  # the threshold is on the raw score the evaluation measured
        'with_inferact(graph, model="openai:gpt-4o", preset="hotpotqa", calibration=None, '
        "threshold=0.55)"
    )
    ast.parse(line)
    remote = paste_line(
        "standard",
        0.3,
        {"model": "openai:qwen", "base_url": "http://h/v1", "risk_aware": True},
        calibration_file="r/c.json",
    )
    ast.parse(remote)
    assert (
        'critic=make_critic("standard", model=ChatOpenAI(model="qwen", base_url="http://h/v1")'
        in remote
    )
    assert 'risk_aware=True, calibration="r/c.json", threshold=0.3))' in remote
    calibrated = paste_line(
        "inferact", 0.42, {"model": "openai:gpt-4o"}, calibration_file="r/inferact.json"
    )
    ast.parse(calibrated)
    assert calibrated == (
        'with_inferact(graph, model="openai:gpt-4o", calibration="r/inferact.json", '
        "threshold=0.42)"
    )


def test_eval_prints_a_ready_to_paste_line_per_critic(tmp_path, monkeypatch):
    scores = {f"q{i}": (0.25 if i % 2 == 0 else 0.75) for i in range(12)}
    critic = TableCritic(scores=scores)
    use_critics(monkeypatch, {"inferact": critic})
    data = write_jsonl(tmp_path / "t.jsonl", records(12))
    result = runner.invoke(
        app,
        eval_args(
            data,
            tmp_path / "r",
            "--preset",
            "hotpotqa",
            "--dev-split",
            "0.5",
            critic="inferact",
            model="openai:m",
        ),
    )
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "r" / "report.json").read_text())
    value = saved["critics"]["inferact"]["thresholds"]["dev"]["critic_threshold"]
    assert 0.25 < value <= 0.75
    expected = (
        f'with_inferact(graph, model="openai:m", preset="hotpotqa", calibration=None, '
        f"threshold={value:g})"
    )
    assert expected in result.output.splitlines()
    assert "thr: flag when 1 - score" not in result.output  # the old, backwards legend


# ------------------------------------------------------------------ never truncated
def _render(report, console=None) -> str:
    stream = io.StringIO()
    render_tables(report, console or output_console(stream))
    return stream.getvalue() if console is None else console.export_text()


def test_piped_output_never_truncates_values():
    names = {"multistep:product-with-a-long-name": 0}
    labels = [i % 2 == 0 for i in range(30)]
    scores = [0.123456 + 0.02 * i for i in range(30)]
    report = _report(scores, labels, dev_split=0.5, name=next(iter(names)))
    piped = _render(report)
    assert "…" not in piped
    for needle in (
        "multistep:product-with-a-long-name",
        "checked",
        "errors",
        "cached",
        "calls/traj",
        "prompt tok/traj",
        "output tok/traj",
    ):
        assert needle in piped
    narrow = Console(record=True, width=60, force_terminal=True, file=io.StringIO())
    assert "…" not in _render(report, narrow)  # a narrow terminal wraps, never cuts


def test_cli_output_through_a_pipe_is_not_cut(tmp_path, monkeypatch):
    scores = {f"q{i}": 0.1 + 0.07 * i for i in range(12)}
    use_critics(monkeypatch, {"multistep:product": TableCritic(scores=scores)})
    data = write_jsonl(tmp_path / "t.jsonl", records(12))
    result = runner.invoke(
        app,
        eval_args(data, tmp_path / "r", critic="multistep:product"),
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert "prompt tok/traj" in result.output and "multistep:product" in result.output


# ------------------------------------------------------------------ identical PR curves
def test_identical_curves_are_drawn_once_with_both_names(tmp_path):
    labels = [i % 3 != 0 for i in range(24)]
    steps = [[0.3 + 0.02 * i, 0.9] for i in range(24)]
    recs = [
        {
            "id": f"r{i}",
            "task": f"q{i}",
            "steps": [{"action": "Finish[x]"}],
            "label": "incorrect" if y else "correct",
        }
        for i, y in enumerate(labels)
    ]
    data = load_dataset(recs)
    name = "multistep:product"
    results = {
        name: {
            f"r{i}": Outcome(
                name, f"r{i}", Verdict(critic=name, score=s[0] * s[1], threshold=0.5, step_scores=s)
            )
            for i, s in enumerate(steps)
        }
    }
    report = build_report(data, results)
    names = [entry[0] for entry in pr_curves(report)]
    assert ["multistep:product", "multistep:product@product"] in names
    flat = [n for group in names for n in group]
    assert sorted(flat) == sorted(
        [name] + [f"{name}@{h}" for h in ("min", "max", "mean", "product")]
    )
    assert len(names) < len(flat)  # one line fewer than names: no curve hides another
    assert report.write(tmp_path)["plot"].exists()


# --------------------------------------------------------------------------- costs
@pytest.mark.parametrize("seed", range(4))
def test_cost_threshold_is_the_cheapest_of_every_possible_threshold(seed):
    rng = random.Random(seed)
    y = [int(rng.random() < 0.5) for _ in range(40)]
    risk = [round(rng.random(), 2) for _ in y]
    missed, review = rng.choice([(10, 1), (3, 1), (1, 1), (1, 4)])
    choice = cost_threshold(y, risk, cost_missed=missed, cost_review=review)

    def cost(flags):
        return sum(missed for f, t in zip(flags, y, strict=True) if t and not f) + review * sum(
            flags
        )

    scores = [1 - r for r in risk]
    candidates = sorted({0.0, 1.0, *scores, *(s + 1e-4 for s in scores)})
    best = min(cost([s < c for s in scores]) for c in candidates)
    flags = [s < choice.critic_threshold for s in scores]  # the critic's own rule
    assert cost(flags) == pytest.approx(best) == pytest.approx(choice.expected_cost * len(y))
    assert sum(flags) == choice.reviewed


def test_expensive_reviews_flag_nothing_and_bad_costs_are_errors():
    choice = cost_threshold([1, 0, 0, 0], [0.9, 0.1, 0.2, 0.3], cost_missed=1, cost_review=5)
    assert choice.critic_threshold == 0.0 and choice.reviewed == 0 and choice.missed == 1
    report = _report([0.1, 0.8, 0.9, 0.7], [True, False, False, False], costs=(1, 100))
    assert report.critics["c"].cost["choice"].critic_threshold == 0.0  # flags nothing
    json.dumps(report.to_dict(), allow_nan=False, default=str)  # no Infinity in report.json
    with pytest.raises(ValueError, match="cost_review must be a positive number"):
        cost_threshold([1], [0.5], cost_missed=1, cost_review=0)
    with pytest.raises(ValueError, match="costs must be"):
        evaluate_critics(records(2), {"t": TableCritic(scores={})}, costs=(1,))


def test_eval_cost_options_pick_the_dev_threshold_and_print_it_ready_to_paste(tmp_path):
    transcript = Transcript.load(_answers())
    model = ReplayChatModel(transcript=transcript)
    from conftest import SHARED_DATA

    from inferact_langgraph.critics import make_critic

    def build(*a, **k):
        return model

    args = eval_args(
        SHARED_DATA,
        tmp_path / "r",
        "--preset",
        "hotpotqa",
        "--dev-split",
        "0.5",
        "--cost-missed",
        "10",
        "--cost-review",
        "1",
        critic="inferact",
        model="openai:m",
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(factory, "build_model", build)
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "r" / "report.json").read_text())
    cost = saved["critics"]["inferact"]["cost"]
    assert cost["chosen_on"] == "dev part" and cost["choice"]["cost_missed"] == 10
    # The same choice from the API on the dev part's scores.
    rows = [r for r in saved["trajectories"] if r["split"] == "dev"]
    direct = cost_threshold(
        [r["label"] for r in rows],
        [r["critics"]["inferact"]["risk_score"] for r in rows],
        cost_missed=10,
        cost_review=1,
    )
    assert cost["choice"]["critic_threshold"] == direct.critic_threshold
    line = (
        f'with_inferact(graph, model="openai:m", preset="hotpotqa", calibration=None, '
        f"threshold={direct.critic_threshold:g})"
    )
    assert line in result.output.splitlines()
    assert "lowest expected cost on the dev part" in result.output
    assert make_critic("inferact", model=None, threshold=direct.critic_threshold)
    half = runner.invoke(
        app,
        eval_args(
            SHARED_DATA,
            tmp_path / "x",
            "--preset",
            "hotpotqa",
            "--cost-missed",
            "10",
            critic="inferact",
            model="openai:m",
        ),
    )
    assert half.exit_code == 2
    assert "give both --cost-missed and --cost-review" in " ".join(
        half.output.replace("│", " ").split()
    )


def _answers():
    from conftest import ANSWERS

    return ANSWERS


# --------------------------------------------------------------------------- dollars
def test_dollar_cost_of_checks_from_langchain_communitys_price_table():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_community.callbacks.openai_info import (
            TokenType,
            get_openai_token_cost_for_model,
        )

    recs = [
        {
            "id": f"r{i}",
            "task": f"q{i}",
            "steps": [{"action": "Finish[x]"}],
            "label": "incorrect" if i % 2 else "correct",
        }
        for i in range(4)
    ]
    data = load_dataset(recs)
    usage = Usage(model_calls=3, input_tokens=2500, output_tokens=400)
    results = {
        "inferact": {
            f"r{i}": Outcome(
                "inferact",
                f"r{i}",
                Verdict(critic="inferact", score=0.2 + 0.2 * i, threshold=0.5, usage=usage),
            )
            for i in range(4)
        }
    }
    report = build_report(data, results, meta={"model": "openai:gpt-4-turbo"})
    expected = get_openai_token_cost_for_model("gpt-4-turbo", 4 * 2500) + (
        get_openai_token_cost_for_model("gpt-4-turbo", 4 * 400, token_type=TokenType.COMPLETION)
    )
    assert report.critics["inferact"].dollars == pytest.approx(expected)
    assert report.to_dict()["critics"]["inferact"]["usage"]["dollars"] == pytest.approx(expected)
    text = _render(report)
    assert f"{expected:.4f}" in text and "langchain-community" in text
    local = build_report(
        data, results, meta={"model": "openai:gpt-4-turbo", "base_url": "http://localhost:8000/v1"}
    )
    assert local.critics["inferact"].dollars is None  # a local server's price is not OpenAI's
    assert "$ total" not in _render(local)
    unknown = build_report(data, results, meta={"model": "anthropic:claude-x"})
    assert unknown.critics["inferact"].dollars is None
