"""Detection metrics of the paper (Table 1, Table 3, Appendix D), computed with scikit-learn.

Conventions, used everywhere in :mod:`inferact_langgraph.eval`:

* The positive class (1) is **off track**: the trajectories a critic should flag.
* A critic's ``Verdict.score`` is the probability that the agent is *on* track, so the risk
  score of the positive class is ``1 - score``.
* A risk threshold ``t`` flags every trajectory with ``risk >= t`` (scikit-learn's
  convention), i.e. ``score <= 1 - t``. The critics themselves flag when ``score <
  threshold``; :attr:`ThresholdChoice.critic_threshold` is that ``threshold`` (the value to
  paste into ``InferActCritic(threshold=...)`` / ``with_inferact(..., threshold=...)``), chosen
  so the critic flags exactly the same trajectories.

Example:
    >>> y = [1, 1, 0, 0]
    >>> risk = [0.9, 0.4, 0.6, 0.1]
    >>> choice = best_threshold(y, risk)
    >>> choice.threshold, round(choice.f1, 3)
    (0.4, 0.8)
    >>> m = compute_metrics(y, risk, threshold=choice.threshold)
    >>> m.recall, round(m.precision, 3), round(m.auc_pr, 3), m.roc_auc
    (1.0, 0.667, 0.833, 0.75)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from sklearn.metrics import (
    auc,
    average_precision_score,
    f1_score,
    precision_recall_curve,
    precision_score,
    recall_score,
    roc_auc_score,
)

__all__ = [
    "CostChoice",
    "CostResult",
    "MetricSet",
    "ThresholdChoice",
    "best_threshold",
    "brier_score",
    "compute_metrics",
    "cost_metric",
    "cost_threshold",
    "critic_threshold",
    "expected_calibration_error",
    "stratified_split",
]


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold of the PR curve with the best F1 of the off-track class.

    Attributes:
        threshold: Risk threshold: flag when ``1 - score >= threshold``.
        precision: Precision of the off-track class at that threshold.
        recall: Recall of the off-track class at that threshold.
        f1: F1 of the off-track class at that threshold.
        critic_threshold: The same decision in the critic's own direction: flag when
            ``score < critic_threshold`` (ready to paste as ``threshold=``).
    """

    threshold: float
    precision: float
    recall: float
    f1: float
    critic_threshold: float | None = None

    @property
    def score_threshold(self) -> float:
        """The same threshold on the critic's own scale: flag when ``score <= 1 - threshold``."""
        return 1.0 - self.threshold


def _arrays(y_true: Sequence[int], risk: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true, dtype=int)
    r = np.asarray(risk, dtype=float)
    if y.shape != r.shape or y.ndim != 1:
        raise ValueError(f"labels and scores differ in shape: {y.shape} vs {r.shape}")
    if len(y) == 0:
        raise ValueError("no scored trajectories")
    if not set(np.unique(y)) <= {0, 1}:
        raise ValueError("labels must be 0 (on track) or 1 (off track)")
    if np.isnan(r).any():
        raise ValueError("scores contain NaN")
    return y, r


