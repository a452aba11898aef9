"""How far a critic's scores are from probabilities, and what a calibration changes.

:func:`calibration_summary` fits a :class:`~inferact_langgraph.calibration.Calibration` on the
dev part and measures the held-out part before and after: ECE (10 bins), Brier score and
AUC-PR. :func:`cross_validated_calibration` does the same over every trajectory by repeated
stratified k-fold (each trajectory is calibrated by a map fitted without it), the honest figure
when there are few trajectories. :func:`plot_reliability` draws the reliability diagram.

Example:
    >>> scores = [0.1, 0.15, 0.2, 0.3, 0.35, 0.6, 0.62, 0.64, 0.7, 0.9, 0.95, 0.97]
    >>> on_track = [0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1]
    >>> cv = cross_validated_calibration(scores, on_track, folds=2, repeats=2, floor_draws=10)
    >>> sorted(cv["before"]), cv["repeats"]
    (['auc_pr', 'brier', 'ece', 'ece_mass'], 2)
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
    scores: Sequence[float], on_track: Sequence[int], *, n_bins: int = 10
) -> dict[str, float | None]:
    """ECE, Brier score and AUC-PR (off-track class) of P(on track) = ``scores``.

    ``ece`` has ``n_bins`` equal-width bins, ``ece_mass`` ``n_bins`` equal-mass bins (see
    :func:`~inferact_langgraph.eval.metrics.expected_calibration_error`).

    Example:
        >>> f = calibration_figures([0.9, 0.2, 0.8, 0.3], [1, 0, 1, 0])
        >>> round(f["ece"], 3), round(f["ece_mass"], 3), round(f["brier"], 3), f["auc_pr"]
        (0.2, 0.2, 0.045, 1.0)
    """
    off = [1 - y for y in on_track]
    risk = [1.0 - s for s in scores]
    return {
        "ece": expected_calibration_error(off, risk, n_bins=n_bins),
        "ece_mass": expected_calibration_error(off, risk, n_bins=n_bins, binning="mass"),
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


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def _auc_pr(on_track: np.ndarray, prob: np.ndarray) -> float | None:
    off = 1 - on_track
    if not 0 < off.sum() < len(off):
        return None
    return float(average_precision_score(off, 1.0 - prob))


def cross_validated_calibration(
    scores: Sequence[float],
    on_track: Sequence[int],
    *,
    folds: int = 5,
    repeats: int = 10,
    seed: int = 0,
    n_bins: int = 10,
    floor_draws: int = 200,
    target: float = 0.05,
) -> dict[str, Any]:
    """Held-out figures of calibration over all the data, by repeated stratified k-fold.

    In each repeat every trajectory's score is calibrated by a map fitted (method chosen by
    log-loss, as :func:`~inferact_langgraph.calibration.fit_calibration` does) on the other
    folds, so every trajectory gets one out-of-fold probability. The figures:

    * ``after``: ECE (``ece``: ``n_bins`` equal-width bins; ``ece_mass``: equal-mass bins),
      Brier and AUC-PR of the *pooled* out-of-fold probabilities (all ``n`` at once), mean
      and range over the repeats. The headline: each ECE bin holds ~n/n_bins trajectories.
    * ``per_fold``: the same figures within each held-out fold (about n/folds trajectories),
      averaged over folds and repeats, before and after; small folds make a binned ECE
      mostly sampling noise, so these are high even for right probabilities.
    * ``fold_auc_pr``: AUC-PR within each fold, raw and calibrated (a monotone map keeps the
      ranking; ``changed`` counts folds where it moved, ``max_change`` by how much: only
      raw scores that float rounding separates, such as 0.6 and 0.6000000000000001, can be
      merged by a map). Pooled AUC-PR mixes the maps of different folds, so it can differ.
    * ``all_data``: the map fitted on all the data (the one ``inferact eval`` would write
      without a dev split): its method and the AUC-PR of the raw and calibrated scores.
    * ``floor``: what ECE ``n`` labels show when the probabilities are right: labels drawn
      from each repeat's pooled probabilities (``floor_draws`` times), their ECE's mean,
      median and 90th percentile, the share of draws at or under ``target``, and the share
      at or under the observed ECE (near 0.5: the observed miscalibration is what noise
      alone gives; near 1: worse than noise).

    Raises:
        CalibrationError: Fewer than two examples of a class.

    Example:
        >>> s = [0.1, 0.15, 0.2, 0.3, 0.35, 0.6, 0.62, 0.64, 0.7, 0.9, 0.95, 0.97]
        >>> y = [0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1]
        >>> cv = cross_validated_calibration(s, y, folds=2, repeats=2, floor_draws=10)
        >>> sorted(cv["after"]), sorted(cv["floor"]["ece"])
        (['auc_pr', 'brier', 'ece', 'ece_mass'], ['mean', 'median', 'q90', 'share_at_or_under_observed', 'share_at_or_under_target'])
    """  # noqa: E501
    from sklearn.model_selection import StratifiedKFold

    s = np.asarray(scores, dtype=float)
    y = np.asarray(on_track, dtype=int)
    fit_calibration(s.tolist(), y.tolist(), method="platt")  # checks the input, says why
    k = max(2, min(folds, int((y == 0).sum()), int(y.sum())))
    rng = np.random.default_rng(seed)
    keys = ("ece", "ece_mass", "brier", "auc_pr")
    pooled_runs: list[dict[str, float | None]] = []
    fold_runs: dict[str, list[dict[str, float | None]]] = {"before": [], "after": []}
    fold_auc: list[tuple[float, float]] = []
    methods: dict[str, int] = {}
    floor: dict[str, list[float]] = {"ece": [], "ece_mass": []}
    floor_share: dict[str, list[float]] = {"ece": [], "ece_mass": []}
    for repeat in range(repeats):
        pooled = np.zeros(len(s))
        splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed + repeat)
        for train, test in splitter.split(s, y):
            fitted = fit_calibration(s[train].tolist(), y[train].tolist(), seed=seed + repeat)
            methods[fitted.method] = methods.get(fitted.method, 0) + 1
            pooled[test] = fitted.apply(s[test].tolist())
            held = y[test].tolist()
            fold_runs["before"].append(calibration_figures(s[test].tolist(), held, n_bins=n_bins))
            fold_runs["after"].append(
                calibration_figures(pooled[test].tolist(), held, n_bins=n_bins)
            )
            raw, calibrated = _auc_pr(y[test], s[test]), _auc_pr(y[test], pooled[test])
            if raw is not None and calibrated is not None:
                fold_auc.append((raw, calibrated))
        observed = calibration_figures(pooled.tolist(), y.tolist(), n_bins=n_bins)
        pooled_runs.append(observed)
        for key, binning in (("ece", "width"), ("ece_mass", "mass")):
            drawn = [
                expected_calibration_error(
                    (rng.random(len(pooled)) >= pooled).astype(int).tolist(),  # off track: 1
                    (1.0 - pooled).tolist(),
                    n_bins=n_bins,
                    binning=binning,  # type: ignore[arg-type]
                )
                for _ in range(floor_draws)
            ]
            floor[key].extend(drawn)
            if drawn:
                floor_share[key].append(
                    float(np.mean(np.asarray(drawn) <= observed[key] + 1e-12))  # type: ignore[operator]
                )

    def mean_of(runs: list[dict[str, float | None]], key: str) -> float | None:
        values = [float(v) for r in runs if (v := r[key]) is not None]
        return statistics.fmean(values) if values else None

    whole = fit_calibration(s.tolist(), y.tolist(), seed=seed)
    changes = [abs(b - a) for a, b in fold_auc]
    result: dict[str, Any] = {
        "folds": k,
        "repeats": repeats,
        "seed": seed,
        "n": len(s),
        "n_bins": n_bins,
        "methods": methods,
        "before": calibration_figures(s.tolist(), y.tolist(), n_bins=n_bins),
        "after": {
            key: _spread([float(v) for r in pooled_runs if (v := r[key]) is not None])
            for key in keys
        },
        "per_fold": {
            "size": len(s) / k,
            **{side: {key: mean_of(runs, key) for key in keys} for side, runs in fold_runs.items()},
        },
        "fold_auc_pr": {
            "before": statistics.fmean(a for a, _ in fold_auc) if fold_auc else None,
            "after": statistics.fmean(b for _, b in fold_auc) if fold_auc else None,
            "folds": len(fold_auc),
            "changed": sum(1 for c in changes if c > 1e-12),
            "max_change": max(changes, default=0.0),
        },
        "all_data": {
            "method": whole.method,
            "auc_pr": {
                "before": _auc_pr(y, s),
                "after": _auc_pr(y, np.array(whole.apply(s.tolist()), dtype=float)),
            },
        },
        "target": target,
    }
    if floor_draws:
        result["floor"] = {
            "draws": floor_draws * repeats,
            **{
                key: {
                    "mean": float(np.mean(values)),
                    "median": float(np.median(values)),
                    "q90": float(np.quantile(values, 0.9)),
                    "share_at_or_under_target": float(np.mean(np.asarray(values) <= target)),
                    "share_at_or_under_observed": statistics.fmean(floor_share[key]),
                }
                for key, values in floor.items()
            },
        }
    return result


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
