"""Reports: protocols (dev -> held-out vs the paper's), Appendix D aggregations, outputs."""

from __future__ import annotations

import json

import pytest
from _eval_fakes import records
from rich.console import Console

from inferact_langgraph.critics import Usage, Verdict
from inferact_langgraph.eval import (
    build_report,
    compute_metrics,
    evaluate_critics,
    load_dataset,
    render_tables,
    stratified_split,
)
from inferact_langgraph.eval.metrics import best_threshold
from inferact_langgraph.eval.runner import Outcome


def _results(data, scores, *, name="c", steps=None, threshold=0.5):
    out = {}
    for i, item in enumerate(data.items):
        if scores[i] is None:
            out[item.id] = Outcome(name, item.id, error="CriticParseError: nothing")
            continue
        v = Verdict(
            critic=name,
            score=scores[i],
            threshold=threshold,
            step_scores=steps[i] if steps else [],
            usage=Usage(model_calls=3, input_tokens=100, output_tokens=10),
        )
        out[item.id] = Outcome(name, item.id, verdict=v)
    return {name: out}


def _data(n=40, prices=False):
    return load_dataset(records(n, prices=prices))


def _noisy_scores(data, seed=0):
    import random

    rng = random.Random(seed)
    return [
        min(1.0, max(0.0, (0.35 if it.label else 0.65) + rng.uniform(-0.4, 0.4)))
        for it in data.items
    ]


def test_held_out_uses_the_dev_threshold_and_the_paper_protocol_tunes_on_the_data():
    data = _data(40)
    scores = _noisy_scores(data)
    report = build_report(data, _results(data, scores), dev_split=0.3, seed=7)
    s = report.critics["c"]
    labels = data.labels
    risk = [1 - x for x in scores]
    dev, test = stratified_split(labels, 0.3, seed=7)
    dev_choice = best_threshold([labels[i] for i in dev], [risk[i] for i in dev])
    expected = compute_metrics(
        [labels[i] for i in test], [risk[i] for i in test], threshold=dev_choice.threshold
    )
    assert s.thresholds["dev"] == dev_choice
    assert s.metrics["held_out"] == expected
    paper = best_threshold(labels, risk)
    assert s.metrics["paper"] == compute_metrics(labels, risk, threshold=paper.threshold)
    tuned = s.metrics["held_out_tuned"]
    assert tuned.n == len(test) and tuned.f1 >= expected.f1  # tuning on the test is optimistic
    splits = [row["split"] for row in report.rows]
    assert splits.count("dev") == len(dev) and splits.count("held_out") == len(test)
    assert report.meta["dev_size"] == len(dev) and report.meta["seed"] == 7


def test_own_threshold_uses_the_verdicts_flags():
    data = _data(4)
    report = build_report(data, _results(data, [0.1, 0.9, 0.6, 0.4], threshold=0.5))
    own = report.critics["c"].metrics["own"]
    # labels: 1 0 1 0; flagged (score < .5): 1 0 0 1
    assert (own.tp, own.fp, own.fn, own.tn) == (1, 1, 1, 1)
    assert own.threshold is None
    assert "own" not in report.critics["c"].thresholds


def test_errors_are_excluded_and_counted():
    data = _data(6)
    report = build_report(data, _results(data, [0.1, 0.9, None, 0.8, 0.2, None]))
    s = report.critics["c"]
    assert (s.checked, s.scored, s.errors) == (6, 4, 2)
    assert s.metrics["paper"].n == 4
    assert s.model_calls == 12 and s.per_trajectory("input_tokens") == 100


def test_multistep_aggregations_from_the_same_step_scores():
    data = _data(8)
    steps = [[0.9, 0.2] if it.label else [0.8, 0.9] for it in data.items]
    scores = [0.9 * 0.2 if it.label else 0.72 for it in data.items]
    report = build_report(data, _results(data, scores, steps=steps), dev_split=0.5)
    aggs = report.critics["c"].aggregations
    assert list(aggs) == ["min", "max", "mean", "product"]
    row = report.rows[0]["critics"]["c"]["aggregations"]
    assert row == pytest.approx({"min": 0.2, "max": 0.9, "mean": 0.55, "product": 0.18})
    assert aggs["min"].metrics["paper"].f1 == 1.0  # min separates the classes
    assert aggs["max"].metrics["paper"].auc_pr < 1.0  # max (0.9 vs 0.9) cannot
    assert set(aggs["product"].metrics) == {"paper", "held_out", "held_out_tuned", "own"}


def test_cost_metric_in_the_report_with_prices():
    data = _data(6, prices=True)  # prices 10..60; labels 1 0 1 0 1 0
    report = build_report(data, _results(data, [0.9, 0.9, 0.1, 0.9, 0.9, 0.9]))
    own = report.critics["c"].metrics["own"]
    assert own.fn == 2 and own.missed_price == pytest.approx(10.0 + 50.0)
    assert report.meta["has_prices"] is True


