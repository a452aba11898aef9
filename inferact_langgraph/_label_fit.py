"""A calibration and a threshold fitted on one deployment's review labels (``inferact calibrate``).

The labels (:mod:`inferact_langgraph.labels`) are weighted by the inverse of the probability
that their call was reviewed (a flagged call: 1; a spot check at rate ``r``: ``1 / r``), so that
they stand for every call the deployment made (Horvitz-Thompson). :func:`fit_deployment` fits
the calibration on the raw scores with those weights, picks the cheapest threshold for the
costs of a miss and of a review, and estimates what the critic does now and would do with it:
precision, recall, false alarms and the miss rate with a 95% interval.

Example:
    >>> rows = [{"raw_score": s / 100, "decision": "approve" if s > 40 else "reject"}
    ...         for s in range(1, 99, 2)]
    >>> fit = fit_deployment(rows, miss_cost=10, review_cost=1)
    >>> fit.threshold, fit.off_track, fit.on_track, fit.enough
    (0.9, 20, 29, False)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferact_langgraph.labels import on_track_of

__all__ = [
    "DeploymentFit",
    "OperatingPoint",
    "RateEstimate",
    "fit_deployment",
    "operating_point",
    "plot_reliability",
    "weighted_rate",
    "wilson_interval",
]


# ---------------------------------------------------------------------------- estimates
def wilson_interval(successes: float, n: float, *, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval for a proportion (``n`` may be an effective, weighted count).

    Example:
        >>> [round(v, 3) for v in wilson_interval(0, 30)]
        [0.0, 0.114]
    """
    if n <= 0:
        return (0.0, 1.0)
    p = min(1.0, max(0.0, successes / n))
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class RateEstimate:
    """A weighted share with its 95% interval (Wilson, on Kish's effective count)."""

    value: float | None
    low: float
    high: float
    n: int
    """Labels it rests on."""
    effective_n: float

    def describe(self) -> str:
        """``4.1% (95% CI 1.2%-10.3%, 52 labels)`` or ``unknown (no labels)``."""
        if self.value is None:
            return "unknown (no labels)"
        return (
            f"{self.value:.1%} (95% CI {self.low:.1%}-{self.high:.1%}, {self.n} labels, "
            f"effective {self.effective_n:.0f})"
        )


def weighted_rate(items: Sequence[tuple[bool, float]]) -> RateEstimate:
    """The weighted share of ``True`` among ``(event, weight)`` items, with its interval.

    Example:
        >>> weighted_rate([(True, 1.0), (False, 1.0), (False, 2.0)]).value
        0.25
    """
    total = sum(w for _, w in items)
    if not items or total <= 0:
        return RateEstimate(None, 0.0, 1.0, len(items), 0.0)
    hits = sum(w for e, w in items if e)
    effective = total * total / sum(w * w for _, w in items)
    p = hits / total
    low, high = wilson_interval(p * effective, effective)
    return RateEstimate(p, low, high, len(items), effective)


# ---------------------------------------------------------------------------- fitting a deployment
MIN_PER_CLASS = 20
"""Labels of each class (on track, off track) below which a fitted calibration is not trusted."""
MIN_SPOT_CHECKS = 30
"""Spot checks below which nothing trustworthy is known about the calls the critic passes."""

RespondAs = str
"""How ``respond`` decisions count: ``"skip"`` (default), ``"on-track"`` or ``"off-track"``."""
_RESPOND_AS = {"skip": None, "on-track": True, "off-track": False}


@dataclass(frozen=True)
class OperatingPoint:
    """What a flagging rule does on the deployment's calls, estimated from weighted labels.

    Every figure is a share of *calls* (each label weighted by the inverse of the probability
    that its call was reviewed), not of labels.
    """

    reviewed: float
    """Share of calls sent to a human."""
    precision: float | None
    """Of the flagged calls, the share that were off track."""
    recall: float | None
    """Of the off-track calls, the share flagged."""
    false_alarm_rate: float | None
    """Of the flagged calls, the share that were on track (1 - precision)."""
    miss_rate: RateEstimate
    """Of the calls passed, the share that were off track, with its 95% interval."""
    missed: float
    """Share of all calls that are off track and run unreviewed."""
    cost_per_call: float | None
    """``review_cost * reviewed + miss_cost * missed`` (None without costs)."""


