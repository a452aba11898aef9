"""The figures of one critic: detection by protocol, calibration, cost and aggregations.

:class:`CriticSummary` holds them; :func:`summarise` computes the detection figures of one
set of scores under each threshold protocol, :func:`calibrate`, :func:`cross_validate` and
:func:`choose_cost` add the calibration and cost figures, and :func:`aggregate_steps_of`
scores a multi-step critic with every aggregation of Appendix D.
:func:`~inferact_langgraph.eval.report.build_report` calls them for every critic of a run.

Example:
    >>> summary = summarise("c", [1, 0, 1, 0], {0: 0.1, 1: 0.8, 2: 0.4, 3: 0.6},
    ...                     {0: True, 1: False, 2: True, 3: False}, None, None, None)
    >>> summary.metrics["paper"].f1, summary.thresholds["paper"].critic_threshold
    (1.0, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from inferact_langgraph.calibration import Calibration, CalibrationError
from inferact_langgraph.eval.metrics import (
    CostChoice,
    MetricSet,
    ThresholdChoice,
    best_threshold,
    compute_metrics,
    cost_threshold,
)

__all__ = [
    "AGGREGATIONS",
    "CriticOutcomes",
    "CriticSummary",
    "Tally",
    "aggregate_steps_of",
    "calibrate",
    "choose_cost",
    "cross_validate",
    "summarise",
]

AGGREGATIONS = ("min", "max", "mean", "product")


def _local_aggregate(scores: Sequence[float], how: str) -> float:
    if not scores:
        raise ValueError("no step scores to aggregate")
    if how == "min":
        return float(min(scores))
    if how == "max":
        return float(max(scores))
    if how == "mean":
        return float(sum(scores) / len(scores))
    if how == "product":
        return float(math.prod(scores))
    raise ValueError(f"unknown aggregation {how!r}; use one of {AGGREGATIONS}")


def _aggregator() -> Callable[[Sequence[float], str], float]:
    """The critics' own ``aggregate_steps`` when it exists, so both always agree."""
    try:
        from inferact_langgraph.critics.multistep import aggregate_steps
    except ImportError:
        return _local_aggregate
    return aggregate_steps


