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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inferact_langgraph.eval.datasets import Dataset
from inferact_langgraph.eval.metrics import (
    MetricSet,
    ThresholdChoice,
    best_threshold,
    compute_metrics,
    stratified_split,
)
from inferact_langgraph.eval.runner import Outcome, RunStats

__all__ = [
    "AGGREGATIONS",
    "PROTOCOLS",
    "CriticSummary",
    "EvalReport",
    "build_report",
    "plot_pr_curves",
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
        from inferact_langgraph.critics.multistep import aggregate_steps  # type: ignore
    except ImportError:
        return _local_aggregate
    return aggregate_steps  # type: ignore[no-any-return]


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
            },
            "thresholds": {
                k: (None if v is None else {**asdict(v), "score_threshold": v.score_threshold})
                for k, v in self.thresholds.items()
            },
            "metrics": {k: (None if v is None else v.to_dict()) for k, v in self.metrics.items()},
            "aggregations": {k: v.to_dict() for k, v in self.aggregations.items()},
            "notes": list(self.notes),
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
        """Write ``report.json`` (and ``pr_curves.png``) into the directory ``out``.

        Returns:
            The written files by kind (``"json"``, ``"plot"``).
        """
        directory = Path(out)
        directory.mkdir(parents=True, exist_ok=True)
        written = {"json": directory / "report.json"}
        data = _finite_json(self.to_dict())
        written["json"].write_text(
            json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n",
            encoding="utf-8",
        )
        if plot:
            path = plot_pr_curves(self, directory / "pr_curves.png")
            if path is not None:
                written["plot"] = path
        return written