def operating_point(
    rows: Sequence[tuple[bool, int, float]],
    *,
    miss_cost: float | None = None,
    review_cost: float | None = None,
) -> OperatingPoint:
    """The figures of a rule on ``(flagged, on_track 1/0, weight)`` rows.

    Example:
        >>> point = operating_point([(True, 0, 1.0), (True, 1, 1.0), (False, 1, 10.0)])
        >>> point.precision, round(point.reviewed, 3), point.miss_rate.value
        (0.5, 0.167, 0.0)
    """
    total = sum(w for _, _, w in rows) or 1.0
    flagged = [(y, w) for f, y, w in rows if f]
    passed = [(y, w) for f, y, w in rows if not f]
    off_total = sum(w for _, y, w in rows if y == 0)
    flagged_w = sum(w for _, w in flagged)
    caught = sum(w for y, w in flagged if y == 0)
    precision = caught / flagged_w if flagged_w else None
    missed = sum(w for y, w in passed if y == 0) / total
    reviewed = flagged_w / total
    cost = None
    if miss_cost is not None and review_cost is not None:
        cost = review_cost * reviewed + miss_cost * missed
    return OperatingPoint(
        reviewed=reviewed,
        precision=precision,
        recall=caught / off_total if off_total else None,
        false_alarm_rate=None if precision is None else 1.0 - precision,
        miss_rate=weighted_rate([(y == 0, w) for y, w in passed]),
        missed=missed,
        cost_per_call=cost,
    )


@dataclass(frozen=True)
class DeploymentFit:
    """A calibration and threshold fitted on one deployment's review labels.

    Attributes:
        calibration: Maps the critic's raw score to P(on track); ``None`` when the labels
            cannot be fitted at all (fewer than 2 of a class).
        threshold: Flag when the calibrated score is below it: ``1 - review_cost /
            miss_cost``, where a review costs less than the expected cost of running the call.
        raw_cutoff: The same rule on the raw score (flag below it), for reading.
        labels: Labels used; ``on_track`` / ``off_track``, ``spot_checks`` among them.
        skipped: Labels left out, by reason.
        now: The figures of the rule that collected the labels (what the critic flagged).
        proposed: The figures of the fitted rule, on the same labels.
        too_few: Why the labels are too few to trust, each saying how many more it needs
            (empty: enough).
        spot_rate: The spot-check rate of the newest spot check (None without any).
    """

    deployment: str
    critic: str | None
    preset: str | None
    calibration: Any
    threshold: float
    raw_cutoff: float | None
    labels: int
    on_track: int
    off_track: int
    spot_checks: int
    skipped: Mapping[str, int]
    now: OperatingPoint
    proposed: OperatingPoint | None
    too_few: tuple[str, ...]
    spot_rate: float | None
    miss_cost: float
    review_cost: float
    scores: tuple[float, ...] = ()
    outcomes: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()

    @property
    def enough(self) -> bool:
        """Whether there are enough labels to trust the fit."""
        return not self.too_few

    def paste_line(self, *, calibration_path: str, model: str = "openai:gpt-4o") -> str:
        """The line to paste into the code that builds the guarded graph."""
        spot = f", spot_check={self.spot_rate:g}" if self.spot_rate else ""
        preset = f', preset="{self.preset}"' if self.preset else ""
        threshold = f"{self.threshold:.4g}"
        if self.critic in (None, "inferact"):
            return (
                f'with_inferact(graph, model="{model}"{preset}, '
                f'calibration="{calibration_path}", threshold={threshold}{spot})'
            )
        return (
            f'with_inferact(graph, critic=make_critic("{self.critic}", model="{model}"'
            f'{preset}, calibration="{calibration_path}", threshold={threshold}){spot})'
        )


def _label_of(decision: Any) -> bool | None:
    try:
        return on_track_of(str(decision))
    except ValueError:  # not a decision a label can come from
        return None


def _raw_cutoff(calibration: Any, threshold: float) -> float | None:
    """The raw score below which ``calibration(score) < threshold`` (by bisection)."""
    if calibration(0.0) >= threshold:
        return 0.0
    if calibration(1.0) < threshold:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if calibration(mid) < threshold:
            low = mid
        else:
            high = mid
    return high


def _more(needed: int, have: int, share: float | None, unit: str) -> str:
    more = needed - have
    if share:
        return f"{more} more ({have} of {needed}; about {math.ceil(more / share)} more {unit})"
    return f"{more} more ({have} of {needed})"


