"""``inferact calibrate`` and ``inferact labels list|clear``: a threshold from the reviewers.

``inferact calibrate --db <store> --miss-cost 10 --review-cost 1`` reads the review labels the
guard kept (:mod:`inferact_langgraph.labels`), fits a calibration on them (spot checks weighted
by the inverse of their rate), picks the threshold from the two costs, prints what the
deployment's critic does now and what it would do with the new threshold (precision, recall,
false alarms, the miss rate with its 95% interval, the cost per call) and the line to paste;
``--out`` writes the calibration file ``with_inferact(..., calibration=...)`` loads. With too
few labels it says which and how many more, and writes nothing (``--force`` to fit anyway).

The store is named by ``--db`` as for ``inferact memory``: a SQLite file, a PostgreSQL DSN or
the URL of a LangGraph server.

Example:
    >>> from typer.testing import CliRunner
    >>> CliRunner().invoke(labels_app, ["clear", "--help"]).exit_code
    0
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from inferact_langgraph._label_fit import (
    DeploymentFit,
    OperatingPoint,
    fit_deployment,
    plot_reliability,
)
from inferact_langgraph._memory_cli import (
    DbOption,
    OwnerOption,
    SharedOption,
    UserOption,
    open_store,
    owner_of,
    resolve_db,
)
from inferact_langgraph._redact import redact_url
from inferact_langgraph.labels import ReviewLabels, label_summary

__all__ = ["calibrate_command", "labels_app"]

labels_app = typer.Typer(
    name="labels",
    help="List or delete the review labels (reviewers' decisions), per user or deployment.",
    no_args_is_help=True,
)

DeploymentOption = Annotated[
    str | None,
    typer.Option("--deployment", help="Only this deployment's labels (its ReviewLabels name)."),
]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _point_lines(title: str, point: OperatingPoint) -> list[str]:
    cost = (
        "" if point.cost_per_call is None else f"; expected cost per call {point.cost_per_call:.3g}"
    )
    return [
        f"{title}:",
        f"  reviewed           {_pct(point.reviewed)} of calls{cost}",
        f"  precision          {_pct(point.precision)} of flagged calls were off track",
        f"  recall             {_pct(point.recall)} of off-track calls were flagged",
        f"  false alarms       {_pct(point.false_alarm_rate)} of flagged calls were on track",
        f"  miss rate          {point.miss_rate.describe()} of passed calls were off track",
    ]


def _report(fit: DeploymentFit, *, out: str | None, model: str) -> list[str]:
    lines = [
        f"deployment {fit.deployment!r}, critic {fit.critic!r}, preset {fit.preset!r}: "
        f"{fit.labels} labels ({fit.off_track} off track, {fit.on_track} on track; "
        f"{fit.spot_checks} spot checks"
        + (f" at rate {fit.spot_rate:g}" if fit.spot_rate else "")
        + ")",
    ]
    if fit.skipped:
        lines.append(
            "left out: " + ", ".join(f"{n} {why}" for why, n in sorted(fit.skipped.items()))
        )
    lines.append("")
    lines += _point_lines("now (the threshold the labels were collected with)", fit.now)
    if fit.proposed is not None and fit.calibration is not None:
        cutoff = "" if fit.raw_cutoff is None else f", i.e. raw score < {fit.raw_cutoff:.3f}"
        lines.append("")
        lines += _point_lines(
            f"fitted: {fit.calibration.describe()}; flag when P(on track) < "
            f"{fit.threshold:.3g}{cutoff} (miss cost {fit.miss_cost:g}, review cost "
            f"{fit.review_cost:g})",
            fit.proposed,
        )
    if fit.threshold <= 0:
        lines.append("A review costs as much as a miss or more: the cheapest rule reviews nothing.")
    lines.append("")
    if fit.too_few:
        lines.append("TOO FEW LABELS to trust this fit. Still needed:")
        lines += [f"  - {why}" for why in fit.too_few]
    if fit.calibration is not None:
        path = out or "calibration.json"
        lines.append("Ready to paste (from inferact_langgraph import with_inferact, make_critic):")
        lines.append(fit.paste_line(calibration_path=path, model=model))
    return lines


def _as_json(fit: DeploymentFit, written: str | None) -> dict[str, Any]:
    data = {
        k: v
        for k, v in asdict(fit).items()
        if k not in ("calibration", "scores", "outcomes", "weights")
    }
    data["calibration"] = None if fit.calibration is None else fit.calibration.to_dict()
    data["enough"] = fit.enough
    data["written"] = written
    clean: dict[str, Any] = json.loads(json.dumps(data, default=str, allow_nan=False))
    return clean


def calibrate_command(
    db: DbOption,
    miss_cost: Annotated[
        float,
        typer.Option("--miss-cost", help="What one off-track call that runs unreviewed costs."),
    ],
    review_cost: Annotated[
        float, typer.Option("--review-cost", help="What one human review costs.")
    ],
    deployment: Annotated[
        str | None,
        typer.Option(
            "--deployment", help="The deployment to fit (needed when the store holds several)."
        ),
    ] = None,
    critic: Annotated[
        str | None, typer.Option("--critic", help="Only labels of this critic.")
    ] = None,
    preset: Annotated[
        str | None, typer.Option("--preset", help="Only labels of this preset.")
    ] = None,
    respond_as: Annotated[
        str,
        typer.Option(
            "--respond-as",
            help="How 'respond' decisions count: skip (unlabelled), on-track or off-track.",
        ),
    ] = "skip",
    out: Annotated[
        str | None,
        typer.Option("--out", help="Write the calibration file the guard loads (calibration=)."),
    ] = None,
    plot: Annotated[
        str | None,
        typer.Option("--plot", help="Draw the fitted reliability curve to this PNG (matplotlib)."),
    ] = None,
    model: Annotated[
        str, typer.Option("--model", help="The critic model named in the line to paste.")
    ] = "openai:gpt-4o",
    force: Annotated[
        bool, typer.Option("--force", help="Write --out even with too few labels to trust.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the figures as one JSON object.")
    ] = False,
) -> None:
    """Fit a calibration and a threshold on the review labels of one deployment."""
    for name, value in (("--miss-cost", miss_cost), ("--review-cost", review_cost)):
        if not (math.isfinite(value) and value > 0):
            raise typer.BadParameter(f"must be a positive number, got {value!r}", param_hint=name)
    if respond_as not in ("skip", "on-track", "off-track"):
        raise typer.BadParameter(
            f"must be skip, on-track or off-track, got {respond_as!r}", param_hint="--respond-as"
        )
    db = resolve_db(db)
    with open_store(db) as store:
        rows = ReviewLabels().list_labels(store, deployment=deployment)
    deployments = sorted({str(r.get("deployment")) for r in rows})
    if not rows:
        where = f"deployment {deployment!r}" if deployment else "any deployment"
        typer.echo(
            f"no review labels for {where} in {redact_url(db)}: the guard keeps one per human "
            "decision when the graph has a store (and spot_check= sends passed calls to a human "
            "too)",
            err=True,
        )
        raise typer.Exit(2)
    if len(deployments) > 1:
        raise typer.BadParameter(
            f"the store holds labels of several deployments {deployments}; choose one",
            param_hint="--deployment",
        )
    try:
        fit = fit_deployment(
            rows,
            miss_cost=miss_cost,
            review_cost=review_cost,
            deployment=deployments[0],
            critic=critic,
            preset=preset,
            respond_as=respond_as,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    except ImportError as exc:  # pragma: no cover - the [eval] extra is not installed
        raise typer.BadParameter(
            f"fitting needs scikit-learn and numpy ({exc}): pip install 'inferact-langgraph[eval]'"
        ) from None
    written = None
    if out is not None and fit.calibration is not None and (fit.enough or force):
        written = str(fit.calibration.save(out))
    if plot is not None and fit.calibration is not None:
        plot_reliability(fit, plot)
    if as_json:
        typer.echo(json.dumps(_as_json(fit, written)))
    else:
        for line in _report(fit, out=out, model=model):
            typer.echo(line)
        if written:
            typer.echo(f"wrote {written}")
        elif out is not None:
            typer.echo(f"did not write {out}: too few labels (--force writes it anyway)", err=True)
    if not fit.enough and not force:
        raise typer.Exit(2)


def _when(stamp: Any) -> str:
    if not isinstance(stamp, int | float):
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


@labels_app.command("list")
def list_command(
    db: DbOption,
    deployment: DeploymentOption = None,
    user: UserOption = None,
    shared: SharedOption = False,
    owner: OwnerOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List review labels (oldest first) and each deployment's running figures."""
    who = owner_of(user, shared, owner)
    db = resolve_db(db)
    with open_store(db) as store:
        rows = ReviewLabels().list_labels(store, deployment=deployment, owner=who)
    for row in rows:
        if as_json:
            shown = {k: v for k, v in row.items() if k != "namespace"}
            typer.echo(json.dumps(shown, ensure_ascii=False, default=str))
            continue
        score = row.get("raw_score")
        typer.echo(
            f"{_when(row.get('time'))}  {row.get('deployment')}  {'/'.join(row['owner'])}  "
            f"{row.get('tool', '-')}  raw score "
            f"{'-' if score is None else format(score, '.3f')}  {row.get('decision')}"
            f"{'  (spot check)' if row.get('spot_check') else ''}  task: {row.get('task')!r}"
        )
    if not as_json:
        for name in sorted({str(r.get("deployment")) for r in rows}):
            shown_db = redact_url(db) or db  # never a password on the screen
            s = label_summary(
                [r for r in rows if r.get("deployment") == name], deployment=name, db=shown_db
            )
            typer.echo(
                f"{name}: {s['labels']} labels, {s['reviews_this_week']} this week; "
                f"{s['false_alarms']} of {s['flagged_reviewed']} flagged calls approved (false "
                f"alarms); {s['spot_check_misses']} of {s['spot_checks']} spot checks found a "
                f"mistake. Fit a threshold: {s['command']}",
                err=True,
            )
        typer.echo(f"{len(rows)} label{'' if len(rows) == 1 else 's'}", err=True)


@labels_app.command("clear")
def clear_command(
    db: DbOption,
    deployment: DeploymentOption = None,
    user: UserOption = None,
    shared: SharedOption = False,
    owner: OwnerOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete review labels: a user's (--user), a deployment's (--deployment), or all."""
    who = owner_of(user, shared, owner)
    scope = " in ".join(
        x
        for x in (
            f"owner {'/'.join(who)}" if who else "every owner",
            f"deployment {deployment!r}" if deployment else "every deployment",
        )
        if x
    )
    if not yes and not typer.confirm(f"Delete the review labels of {scope}?"):
        raise typer.Exit(1)
    db = resolve_db(db)
    with open_store(db) as store:
        count = ReviewLabels().clear(store, deployment=deployment, owner=who)
    typer.echo(f"deleted {count} label{'' if count == 1 else 's'} ({scope})")