@dataclass
class CriticSummary:
    """Every figure of one critic (or one aggregation of a multi-step critic).

    Attributes:
        name: The critic's name in the run (``"multistep:product"``, or
            ``"multistep:product@min"`` for an aggregation).
        checked: Trajectories the critic finished (verdict or error).
        scored: Trajectories with a verdict (the ones the figures use).
        errors: Trajectories where the critic failed (excluded from the figures).
        cached: Verdicts taken from the cache.
        model_calls: Model calls of all verdicts, cached or not (the cost of a fresh run).
        input_tokens: Prompt tokens of all verdicts.
        output_tokens: Completion tokens of all verdicts.
        thresholds: The chosen thresholds by protocol (``paper``, ``dev``, ``held_out_tuned``).
        metrics: :class:`MetricSet` by protocol (see :data:`PROTOCOLS`); ``None`` when
            undefined (e.g. no off-track example in the dev part).
        aggregations: For multi-step critics: aggregation -> summary of its scores.
        notes: Caveats (binary scores, missing classes).
        first_error: The first failed check's error (in data order), for the user to see.
        own_threshold: The threshold the critic ran with (flag when ``score <`` it).
        calibration: With a dev split: the calibration fitted on the dev part.
        calibration_figures: Its held-out figures before and after (ECE, Brier, AUC-PR),
            the threshold chosen on the calibrated dev scores, and with ``calibration_cv``
            the cross-validated figures over all the data.
        cost: With costs: the threshold of lowest expected cost (on the dev part, else on
            all the data) and, with a dev split, its cost on the held-out part.
        dollars: List-price cost of all the verdicts' tokens on the run's model, from
            langchain-community's OpenAI price table (``None``: a model it does not price).
    """

    name: str
    checked: int = 0
    scored: int = 0
    errors: int = 0
    cached: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    thresholds: dict[str, ThresholdChoice | None] = field(default_factory=dict)
    metrics: dict[str, MetricSet | None] = field(default_factory=dict)
    aggregations: dict[str, CriticSummary] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    first_error: str | None = None
    own_threshold: float | None = None
    calibration: Calibration | None = None
    calibration_figures: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    dollars: float | None = None

    @property
    def failed(self) -> bool:
        """Every check that finished failed (no verdict at all)."""
        return self.checked > 0 and self.scored == 0 and self.errors > 0

    def recommended(self) -> tuple[str, float] | None:
        """The threshold to deploy, as ``(how it was chosen, critic-direction value)``.

        The cost-optimal one when costs were given, else the best-F1 one chosen on the dev
        part, else the best-F1 one on all the data (the paper's protocol).
        """
        if self.cost is not None:
            return (
                f"lowest expected cost on the {self.cost['chosen_on']}",
                self.cost["choice"].critic_threshold,
            )
        for key, how in (("dev", "best F1 on the dev part"), ("paper", "best F1 on all data")):
            choice = self.thresholds.get(key)
            if choice is not None and choice.critic_threshold is not None:
                return how, choice.critic_threshold
        return None

    def per_trajectory(self, what: str) -> float | None:
        """Mean ``model_calls``, ``input_tokens`` or ``output_tokens`` per scored trajectory."""
        return getattr(self, what) / self.scored if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``report.json``."""
        return {
            "name": self.name,
            "checked": self.checked,
            "scored": self.scored,
            "errors": self.errors,
            "cached": self.cached,
            "usage": {
                "model_calls": self.model_calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "per_trajectory": {
                    k: self.per_trajectory(k)
                    for k in ("model_calls", "input_tokens", "output_tokens")
                },
                "dollars": self.dollars,
            },
            "thresholds": {
                k: (None if v is None else {**asdict(v), "score_threshold": v.score_threshold})
                for k, v in self.thresholds.items()
            },
            "metrics": {k: (None if v is None else v.to_dict()) for k, v in self.metrics.items()},
            "aggregations": {k: v.to_dict() for k, v in self.aggregations.items()},
            "notes": list(self.notes),
            "first_error": self.first_error,
            "own_threshold": self.own_threshold,
            "calibration": None if self.calibration is None else self.calibration.to_dict(),
            "calibration_figures": self.calibration_figures,
            "cost": None
            if self.cost is None
            else {**self.cost, "choice": _cost_dict(self.cost["choice"])},
        }


@dataclass
class Tally:
    """What one critic's outcomes add up to: checks, failures, cache hits and model usage."""

    checked: int = 0
    errors: int = 0
    cached: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class CriticOutcomes:
    """One critic's outcomes read in data order, by position in the data.

    Attributes:
        scores: Position -> the verdict's score (verdicts only, not failures).
        flagged: Position -> whether the critic flagged it at its own threshold.
        steps: Position -> the verdict's step scores (multi-step critics only).
        tally: The counts and usage of every finished check.
        first_error: The first failed check's error (in data order).
        own_threshold: The threshold of the first verdict (the one the critic ran with).
        step_threshold: The threshold of the first verdict with step scores.
    """

    scores: dict[int, float] = field(default_factory=dict)
    flagged: dict[int, bool] = field(default_factory=dict)
    steps: dict[int, list[float]] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)
    first_error: str | None = None
    own_threshold: float | None = None
    step_threshold: float | None = None


def _cost_dict(choice: CostChoice) -> dict[str, Any]:
    """A cost choice as JSON data ("flag nothing" has no risk threshold: ``None``, not inf)."""
    data = asdict(choice)
    if not math.isfinite(data["threshold"]):
        data["threshold"] = None
    return data


