"""How far a critic's scores are from probabilities, and what a calibration changes.

:func:`calibration_summary` fits a :class:`~inferact_langgraph.calibration.Calibration` on the
dev part and measures the held-out part before and after: ECE (10 bins), Brier score and
AUC-PR. :func:`cross_validated_calibration` does the same over every trajectory by repeated
stratified k-fold (each trajectory is calibrated by a map fitted without it), the honest figure
when there are few trajectories. :func:`plot_reliability` draws the reliability diagram.

Example:
    >>> scores = [0.1, 0.15, 0.2, 0.3, 0.35, 0.6, 0.62, 0.64, 0.7, 0.9, 0.95, 0.97]
    >>> on_track = [0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1]
    >>> cv = cross_validated_calibration(scores, on_track, folds=2, repeats=2)
    >>> sorted(cv["before"]), cv["repeats"]
    (['auc_pr', 'brier', 'ece'], 2)
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score

from inferact_langgraph.calibration import Calibration, fit_calibration
from inferact_langgraph.eval.metrics import brier_score, expected_calibration_error

__all__ = [
    "calibration_figures",
    "calibration_summary",
    "cross_validated_calibration",
    "plot_reliability",
]


def calibration_figures(
    scores: Sequence[float], on_track: Sequence[int]
) -> dict[str, float | None]:
    """ECE, Brier score and AUC-PR (off-track class) of P(on track) = ``scores``.

    Example:
        >>> f = calibration_figures([0.9, 0.2, 0.8, 0.3], [1, 0, 1, 0])
        >>> round(f["ece"], 3), round(f["brier"], 3), f["auc_pr"]
        (0.2, 0.045, 1.0)
    """
    off = [1 - y for y in on_track]
    risk = [1.0 - s for s in scores]
    return {
        "ece": expected_calibration_error(off, risk),
        "brier": brier_score(off, risk),
        "auc_pr": float(average_precision_score(off, risk)) if sum(off) else None,
    }


def calibration_summary(
    dev_scores: Sequence[float],
    dev_on_track: Sequence[int],
    test_scores: Sequence[float],
    test_on_track: Sequence[int],
    *,
    seed: int = 0,
    info: Mapping[str, Any] | None = None,
) -> tuple[Calibration, dict[str, Any]]:
    """Fit on the dev part; figures of the held-out part before and after.

    Raises:
        CalibrationError: The dev part lacks two examples of a class.
    """
    calibration = fit_calibration(dev_scores, dev_on_track, seed=seed, info=info)
    after = calibration.apply(test_scores)
    return calibration, {
        "method": calibration.method,
        "n_dev": len(dev_scores),
        "n_held_out": len(test_scores),
        "before": calibration_figures(test_scores, test_on_track),
        "after": calibration_figures(after, test_on_track),
    }


def cross_validated_calibration(
    scores: Sequence[float],
    on_track: Sequence[int],
    *,
    folds: int = 5,
    repeats: int = 10,
    seed: int = 0,
) -> dict[str, Any]:
    """Held-out figures of calibration over all the data, by repeated stratified k-fold.

    In each repeat every trajectory's score is calibrated by a map fitted (method chosen by
    log-loss, as :func:`~inferact_langgraph.calibration.fit_calibration` does) on the other
    folds; ECE, Brier and AUC-PR are computed on the pooled out-of-fold probabilities. The
    means over repeats are reported, with their range, and the methods chosen.
    """
    from sklearn.model_selection import StratifiedKFold

    s = np.asarray(scores, dtype=float)
    y = np.asarray(on_track, dtype=int)
    k = max(2, min(folds, int((y == 0).sum()), int(y.sum())))
    runs: list[dict[str, float | None]] = []
    fold_auc: list[tuple[float, float]] = []
    methods: dict[str, int] = {}
    for repeat in range(repeats):
        pooled = np.zeros(len(s))
        splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed + repeat)
        for train, test in splitter.split(s, y):
            fitted = fit_calibration(s[train].tolist(), y[train].tolist(), seed=seed + repeat)
            methods[fitted.method] = methods.get(fitted.method, 0) + 1
            pooled[test] = fitted.apply(s[test].tolist())
            off = 1 - y[test]
            if 0 < off.sum() < len(off):  # a monotone map keeps each fold's ranking
                fold_auc.append(
                    (
                        float(average_precision_score(off, 1 - s[test])),
                        float(average_precision_score(off, 1 - pooled[test])),
                    )
                )
        runs.append(calibration_figures(pooled.tolist(), y.tolist()))

    def spread(key: str) -> dict[str, float]:
        values = [float(v) for r in runs if (v := r[key]) is not None]
        return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}

    return {
        "folds": k,
        "repeats": repeats,
        "seed": seed,
        "n": len(s),
        "methods": methods,
        "before": calibration_figures(s.tolist(), y.tolist()),
        "after": {key: spread(key) for key in ("ece", "brier", "auc_pr")},
        "fold_auc_pr": {
            "before": statistics.fmean(a for a, _ in fold_auc) if fold_auc else None,
            "after": statistics.fmean(b for _, b in fold_auc) if fold_auc else None,
        },
    }


def plot_reliability(
    curves: Mapping[str, tuple[Sequence[float], Sequence[int]]],
    path: str | Path,
    *,
    title: str = "Reliability (held-out part)",
    n_bins: int = 10,
) -> Path | None:
    """Draw a reliability diagram: mean predicted P(on track) against the observed rate.

    Args:
        curves: Label -> (probabilities of being on track, on-track labels).
        path: The PNG to write.
        title: The figure's title.
        n_bins: How many equal-width probability bins each curve is averaged over.

    Returns:
        The path written, or ``None`` when there is nothing to draw.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    drawn = 0
    figure = Figure(figsize=(6.5, 5), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    axes.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle=":", label="perfect")
    for i, (label, (prob, labels)) in enumerate(curves.items()):
        if not len(prob):
            continue
        p = np.asarray(prob, dtype=float)
        y = np.asarray(labels, dtype=int)
        bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
        xs, ys, sizes = [], [], []
        for b in np.unique(bins):
            mask = bins == b
            xs.append(float(p[mask].mean()))
            ys.append(float(y[mask].mean()))
            sizes.append(int(mask.sum()))
        ece = expected_calibration_error((1 - y).tolist(), (1 - p).tolist())
        style = "--" if "raw" in label else "-"
        axes.plot(
            xs,
            ys,
            style,
            marker="o",
            markersize=3,
            label=f"{label} (ECE {100 * ece:.1f}%)",
            zorder=3 + i,
        )
        drawn += 1
    if not drawn:
        return None
    axes.set_xlabel("Mean predicted P(on track) in the bin")
    axes.set_ylabel("Observed fraction on track")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.02)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out)
    return out
