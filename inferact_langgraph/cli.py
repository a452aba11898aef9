"""The ``inferact`` command line: one small function per command, the work in the modules.

Example:
    >>> from typer.testing import CliRunner
    >>> result = CliRunner().invoke(app, ["eval", "--help"])
    >>> result.exit_code, "--dev-split" in result.output
    (0, True)
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(
    name="inferact",
    help="InferAct: a preemptive critic for the critical actions of LangGraph agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_INTERRUPTED = 130

# Options shared by every command that talks to a model.
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url", help="An OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="INFERACT_API_KEY",
        show_envvar=True,
        help="Key for --base-url (never written to a report).",
    ),
]


@app.callback()
def _main() -> None:
    """InferAct: a preemptive critic for the critical actions of LangGraph agents."""


def _open_interval(value: float | None, flag: str, low: float, high: float | None) -> float | None:
    if value is None:
        return value
    if not value > low or (high is not None and not value < high):
        bounds = (
            f"between {low:g} and {high:g} (exclusive)"
            if high is not None
            else (f"greater than {low:g}")
        )
        raise typer.BadParameter(f"{flag} must be {bounds}, got {value:g}")
    return value


class OnBadRecord(StrEnum):
    """What ``eval`` does with a malformed record."""

    skip = "skip"
    fail = "fail"


@app.command("eval")
def eval_command(
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            help="Labelled trajectories (JSONL).",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    critic: Annotated[
        list[str],
        typer.Option(
            "--critic",
            help="Critic spec, repeatable: inferact, standard, self_consistency, "
            "multistep, multistep:<min|max|mean|product>.",
        ),
    ],
    model: Annotated[
        str,
        typer.Option(
            "--model", help="Critic model as an init_chat_model string, e.g. openai:gpt-4o."
        ),
    ],
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    preset: Annotated[
        str,
        typer.Option(
            "--preset",
            help="Prompt preset: generic, generic-completion, webshop, alfworld, hotpotqa.",
        ),
    ] = "generic",
    risk_aware: Annotated[
        bool,
        typer.Option("--risk-aware", help="Add the paper's risk-aware sentence to every check."),
    ] = False,
    dev_split: Annotated[
        float | None,
        typer.Option(
            "--dev-split",
            callback=lambda v: _open_interval(v, "--dev-split", 0.0, 1.0),
            help="Fraction of each class used to choose the threshold; figures are then also "
            "reported on the held-out rest.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the dev split.")] = 0,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Checks in flight at once.")
    ] = 8,
    cache: Annotated[
        Path,
        typer.Option(
            "--cache", dir_okay=False, help="Verdict cache (SQLite): resume and re-run for free."
        ),
    ] = Path(".inferact-cache.sqlite"),
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the cache.")] = False,
    on_bad_record: Annotated[
        OnBadRecord,
        typer.Option(
            "--on-bad-record", help="Skip malformed records (listed in the report) or stop."
        ),
    ] = OnBadRecord.skip,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N trajectories.")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            callback=lambda v: _open_interval(v, "--timeout", 0.0, None),
            help="Seconds per model call.",
        ),
    ] = None,
    max_retries: Annotated[
        int, typer.Option("--max-retries", min=0, help="Retries of a failed model call.")
    ] = 2,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="Cap on each answer's tokens (slow servers)."),
    ] = None,
    progress: Annotated[
        bool,
        typer.Option(
            "--progress/--no-progress", help="Progress bar with running calls and tokens."
        ),
    ] = True,
    out: Annotated[
        Path,
        typer.Option("--out", file_okay=False, help="Directory for report.json and pr_curves.png."),
    ] = Path("report"),
) -> None:
    """Measure critics on labelled trajectories (paper Table 1, Table 3, Appendix D)."""
    from rich.console import Console

    from inferact_langgraph import factory
    from inferact_langgraph.errors import DatasetError
    from inferact_langgraph.eval import evaluate_critics, render_tables

    console, errors = Console(), Console(stderr=True)
    try:
        extra = {"max_tokens": max_tokens} if max_tokens else {}
        chat_model = factory.build_model(model, base_url=base_url, api_key=api_key, **extra)
    except factory.ModelSetupError as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from None
    try:
        critics = factory.build_critics(
            critic,
            model=chat_model,
            preset=preset,
            risk_aware=risk_aware,
            timeout=timeout,
            max_retries=max_retries,
        )
    except factory.ModelSetupError as exc:
        raise typer.BadParameter(str(exc), param_hint="--critic") from None
    try:
        report = evaluate_critics(
            data,
            critics,
            dev_split=dev_split,
            seed=seed,
            concurrency=concurrency,
            cache=None if no_cache else cache,
            on_error="raise" if on_bad_record is OnBadRecord.fail else "skip",
            progress=progress,
            limit=limit,
            out=out,
            meta={
                "model": model,
                "base_url": base_url,
                "preset": preset,
                "risk_aware": risk_aware,
                "critic_specs": list(critic),
            },
        )
    except DatasetError as exc:
        errors.print(f"[red]error:[/red] {data}: {exc}")
        raise typer.Exit(1) from None
    render_tables(report, console)
    typer.echo(f"report: {out / 'report.json'}")
    typer.echo(f"plot: {out / 'pr_curves.png'}")
    if report.interrupted:
        errors.print(
            "[yellow]interrupted: the report covers the checks that finished; run "
            "the same command again to resume from the cache.[/yellow]"
        )
        raise typer.Exit(EXIT_INTERRUPTED)


@app.command("demo")
def demo_command(
    env: Annotated[str, typer.Argument(help="webshop, hotpotqa or alfworld.")],
    task: Annotated[int, typer.Option("--task", min=0, help="Task index.")] = 0,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", help="Actor model (init_chat_model string); default: the scripted policy."
        ),
    ] = None,
    critic_model: Annotated[
        str | None,
        typer.Option(
            "--critic-model", help="Critic model; default: scripted oracle answers (offline)."
        ),
    ] = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    auto_feedback: Annotated[
        bool,
        typer.Option(
            "--auto-feedback", help="A simulated human rejects with feedback (unattended runs)."
        ),
    ] = False,
    thread: Annotated[
        str | None, typer.Option("--thread", help="Resume this thread (from --db).")
    ] = None,
    db: Annotated[
        Path,
        typer.Option(
            "--db", dir_okay=False, help="SQLite file for checkpoints and feedback memory."
        ),
    ] = Path(".inferact-demo.sqlite"),
) -> None:
    """Run one task end to end: the actor acts, InferAct checks, a human reviews, retry."""
    from inferact_langgraph.demo import DemoError, run_demo

    try:
        code = run_demo(
            env,
            task=task,
            model=model,
            critic_model=critic_model,
            base_url=base_url,
            api_key=api_key,
            auto_feedback=auto_feedback,
            thread=thread,
            db=db,
        )
    except DemoError as exc:
        raise typer.BadParameter(str(exc)) from None
    raise typer.Exit(code)


@app.command("trials")
def trials_command(
    env: Annotated[str, typer.Option("--env", help="webshop, hotpotqa or alfworld.")],
    tasks: Annotated[
        str, typer.Option("--tasks", help="Task indices, e.g. 0,1,2, or 'all'.")
    ] = "all",
    critic: Annotated[
        list[str] | None,
        typer.Option("--critic", help="Critic spec, repeatable (default: inferact)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Actor model; default: the scripted policy (offline)."),
    ] = None,
    critic_model: Annotated[
        str | None,
        typer.Option("--critic-model", help="Critic model; default: oracle-scripted (offline)."),
    ] = None,
    base_url: BaseUrlOption = None,
    api_key: ApiKeyOption = None,
    feedback: Annotated[
        str, typer.Option("--feedback", help="binary (then self-reflection) or nl (paper A.5).")
    ] = "nl",
    feedback_model: Annotated[
        str | None,
        typer.Option(
            "--feedback-model", help="LLM writing NL feedback; default: a gold-answer template."
        ),
    ] = None,
    max_trials: Annotated[int, typer.Option("--max-trials", min=1, help="Trials per task.")] = 3,
    upper_bound: Annotated[
        bool,
        typer.Option("--upper-bound/--no-upper-bound", help="Also run the post-execution bound."),
    ] = True,
    plot: Annotated[bool, typer.Option("--plot/--no-plot", help="Write trials.png.")] = True,
    out: Annotated[
        Path, typer.Option("--out", file_okay=False, help="Directory for trials.json / .png.")
    ] = Path("trials"),
) -> None:
    """Success rate over trials with a critic and a simulated human (paper Table 2, Figure 4)."""
    from inferact_langgraph.eval.trials import TrialsError, trials_main

    try:
        trials_main(
            env,
            tasks=tasks,
            critics=critic or ["inferact"],
            model=model,
            critic_model=critic_model,
            base_url=base_url,
            api_key=api_key,
            feedback=feedback,
            feedback_model=feedback_model,
            max_trials=max_trials,
            upper_bound=upper_bound,
            out=out,
            plot=plot,
        )
    except TrialsError as exc:
        raise typer.BadParameter(str(exc)) from None