def summarise(
    name: str,
    labels: Sequence[int],
    scores: Mapping[int, float],
    flagged: Mapping[int, bool],
    prices: Sequence[float | None] | None,
    dev: Sequence[int] | None,
    test: Sequence[int] | None,
) -> CriticSummary:
    """The detection figures of one set of scores under each threshold protocol.

    Args:
        name: The critic's name in the run.
        labels: Every trajectory's label by position (1: off track).
        scores: Position -> score, for the trajectories with a verdict.
        flagged: Position -> whether the critic flagged it at its own threshold.
        prices: Every trajectory's price by position, or None when the data has none.
        dev: Positions of the dev part (None: no split).
        test: Positions of the held-out part (None: no split).
    """
    summary = CriticSummary(name=name)
    summary.scored = len(scores)
    if not scores:
        summary.notes.append("no verdict: every check failed or none finished")
        return summary

    def subset(indices: Sequence[int]) -> tuple[list[int], list[float], list[float | None]]:
        idx = [i for i in indices if i in scores]
        return (
            [labels[i] for i in idx],
            [1.0 - scores[i] for i in idx],
            [prices[i] for i in idx] if prices is not None else [],
        )

    def metrics_at(indices: Sequence[int], threshold: float) -> MetricSet:
        y, r, p = subset(indices)
        return compute_metrics(y, r, threshold=threshold, prices=p if prices else None)

    def choose(indices: Sequence[int], where: str) -> ThresholdChoice | None:
        y, r, _ = subset(indices)
        if not y or sum(y) == 0:
            summary.notes.append(f"no off-track example {where}: no PR curve, no threshold")
            return None
        return best_threshold(y, r)

    everything = sorted(scores)
    if len(set(scores.values())) <= 2:
        summary.notes.append(
            "scores take at most two values: the critic is a classifier, so AUC-PR and "
            "ROC-AUC describe a single operating point (the paper reports them as —)"
        )
    choice = choose(everything, "among the scored trajectories")
    summary.thresholds["paper"] = choice
    if choice is not None and choice.critic_threshold == 1.0 and max(scores.values()) >= 1.0:
        summary.notes.append(
            "the best threshold flags every trajectory, even those scored 1.0, which a critic "
            "(flag when score < threshold) cannot flag: threshold=1.0 leaves them unflagged"
        )
    summary.metrics["paper"] = metrics_at(everything, choice.threshold) if choice else None
    if dev is not None and test is not None:
        dev_choice = choose(dev, "in the dev part")
        summary.thresholds["dev"] = dev_choice
        held = [i for i in test if i in scores]
        if dev_choice is not None and held:
            summary.metrics["held_out"] = metrics_at(held, dev_choice.threshold)
        else:
            summary.metrics["held_out"] = None
        tuned = choose(held, "in the held-out part") if held else None
        summary.thresholds["held_out_tuned"] = tuned
        summary.metrics["held_out_tuned"] = metrics_at(held, tuned.threshold) if tuned else None
    # The critic's own decision: flagged <=> risk >= a threshold between the two groups.
    y, _, p = subset(everything)
    own_flags = [flagged[i] for i in everything]
    own = compute_metrics(
        y, [1.0 if f else 0.0 for f in own_flags], threshold=0.5, prices=p if prices else None
    )
    figures = metrics_at(everything, 0.0)  # threshold-free figures of the real scores
    summary.metrics["own"] = replace(
        own,
        threshold=None,
        auc_pr=figures.auc_pr,
        auc_pr_trapezoid=figures.auc_pr_trapezoid,
        roc_auc=figures.roc_auc,
        ece=figures.ece,
    )
    return summary


def _indices(part: Sequence[int] | None, scores: Mapping[int, float]) -> list[int]:
    return [i for i in (part if part is not None else sorted(scores)) if i in scores]


def calibrate(
    summary: CriticSummary,
    labels: Sequence[int],
    scores: Mapping[int, float],
    dev: Sequence[int] | None,
    test: Sequence[int] | None,
    *,
    seed: int,
    rows: list[dict[str, Any]],
) -> None:
    """Fit a calibration (dev part, else all) and measure it on the held-out part."""
    from inferact_langgraph.calibration import fit_calibration
    from inferact_langgraph.eval.calibration_quality import calibration_figures

    fit_on = _indices(dev, scores)
    held = _indices(test, scores) if test is not None else []
    on_track = {i: 1 - labels[i] for i in scores}
    try:
        calibration = fit_calibration(
            [scores[i] for i in fit_on],
            [on_track[i] for i in fit_on],
            seed=seed,
            info={
                "critic": summary.name,
                "fitted_on": "dev part" if dev is not None else "all data",
            },
        )
    except CalibrationError as exc:
        summary.notes.append(f"no calibration: {exc}")
        return
    summary.calibration = calibration
    calibrated = {i: calibration(scores[i]) for i in scores}
    for i, value in calibrated.items():
        rows[i]["critics"][summary.name]["calibrated_score"] = value
    figures: dict[str, Any] = {
        "method": calibration.method,
        "describe": calibration.describe(),
        "fitted_on": calibration.info["fitted_on"],
        "n_fit": len(fit_on),
        "n_held_out": len(held),
    }
    if held and 0 < sum(labels[i] for i in held) < len(held):
        figures["before"] = calibration_figures(
            [scores[i] for i in held], [on_track[i] for i in held]
        )
        figures["after"] = calibration_figures(
            [calibrated[i] for i in held], [on_track[i] for i in held]
        )
    y_fit = [labels[i] for i in fit_on]
    if sum(y_fit):
        choice = best_threshold(y_fit, [1.0 - calibrated[i] for i in fit_on])
        figures["choice"] = asdict(choice)
    summary.calibration_figures = figures


