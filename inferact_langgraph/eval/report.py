"""Turn a run's verdicts into the paper's tables: figures, ``report.json``, PR-curve PNG.

Three ways of choosing the threshold are reported, each clearly labelled:

* ``paper`` — the paper's protocol: the threshold with the best F1 on the PR curve of **all**
  the data, and the figures on that same data (optimistic: the threshold saw the test labels).
* ``held_out`` — with a dev split: the threshold is chosen on the dev part and the figures are
  computed on the held-out part (the honest estimate).
* ``held_out_tuned`` — with a dev split: the paper's protocol on the held-out part only, so the
  cost of choosing the threshold on unseen data can be read off next to ``held_out``.
* ``own`` — the critic's own threshold (``Verdict.flagged``), on all the data: what the critic
  would do if deployed as configured.

Every chosen threshold is also given in the critic's own direction (flag when ``score <
threshold``): :attr:`~inferact_langgraph.eval.metrics.ThresholdChoice.critic_threshold`, the
value to paste as ``threshold=``. With a dev split, a calibration is fitted on the dev part
and measured on the held-out part (ECE, Brier, AUC-PR before and after); with costs, the
threshold with the lowest expected cost on the dev part is chosen.

Critics whose verdicts carry ``step_scores`` (the multi-step baseline) are also scored with
every aggregation of Appendix D (min, max, mean, product) of the same step scores.

Example:
    >>> from inferact_langgraph.critics import Verdict
    >>> from inferact_langgraph.eval.datasets import load_dataset
    >>> from inferact_langgraph.eval.runner import Outcome
    >>> data = load_dataset([
    ...     {"id": str(i), "task": "t", "steps": [{"action": "a"}], "label": lab}
    ...     for i, lab in enumerate(["incorrect", "correct", "incorrect", "correct"])])
    >>> scores = [0.1, 0.8, 0.4, 0.6]
    >>> results = {"c": {str(i): Outcome("c", str(i), Verdict(critic="c", score=s, threshold=0.5))
    ...                  for i, s in enumerate(scores)}}
    >>> report = build_report(data, results)
    >>> m = report.critics["c"].metrics["paper"]
    >>> m.recall, m.precision, round(m.f1, 3)
    (1.0, 1.0, 1.0)
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from inferact_langgraph.calibration import Calibration, CalibrationError
from inferact_langgraph.eval.datasets import Dataset
from inferact_langgraph.eval.metrics import (
    CostChoice,
    MetricSet,
    ThresholdChoice,
    best_threshold,
    compute_metrics,
    cost_threshold,
    stratified_split,
)
from inferact_langgraph.eval.runner import Outcome, RunStats

__all__ = [
    "AGGREGATIONS",
    "PROTOCOLS",
    "CriticSummary",
    "EvalReport",
    "build_report",
    "output_console",
    "paste_line",
    "plot_pr_curves",
    "plot_reliability_diagram",
    "pr_curves",
    "render_tables",
]

AGGREGATIONS = ("min", "max", "mean", "product")
SHORT_PROTOCOLS: dict[str, str] = {
    "held_out": "dev→test",
    "held_out_tuned": "test*",
    "paper": "all*",
    "own": "all/own",
}
PROTOCOLS: dict[str, str] = {
    "held_out": "held-out part, threshold chosen on the dev part",
    "held_out_tuned": "held-out part, threshold tuned on it (paper protocol, optimistic)",
    "paper": "all data, threshold tuned on it (paper protocol, optimistic)",
    "own": "all data, the critic's own threshold",
}


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
class EvalReport:
    """The outcome of an evaluation: figures per critic, per-trajectory scores, metadata.

    Attributes:
        critics: Name -> :class:`CriticSummary`.
        rows: One dict per trajectory: id, line, label, price, risk, split and, per critic,
            score, risk score, flagged, step scores, error, cached.
        meta: Data source, split, seed, bad records, run statistics, whether it was
            interrupted, and anything the caller added (model, CLI flags).
        interrupted: The run was cancelled: the figures cover the checks that finished.
    """

    critics: dict[str, CriticSummary]
    rows: list[dict[str, Any]]
    meta: dict[str, Any]
    interrupted: bool = False
    files: dict[str, Path] = field(default_factory=dict)

    def failed_critics(self) -> dict[str, str]:
        """Critics whose every finished check failed -> their first error."""
        return {
            name: s.first_error or "unknown error" for name, s in self.critics.items() if s.failed
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain data: every figure and every per-trajectory score."""
        return {
            "interrupted": self.interrupted,
            "protocols": PROTOCOLS,
            "meta": self.meta,
            "critics": {name: s.to_dict() for name, s in self.critics.items()},
            "trajectories": self.rows,
        }

    def write(self, out: str | Path, *, plot: bool = True) -> dict[str, Path]:
        """Write the report's files into the directory ``out``.

        The files: ``report.json``, ``pr_curves.png``, ``reliability.png`` and one calibration
        file per critic (``calibration/<critic>.json``).

        A plot that cannot be drawn this time (no off-track example, no verdict) is removed
        if an earlier run left one, so every file in ``out`` describes this report.

        Returns:
            The written files by kind (``"json"``, ``"plot"``, ``"reliability"``,
            ``"calibration:<critic>"``); also kept in :attr:`files`.
        """
        directory = Path(out)
        directory.mkdir(parents=True, exist_ok=True)
        calibrations = self._write_calibrations(directory)  # report.json names the files
        written = {"json": directory / "report.json"}
        data = _finite_json(self.to_dict())
        written["json"].write_text(
            json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n",
            encoding="utf-8",
        )
        written.update(calibrations)
        plots = {
            "plot": (directory / "pr_curves.png", plot_pr_curves),
            "reliability": (directory / "reliability.png", plot_reliability_diagram),
        }
        for kind, (path, draw) in plots.items():
            drawn = draw(self, path) if plot else None
            if drawn is not None:
                written[kind] = drawn
            elif path.exists():
                path.unlink()  # an earlier run's plot would describe other figures
        self.files = dict(written)
        return written

    def _write_calibrations(self, directory: Path) -> dict[str, Path]:
        written: dict[str, Path] = {}
        for name, summary in self.critics.items():
            if summary.calibration is not None:
                path = directory / "calibration" / f"{_file_name(name)}.json"
                written[f"calibration:{name}"] = summary.calibration.save(path)
                if summary.calibration_figures is not None:
                    summary.calibration_figures["file"] = str(path)
        return written


