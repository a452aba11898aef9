"""Calibration: fitted by held-out log-loss, a small JSON file, applied by every critic."""

from __future__ import annotations

import json
import math
import random

import pytest
from conftest import ANSWERS, SHARED_DATA, read_jsonl
from typer.testing import CliRunner

from inferact_langgraph.calibration import (
    Calibration,
    CalibrationError,
    fit_calibration,
    load_calibration,
)
from inferact_langgraph.cli import app
from inferact_langgraph.critics import Critic, Usage, make_critic
from inferact_langgraph.eval import cross_validated_calibration, evaluate_critics
from inferact_langgraph.replay import ReplayChatModel, Transcript
from inferact_langgraph.trajectory import Step, Trajectory
from inferact_langgraph.wrap import build_critic


def test_file_round_trip_and_clear_errors(tmp_path):
    platt = Calibration.platt(slope=6.0, intercept=-3.0)
    iso = Calibration.isotonic([0.1, 0.5, 0.9], [0.05, 0.4, 0.95])
    for calibration in (platt, iso):
        path = calibration.save(tmp_path / f"{calibration.method}.json")
        loaded = Calibration.load(path)
        assert loaded == calibration and loaded(0.3) == calibration(0.3)
        assert load_calibration(str(path)) == calibration
        assert len(path.read_text()) < 2000  # a small file
    (tmp_path / "bad.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(CalibrationError, match='expected a JSON object with "format"'):
        Calibration.load(tmp_path / "bad.json")
    data = iso.to_dict() | {"version": 9}
    with pytest.raises(CalibrationError, match="version 9 is not supported"):
        Calibration.from_dict(data)
    with pytest.raises(CalibrationError, match="must be non-decreasing"):
        Calibration.isotonic([0.1, 0.5], [0.6, 0.2])
    with pytest.raises(CalibrationError, match="monotone"):
        Calibration.platt(slope=-1.0, intercept=0.0)
    with pytest.raises(CalibrationError, match="calibration must be a Calibration"):
        load_calibration(3.5)
    with pytest.raises(FileNotFoundError):
        load_calibration(tmp_path / "missing.json")


def test_calibrations_are_strictly_increasing_so_the_ranking_is_kept():
    iso = Calibration.isotonic([0.2, 0.4, 0.8], [0.0, 0.5, 0.5])  # flat and at 0
    scores = [i / 100 for i in range(101)]
    for calibration in (iso, Calibration.platt(slope=3.0, intercept=-1.0, logit=True)):
        values = calibration.apply(scores)
        assert all(b > a for a, b in zip(values, values[1:], strict=False))
        assert all(0.0 < v < 1.0 for v in values)


def _synthetic(n, seed, true_p):
    rng = random.Random(seed)
    scores = [rng.random() for _ in range(n)]
    return scores, [int(rng.random() < true_p(s)) for s in scores]


def test_method_is_chosen_by_held_out_log_loss():
    # A logistic truth: a 2-parameter Platt curve generalises better than isotonic steps.
    scores, labels = _synthetic(300, 1, lambda s: 1 / (1 + math.exp(-(8 * s - 4))))
    platt = fit_calibration(scores, labels)
    losses = platt.info["selection"]["held_out_log_loss"]
    assert platt.method == min(losses, key=losses.get)
    assert platt.method.startswith("platt")
    # A step truth that no logistic curve follows: isotonic wins on held-out log-loss.
    scores, labels = _synthetic(400, 2, lambda s: 0.1 if s < 0.3 or s > 0.6 else 0.9)
    step = fit_calibration(scores, labels)
    assert step.method == "isotonic", step.info["selection"]
    assert step.info["n"] == 400 and step.info["selection"]["folds"] == 5


def test_fit_needs_both_classes():
    with pytest.raises(CalibrationError, match="at least 2 on-track and 2 off-track"):
        fit_calibration([0.1, 0.2, 0.9], [0, 1, 1])
    with pytest.raises(CalibrationError, match=r"scores must be numbers in \[0, 1\]"):
        fit_calibration([0.1, 1.2, 0.3, 0.4], [0, 1, 0, 1])


class Fixed(Critic):
    name = "fixed"

    async def _aevaluate(self, trajectory, *, risk=None):
        return self.verdict(score=0.6, usage=Usage())


def test_every_critic_applies_its_calibration_before_the_threshold(tmp_path):
    trajectory = Trajectory("t", (Step("buy"),))
    harsh = Calibration.platt(slope=10.0, intercept=-8.0)  # 0.6 -> 0.12
    path = harsh.save(tmp_path / "c.json")
    raw = Fixed(model=None).evaluate(trajectory)
    calibrated = Fixed(model=None, calibration=path).evaluate(trajectory)
    assert (raw.score, raw.flagged, raw.uncalibrated_score) == (0.6, False, None)
    assert calibrated.score == pytest.approx(harsh(0.6)) and calibrated.flagged
    assert calibrated.uncalibrated_score == 0.6
    for spec in ("inferact", "standard", "multistep:product", "self_consistency", "logprob"):
        assert make_critic(spec, model=None, calibration=path).calibration == harsh


# ------------------------------------------------------ on the capable model's real answers
@pytest.fixture(scope="module")
def replayed_scores():
    model = ReplayChatModel(transcript=Transcript.load(ANSWERS))
    critics = {
        spec: make_critic(spec, model=model, preset="hotpotqa") for spec in ("inferact", "standard")
    }
    report = evaluate_critics(SHARED_DATA, critics, calibrate=False)
    labels = [row["label"] for row in report.rows]
    return {
        name: ([row["critics"][name]["score"] for row in report.rows], [1 - y for y in labels])
        for name in critics
    }


@pytest.mark.parametrize("name", ["inferact", "standard"])
def test_cross_validated_calibration_on_real_answers(replayed_scores, name):
    scores, on_track = replayed_scores[name]
    cv = cross_validated_calibration(scores, on_track, folds=5, repeats=10, seed=0)
    before, after = cv["before"], cv["after"]
    print(
        f"{name}: ECE {100 * before['ece']:.1f}% -> {100 * after['ece']['mean']:.1f}% "
        f"[{100 * after['ece']['min']:.1f}-{100 * after['ece']['max']:.1f}], Brier "
        f"{before['brier']:.3f} -> {after['brier']['mean']:.3f}, AUC-PR per fold "
        f"{100 * cv['fold_auc_pr']['before']:.2f} -> {100 * cv['fold_auc_pr']['after']:.2f}"
    )
    assert before["ece"] > 0.11  # the raw scores are miscalibrated (11.5% / 16.3%)
    assert after["ece"]["mean"] <= 0.6 * before["ece"]  # held-out ECE drops by 40%+
    assert after["brier"]["mean"] < before["brier"]
    # Each fold's map is monotone: the ranking within a fold, hence AUC-PR, is kept.
    assert cv["fold_auc_pr"]["after"] == pytest.approx(cv["fold_auc_pr"]["before"], abs=5e-4)


def test_eval_fits_on_dev_reports_held_out_and_writes_a_file_every_critic_loads(tmp_path):
    model = ReplayChatModel(transcript=Transcript.load(ANSWERS))
    from inferact_langgraph import factory

    out = tmp_path / "r"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(factory, "build_model", lambda *a, **k: model)
        result = CliRunner().invoke(
            app,
            [
                "eval",
                "--data",
                str(SHARED_DATA),
                "--critic",
                "inferact",
                "--model",
                "openai:m",
                "--preset",
                "hotpotqa",
                "--dev-split",
                "0.5",
                "--calibration-cv",
                "5",
                "--no-cache",
                "--no-progress",
                "--out",
                str(out),
            ],
        )
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "report.json").read_text())["critics"]["inferact"]
    figures = saved["calibration_figures"]
    assert figures["fitted_on"] == "dev part" and figures["n_held_out"] == 45
    assert set(figures["before"]) == set(figures["after"]) == {"ece", "brier", "auc_pr"}
    assert figures["cv"]["after"]["ece"]["mean"] < figures["cv"]["before"]["ece"]
    assert "Calibration of P(on track)" in result.output
    assert f"{100 * figures['before']['ece']:.1f} → {100 * figures['after']['ece']:.1f}" in (
        result.output
    )
    assert (out / "reliability.png").read_bytes()[:4] == b"\x89PNG"
    assert f"reliability: {out / 'reliability.png'}" in result.output
    path = out / "calibration" / "inferact.json"
    calibration = Calibration.load(path)
    assert calibration.info["fitted_on"] == "dev part" and calibration.info["n"] == 45
    # The file makes a critic's threshold a probability: its verdicts carry both scores.
    critic = make_critic("inferact", model=model, preset="hotpotqa", calibration=path)
    record = read_jsonl(SHARED_DATA)[34]
    verdict = critic.evaluate(Trajectory.from_record(record))
    row = json.loads((out / "report.json").read_text())["trajectories"][34]
    assert verdict.uncalibrated_score == row["critics"]["inferact"]["score"]
    assert verdict.score == pytest.approx(row["critics"]["inferact"]["calibrated_score"])
    # The calibrated paste line builds InferAct with the file, the threshold a probability.
    threshold = figures["choice"]["critic_threshold"]
    line = (
        f'with_inferact(graph, model="openai:m", preset="hotpotqa", calibration="{path}", '
        f"threshold={threshold:.6g})"
    )
    assert line in result.output.splitlines()
    given = {}

    def paste(graph, *, model, **options):  # with_inferact's critic, on the replay model
        given["model"] = model
        return build_critic(model=replay, **options)

    replay = model
    built = eval(line, {"graph": None, "with_inferact": paste})
    assert given["model"] == "openai:m"
    assert built.calibration == calibration and built.threshold == float(f"{threshold:.6g}")
    assert built.preset == "hotpotqa"