def cross_validate(
    summary: CriticSummary,
    labels: Sequence[int],
    scores: Mapping[int, float],
    folds: int,
    repeats: int,
    seed: int,
) -> None:
    """Measure calibration by repeated stratified k-fold over every scored trajectory."""
    from inferact_langgraph.eval.calibration_quality import cross_validated_calibration

    idx = sorted(scores)
    try:
        cv = cross_validated_calibration(
            [scores[i] for i in idx],
            [1 - labels[i] for i in idx],
            folds=folds,
            repeats=repeats,
            seed=seed,
        )
    except CalibrationError as exc:
        summary.notes.append(f"no cross-validated calibration: {exc}")
        return
    summary.calibration_figures = {**(summary.calibration_figures or {}), "cv": cv}


def choose_cost(
    summary: CriticSummary,
    labels: Sequence[int],
    scores: Mapping[int, float],
    dev: Sequence[int] | None,
    test: Sequence[int] | None,
    costs: tuple[float, float],
) -> None:
    """Choose the threshold of lowest expected cost (dev part, else all) and measure it."""
    missed, review = costs
    chosen_on = _indices(dev, scores)
    choice = cost_threshold(
        [labels[i] for i in chosen_on],
        [1.0 - scores[i] for i in chosen_on],
        cost_missed=missed,
        cost_review=review,
    )
    cost: dict[str, Any] = {
        "cost_missed": missed,
        "cost_review": review,
        "chosen_on": "dev part" if dev is not None else "all data",
        "choice": choice,
        "held_out": None,
    }
    held = _indices(test, scores) if test is not None else []
    if held:
        y = [labels[i] for i in held]
        flagged = [1.0 - scores[i] >= choice.threshold for i in held]
        n_missed = sum(1 for f, label in zip(flagged, y, strict=True) if label and not f)
        reviewed = sum(flagged)
        cost["held_out"] = {
            "n": len(held),
            "expected_cost": (n_missed * missed + reviewed * review) / len(held),
            "missed": n_missed,
            "reviewed": reviewed,
            "cost_review_all": (len(held) * review) / len(held),
            "cost_review_none": (sum(y) * missed) / len(held),
        }
    if summary.calibration is not None:
        cal = summary.calibration
        cost["calibrated_choice"] = _cost_dict(
            cost_threshold(
                [labels[i] for i in chosen_on],
                [1.0 - cal(scores[i]) for i in chosen_on],
                cost_missed=missed,
                cost_review=review,
            )
        )
    summary.cost = cost


def aggregate_steps_of(
    summary: CriticSummary,
    read: CriticOutcomes,
    *,
    labels: Sequence[int],
    prices: Sequence[float | None] | None,
    dev: Sequence[int] | None,
    test: Sequence[int] | None,
    rows: list[dict[str, Any]],
) -> None:
    """Score a multi-step critic's step scores with every aggregation of Appendix D.

    Each aggregation becomes a summary of its own in ``summary.aggregations``, flagged at the
    critic's threshold; its score per trajectory is written into ``rows``.
    """
    aggregate = _aggregator()
    steps = read.steps
    if len(steps) < len(read.scores):
        summary.notes.append(
            f"{len(read.scores) - len(steps)} verdicts carry no step scores: "
            "left out of the aggregations"
        )
    threshold = read.step_threshold if read.step_threshold is not None else 0.5
    for how in AGGREGATIONS:
        agg_scores = {i: min(1.0, max(0.0, aggregate(s, how))) for i, s in steps.items()}
        for i, value in agg_scores.items():
            rows[i]["critics"][summary.name].setdefault("aggregations", {})[how] = value
        agg_flags = {i: value < threshold for i, value in agg_scores.items()}
        sub = summarise(f"{summary.name}@{how}", labels, agg_scores, agg_flags, prices, dev, test)
        sub.checked = sub.scored
        summary.aggregations[how] = sub
