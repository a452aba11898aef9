"""The report's figures as PNG files: precision-recall curves and the reliability diagram.

matplotlib's Agg canvas only: no global backend change, no display needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inferact_langgraph.eval.report import EvalReport

__all__ = ["plot_pr_curves", "plot_reliability_diagram", "pr_curves"]


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
    from inferact_langgraph.eval.calibration_quality import plot_reliability

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