def fit_deployment(
    labels: Sequence[Mapping[str, Any]],
    *,
    miss_cost: float,
    review_cost: float,
    deployment: str = "default",
    critic: str | None = None,
    preset: str | None = None,
    respond_as: RespondAs = "skip",
    seed: int = 0,
) -> DeploymentFit:
    """Fit a calibration and pick a threshold from one deployment's review labels.

    The labels are weighted by the inverse of the probability that their call was reviewed
    (a flagged call: 1; a spot check at rate ``r``: ``1 / r``), so that they stand for every
    call the deployment made; the calibration is :func:`~inferact_langgraph.calibration.
    fit_calibration` on the raw scores with those weights. The threshold is the cheapest
    rule for a calibrated probability ``p`` of being on track: review when the expected cost of
    running the call, ``(1 - p) * miss_cost``, exceeds ``review_cost``, i.e. flag when
    ``p < 1 - review_cost / miss_cost``.

    Args:
        labels: Labels of one deployment (:meth:`ReviewLabels.list_labels`).
        miss_cost: What one off-track call that runs unreviewed costs (> 0).
        review_cost: What one human review costs (> 0).
        deployment: Its name, for the report.
        critic: Only labels of this critic (needed when the labels hold several).
        preset: Only labels of this preset (likewise).
        respond_as: How ``respond`` decisions count: ``"skip"``, ``"on-track"``,
            ``"off-track"``.
        seed: Seed of the calibration's cross-validated selection.

    Raises:
        ValueError: Bad costs or ``respond_as``, or labels of several critics or presets with
            none chosen.

    Example:
        >>> rows = [{"raw_score": s / 100, "decision": "approve" if s > 40 else "reject",
        ...          "inclusion": 1.0, "flagged": True, "critic": "inferact"}
        ...         for s in range(1, 99, 2)]
        >>> fit = fit_deployment(rows, miss_cost=10, review_cost=1)
        >>> fit.threshold, fit.off_track, fit.enough
        (0.9, 20, False)
        >>> fit.too_few[0].startswith("spot checks")
        True
    """
    for name, value in (("miss_cost", miss_cost), ("review_cost", review_cost)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive, finite number, got {value!r}")
    if respond_as not in _RESPOND_AS:
        raise ValueError(f"respond_as must be one of {sorted(_RESPOND_AS)}, got {respond_as!r}")
    groups: dict[tuple[Any, Any], int] = {}
    for label in labels:
        key = (label.get("critic"), label.get("preset"))
        groups[key] = groups.get(key, 0) + 1
    chosen = [
        g
        for g in groups
        if (critic is None or g[0] == critic) and (preset is None or g[1] == preset)
    ]
    if len(chosen) > 1:
        listed = ", ".join(f"critic {c!r} preset {p!r} ({groups[(c, p)]})" for c, p in chosen)
        raise ValueError(
            "the labels come from several critics or presets, which need separate "
            f"calibrations: {listed}; choose one with --critic and --preset"
        )
    group = chosen[0] if chosen else (critic, preset)
    skipped: dict[str, int] = {}
    scores: list[float] = []
    outcomes: list[int] = []
    weights: list[float] = []
    flagged_then: list[bool] = []
    spot_rates: list[tuple[float, float]] = []
    for label in labels:
        if (label.get("critic"), label.get("preset")) != group:
            skipped["another critic or preset"] = skipped.get("another critic or preset", 0) + 1
            continue
        decision = label.get("decision")
        on_track = _RESPOND_AS[respond_as] if decision == "respond" else _label_of(decision)
        if on_track is None:
            skipped["respond (unlabelled)"] = skipped.get("respond (unlabelled)", 0) + 1
            continue
        raw = label.get("raw_score")
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 1:
            skipped["no score (the critic failed)"] = (
                skipped.get("no score (the critic failed)", 0) + 1
            )
            continue
        inclusion = label.get("inclusion")
        if not isinstance(inclusion, int | float) or not 0 < inclusion <= 1:
            inclusion = 1.0
        scores.append(float(raw))
        outcomes.append(1 if on_track else 0)
        weights.append(1.0 / float(inclusion))
        flagged_then.append(not label.get("spot_check"))
        if label.get("spot_check"):
            spot_rates.append((float(label.get("time") or 0), float(inclusion)))
    n_on, n_off, n_spot = sum(outcomes), len(outcomes) - sum(outcomes), len(spot_rates)
    spot_rate = max(spot_rates)[1] if spot_rates else None
    off_share = n_off / len(outcomes) if outcomes else None
    too_few: list[str] = []
    if n_spot < MIN_SPOT_CHECKS:
        if spot_rate is None:
            too_few.append(
                f"spot checks: none; without them nothing is known about the calls the critic "
                f"passes. Turn them on (spot_check=0.02) and collect {MIN_SPOT_CHECKS}"
            )
        else:
            too_few.append(
                "spot checks: "
                + _more(MIN_SPOT_CHECKS, n_spot, spot_rate, "calls the critic passes")
            )
    if n_off < MIN_PER_CLASS:
        too_few.append("off-track labels: " + _more(MIN_PER_CLASS, n_off, off_share, "reviews"))
    if n_on < MIN_PER_CLASS:
        on_share = None if off_share is None else 1 - off_share
        too_few.append("on-track labels: " + _more(MIN_PER_CLASS, n_on, on_share, "reviews"))
    threshold = max(0.0, 1.0 - review_cost / miss_cost)
    now = operating_point(
        list(zip(flagged_then, outcomes, weights, strict=True)),
        miss_cost=miss_cost,
        review_cost=review_cost,
    )
    calibration = None
    cutoff = None
    proposed = None
    if min(n_on, n_off) >= 2:
        from inferact_langgraph.calibration import fit_calibration

        calibration = fit_calibration(
            scores,
            outcomes,
            sample_weight=weights,
            seed=seed,
            info={
                "source": "review labels",
                "deployment": deployment,
                "critic": group[0],
                "preset": group[1],
                "spot_checks": n_spot,
                "threshold": threshold,
                "miss_cost": miss_cost,
                "review_cost": review_cost,
            },
        )
        cutoff = _raw_cutoff(calibration, threshold)
        proposed = operating_point(
            [
                (calibration(s) < threshold, y, w)
                for s, y, w in zip(scores, outcomes, weights, strict=True)
            ],
            miss_cost=miss_cost,
            review_cost=review_cost,
        )
    return DeploymentFit(
        deployment=deployment,
        critic=group[0],
        preset=group[1],
        calibration=calibration,
        threshold=threshold,
        raw_cutoff=cutoff,
        labels=len(outcomes),
        on_track=n_on,
        off_track=n_off,
        spot_checks=n_spot,
        skipped=skipped,
        now=now,
        proposed=proposed,
        too_few=tuple(too_few),
        spot_rate=spot_rate,
        miss_cost=float(miss_cost),
        review_cost=float(review_cost),
        scores=tuple(scores),
        outcomes=tuple(outcomes),
        weights=tuple(weights),
    )


def plot_reliability(
    fit: DeploymentFit,
    path: Any,
    *,
    bins: int = 10,
    reference: Callable[[float], float] | None = None,
    reference_label: str = "reference",
) -> Any:
    """Draw the fitted reliability curve over the weighted labels; return the file's path.

    Needs matplotlib (the ``[eval]`` extra). Each dot is a bin of raw scores: the weighted
    share of its calls that were on track, its area the number of labels. ``reference``, a
    known curve (score -> P(on track)), is drawn beside the fitted one.
    """
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if fit.calibration is None:
        raise ValueError("no calibration to draw: too few labels of a class")
    fig, ax = plt.subplots(figsize=(6.0, 4.2), dpi=110)
    grid = [i / 200 for i in range(201)]
    ax.plot(grid, [fit.calibration(g) for g in grid], color="#1f5fa8", lw=2.2,
            label=f"fitted: {fit.calibration.describe()}")  # fmt: skip
    if reference is not None:
        ax.plot(grid, [reference(g) for g in grid], color="#2a8a3a", lw=1.4, ls="--",
                label=reference_label)  # fmt: skip
    xs, ys, sizes = [], [], []
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        members = [
            (y, w)
            for s, y, w in zip(fit.scores, fit.outcomes, fit.weights, strict=True)
            if low <= s < high or (b == bins - 1 and s == 1.0)
        ]
        if not members:
            continue
        total = sum(w for _, w in members)
        xs.append((low + high) / 2)
        ys.append(sum(w for y, w in members if y) / total)
        sizes.append(12 + 6 * len(members))
    ax.scatter(xs, ys, s=sizes, color="#e08a1e", alpha=0.8, zorder=3,
               label="labels: weighted share on track per bin")  # fmt: skip
    ax.axhline(fit.threshold, color="#a02020", ls="--", lw=1,
               label=f"threshold {fit.threshold:.2f} (miss {fit.miss_cost:g} : review "
               f"{fit.review_cost:g})")  # fmt: skip
    if fit.raw_cutoff is not None:
        ax.axvline(fit.raw_cutoff, color="#a02020", ls=":", lw=1)
    ax.plot([0, 1], [0, 1], color="#999999", lw=0.8, ls="-")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("critic's raw score")
    ax.set_ylabel("P(on track)")
    ax.set_title(
        f"{fit.deployment}: {fit.labels} labels ({fit.spot_checks} spot checks)", fontsize=10
    )
    ax.legend(loc="upper left", fontsize=7.5, frameon=False, markerscale=0.5)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out
