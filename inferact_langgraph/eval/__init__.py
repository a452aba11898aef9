"""Measure critics on labelled trajectories the way the paper does (Table 1, Table 3, App. D).

Requires the ``[eval]`` extra (scikit-learn, numpy, matplotlib, tqdm).

Example:
    >>> from inferact_langgraph.critics import Critic, Usage
    >>> class ByLength(Critic):
    ...     name = "by-length"
    ...     async def _aevaluate(self, trajectory, *, risk=None):
    ...         return self.verdict(score=1 / len(trajectory.steps), usage=Usage(model_calls=1))
    >>> records = [
    ...     {"id": "a", "task": "t", "steps": [{"action": "x"}] * 3, "label": "incorrect"},
    ...     {"id": "b", "task": "t", "steps": [{"action": "x"}], "label": "correct"},
    ... ]
    >>> report = evaluate_critics(records, {"len": ByLength(model=None)})
    >>> report.critics["len"].metrics["paper"].f1, report.critics["len"].model_calls
    (1.0, 2)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

try:  # the metrics need the [eval] extra: say so rather than "No module named 'numpy'"
    import numpy  # noqa: F401
    import sklearn  # noqa: F401
except ImportError as exc:  # pragma: no cover - tested in a subprocess
    raise ImportError(
        f"inferact_langgraph.eval needs the [eval] extra ({exc.name} is missing): "
        "pip install 'inferact-langgraph[eval]'"
    ) from exc

from inferact_langgraph.critics.base import Critic
from inferact_langgraph.eval.calibration_quality import (
    calibration_figures,
    calibration_summary,
    cross_validated_calibration,
)
from inferact_langgraph.eval.datasets import (
    BadRecord,
    Dataset,
    LabelledTrajectory,
    OnError,
    load_dataset,
    parse_label,
    trajectory_hash,
)
from inferact_langgraph.eval.metrics import (
    CostChoice,
    CostResult,
    MetricSet,
    ThresholdChoice,
    best_threshold,
    brier_score,
    compute_metrics,
    cost_metric,
    cost_threshold,
    critic_threshold,
    expected_calibration_error,
    stratified_split,
)
from inferact_langgraph.eval.plots import plot_pr_curves, plot_reliability_diagram, pr_curves
from inferact_langgraph.eval.render import output_console, paste_line, render_tables
from inferact_langgraph.eval.report import (
    AGGREGATIONS,
    PROTOCOLS,
    CriticSummary,
    EvalReport,
    build_report,
)
from inferact_langgraph.eval.runner import (
    EvalRunner,
    Outcome,
    RunStats,
    VerdictCache,
    cache_key,
    critic_fingerprint,
    model_identity,
)
from inferact_langgraph.trajectory import THOUGHT_TOOLS

__all__ = [
    "AGGREGATIONS",
    "PROTOCOLS",
    "BadRecord",
    "CostChoice",
    "CostResult",
    "CriticSummary",
    "Dataset",
    "EvalReport",
    "EvalRunner",
    "LabelledTrajectory",
    "MetricSet",
    "OnError",
    "Outcome",
    "RunStats",
    "ThresholdChoice",
    "VerdictCache",
    "aevaluate_critics",
    "best_threshold",
    "brier_score",
    "build_report",
    "cache_key",
    "calibration_figures",
    "calibration_summary",
    "compute_metrics",
    "cost_metric",
    "cost_threshold",
    "critic_fingerprint",
    "critic_threshold",
    "cross_validated_calibration",
    "evaluate_critics",
    "expected_calibration_error",
    "load_dataset",
    "model_identity",
    "output_console",
    "parse_label",
    "paste_line",
    "plot_pr_curves",
    "plot_reliability_diagram",
    "pr_curves",
    "render_tables",
    "stratified_split",
    "trajectory_hash",
]

Source = str | Path | Iterable[Mapping[str, Any]] | Dataset


def _prepare(
    data: Source,
    critics: Mapping[str, Critic],
    *,
    dev_split: float | None,
    on_error: OnError,
    concurrency: int,
    cache: VerdictCache | str | Path | None,
    progress: bool,
    limit: int | None,
    thought_tools: Collection[str],
) -> tuple[Dataset, EvalRunner]:
    if dev_split is not None:
        stratified_split([0, 1], dev_split)  # validates the fraction before any model call
    dataset = load_dataset(data, on_error=on_error, thought_tools=thought_tools)
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        dataset = Dataset(items=dataset.items[:limit], errors=dataset.errors, source=dataset.source)
    runner = EvalRunner(critics, concurrency=concurrency, cache=cache, progress=progress)
    return dataset, runner


def _finish(
    dataset: Dataset,
    runner: EvalRunner,
    *,
    dev_split: float | None,
    seed: int,
    meta: Mapping[str, Any] | None,
    out: str | Path | None,
    interrupted: bool,
    figures: Mapping[str, Any] | None = None,
) -> EvalReport:
    report = build_report(
        dataset,
        runner.results,
        dev_split=dev_split,
        seed=seed,
        stats=runner.stats,
        interrupted=interrupted,
        meta={"concurrency": runner.concurrency, **(meta or {})},
        **(figures or {}),
    )
    if out is not None:
        report.write(out)
    return report


async def aevaluate_critics(
    data: Source,
    critics: Mapping[str, Critic],
    *,
    dev_split: float | None = None,
    seed: int = 0,
    concurrency: int = 8,
    cache: VerdictCache | str | Path | None = None,
    on_error: OnError = "skip",
    progress: bool = False,
    limit: int | None = None,
    out: str | Path | None = None,
    meta: Mapping[str, Any] | None = None,
    calibrate: bool = True,
    calibration_cv: int | None = None,
    calibration_repeats: int = 10,
    costs: tuple[float, float] | None = None,
    thought_tools: Collection[str] = THOUGHT_TOOLS,
) -> EvalReport:
    """Async :func:`evaluate_critics`.

    On cancellation the partial report is written to ``out`` (when given) before the
    cancellation propagates.
    """
    figures = _figures(calibrate, calibration_cv, calibration_repeats, costs)
    dataset, runner = _prepare(
        data,
        critics,
        dev_split=dev_split,
        on_error=on_error,
        concurrency=concurrency,
        cache=cache,
        progress=progress,
        limit=limit,
        thought_tools=thought_tools,
    )
    finish = functools.partial(
        _finish,
        dataset,
        runner,
        dev_split=dev_split,
        seed=seed,
        meta=meta,
        out=out,
        figures=figures,
    )
    try:
        await runner.arun(dataset.items)
    except asyncio.CancelledError:
        if out is not None:
            finish(interrupted=True)
        raise
    return finish(interrupted=False)


def evaluate_critics(
    data: Source,
    critics: Mapping[str, Critic],
    *,
    dev_split: float | None = None,
    seed: int = 0,
    concurrency: int = 8,
    cache: VerdictCache | str | Path | None = None,
    on_error: OnError = "skip",
    progress: bool = False,
    limit: int | None = None,
    out: str | Path | None = None,
    meta: Mapping[str, Any] | None = None,
    calibrate: bool = True,
    calibration_cv: int | None = None,
    calibration_repeats: int = 10,
    costs: tuple[float, float] | None = None,
    thought_tools: Collection[str] = THOUGHT_TOOLS,
) -> EvalReport:
    """Run critics over labelled trajectories and compute the paper's figures.

    Ctrl-C (``KeyboardInterrupt``) does not lose the run: the checks that finished are in the
    cache and in the returned report, whose ``interrupted`` is True.

    Args:
        data: A JSONL path, an iterable of records, or a loaded :class:`Dataset`.
        critics: Name in the report -> critic (e.g. from ``make_critic``).
        dev_split: Fraction of each class used to choose the threshold; the figures are then
            also reported on the held-out rest. ``None``: no split.
        seed: Seed of the split.
        concurrency: Checks in flight at once.
        cache: A :class:`VerdictCache` or a path to one (resume, re-run for free).
        on_error: ``"skip"`` or ``"raise"`` on a bad record.
        progress: Show a progress bar with running calls and tokens.
        limit: Only the first ``limit`` trajectories.
        out: Directory for ``report.json``, ``pr_curves.png``, ``reliability.png`` and the
            calibration files (``calibration/<critic>.json``).
        meta: Extra metadata stored in the report (model name, flags).
        calibrate: Fit a calibration per critic (on the dev part with ``dev_split``, where it
            is measured on the held-out part: ECE and Brier before and after).
        calibration_cv: Also measure calibration by repeated stratified k-fold over all the
            trajectories, with this many folds (``None``: not).
        calibration_repeats: Repeats of that cross-validation.
        costs: ``(cost_missed, cost_review)``: also choose the threshold of lowest expected
            cost on the dev part (all the data without a split) and print it ready to paste.
        thought_tools: Tools whose calls are the agent's thoughts, left out of the action
            chains as the guard leaves them out (default ``("think",)``; ``()`` keeps all).

    Returns:
        The :class:`EvalReport`.

    Raises:
        DatasetError: A bad record with ``on_error="raise"``, or no usable record.
        ValueError: Bad arguments (``dev_split`` outside (0, 1), ``concurrency`` < 1, a
            cost that is not positive).
    """
    figures = _figures(calibrate, calibration_cv, calibration_repeats, costs)
    dataset, runner = _prepare(
        data,
        critics,
        dev_split=dev_split,
        on_error=on_error,
        concurrency=concurrency,
        cache=cache,
        progress=progress,
        limit=limit,
        thought_tools=thought_tools,
    )
    interrupted = False
    try:
        _run(runner.arun(dataset.items))
    except KeyboardInterrupt:
        interrupted = True
    return _finish(
        dataset,
        runner,
        dev_split=dev_split,
        seed=seed,
        meta=meta,
        out=out,
        interrupted=interrupted or runner.interrupted,
        figures=figures,
    )


def _figures(
    calibrate: bool,
    calibration_cv: int | None,
    calibration_repeats: int,
    costs: tuple[float, float] | None,
) -> dict[str, Any]:
    """Validate the figure options before any model call."""
    if calibration_cv is not None and (isinstance(calibration_cv, bool) or calibration_cv < 2):
        raise ValueError(f"calibration_cv must be a number of folds >= 2, got {calibration_cv!r}")
    if calibration_repeats < 1:
        raise ValueError(f"calibration_repeats must be >= 1, got {calibration_repeats!r}")
    if costs is not None:
        if not isinstance(costs, tuple | list) or len(costs) != 2:
            raise ValueError(f"costs must be (cost_missed, cost_review), got {costs!r}")
        cost_threshold([1], [0.5], cost_missed=costs[0], cost_review=costs[1])
        costs = (float(costs[0]), float(costs[1]))
    return {
        "calibrate": calibrate,
        "calibration_cv": calibration_cv,
        "calibration_repeats": calibration_repeats,
        "costs": costs,
    }


def _run(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
