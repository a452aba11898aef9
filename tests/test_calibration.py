"""Calibration: fitted by held-out log-loss, a small JSON file, applied by every critic."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
from _eval_fakes import eval_args
from conftest import ANSWERS, SHARED_DATA, read_jsonl
from typer.testing import CliRunner

from inferact_langgraph._wrap import build_critic
from inferact_langgraph.calibration import (
    Calibration,
    CalibrationError,
    fit_calibration,
    load_calibration,
)
from inferact_langgraph.cli import app
from inferact_langgraph.critics import Critic, Usage, make_critic
from inferact_langgraph.errors import InferActError
from inferact_langgraph.eval import cross_validated_calibration, evaluate_critics
from inferact_langgraph.replay import ReplayChatModel, Transcript
from inferact_langgraph.trajectory import Step, Trajectory


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
    assert issubclass(CalibrationError, InferActError)  # the library's one root (and ValueError)
    assert issubclass(CalibrationError, ValueError)
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
        assert all(b > a for a, b in itertools.pairwise(values))
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
        spec: make_critic(spec, model=model, preset="hotpotqa", calibration=None)
        for spec in ("inferact", "standard")
    }
    report = evaluate_critics(SHARED_DATA, critics, calibrate=False)
    labels = [row["label"] for row in report.rows]
    return {
        name: ([row["critics"][name]["score"] for row in report.rows], [1 - y for y in labels])
        for name in critics
    }


@pytest.fixture(scope="module")
def cross_validated(replayed_scores):
    return {
        name: cross_validated_calibration(scores, on_track, folds=5, repeats=10, seed=0)
        for name, (scores, on_track) in replayed_scores.items()
    }


@pytest.mark.parametrize("name", ["inferact", "standard"])
def test_cross_validated_calibration_on_real_answers(cross_validated, name):
    cv = cross_validated[name]
    before, after, per_fold, floor = cv["before"], cv["after"], cv["per_fold"], cv["floor"]
    print(
        f"{name}: pooled out-of-fold ECE {100 * before['ece']:.1f}% -> "
        f"{100 * after['ece']['mean']:.1f}% [{100 * after['ece']['min']:.1f}-"
        f"{100 * after['ece']['max']:.1f}] (equal-mass {100 * before['ece_mass']:.1f} -> "
        f"{100 * after['ece_mass']['mean']:.1f}); per fold {100 * per_fold['after']['ece']:.1f}%;"
        f" floor {100 * floor['ece']['mean']:.1f}% (observed at its "
        f"{100 * floor['ece']['share_at_or_under_observed']:.0f}th percentile); Brier "
        f"{before['brier']:.3f} -> {after['brier']['mean']:.3f}; AUC-PR pooled "
        f"{100 * before['auc_pr']:.2f} -> {100 * after['auc_pr']['mean']:.2f}, per fold "
        f"{100 * cv['fold_auc_pr']['before']:.2f} -> {100 * cv['fold_auc_pr']['after']:.2f}"
    )
    assert cv["n"] == 90 and cv["folds"] == 5 and floor["draws"] == 2000
    assert before["ece"] > 0.11  # the raw scores are miscalibrated (11.5% / 16.3%)
    for key in ("ece", "ece_mass"):
        assert after[key]["mean"] <= 0.7 * before[key]  # held-out ECE drops by 30%+
        # Right probabilities show about as much on 90 labels: the calibrated ECE is not
        # worse than sampling noise (below the 90th percentile of the floor).
        assert floor[key]["share_at_or_under_observed"] < 0.9
        assert after[key]["mean"] < floor[key]["q90"]
        # Within folds of 18 a binned ECE is mostly noise: it reads higher than pooled.
        assert per_fold["after"][key] > after[key]["mean"]
    assert after["brier"]["mean"] < before["brier"]
    # A monotone map keeps the ranking: the map fitted on all 90 leaves AUC-PR exactly as is,
    # and within folds it moves only where float rounding separated equal scores.
    whole = cv["all_data"]["auc_pr"]
    assert whole["after"] == pytest.approx(whole["before"], abs=1e-12)
    fold_auc = cv["fold_auc_pr"]
    assert fold_auc["after"] == pytest.approx(fold_auc["before"], abs=5e-4)
    assert fold_auc["changed"] <= 1 and fold_auc["max_change"] < 0.02


def test_only_float_rounding_twins_can_share_a_calibrated_value(replayed_scores):
    # Why one fold's AUC-PR moved: InferAct's scores hold 0.6 and 0.6000000000000001 (the
    # same answer, summed in another order), and that fold's isotonic map is flat there;
    # no map into [0, 1] can keep a 1-ulp difference on a flat step.
    scores, on_track = replayed_scores["inferact"]
    assert 0.6 in scores and 0.6000000000000001 in scores
    fold_map = Calibration.isotonic(
        [0.02, 0.545, 0.565, 0.62, 0.625, 0.82], [0.0, 0.0, 0.625, 0.625, 0.923, 0.923]
    )
    assert fold_map(0.6) == fold_map(0.6000000000000001)
    # Scores that differ by more than rounding stay strictly ordered, by every fitted map.
    distinct = sorted({round(s, 9) for s in scores})
    for method in ("isotonic", "platt", "platt-logit"):
        values = fit_calibration(scores, on_track, method=method).apply(distinct)
        assert all(b > a for a, b in itertools.pairwise(values)), method
    values = fold_map.apply(distinct)
    assert all(b > a for a, b in itertools.pairwise(values))


def test_equal_mass_ece_does_not_depend_on_the_order_of_ties():
    from inferact_langgraph.eval import expected_calibration_error

    y = [1, 0, 1, 0, 1, 1, 0, 0, 1, 0]
    p = [0.5, 0.5, 0.5, 0.5, 0.9, 0.9, 0.1, 0.1, 0.7, 0.3]
    orders = [list(range(10)), list(reversed(range(10))), [3, 1, 0, 2, 9, 8, 4, 5, 7, 6]]
    values = {
        round(
            expected_calibration_error(
                [y[i] for i in o], [p[i] for i in o], n_bins=3, binning="mass"
            ),
            12,
        )
        for o in orders
    }
    assert len(values) == 1
    with pytest.raises(ValueError, match="binning must be 'width' or 'mass'"):
        expected_calibration_error(y, p, binning="quantile")


def test_eval_fits_on_dev_reports_held_out_and_writes_a_file_every_critic_loads(tmp_path):
    model = ReplayChatModel(transcript=Transcript.load(ANSWERS))
    from inferact_langgraph import _factory as factory

    out = tmp_path / "r"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(factory, "build_model", lambda *a, **k: model)
        result = CliRunner().invoke(
            app,
            eval_args(
                SHARED_DATA,
                out,
                "--preset",
                "hotpotqa",
                "--dev-split",
                "0.5",
                "--calibration-cv",
                "5",
                critic="inferact",
                model="openai:m",
            ),
        )
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "report.json").read_text())["critics"]["inferact"]
    figures = saved["calibration_figures"]
    assert figures["fitted_on"] == "dev part" and figures["n_held_out"] == 45
    assert (
        set(figures["before"])
        == set(figures["after"])
        == {
            "ece",
            "ece_mass",
            "brier",
            "auc_pr",
        }
    )
    cv = figures["cv"]
    assert cv["after"]["ece"]["mean"] < cv["before"]["ece"]
    assert "Calibration of P(on track)" in result.output
    # The cross-validated figures are printed: pooled out-of-fold, per fold, the floor.
    pct = lambda v: f"{100 * v:.1f}"  # noqa: E731
    ece, fold = cv["after"]["ece"], cv["per_fold"]
    assert f"{pct(cv['before']['ece'])} → {pct(ece['mean'])} [{pct(ece['min'])}-" in (result.output)
    assert f"{pct(fold['before']['ece'])} → {pct(fold['after']['ece'])} (mass" in result.output
    assert (
        f"inferact: cross-validated ECE {pct(ece['mean'])}% (pooled out-of-fold, mean of 10 "
        f"repeats), {'at or under' if ece['mean'] <= 0.05 else 'above'} 5.0%."
    ) in result.output
    assert f"Right probabilities show {pct(cv['floor']['ece']['mean'])}% on average" in (
        result.output
    )
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
