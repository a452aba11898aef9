"""Metrics of the evaluation harness: hand-computed cases and scikit-learn on random scores."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import (
    average_precision_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from inferact_langgraph.eval.metrics import (
    best_threshold,
    compute_metrics,
    cost_metric,
    expected_calibration_error,
    stratified_split,
)

# ---------------------------------------------------------------- hand-computed


def test_hand_computed_confusion_and_f1():
    # labels 1 = off track. risk >= 0.5 flags rows 0, 3, 4.
    y = [1, 1, 0, 0, 1, 0]
    risk = [0.9, 0.2, 0.1, 0.7, 0.5, 0.3]
    m = compute_metrics(y, risk, threshold=0.5)
    assert (m.tp, m.fp, m.fn, m.tn) == (2, 1, 1, 2)
    assert m.precision == pytest.approx(2 / 3)
    assert m.recall == pytest.approx(2 / 3)
    assert m.f1 == pytest.approx(2 / 3)
    # class 0: tp0 = 2, fp0 = 1 (row 1), fn0 = 1 (row 3): F1 = 2/3 too.
    assert m.macro_f1 == pytest.approx(2 / 3)
    assert m.accuracy == pytest.approx(4 / 6)
    assert (m.n, m.n_positive) == (6, 3)


def test_hand_computed_best_threshold():
    # sorted risk: 0.9(1) 0.8(0) 0.6(1) 0.4(1) 0.2(0)
    y = [1, 0, 1, 1, 0]
    risk = [0.9, 0.8, 0.6, 0.4, 0.2]
    # t=0.9: P=1 R=1/3 F1=.5; t=0.8: P=.5 R=1/3 F1=.4; t=0.6: P=2/3 R=2/3 F1=2/3;
    # t=0.4: P=3/4 R=1 F1=6/7 (best); t=0.2: P=3/5 R=1 F1=.75
    choice = best_threshold(y, risk)
    assert choice.threshold == 0.4
    assert choice.f1 == pytest.approx(6 / 7)
    assert (choice.precision, choice.recall) == (pytest.approx(0.75), 1.0)
    assert choice.score_threshold == pytest.approx(0.6)


def test_best_threshold_ties_go_to_the_higher_threshold():
    # t=0.8: P=1, R=.5, F1=2/3; t=0.3: P=.5 R=1 F1=2/3. Tie -> 0.8 (fewer flags).
    choice = best_threshold([1, 0, 0, 1], [0.8, 0.5, 0.4, 0.3])
    assert choice.f1 == pytest.approx(2 / 3)
    assert choice.threshold == 0.8


def test_best_threshold_needs_a_positive_and_matching_shapes():
    with pytest.raises(ValueError, match="no off-track"):
        best_threshold([0, 0], [0.1, 0.2])
    with pytest.raises(ValueError, match="shape"):
        best_threshold([0, 1], [0.1])
    with pytest.raises(ValueError, match="no scored"):
        best_threshold([], [])


def test_auc_pr_hand_computed():
    # ranking: 1, 0, 1 -> AP = (1/2)*1 + (1/2)*(2/3) = 5/6
    m = compute_metrics([1, 0, 1], [0.9, 0.5, 0.1], threshold=0.5)
    assert m.auc_pr == pytest.approx(5 / 6)
    assert m.roc_auc == pytest.approx(0.5)


def test_undefined_figures_are_none():
    m = compute_metrics([0, 0, 0], [0.1, 0.5, 0.9], threshold=0.5)
    assert m.auc_pr is None and m.roc_auc is None
    assert m.recall == 0.0 and m.fp == 2


def test_ece_hand_computed():
    # 2 bins: [0, .5): p .1 .2, y 0 1 -> |.15 - .5| = .35 (x2); [.5, 1]: p .9 .8, y 1 1 -> .15 (x2)
    assert expected_calibration_error([1, 0, 1, 1], [0.9, 0.1, 0.8, 0.2], n_bins=2) == (
        pytest.approx(0.25)
    )
    # perfectly calibrated extremes
    assert expected_calibration_error([1, 0], [1.0, 0.0]) == 0.0
    with pytest.raises(ValueError):
        expected_calibration_error([1], [1.5])
    with pytest.raises(ValueError):
        expected_calibration_error([1], [0.5], n_bins=0)


def test_cost_metric_hand_computed():
    result = cost_metric(
        [1, 1, 1, 0, 1], [False, True, False, False, False], [59.0, 120.0, None, 80.0, 1.5]
    )
    assert result.missed == 3
    assert result.missed_price == pytest.approx(60.5)
    assert result.missed_without_price == 1
    assert cost_metric([1], [True], [5.0]).missed_price is None
    m = compute_metrics([1, 1, 0], [0.9, 0.1, 0.2], threshold=0.5, prices=[10.0, 25.0, 99.0])
    assert (m.fn, m.missed_price) == (1, 25.0)


# ---------------------------------------------------------------- against scikit-learn


@pytest.mark.parametrize("seed", range(8))
def test_against_sklearn_on_random_scores(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    y = rng.integers(0, 2, n)
    y[0], y[1] = 0, 1
    # some ties, as verbalised probabilities have them
    risk = np.round(np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1), 2)
    choice = best_threshold(y, risk)
    # brute force: every distinct score as a threshold
    brute = max(f1_score(y, (risk >= t).astype(int), zero_division=0) for t in np.unique(risk))
    assert choice.f1 == pytest.approx(brute)
    pred = (risk >= choice.threshold).astype(int)
    assert choice.f1 == pytest.approx(f1_score(y, pred))
    m = compute_metrics(y, risk, threshold=choice.threshold)
    assert m.precision == pytest.approx(precision_score(y, pred))
    assert m.recall == pytest.approx(recall_score(y, pred))
    assert m.f1 == pytest.approx(choice.f1)
    assert m.macro_f1 == pytest.approx(f1_score(y, pred, average="macro"))
    assert m.auc_pr == pytest.approx(average_precision_score(y, risk))
    assert m.roc_auc == pytest.approx(roc_auc_score(y, risk))
    assert 0.0 <= m.auc_pr_trapezoid <= 1.0


@pytest.mark.parametrize("seed", range(5))
def test_ece_against_sklearn_calibration_curve(seed):
    rng = np.random.default_rng(seed)
    p = rng.random(300)
    y = (rng.random(300) < p**1.5).astype(int)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    counts = np.bincount(np.minimum((p * 10).astype(int), 9), minlength=10)
    counts = counts[counts > 0]
    expected = float(np.sum(counts / len(p) * np.abs(prob_true - prob_pred)))
    assert expected_calibration_error(y, p) == pytest.approx(expected)
    # binary symmetry: off-track risk with off-track labels == on-track score with on-track labels
    assert expected_calibration_error(1 - y, 1 - p) == pytest.approx(expected)


# ---------------------------------------------------------------- the split


def test_split_is_deterministic_stratified_and_a_partition():
    labels = [1] * 56 + [0] * 34
    dev, test = stratified_split(labels, 0.3, seed=0)
    assert (dev, test) == stratified_split(labels, 0.3, seed=0)
    assert stratified_split(labels, 0.3, seed=1)[0] != dev
    assert sorted(dev + test) == list(range(90))
    assert not set(dev) & set(test)
    assert sum(labels[i] for i in dev) == round(0.3 * 56)
    assert sum(1 - labels[i] for i in dev) == round(0.3 * 34)
    assert dev == sorted(dev) and test == sorted(test)


def test_split_keeps_both_parts_non_empty_per_class():
    dev, test = stratified_split([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], 0.1, seed=3)
    assert sum([1, 1, 0, 0, 0, 0, 0, 0, 0, 0][i] for i in dev) == 1  # at least one positive
    assert len(test) >= 2


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.2, 1.5, float("nan")])
def test_split_rejects_bad_fractions(fraction):
    with pytest.raises(ValueError, match="strictly between"):
        stratified_split([0, 1], fraction)