def _finite_json(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by ``None``.

    JSON has no NaN: a bare ``NaN`` in report.json breaks strict parsers such as ``jq`` and
    browsers.

    Example:
        >>> _finite_json({"auc": float("nan"), "f1": [0.5, float("inf")]})
        {'auc': None, 'f1': [0.5, None]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return _finite_json(value.item())
        except (TypeError, ValueError):
            return value
    return value


def _summarise(
    name: str,
    labels: Sequence[int],
    scores: Mapping[int, float],
    flagged: Mapping[int, bool],
    prices: Sequence[float | None] | None,
    dev: Sequence[int] | None,
    test: Sequence[int] | None,
) -> CriticSummary:
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


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "critic"


def _cost_dict(choice: CostChoice) -> dict[str, Any]:
    """A cost choice as JSON data ("flag nothing" has no risk threshold: ``None``, not inf)."""
    data = asdict(choice)
    if not math.isfinite(data["threshold"]):
        data["threshold"] = None
    return data


def _indices(part: Sequence[int] | None, scores: Mapping[int, float]) -> list[int]:
    return [i for i in (part if part is not None else sorted(scores)) if i in scores]


def _calibrate(
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
    from inferact_langgraph.eval.reliability import calibration_figures

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


def _cross_validate(
    summary: CriticSummary,
    labels: Sequence[int],
    scores: Mapping[int, float],
    folds: int,
    repeats: int,
    seed: int,
) -> None:
    from inferact_langgraph.eval.reliability import cross_validated_calibration

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


def _choose_cost(
    summary: CriticSummary,
    labels: Sequence[int],
    scores: Mapping[int, float],
    dev: Sequence[int] | None,
    test: Sequence[int] | None,
    costs: tuple[float, float],
) -> None:
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


def build_report(
    dataset: Dataset,
    results: Mapping[str, Mapping[str, Outcome]],
    *,
    dev_split: float | None = None,
    seed: int = 0,
    stats: RunStats | None = None,
    interrupted: bool = False,
    meta: Mapping[str, Any] | None = None,
    calibrate: bool = True,
    calibration_cv: int | None = None,
    calibration_repeats: int = 10,
    costs: tuple[float, float] | None = None,
) -> EvalReport:
    """Compute every figure for every critic from a run's outcomes.

    Args:
        dataset: The trajectories that were checked (labels, prices, bad records).
        results: ``{critic name: {item id: Outcome}}`` (from :class:`EvalRunner`); missing
            entries (an interrupted run) are simply not scored.
        dev_split: Fraction of each class used to choose the threshold (``None``: no split,
            only the paper's protocol and the critic's own threshold).
        seed: Seed of the split.
        stats: The run's statistics, copied into ``meta``.
        interrupted: Mark the report as partial.
        meta: Extra metadata (model, flags), copied into ``meta``.
        calibrate: Fit a calibration per critic: on the dev part and measured on the held-out
            part with a dev split, else on all the data (then without held-out figures).
        calibration_cv: Also measure calibration by repeated stratified k-fold over all the
            data with this many folds (the honest figure when there are few trajectories).
        calibration_repeats: Repeats of that cross-validation.
        costs: ``(cost of a missed off-track action, cost of a human review)``: choose the
            threshold of lowest expected cost on the dev part (else on all the data).

    Raises:
        ValueError: ``dev_split`` outside (0, 1), or a cost that is not positive.
    """
    if costs is not None:
        cost_threshold([1], [0.5], cost_missed=costs[0], cost_review=costs[1])  # validates
    items = dataset.items
    labels = [item.label for item in items]
    has_prices = any(item.price is not None for item in items)
    prices = [item.price for item in items] if has_prices else None
    dev = test = None
    split_of: dict[int, str] = {}
    if dev_split:
        dev, test = stratified_split(labels, dev_split, seed=seed)
        split_of = {**dict.fromkeys(dev, "dev"), **dict.fromkeys(test, "held_out")}
    aggregate = _aggregator()
    rows: list[dict[str, Any]] = [
        {
            "id": item.id,
            "line": item.line,
            "label": item.label,
            "label_name": "incorrect" if item.label else "correct",
            "price": item.price,
            "risk": item.risk,
            "split": split_of.get(i),
            "critics": {},
        }
        for i, item in enumerate(items)
    ]
    summaries: dict[str, CriticSummary] = {}
    for name, outcomes in results.items():
        scores: dict[int, float] = {}
        flagged: dict[int, bool] = {}
        steps: dict[int, list[float]] = {}
        counts = {"checked": 0, "errors": 0, "cached": 0, "calls": 0, "tin": 0, "tout": 0}
        first_error: str | None = None
        own_threshold: float | None = None
        for i, item in enumerate(items):
            outcome = outcomes.get(item.id)
            if outcome is None:
                continue
            counts["checked"] += 1
            counts["cached"] += outcome.cached
            entry: dict[str, Any] = {"cached": outcome.cached, "seconds": outcome.seconds}
            if outcome.verdict is None:
                counts["errors"] += 1
                entry["error"] = outcome.error
                first_error = first_error or f"{item.id}: {outcome.error}"
            else:
                v = outcome.verdict
                scores[i], flagged[i] = v.score, v.flagged
                own_threshold = v.threshold if own_threshold is None else own_threshold
                if v.step_scores:
                    steps[i] = list(v.step_scores)
                counts["calls"] += v.usage.model_calls
                counts["tin"] += v.usage.input_tokens
                counts["tout"] += v.usage.output_tokens
                entry.update(
                    score=v.score,
                    risk_score=1.0 - v.score,
                    flagged=v.flagged,
                    threshold=v.threshold,
                    step_scores=list(v.step_scores),
                    usage=v.usage.model_dump(),
                )
            rows[i]["critics"][name] = entry
        summary = _summarise(name, labels, scores, flagged, prices, dev, test)
        summary.first_error, summary.own_threshold = first_error, own_threshold
        if scores and calibrate:
            _calibrate(summary, labels, scores, dev, test, seed=seed, rows=rows)
        if scores and calibration_cv:
            _cross_validate(summary, labels, scores, calibration_cv, calibration_repeats, seed)
        if scores and costs is not None:
            _choose_cost(summary, labels, scores, dev, test, costs)
        summary.checked, summary.errors, summary.cached = (
            counts["checked"],
            counts["errors"],
            counts["cached"],
        )
        summary.model_calls, summary.input_tokens, summary.output_tokens = (
            counts["calls"],
            counts["tin"],
            counts["tout"],
        )
        if steps:
            if len(steps) < len(scores):
                summary.notes.append(
                    f"{len(scores) - len(steps)} verdicts carry no step scores: "
                    "left out of the aggregations"
                )
            for how in AGGREGATIONS:
                agg_scores = {i: min(1.0, max(0.0, aggregate(s, how))) for i, s in steps.items()}
                for i, value in agg_scores.items():
                    rows[i]["critics"][name].setdefault("aggregations", {})[how] = value
                threshold = outcomes[items[next(iter(steps))].id].verdict.threshold  # type: ignore[union-attr]
                agg_flags = {i: value < threshold for i, value in agg_scores.items()}
                sub = _summarise(f"{name}@{how}", labels, agg_scores, agg_flags, prices, dev, test)
                sub.checked = sub.scored
                summary.aggregations[how] = sub
        summaries[name] = summary
    info: dict[str, Any] = {
        "source": dataset.source,
        "trajectories": len(items),
        "off_track": sum(labels),
        "on_track": len(labels) - sum(labels),
        "bad_records": [asdict(bad) for bad in dataset.errors],
        "dev_split": dev_split,
        "seed": seed,
        "dev_size": len(dev) if dev is not None else None,
        "held_out_size": len(test) if test is not None else None,
        "has_prices": has_prices,
        "positive_class": "off track (label 'incorrect'); risk score = 1 - verdict.score",
        "threshold_semantics": "flag when 1 - score >= threshold (score <= 1 - threshold); "
        "critic_threshold: the same decision as the critics make it, flag when score < "
        "critic_threshold",
        "costs": None if costs is None else {"missed": costs[0], "review": costs[1]},
    }
    if stats is not None:
        info["run"] = asdict(stats)
    info.update(meta or {})
    from inferact_langgraph.eval.pricing import dollar_cost

    for summary in summaries.values():
        summary.dollars = dollar_cost(
            info.get("model"),
            input_tokens=summary.input_tokens,
            output_tokens=summary.output_tokens,
            base_url=info.get("base_url"),
        )
    return EvalReport(critics=summaries, rows=rows, meta=info, interrupted=interrupted)


def _pct(value: float | None) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (f"{100 * value:.1f}")
    )


def _main_protocol(summary: CriticSummary) -> str:
    return "held_out" if "held_out" in summary.metrics else "paper"


def output_console(file: Any = None) -> Any:
    """A rich console that never cuts a value short.

    On a terminal, tables fit its width and wrap (``overflow="fold"``), never ``…``; when
    the output is piped or captured, lines are as long as the tables need.
    """
    from rich.console import Console

    stream = file if file is not None else sys.stdout
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return Console(file=file)
    return Console(file=file, width=400, soft_wrap=True, force_terminal=False)


def _fmt_threshold(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.6g}"


def paste_line(
    name: str,
    threshold: float,
    meta: Mapping[str, Any] | None = None,
    *,
    calibration_file: str | None = None,
) -> str:
    """The ``with_inferact(...)`` line that deploys critic ``name`` at ``threshold``.

    ``threshold`` is in the critic's own direction (flag when ``score < threshold``), on the
    raw score the evaluation measured (``calibration=None``) unless ``calibration_file`` maps
    it.

    Example:
        >>> print(paste_line("inferact", 0.55, {"model": "openai:gpt-4o", "preset": "hotpotqa"}))
        with_inferact(graph, model="openai:gpt-4o", preset="hotpotqa", calibration=None, ...
        >>> paste_line("inferact", 0.4, {"model": "m"}, calibration_file="r/inferact.json")
        'with_inferact(graph, model="m", calibration="r/inferact.json", threshold=0.4)'
        >>> print(paste_line("standard", 0.3, {"model": "m"}))
        with_inferact(graph, critic=make_critic("standard", model="m", calibration=None, ...
    """
    meta = meta or {}
    model_name = str(meta.get("model") or "<your critic model>")
    if meta.get("base_url"):
        bare = model_name.split(":", 1)[1] if model_name.startswith("openai:") else model_name
        model = f'ChatOpenAI(model="{bare}", base_url="{meta["base_url"]}")'
    else:
        model = f'"{model_name}"'
    preset = meta.get("preset")
    options = f', preset="{preset}"' if preset and preset != "generic" else ""
    if meta.get("risk_aware"):
        options += ", risk_aware=True"
    if calibration_file:
        options += f', calibration="{calibration_file}"'
    else:  # the shipped default calibration would move the threshold's meaning
        options += ", calibration=None"
    value = _fmt_threshold(threshold)
    if name == "inferact" and not meta.get("risk_aware"):  # with_inferact builds InferAct
        return f"with_inferact(graph, model={model}{options}, threshold={value})"
    return (
        f'with_inferact(graph, critic=make_critic("{name}", model={model}{options}, '
        f"threshold={value}))"
    )


_SHOWN_THRESHOLD = {"held_out": "dev", "held_out_tuned": "held_out_tuned", "paper": "paper"}


def render_tables(report: EvalReport, console: Any = None) -> None:
    """Print the report: detection (Table 1), calibration, cost, Appendix D, usage, errors.

    Thresholds are printed in the critic's own direction (flag when ``score < threshold``)
    with a ready-to-paste ``with_inferact(..., threshold=...)`` line per critic. Values are
    never truncated (see :func:`output_console`).

    Args:
        report: The report.
        console: A ``rich.console.Console`` (default: :func:`output_console` on stdout).
    """
    from rich import box
    from rich.table import Table

    console = console or output_console()
    has_prices = bool(report.meta.get("has_prices"))
    suffix = " — PARTIAL: the run was interrupted" if report.interrupted else ""

    def table(title: str, columns: Sequence[str], left: Sequence[str]) -> Any:
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for col in columns:
            t.add_column(col, justify="left" if col in left else "right", overflow="fold")
        return t

    det_cols = ["critic", "protocol", "n", "Rec", "Prec", "F1", "AUC-PR", "threshold", "FN"]
    det_cols += ["FN $"] if has_prices else []
    detection = table(
        f"Detection of off-track trajectories (Table 1), in %{suffix}",
        det_cols,
        ("critic", "protocol"),
    )
    ranking = table(
        f"Ranking and calibration (later version), in %{suffix}",
        ("critic", "protocol", "n", "macro-F1", "ROC-AUC", "ECE", "Brier", "AUC-PR(trapz)"),
        ("critic", "protocol"),
    )
    for name, summary in report.critics.items():
        first = True
        for protocol in ("held_out", "held_out_tuned", "paper", "own"):
            if protocol not in summary.metrics:
                continue
            m = summary.metrics[protocol]
            head = [name if first else "", SHORT_PROTOCOLS[protocol]]
            last = protocol == "own"
            if m is None:
                detection.add_row(*head, *["—"] * (len(det_cols) - 2), end_section=last)
                ranking.add_row(*head, *["—"] * 6, end_section=last)
            else:
                if protocol == "own":
                    thr = f"{_fmt_threshold(summary.own_threshold)} (own)"
                else:
                    choice = summary.thresholds.get(_SHOWN_THRESHOLD[protocol])
                    thr = _fmt_threshold(choice.critic_threshold if choice else None)
                cells = [
                    str(m.n),
                    _pct(m.recall),
                    _pct(m.precision),
                    _pct(m.f1),
                    _pct(m.auc_pr),
                    thr,
                    str(m.fn),
                ]
                if has_prices:
                    cells.append("—" if m.missed_price is None else f"${m.missed_price:,.0f}")
                detection.add_row(*head, *cells, end_section=last)
                if protocol != "held_out_tuned":  # threshold-free figures repeat there
                    ranking.add_row(
                        *head,
                        str(m.n),
                        _pct(m.macro_f1),
                        _pct(m.roc_auc),
                        _pct(m.ece),
                        _brier_of(report, name, protocol),
                        _pct(m.auc_pr_trapezoid),
                        end_section=last,
                    )
            first = False
    console.print(detection)
    console.print(
        "[dim]dev→test: threshold chosen on the dev part, figures on the held-out part. "
        "test*, all*: threshold tuned on the data it is measured on, as in the paper "
        "(optimistic). all/own: the critic's own threshold. threshold: the critic flags "
        "when score < threshold (paste it as threshold=). FN: missed off-track actions"
        + (" (FN $: their summed price, Table 3)" if has_prices else "")
        + ".[/dim]"
    )
    console.print(ranking)
    _render_calibration(report, console, table)
    _render_costs(report, console, table)

    _render_aggregations(report, console, table)
    _render_usage(report, console, table)
    _render_paste_lines(report, console)
    for name, s in report.critics.items():
        for note in s.notes:
            console.print(f"[dim]note ({name}): {note}[/dim]")
        if s.errors and not s.failed:
            console.print(
                f"[yellow]{name}: {s.errors} of {s.checked} checks failed (left out of the "
                f"figures); first: {s.first_error}[/yellow]"
            )
    bad = report.meta.get("bad_records") or []
    if bad:
        console.print(f"[yellow]{len(bad)} bad records skipped:[/yellow]")
        for entry in bad[:20]:
            console.print(f"  line {entry['line']}: {entry['message']}")
        if len(bad) > 20:
            console.print(f"  ... and {len(bad) - 20} more (see report.json)")


def _brier_of(report: EvalReport, name: str, protocol: str) -> str:
    from inferact_langgraph.eval.metrics import brier_score

    part = "held_out" if protocol == "held_out" else None
    pairs = [
        (row["label"], row["critics"][name]["risk_score"])
        for row in report.rows
        if "risk_score" in row["critics"].get(name, {}) and (part is None or row["split"] == part)
    ]
    if not pairs:
        return "—"
    return f"{brier_score([p[0] for p in pairs], [p[1] for p in pairs]):.3f}"


def _render_calibration(report: EvalReport, console: Any, table: Any) -> None:
    rows = {n: s for n, s in report.critics.items() if s.calibration_figures}
    if not rows:
        return
    cal = table(
        "Calibration of P(on track): before → after (ECE, AUC-PR in %)",
        ("critic", "measured on", "n", "method", "ECE", "Brier", "AUC-PR", "threshold"),
        ("critic", "measured on", "method"),
    )

    def arrow(before: Any, after: Any, fmt: Callable[[Any], str]) -> str:
        return f"{fmt(before)} → {fmt(after)}"

    def brier(v: Any) -> str:
        return "—" if v is None else f"{v:.3f}"

    for name, summary in rows.items():
        f = summary.calibration_figures or {}
        choice = f.get("choice") or {}
        if "after" in f:
            cal.add_row(
                name,
                f"held-out (fit on {f['fitted_on']})",
                str(f["n_held_out"]),
                f.get("method", ""),
                arrow(f["before"]["ece"], f["after"]["ece"], _pct),
                arrow(f["before"]["brier"], f["after"]["brier"], brier),
                arrow(f["before"]["auc_pr"], f["after"]["auc_pr"], _pct),
                _fmt_threshold(choice.get("critic_threshold")),
            )
        elif "method" in f:
            cal.add_row(
                name,
                f"no held-out part (fit on {f['fitted_on']})",
                str(f["n_fit"]),
                f["method"],
                "—",
                "—",
                "—",
                _fmt_threshold(choice.get("critic_threshold")),
            )
        cv = f.get("cv")
        if cv:
            _cv_rows(cal, name if "method" not in f else "", cv, brier)
    console.print(cal)
    console.print(
        "[dim]ECE: expected calibration error, 10 equal-width bins (ECE mass: 10 equal-mass "
        "bins); Brier: mean squared error of the probability; AUC-PR of the off-track class. "
        "threshold: best F1 on the calibrated scores of the part the calibration was fitted "
        "on (flag when calibrated score < threshold). method: the one with the lowest "
        "held-out log-loss; the calibration files are in the report directory. CV: every "
        "trajectory is calibrated by a map fitted without it; pooled: figures over all of "
        "them at once (the headline), per fold: within each small held-out fold (noisier). "
        "Floor: the ECE that as many labels show when the probabilities are exactly right "
        "(labels drawn from them); an ECE near its floor is as good as this data can "
        "tell.[/dim]"
    )
    for note in _cv_notes(report):
        console.print(note, markup=False, highlight=False, soft_wrap=True)


def _cv_rows(cal: Any, name: str, cv: Mapping[str, Any], brier: Callable[[Any], str]) -> None:
    """The cross-validated calibration rows of one critic (pooled, per fold, floor)."""
    from rich.markup import escape

    after, before = cv["after"], cv["before"]
    chosen = ", ".join(f"{m} {k}" for m, k in sorted(cv["methods"].items()))
    fold_auc = cv["fold_auc_pr"]
    whole = (cv.get("all_data") or {}).get("auc_pr") or {}

    def spread(key: str) -> str:
        if key not in after:
            return "—"
        a = after[key]
        return f"{_pct(before.get(key))} → {_pct(a['mean'])} [{_pct(a['min'])}-{_pct(a['max'])}]"

    auc = f"{_pct(before['auc_pr'])} → {_pct(after['auc_pr']['mean'])}"
    if whole:
        auc += f"; map fitted on all: {_pct(whole['before'])} → {_pct(whole['after'])}"
    head = f"{cv['folds']}-fold CV x{cv['repeats']}, pooled out-of-fold: mean [min-max]"
    cal.add_row(
        name,
        escape(head),
        str(cv["n"]),
        chosen,
        escape(spread("ece")),
        f"{brier(before['brier'])} → {brier(after['brier']['mean'])}",
        escape(auc),
        "",
    )
    if "ece_mass" in after:
        cal.add_row("", "  same, ECE mass", str(cv["n"]), "", escape(spread("ece_mass")), *[""] * 3)
    per_fold = cv.get("per_fold")
    if per_fold:
        b, a = per_fold["before"], per_fold["after"]
        changed = (
            f" ({fold_auc['changed']} of {fold_auc['folds']} folds moved, at most "
            f"{100 * fold_auc['max_change']:.1f})"
            if fold_auc.get("changed")
            else ""
        )
        cal.add_row(
            "",
            escape(f"  per fold (~{per_fold['size']:.0f} each), mean"),
            "",
            "",
            f"{_pct(b['ece'])} → {_pct(a['ece'])} (mass {_pct(b['ece_mass'])} → "
            f"{_pct(a['ece_mass'])})",
            f"{brier(b['brier'])} → {brier(a['brier'])}",
            f"{_pct(fold_auc['before'])} → {_pct(fold_auc['after'])}{changed}",
            "",
        )
    floor = cv.get("floor")
    if floor:
        cal.add_row(
            "",
            escape(f"  floor: right probabilities, {cv['n']} labels"),
            "",
            "",
            f"{_pct(floor['ece']['mean'])} (mass {_pct(floor['ece_mass']['mean'])})",
            *[""] * 3,
        )


def _cv_notes(report: EvalReport) -> list[str]:
    """Where each critic's pooled out-of-fold ECE lies among what right probabilities show."""
    notes = []
    for name, summary in report.critics.items():
        cv = (summary.calibration_figures or {}).get("cv") or {}
        floor = cv.get("floor")
        if not floor:
            continue
        w, observed = floor["ece"], cv["after"]["ece"]["mean"]
        notes.append(
            f"{name}: cross-validated ECE {_pct(observed)}% (pooled out-of-fold, mean of "
            f"{cv['repeats']} repeats), {'at or under' if observed <= cv['target'] else 'above'} "
            f"{_pct(cv['target'])}%. Right probabilities show {_pct(w['mean'])}% on average on "
            f"{cv['n']} labels (90th percentile {_pct(w['q90'])}%, at or under "
            f"{_pct(cv['target'])}% in {100 * w['share_at_or_under_target']:.0f}% of "
            f"{floor['draws']} draws); this ECE is at their "
            f"{100 * w['share_at_or_under_observed']:.0f}th percentile."
        )
    return notes


def _render_aggregations(report: EvalReport, console: Any, table: Any) -> None:
    with_steps = {n: s for n, s in report.critics.items() if s.aggregations}
    if not with_steps:
        return
    agg = table(
        "Multi-step aggregations (Appendix D), in %",
        ("critic", "aggregation", "protocol", "F1", "AUC-PR", "Rec", "Prec", "threshold"),
        ("critic", "aggregation", "protocol"),
    )
    for name, summary in with_steps.items():
        for how, sub in summary.aggregations.items():
            protocol = _main_protocol(sub)
            m = sub.metrics.get(protocol)
            choice = sub.thresholds.get(_SHOWN_THRESHOLD[protocol])
            agg.add_row(
                name,
                how,
                SHORT_PROTOCOLS[protocol],
                *(
                    ("—",) * 4
                    if m is None
                    else (_pct(m.f1), _pct(m.auc_pr), _pct(m.recall), _pct(m.precision))
                ),
                _fmt_threshold(choice.critic_threshold if choice else None),
            )
    console.print(agg)


def _render_usage(report: EvalReport, console: Any, table: Any) -> None:
    usage = table(
        "Cost of the critics",
        (
            "critic",
            "checked",
            "errors",
            "cached",
            "calls",
            "calls/traj",
            "prompt tok/traj",
            "output tok/traj",
        ),
        ("critic",),
    )
    priced = any(s.dollars is not None for s in report.critics.values())
    if priced:
        usage.add_column("$ total", justify="right", overflow="fold")
        usage.add_column("$/traj", justify="right", overflow="fold")
    for name, s in report.critics.items():
        per = {k: s.per_trajectory(k) for k in ("model_calls", "input_tokens", "output_tokens")}
        dollars = []
        if priced:
            dollars = (
                ["—", "—"]
                if s.dollars is None
                else [f"{s.dollars:.4f}", f"{s.dollars / s.scored:.5f}" if s.scored else "—"]
            )
        usage.add_row(
            name,
            str(s.checked),
            str(s.errors),
            str(s.cached),
            str(s.model_calls),
            *("—" if v is None else f"{v:.1f}" for v in per.values()),
            *dollars,
        )
    console.print(usage)
    if priced:
        console.print(
            f"[dim]$: list prices of {report.meta.get('model')} from langchain-community's "
            "OpenAI price table, for every verdict's tokens (cached ones included: the cost "
            "of a fresh run); tokens as the model reported them, else estimated at four "
            "characters a token.[/dim]"
        )


def _render_costs(report: EvalReport, console: Any, table: Any) -> None:
    rows = {n: s for n, s in report.critics.items() if s.cost}
    if not rows:
        return
    first = next(iter(rows.values())).cost or {}
    title = (
        f"Threshold from costs: a missed off-track action costs {first['cost_missed']:g}, "
        f"a human review {first['cost_review']:g} (mean cost per action)"
    )
    cost_table = table(
        title,
        (
            "critic",
            "chosen on",
            "threshold",
            "reviewed",
            "missed",
            "cost",
            "held-out cost",
            "review all",
            "review none",
        ),
        ("critic", "chosen on"),
    )
    for name, summary in rows.items():
        c = summary.cost or {}
        choice: CostChoice = c["choice"]
        held = c.get("held_out")
        cost_table.add_row(
            name,
            f"{c['chosen_on']} (n={choice.n})",
            _fmt_threshold(choice.critic_threshold),
            str(choice.reviewed),
            str(choice.missed),
            f"{choice.expected_cost:.3g}",
            "—" if not held else f"{held['expected_cost']:.3g} (n={held['n']})",
            f"{(held or {}).get('cost_review_all', choice.cost_review_all):.3g}",
            f"{(held or {}).get('cost_review_none', choice.cost_review_none):.3g}",
        )
    console.print(cost_table)
    console.print(
        "[dim]threshold: flag when score < threshold; 0 flags nothing. review all / review "
        "none: the mean cost of sending every action to a human / none (on the held-out "
        "part when there is one).[/dim]"
    )


def _render_paste_lines(report: EvalReport, console: Any) -> None:
    lines = []
    for name, summary in report.critics.items():
        recommended = summary.recommended()
        if recommended is None:
            continue
        how, value = recommended
        lines.append(f"# {name}: {how}; flags when score < {_fmt_threshold(value)}")
        lines.append(paste_line(name, value, report.meta))
        f = summary.calibration_figures or {}
        file = f.get("file")
        calibrated = None
        if summary.cost is not None and summary.cost.get("calibrated_choice"):
            calibrated = summary.cost["calibrated_choice"]["critic_threshold"]
        elif f.get("choice"):
            calibrated = f["choice"]["critic_threshold"]
        if file and calibrated is not None:
            lines.append(f"# {name}, calibrated (threshold on P(on track)):")
            lines.append(paste_line(name, calibrated, report.meta, calibration_file=file))
    if not lines:
        return
    console.print("Ready to paste (from inferact_langgraph import with_inferact, make_critic):")
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def pr_curves(report: EvalReport) -> list[tuple[list[str], list[int], list[float], str]]:
    """The distinct PR curves of a report: ``(names, labels, risk scores, line style)``.

    Identical curves are merged into one entry carrying every name.
    """
    labels = [row["label"] for row in report.rows]
    curves: list[tuple[list[str], list[int], list[float], str]] = []
    seen: dict[tuple[tuple[int, float], ...], int] = {}

    def add(label: str, pairs: list[tuple[int, float]], style: str) -> None:
        y = [p[0] for p in pairs]
        if not y or sum(y) == 0:
            return
        risk = [p[1] for p in pairs]
        key = tuple((a, round(b, 12)) for a, b in pairs)
        if key in seen:  # identical curve: one line, both names
            curves[seen[key]][0].append(label)
            return
        seen[key] = len(curves)
        curves.append(([label], y, risk, style))

    for name, summary in report.critics.items():
        pairs = [
            (labels[i], row["critics"][name]["risk_score"])
            for i, row in enumerate(report.rows)
            if "risk_score" in row["critics"].get(name, {})
        ]
        add(name, pairs, "-")
        for how in summary.aggregations:
            pairs = [
                (labels[i], 1.0 - row["critics"][name]["aggregations"][how])
                for i, row in enumerate(report.rows)
                if how in row["critics"].get(name, {}).get("aggregations", {})
            ]
            add(f"{name}@{how}", pairs, "--")
    return curves


def plot_pr_curves(report: EvalReport, path: str | Path) -> Path | None:
    """Draw one precision-recall curve per critic (all scored data) into a PNG.

    Aggregations of multi-step critics are drawn dashed. Curves that are identical (the
    ``multistep:product`` critic and its own ``@product`` aggregation) are drawn once, with
    both names in the legend, so no curve hides another. Uses matplotlib's Agg canvas only
    (no global backend change, no display needed).

    Returns:
        The path written, or ``None`` when no critic has a PR curve (no off-track example).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from sklearn.metrics import average_precision_score, precision_recall_curve

    labels = [row["label"] for row in report.rows]
    curves = pr_curves(report)
    if not curves:
        return None
    figure = Figure(figsize=(6.5, 5), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for names, y, risk, style in curves:
        precision, recall, _ = precision_recall_curve(y, risk)
        ap = average_precision_score(y, risk)
        axes.plot(
            recall,
            precision,
            style,
            drawstyle="steps-post",
            label=f"{' = '.join(names)} (AP {ap:.2f}, n={len(y)})",
        )
    base = sum(labels) / len(labels) if labels else 0
    axes.axhline(base, color="grey", linewidth=0.8, linestyle=":", label=f"chance ({base:.2f})")
    axes.set_xlabel("Recall (off track)")
    axes.set_ylabel("Precision (off track)")
    axes.set_xlim(0, 1.0)
    axes.set_ylim(0, 1.05)
    title = "Precision-recall of the off-track class (all scored data)"
    if report.interrupted:
        title += " — partial run"
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=7, loc="lower left")
    figure.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out)
    return out


def plot_reliability_diagram(report: EvalReport, path: str | Path) -> Path | None:
    """The reliability diagram beside the PR curve: raw and calibrated P(on track).

    With a dev split it shows the held-out part (the calibration was fitted on the dev part);
    without one, the raw scores on all the data only (an in-sample calibrated curve would
    flatter it).

    Returns:
        The path written, or ``None`` when no critic has scores.
    """
    from inferact_langgraph.eval.reliability import plot_reliability

    split = any(row["split"] == "held_out" for row in report.rows)
    curves: dict[str, tuple[list[float], list[int]]] = {}
    for name in report.critics:
        entries = [
            (row["critics"][name], 1 - row["label"])
            for row in report.rows
            if "score" in row["critics"].get(name, {}) and (not split or row["split"] == "held_out")
        ]
        if not entries:
            continue
        curves[f"{name} raw"] = ([e["score"] for e, _ in entries], [y for _, y in entries])
        if split and all("calibrated_score" in e for e, _ in entries):
            curves[f"{name} calibrated"] = (
                [e["calibrated_score"] for e, _ in entries],
                [y for _, y in entries],
            )
    title = "Reliability of P(on track), " + (
        "held-out part (calibration fitted on the dev part)" if split else "all data, raw"
    )
    return plot_reliability(curves, path, title=title) if curves else None
