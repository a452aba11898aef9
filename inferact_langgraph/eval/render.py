"""The report in the terminal: rich tables of every figure and the lines to paste.

:func:`render_tables` prints detection (Table 1), ranking and calibration, costs, the
multi-step aggregations (Appendix D), the critics' usage, notes and errors, then one
``with_inferact(...)`` line per critic (:func:`paste_line`). :func:`output_console` never cuts a
value short.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from inferact_langgraph.eval.metrics import CostChoice

if TYPE_CHECKING:
    from inferact_langgraph.eval.report import EvalReport
    from inferact_langgraph.eval.summary import CriticSummary

__all__ = ["SHORT_PROTOCOLS", "output_console", "paste_line", "render_tables"]

SHORT_PROTOCOLS: dict[str, str] = {
    "held_out": "dev→test",
    "held_out_tuned": "test*",
    "paper": "all*",
    "own": "all/own",
}


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
    if meta.get("rules"):
        options += f', rules=Path("{meta["rules"]}").read_text()'
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
        written = report.files.get(f"calibration:{name}")
        file = None if written is None else str(written)
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
