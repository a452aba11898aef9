"""Turn a run's verdicts into the paper's figures: the :class:`EvalReport` and ``report.json``.

:func:`build_report` reads every critic's outcomes and asks
:mod:`~inferact_langgraph.eval.summary` for its figures; :meth:`EvalReport.write` writes
``report.json``, the calibration files and the plots of :mod:`~inferact_langgraph.eval.plots`;
:mod:`~inferact_langgraph.eval.render` prints the report in the terminal.

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
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import inferact_langgraph.eval.summary as figures
from inferact_langgraph.eval.datasets import Dataset
from inferact_langgraph.eval.metrics import cost_threshold, stratified_split
from inferact_langgraph.eval.plots import plot_pr_curves, plot_reliability_diagram
from inferact_langgraph.eval.runner import Outcome, RunStats
from inferact_langgraph.eval.summary import AGGREGATIONS, CriticOutcomes, CriticSummary

__all__ = ["AGGREGATIONS", "PROTOCOLS", "CriticSummary", "EvalReport", "build_report"]

PROTOCOLS: dict[str, str] = {
    "held_out": "held-out part, threshold chosen on the dev part",
    "held_out_tuned": "held-out part, threshold tuned on it (paper protocol, optimistic)",
    "paper": "all data, threshold tuned on it (paper protocol, optimistic)",
    "own": "all data, the critic's own threshold",
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
        files: The files :meth:`write` wrote, by kind; ``report.json`` names the calibration
            files among them.
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
            "critics": {name: self._critic_dict(name) for name in self.critics},
            "trajectories": self.rows,
        }

    def _critic_dict(self, name: str) -> dict[str, Any]:
        """One critic's plain data, naming its calibration file once the report is written."""
        data = self.critics[name].to_dict()
        file = self.files.get(f"calibration:{name}")
        if file is not None and data["calibration_figures"] is not None:
            data["calibration_figures"] = {**data["calibration_figures"], "file": str(file)}
        return data

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
        calibrations = self._write_calibrations(directory)
        self.files = dict(calibrations)  # report.json names the calibration files
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


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "critic"


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
        read = _read_outcomes(name, outcomes, dataset, rows)
        scores = read.scores
        summary = figures.summarise(name, labels, scores, read.flagged, prices, dev, test)
        summary.first_error, summary.own_threshold = read.first_error, read.own_threshold
        if scores and calibrate:
            figures.calibrate(summary, labels, scores, dev, test, seed=seed, rows=rows)
        if scores and calibration_cv:
            figures.cross_validate(
                summary, labels, scores, calibration_cv, calibration_repeats, seed
            )
        if scores and costs is not None:
            figures.choose_cost(summary, labels, scores, dev, test, costs)
        tally = read.tally
        summary.checked, summary.errors, summary.cached = tally.checked, tally.errors, tally.cached
        summary.model_calls = tally.model_calls
        summary.input_tokens, summary.output_tokens = tally.input_tokens, tally.output_tokens
        if read.steps:
            figures.aggregate_steps_of(
                summary, read, labels=labels, prices=prices, dev=dev, test=test, rows=rows
            )
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


def _read_outcomes(
    name: str, outcomes: Mapping[str, Outcome], dataset: Dataset, rows: list[dict[str, Any]]
) -> CriticOutcomes:
    """One critic's outcomes in data order, each also written into its row of ``rows``."""
    read = CriticOutcomes()
    for i, item in enumerate(dataset.items):
        outcome = outcomes.get(item.id)
        if outcome is None:
            continue
        read.tally.checked += 1
        read.tally.cached += outcome.cached
        entry: dict[str, Any] = {"cached": outcome.cached, "seconds": outcome.seconds}
        if outcome.verdict is None:
            read.tally.errors += 1
            entry["error"] = outcome.error
            read.first_error = read.first_error or f"{item.id}: {outcome.error}"
        else:
            v = outcome.verdict
            read.scores[i], read.flagged[i] = v.score, v.flagged
            if read.own_threshold is None:
                read.own_threshold = v.threshold
            if v.step_scores:
                read.steps[i] = list(v.step_scores)
                read.step_threshold = (
                    v.threshold if read.step_threshold is None else read.step_threshold
                )
            read.tally.model_calls += v.usage.model_calls
            read.tally.input_tokens += v.usage.input_tokens
            read.tally.output_tokens += v.usage.output_tokens
            entry.update(
                score=v.score,
                risk_score=1.0 - v.score,
                flagged=v.flagged,
                threshold=v.threshold,
                step_scores=list(v.step_scores),
                usage=v.usage.model_dump(),
            )
        rows[i]["critics"][name] = entry
    return read