def _finite_json(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by ``None`` (JSON has no NaN: a bare
    ``NaN`` in report.json breaks strict parsers such as ``jq`` and browsers).

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
    y, r, p = subset(everything)
    own_flags = [flagged[i] for i in everything]
    own = compute_metrics(
        y, [1.0 if f else 0.0 for f in own_flags], threshold=0.5, prices=p if prices else None
    )
    figures = metrics_at(everything, 0.0)  # threshold-free figures of the real scores
    summary.metrics["own"] = MetricSet(
        **{
            **own.to_dict(),
            "threshold": None,
            "auc_pr": figures.auc_pr,
            "auc_pr_trapezoid": figures.auc_pr_trapezoid,
            "roc_auc": figures.roc_auc,
            "ece": figures.ece,
        }
    )
    return summary


def build_report(
    dataset: Dataset,
    results: Mapping[str, Mapping[str, Outcome]],
    *,
    dev_split: float | None = None,
    seed: int = 0,
    stats: RunStats | None = None,
    interrupted: bool = False,
    meta: Mapping[str, Any] | None = None,
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

    Raises:
        ValueError: ``dev_split`` outside (0, 1).
    """
    items = dataset.items
    labels = [item.label for item in items]
    has_prices = any(item.price is not None for item in items)
    prices = [item.price for item in items] if has_prices else None
    dev = test = None
    split_of: dict[int, str] = {}
    if dev_split:
        dev, test = stratified_split(labels, dev_split, seed=seed)
        split_of = {**{i: "dev" for i in dev}, **{i: "held_out" for i in test}}
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
            else:
                v = outcome.verdict
                scores[i], flagged[i] = v.score, v.flagged
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
        "threshold_semantics": "flag when 1 - score >= threshold (score <= 1 - threshold)",
    }
    if stats is not None:
        info["run"] = asdict(stats)
    info.update(meta or {})
    return EvalReport(critics=summaries, rows=rows, meta=info, interrupted=interrupted)


def _pct(value: float | None) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (f"{100 * value:.1f}")
    )


def _main_protocol(summary: CriticSummary) -> str:
    return "held_out" if "held_out" in summary.metrics else "paper"


def render_tables(report: EvalReport, console: Any = None) -> None:
    """Print the report as rich tables: detection (Table 1), cost (Table 3), Appendix D, usage.

    Args:
        report: The report.
        console: A ``rich.console.Console`` (default: a new one on stdout).
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    has_prices = bool(report.meta.get("has_prices"))
    suffix = " — PARTIAL: the run was interrupted" if report.interrupted else ""
    detection = Table(
        title=f"Detection of off-track trajectories (Table 1), in %{suffix}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    ranking = Table(
        title=f"Ranking and calibration (later version), in %{suffix}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    det_cols = ["critic", "protocol", "n", "Rec", "Prec", "F1", "AUC-PR", "thr", "FN"]
    det_cols += ["FN $"] if has_prices else []
    for col in det_cols:
        left = col in ("critic", "protocol")
        detection.add_column(col, justify="left" if left else "right", no_wrap=not left or None)
    for col in ("critic", "protocol", "n", "macro-F1", "ROC-AUC", "ECE", "AUC-PR(trapz)"):
        left = col in ("critic", "protocol")
        ranking.add_column(col, justify="left" if left else "right")
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
                ranking.add_row(*head, *["—"] * 5, end_section=last)
            else:
                thr = "own" if m.threshold is None else f"{m.threshold:.2f}"
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
                        _pct(m.auc_pr_trapezoid),
                        end_section=last,
                    )
            first = False
    console.print(detection)
    console.print(
        "[dim]dev→test: threshold chosen on the dev part, figures on the held-out part. "
        "test*, all*: threshold tuned on the data it is measured on, as in the paper "
        "(optimistic). all/own: the critic's own threshold. thr: flag when 1 - score >= thr. "
        "FN: missed off-track actions"
        + (" (FN $: their summed price, Table 3)" if has_prices else "")
        + ".[/dim]"
    )
    console.print(ranking)

    with_steps = {n: s for n, s in report.critics.items() if s.aggregations}
    if with_steps:
        agg = Table(
            title="Multi-step aggregations (Appendix D), in %",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        for col in ("critic", "aggregation", "protocol", "F1", "AUC-PR", "Rec", "Prec"):
            agg.add_column(
                col, justify="left" if col in ("critic", "aggregation", "protocol") else "right"
            )
        for name, summary in with_steps.items():
            for how, sub in summary.aggregations.items():
                protocol = _main_protocol(sub)
                m = sub.metrics.get(protocol)
                agg.add_row(
                    name,
                    how,
                    SHORT_PROTOCOLS[protocol],
                    *(
                        ("—",) * 4
                        if m is None
                        else (_pct(m.f1), _pct(m.auc_pr), _pct(m.recall), _pct(m.precision))
                    ),
                )
        console.print(agg)

    usage = Table(
        title="Cost of the critics", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for col in (
        "critic",
        "checked",
        "errors",
        "cached",
        "calls",
        "calls/traj",
        "prompt tok/traj",
        "output tok/traj",
    ):
        usage.add_column(col, justify="left" if col == "critic" else "right", no_wrap=True)
    for name, s in report.critics.items():
        per = {k: s.per_trajectory(k) for k in ("model_calls", "input_tokens", "output_tokens")}
        usage.add_row(
            name,
            str(s.checked),
            str(s.errors),
            str(s.cached),
            str(s.model_calls),
            *("—" if v is None else f"{v:.1f}" for v in per.values()),
        )
    console.print(usage)
    for name, s in report.critics.items():
        for note in s.notes:
            console.print(f"[dim]note ({name}): {note}[/dim]")
    bad = report.meta.get("bad_records") or []
    if bad:
        console.print(f"[yellow]{len(bad)} bad records skipped:[/yellow]")
        for entry in bad[:20]:
            console.print(f"  line {entry['line']}: {entry['message']}")
        if len(bad) > 20:
            console.print(f"  ... and {len(bad) - 20} more (see report.json)")


def plot_pr_curves(report: EvalReport, path: str | Path) -> Path | None:
    """Draw one precision-recall curve per critic (all scored data) into a PNG.

    Aggregations of multi-step critics are drawn dashed. Uses matplotlib's Agg canvas only
    (no global backend change, no display needed).

    Returns:
        The path written, or ``None`` when no critic has a PR curve (no off-track example).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from sklearn.metrics import average_precision_score, precision_recall_curve

    labels = [row["label"] for row in report.rows]
    figure = Figure(figsize=(6.5, 5), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    drawn = 0

    def draw(label: str, pairs: list[tuple[int, float]], style: str) -> None:
        nonlocal drawn
        y = [p[0] for p in pairs]
        if not y or sum(y) == 0:
            return
        risk = [p[1] for p in pairs]
        precision, recall, _ = precision_recall_curve(y, risk)
        ap = average_precision_score(y, risk)
        axes.plot(
            recall,
            precision,
            style,
            drawstyle="steps-post",
            label=f"{label} (AP {ap:.2f}, n={len(y)})",
        )
        drawn += 1

    for name, summary in report.critics.items():
        pairs = [
            (labels[i], row["critics"][name]["risk_score"])
            for i, row in enumerate(report.rows)
            if "risk_score" in row["critics"].get(name, {})
        ]
        draw(name, pairs, "-")
        for how in summary.aggregations:
            pairs = [
                (labels[i], 1.0 - row["critics"][name]["aggregations"][how])
                for i, row in enumerate(report.rows)
                if how in row["critics"].get(name, {}).get("aggregations", {})
            ]
            draw(f"{name}@{how}", pairs, "--")
    if not drawn:
        return None
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