def best_threshold(y_true: Sequence[int], risk: Sequence[float]) -> ThresholdChoice:
    """The "optimal threshold of the PR curve" of the paper: the one with the highest F1.

    Every distinct risk score is a candidate (``sklearn.metrics.precision_recall_curve``);
    ties in F1 go to the higher threshold (fewer trajectories flagged).

    Args:
        y_true: 1 = off track, 0 = on track.
        risk: Risk of the off-track class, ``1 - verdict.score``.

    Raises:
        ValueError: Empty or mismatched inputs, or no off-track example (no PR curve).

    Example:
        >>> best_threshold([1, 0, 1], [0.8, 0.5, 0.3]).threshold
        0.3
    """
    y, r = _arrays(y_true, risk)
    if y.sum() == 0:
        raise ValueError("no off-track (positive) example: the PR curve is undefined")
    precision, recall, thresholds = precision_recall_curve(y, r)
    # The last point (precision 1, recall 0) has no threshold.
    p, rc = precision[:-1], recall[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(p + rc > 0, 2 * p * rc / (p + rc), 0.0)
    best = float(f1.max())
    index = int(np.flatnonzero(np.isclose(f1, best))[-1])  # thresholds ascend
    return ThresholdChoice(
        threshold=float(thresholds[index]),
        precision=float(p[index]),
        recall=float(rc[index]),
        f1=float(f1[index]),
        critic_threshold=critic_threshold(r, float(thresholds[index])),
    )


def critic_threshold(risk: Sequence[float] | np.ndarray, risk_threshold: float) -> float:
    """The critic-direction threshold that flags exactly what ``risk >= risk_threshold`` flags.

    A critic flags when ``score < threshold`` (``score = 1 - risk``). The value returned lies
    strictly between the highest flagged score and the lowest unflagged one, with as few
    decimals as possible, so it can be pasted as ``threshold=`` and survives rounding of the
    scores. ``0.0`` flags nothing; when a flagged score is 1.0 the answer is 1.0 (a score of
    exactly 1.0 can never be flagged with ``score < threshold``).

    Example:
        >>> critic_threshold([0.455, 0.45, 0.9], 0.455)  # scores 0.545 flagged, 0.55 not
        0.548
        >>> critic_threshold([0.2, 0.8], 0.9)  # nothing flagged
        0.0
    """
    r = np.asarray(risk, dtype=float)
    scores = np.round(1.0 - r, 9)
    flagged = scores[r >= risk_threshold]
    unflagged = scores[r < risk_threshold]
    if flagged.size == 0:
        return 0.0
    low = float(flagged.max())
    high = float(unflagged.min()) if unflagged.size else 1.0 + 1e-9
    if low >= 1.0:
        return 1.0
    high = min(high, 1.0 + 1e-9)
    middle = (low + high) / 2
    for digits in range(1, 10):
        # The shortest decimal near the middle of the gap: robust to rounded scores.
        candidate = min(round(middle, digits), 1.0)
        if low + 1e-9 < candidate < high - 1e-9 or (unflagged.size == 0 and candidate > low):
            return candidate
    return middle


def brier_score(y_true: Sequence[int], prob: Sequence[float]) -> float:
    """Mean squared error of a probability of the positive class (lower is better).

    Example:
        >>> brier_score([1, 0], [0.75, 0.25])
        0.0625
    """
    y, p = _arrays(y_true, prob)
    return float(np.mean((p - y) ** 2))


@dataclass(frozen=True)
class CostChoice:
    """The threshold that minimises the expected cost of missed actions and human reviews.

    Attributes:
        threshold: Risk threshold: flag when ``1 - score >= threshold`` (``inf``: flag none).
        critic_threshold: The same in the critic's direction: flag when
            ``score < critic_threshold`` (paste it as ``threshold=``).
        cost_missed: Cost of one off-track action that is not flagged (it runs).
        cost_review: Cost of one human review (every flagged action).
        expected_cost: Mean cost per checked action at this threshold.
        reviewed: Flagged actions (each costs a review).
        missed: Off-track actions not flagged.
        n: Actions the cost was computed on.
        cost_review_all: Mean cost when every action is reviewed (for comparison).
        cost_review_none: Mean cost when no action is reviewed.
    """

    threshold: float
    critic_threshold: float
    cost_missed: float
    cost_review: float
    expected_cost: float
    reviewed: int
    missed: int
    n: int
    cost_review_all: float
    cost_review_none: float


def _cost_at(
    y: np.ndarray, r: np.ndarray, threshold: float, cost_missed: float, cost_review: float
) -> tuple[float, int, int]:
    flagged = r >= threshold
    missed = int(((~flagged) & (y == 1)).sum())
    reviewed = int(flagged.sum())
    return (missed * cost_missed + reviewed * cost_review) / len(y), reviewed, missed


def cost_threshold(
    y_true: Sequence[int],
    risk: Sequence[float],
    *,
    cost_missed: float,
    cost_review: float,
) -> CostChoice:
    """The threshold with the lowest expected cost: missed off-track actions vs reviews.

    Every distinct risk score is a candidate, and so is "flag nothing". Ties go to the
    candidate that flags fewer actions.

    Args:
        y_true: 1 = off track, 0 = on track.
        risk: ``1 - verdict.score``.
        cost_missed: What one executed off-track action costs (> 0).
        cost_review: What one human review costs (> 0).

    Raises:
        ValueError: A cost that is not a positive number, or empty/mismatched inputs.

    Example:
        >>> c = cost_threshold([1, 1, 0, 0], [0.9, 0.6, 0.5, 0.1], cost_missed=10, cost_review=1)
        >>> c.critic_threshold, c.reviewed, c.missed, c.expected_cost
        (0.45, 2, 0, 0.5)
        >>> cost_threshold([1, 0], [0.9, 0.1], cost_missed=1, cost_review=5).critic_threshold
        0.0
    """
    for name, value in (("cost_missed", cost_missed), ("cost_review", cost_review)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{name} must be a positive number, got {value!r}")
        if math.isinf(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
    y, r = _arrays(y_true, risk)
    candidates = sorted({float(v) for v in r}, reverse=True)  # fewest flagged first
    best_cost, _, _ = _cost_at(y, r, math.inf, cost_missed, cost_review)
    best = (math.inf, best_cost)
    for t in candidates:
        cost, _, _ = _cost_at(y, r, t, cost_missed, cost_review)
        if cost < best[1] - 1e-12:
            best = (t, cost)
    threshold = best[0]
    cost, reviewed, missed = _cost_at(y, r, threshold, cost_missed, cost_review)
    return CostChoice(
        threshold=threshold,
        critic_threshold=0.0 if math.isinf(threshold) else critic_threshold(r, threshold),
        cost_missed=float(cost_missed),
        cost_review=float(cost_review),
        expected_cost=cost,
        reviewed=reviewed,
        missed=missed,
        n=len(y),
        cost_review_all=_cost_at(y, r, -math.inf, cost_missed, cost_review)[0],
        cost_review_none=_cost_at(y, r, math.inf, cost_missed, cost_review)[0],
    )


def expected_calibration_error(
    y_true: Sequence[int],
    prob: Sequence[float],
    *,
    n_bins: int = 10,
    binning: Literal["width", "mass"] = "width",
) -> float:
    """Binned expected calibration error of a probability of the positive class.

    ECE is the mean over trajectories of ``|mean prob - fraction positive|`` of their bin.
    ``binning="width"`` (the default, as in the paper's figures) cuts [0, 1] into ``n_bins``
    equal-width bins (1.0 falls in the last); ``"mass"`` sorts the probabilities and cuts
    them into ``n_bins`` bins of (nearly) equal count, the usual choice for few examples
    since no bin is nearly empty. Equal probabilities are ordered by label, so the result
    does not depend on the input order. For a binary task the figure is the same on the
    off-track risk with the off-track labels as on the on-track score with the on-track
    labels, except that an equal-width bin edge (0.6 = 1 - 0.4) falls on the other side.

    Example:
        >>> round(expected_calibration_error([1, 0, 1, 1], [0.9, 0.1, 0.8, 0.2], n_bins=2), 3)
        0.25
        >>> y, p = [0, 0, 1, 1], [0.1, 0.2, 0.3, 0.9]
        >>> [round(expected_calibration_error(y, p, n_bins=2, binning=b), 3)
        ...  for b in ("width", "mass")]
        [0.125, 0.275]

    Raises:
        ValueError: ``n_bins`` < 1, an unknown ``binning``, or probabilities outside [0, 1].
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    if binning not in ("width", "mass"):
        raise ValueError(f"binning must be 'width' or 'mass', got {binning!r}")
    y, p = _arrays(y_true, prob)
    if (p < 0).any() or (p > 1).any():
        raise ValueError("probabilities must lie in [0, 1]")
    if binning == "mass":
        order = np.lexsort((y, p))
        groups = [g for g in np.array_split(order, min(n_bins, len(p))) if len(g)]
    else:
        bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
        groups = [np.flatnonzero(bins == b) for b in np.unique(bins)]
    total = sum(len(g) * abs(p[g].mean() - y[g].mean()) for g in groups)
    return float(total / len(y))


@dataclass(frozen=True)
class CostResult:
    """What the missed off-track actions cost (paper Table 3).

    Attributes:
        missed: Off-track trajectories that were not flagged (false negatives): the count of
            missed misoperations (ALFWorld's cost).
        missed_price: Sum of the prices of the missed ones (WebShop's cost); ``None`` when no
            missed trajectory has a price.
        missed_without_price: Missed trajectories that carry no price.
    """

    missed: int
    missed_price: float | None
    missed_without_price: int


def cost_metric(
    y_true: Sequence[int], flagged: Sequence[bool], prices: Sequence[float | None]
) -> CostResult:
    """The cost metric: sum of prices of missed incorrect actions, and their count.

    Example:
        >>> cost_metric([1, 1, 1, 0], [True, False, False, False], [10.0, 25.5, None, 99.0])
        CostResult(missed=2, missed_price=25.5, missed_without_price=1)
    """
    if not len(y_true) == len(flagged) == len(prices):
        raise ValueError("labels, flags and prices differ in length")
    missed = [i for i, (y, f) in enumerate(zip(y_true, flagged, strict=True)) if y == 1 and not f]
    priced = [float(p) for i in missed if (p := prices[i]) is not None]
    return CostResult(
        missed=len(missed),
        missed_price=float(sum(priced)) if priced else None,
        missed_without_price=len(missed) - len(priced),
    )


@dataclass(frozen=True)
class MetricSet:
    """Every figure for one critic on one set of trajectories at one threshold.

    Threshold-dependent figures (precision ... cost) use ``threshold``; AUC-PR, ROC-AUC and
    ECE do not depend on it. A figure that is undefined on the data (ROC-AUC with one class)
    is ``None``.

    Attributes:
        n: Trajectories scored.
        n_positive: Off-track trajectories among them.
        threshold: Risk threshold used (flag when ``1 - score >= threshold``); ``None`` for
            the critic's own decisions (``Verdict.flagged``).
        precision: Precision of the off-track class.
        recall: Recall of the off-track class.
        f1: F1 of the off-track class.
        macro_f1: Mean of the F1 of both classes.
        accuracy: Fraction classified correctly.
        auc_pr: Area under the PR curve as average precision (scikit-learn's recommended
            estimator; no interpolation).
        auc_pr_trapezoid: Area under the PR curve by the trapezoidal rule (``sklearn.metrics.
            auc`` over the curve points), the other common reading of "AUC-PR".
        roc_auc: Area under the ROC curve.
        ece: Expected calibration error (10 bins) of ``1 - score`` as P(off track).
        tp: Off track and flagged.
        fp: On track and flagged.
        fn: Off track and not flagged.
        tn: On track and not flagged.
        missed_price: Sum of prices of the missed off-track trajectories (see
            :class:`CostResult`).
    """

    n: int
    n_positive: int
    threshold: float | None
    precision: float
    recall: float
    f1: float
    macro_f1: float
    accuracy: float
    auc_pr: float | None
    auc_pr_trapezoid: float | None
    roc_auc: float | None
    ece: float
    tp: int
    fp: int
    fn: int
    tn: int
    missed_price: float | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        """The figures as a plain dict (for ``report.json``)."""
        return asdict(self)


def compute_metrics(
    y_true: Sequence[int],
    risk: Sequence[float],
    *,
    threshold: float,
    prices: Sequence[float | None] | None = None,
) -> MetricSet:
    """Compute every figure of :class:`MetricSet` at a given risk threshold.

    Args:
        y_true: 1 = off track, 0 = on track.
        risk: ``1 - verdict.score`` per trajectory.
        threshold: Flag when ``risk >= threshold``.
        prices: Optional price per trajectory for the cost metric.

    Example:
        >>> m = compute_metrics([1, 0, 1, 0], [0.9, 0.2, 0.3, 0.6], threshold=0.5)
        >>> (m.tp, m.fp, m.fn, m.tn), m.f1, m.macro_f1
        ((1, 1, 1, 1), 0.5, 0.5)
    """
    y, r = _arrays(y_true, risk)
    pred = (r >= threshold).astype(int)
    both = len(np.unique(y)) == 2
    has_pos = bool(y.sum() > 0)
    ap: float | None
    trapezoid: float | None
    if has_pos:
        ap = float(average_precision_score(y, r))
        prec_curve, rec_curve, _ = precision_recall_curve(y, r)
        trapezoid = float(auc(rec_curve, prec_curve))
    else:
        ap = trapezoid = None
    missed_price = None
    if prices is not None:
        missed_price = cost_metric(y.tolist(), pred.astype(bool).tolist(), prices).missed_price
    return MetricSet(
        n=len(y),
        n_positive=int(y.sum()),
        threshold=float(threshold),
        precision=float(precision_score(y, pred, zero_division=0)),
        recall=float(recall_score(y, pred, zero_division=0)),
        f1=float(f1_score(y, pred, zero_division=0)),
        macro_f1=float(f1_score(y, pred, average="macro", labels=[0, 1], zero_division=0)),
        accuracy=float((pred == y).mean()),
        auc_pr=ap,
        auc_pr_trapezoid=trapezoid,
        roc_auc=float(roc_auc_score(y, r)) if both else None,
        ece=expected_calibration_error(y.tolist(), r.tolist()),
        tp=int(((pred == 1) & (y == 1)).sum()),
        fp=int(((pred == 1) & (y == 0)).sum()),
        fn=int(((pred == 0) & (y == 1)).sum()),
        tn=int(((pred == 0) & (y == 0)).sum()),
        missed_price=missed_price,
    )


def stratified_split(
    labels: Sequence[int], dev_fraction: float, *, seed: int = 0
) -> tuple[list[int], list[int]]:
    """Split indices into a development part (to choose the threshold) and a held-out part.

    Each class is shuffled with ``numpy.random.default_rng(seed)`` and ``round(fraction *
    class size)`` of it goes to the dev part (at least one and at most all but one, when the
    class has two or more members), so both parts keep the label ratio. The same labels and
    seed always give the same split.

    Args:
        labels: The label of each trajectory, in order.
        dev_fraction: Fraction of each class in the dev part, strictly between 0 and 1.
        seed: Random seed.

    Returns:
        ``(dev_indices, test_indices)``, each sorted.

    Raises:
        ValueError: ``dev_fraction`` outside (0, 1).

    Example:
        >>> dev, test = stratified_split([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], 0.5, seed=0)
        >>> len(dev), len(test), sum([1, 1, 1, 1, 0, 0, 0, 0, 0, 0][i] for i in dev)
        (5, 5, 2)
    """
    if not 0.0 < dev_fraction < 1.0 or math.isnan(dev_fraction):
        raise ValueError(f"dev fraction must be strictly between 0 and 1, got {dev_fraction!r}")
    rng = np.random.default_rng(seed)
    y = np.asarray(labels)
    dev: list[int] = []
    for cls in sorted(np.unique(y).tolist()):
        members = np.flatnonzero(y == cls)
        rng.shuffle(members)
        k = round(dev_fraction * len(members))
        if len(members) >= 2:
            k = min(max(k, 1), len(members) - 1)
        dev.extend(members[:k].tolist())
    dev_set = set(dev)
    return sorted(dev), [i for i in range(len(y)) if i not in dev_set]