def test_binary_scores_get_a_note():
    data = _data(6)
    report = build_report(data, _results(data, [0.0, 1.0, 0.0, 1.0, 1.0, 1.0]))
    assert any("two values" in n for n in report.critics["c"].notes)


def test_write_json_and_png_and_render(tmp_path):
    data = _data(20, prices=True)
    scores = _noisy_scores(data, seed=3)
    steps = [[s, min(1.0, s + 0.1)] for s in scores]
    report = build_report(
        data, _results(data, scores, steps=steps), dev_split=0.3, meta={"model": "scripted"}
    )
    written = report.write(tmp_path / "out")
    raw = written["json"].read_text()

    def no_nan(value):
        raise AssertionError(f"non-JSON constant {value} in report.json")

    saved = json.loads(raw, parse_constant=no_nan)
    assert saved["meta"]["model"] == "scripted"
    assert set(saved["protocols"]) == {"held_out", "held_out_tuned", "paper", "own"}
    assert len(saved["trajectories"]) == 20
    entry = saved["trajectories"][0]["critics"]["c"]
    assert {"score", "risk_score", "flagged", "step_scores", "aggregations"} <= set(entry)
    c = saved["critics"]["c"]
    assert c["metrics"]["held_out"]["f1"] is not None
    assert c["thresholds"]["paper"]["score_threshold"] == pytest.approx(
        1 - c["thresholds"]["paper"]["threshold"]
    )
    assert set(c["aggregations"]) == {"min", "max", "mean", "product"}
    png = written["plot"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    console = Console(record=True, width=120)
    render_tables(report, console)
    text = console.export_text()
    for needle in ("Table 1", "dev→test", "all*", "Appendix D", "product", "FN $", "calls/traj"):
        assert needle in text


def test_partial_report_is_marked(tmp_path):
    data = _data(4)
    results = _results(data, [0.1, 0.9, 0.2, 0.8])
    results["c"].pop("r3")
    report = build_report(data, results, interrupted=True)
    console = Console(record=True, width=120)
    render_tables(report, console)
    assert "PARTIAL" in console.export_text()
    assert report.critics["c"].checked == 3


def test_critic_with_no_verdict_does_not_break_the_report(tmp_path):
    data = _data(4)
    report = build_report(data, _results(data, [None] * 4), dev_split=0.5)
    s = report.critics["c"]
    assert s.scored == 0 and s.metrics == {} and s.notes
    report.write(tmp_path)  # no curve to draw: no PNG, no crash
    render_tables(report, Console(record=True))


def test_python_api_end_to_end(tmp_path):
    from _eval_fakes import TableCritic

    scores = {f"q{i}": (0.3 if i % 2 == 0 else 0.7) for i in range(10)}
    report = evaluate_critics(
        records(10),
        {"t": TableCritic(scores=scores)},
        dev_split=0.4,
        cache=tmp_path / "c.sqlite",
        out=tmp_path / "r",
    )
    assert report.critics["t"].metrics["held_out"].f1 == 1.0
    assert (tmp_path / "r" / "report.json").exists()
    with pytest.raises(ValueError, match="strictly between"):
        evaluate_critics(records(2), {"t": TableCritic(scores=scores)}, dev_split=2.0)


def test_counts_and_usage_add_up_over_verdicts_errors_and_cache_hits():
    data = _data(10)
    scores = [0.2, None, 0.8, 0.7, None, 0.1, 0.9, 0.3, 0.6, 0.4]
    results = _results(data, scores)
    first = data.items[0].id
    results["c"][first] = Outcome("c", first, results["c"][first].verdict, cached=True)
    s = build_report(data, results).critics["c"]
    assert (s.checked, s.scored, s.errors, s.cached) == (10, 8, 2, 1)
    assert (s.model_calls, s.input_tokens, s.output_tokens) == (24, 800, 80)
    assert s.first_error == f"{data.items[1].id}: CriticParseError: nothing"


def test_writing_the_report_names_the_calibration_file_without_changing_the_summary(tmp_path):
    data = _data(40)
    report = build_report(data, _results(data, _noisy_scores(data)), dev_split=0.3, seed=7)
    figures_before = dict(report.critics["c"].calibration_figures or {})
    assert figures_before and "file" not in figures_before
    written = report.write(tmp_path / "out")
    saved = json.loads(written["json"].read_text())
    assert saved["critics"]["c"]["calibration_figures"]["file"] == str(written["calibration:c"])
    assert report.critics["c"].calibration_figures == figures_before  # the summary is as built
    assert report.to_dict()["critics"]["c"]["calibration_figures"]["file"] == str(
        written["calibration:c"]
    )


def test_the_report_module_holds_the_data_and_leaves_rendering_and_plots_to_their_modules():
    from pathlib import Path

    import inferact_langgraph.eval.report as report_module

    source = Path(report_module.__file__).read_text()
    assert len(source.splitlines()) < 500
    assert "rich" not in source and "matplotlib" not in source
