"""The ``inferact`` command line: one small function per command, the work in the modules.

Example:
    >>> from typer.testing import CliRunner
    >>> result = CliRunner().invoke(app, ["eval", "--help"])
    >>> result.exit_code, "--dev-split" in result.output
    (0, True)
"""

from __future__ import annotations

import os
import sqlite3
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

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
#: The metavar of an on/off flag: nothing, so the help shows no value to type after it.
FLAG = ""
#: ``inferact eval``: every check of some critic failed (endpoint down, bad model ...).
EXIT_CHECKS_FAILED = 1

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


# ---------------------------------------------------------------------------- bad inputs
# Every bad input ends in one line on stderr and exit code 1, never a traceback. The checks run
# before any model call, so that a run is never lost to an unwritable --out at its end.
EXIT_BAD_INPUT = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _input_error(message: str) -> NoReturn:
    """Print ``error: <message>`` as one line on stderr and exit with EXIT_BAD_INPUT."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _writable_dir(directory: Path, flag: str) -> None:
    """Create ``directory`` if missing; fail clearly when it cannot be created or written."""
    if directory.exists() and not directory.is_dir():
        _input_error(f"{flag}: {directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _input_error(f"{flag}: cannot create the directory {directory}: {exc.strerror or exc}")
    if not os.access(directory, os.W_OK | os.X_OK):
        _input_error(f"{flag} {directory}: the directory is not writable")


def _tool_names(text: str, option: str) -> tuple[str, ...]:
    """Tool names from a comma-separated option (``""``: none).

    Raises:
        typer.BadParameter: A name is empty or not a plain identifier.
    """
    names = tuple(name.strip() for name in text.split(",")) if text.strip() else ()
    for name in names:
        if not name or not all(ch.isalnum() or ch in "_-." for ch in name):
            raise typer.BadParameter(
                f"expected tool names separated by commas (e.g. think,scratchpad), got {text!r}",
                param_hint=option,
            )
    return names


def _rules_text(path: Path | None) -> str | None:
    """The text of a ``--rules`` file (``None`` without one)."""
    if path is None:
        return None
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise typer.BadParameter(
            f"{path} is empty: give the text of the rules", param_hint="--rules"
        )
    return text


def _check_sqlite_file(path: Path, flag: str) -> None:
    """``path`` is a writable SQLite database, or can be created as one.

    An existing file must start with SQLite's header; the check then opens a write
    transaction and rolls it back, so a read-only file or folder is caught before any work.
    """
    if path.is_dir():
        _input_error(f"{flag} {path}: is a directory; give a SQLite file path")
    _writable_dir(path.parent, flag)
    if path.exists() and path.stat().st_size > 0:
        try:
            with path.open("rb") as handle:
                header = handle.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            _input_error(f"{flag} {path}: cannot read it: {exc.strerror or exc}")
        if header != _SQLITE_MAGIC:
            _input_error(
                f"{flag} {path}: not a SQLite database; give another path or remove the file"
            )
    existed = path.exists()
    try:
        conn = sqlite3.connect(path)
        try:
            conn.execute("BEGIN IMMEDIATE")  # takes the write lock: fails when read-only
            conn.execute("ROLLBACK")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        _input_error(f"{flag} {path}: cannot write to it: {exc}")
    finally:
        if not existed and path.exists() and path.stat().st_size == 0:
            path.unlink()  # the probe created an empty file: leave no trace


#: Exit code of a command whose optional extra is not installed (as for a usage error).
EXIT_MISSING_EXTRA = 2


def _require_eval_extra(command: str) -> None:
    """Import the evaluation harness, or print what to install and exit 2 (no traceback)."""
    try:
        import inferact_langgraph.eval  # noqa: F401
    except ImportError as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, ImportError) else exc
        missing = getattr(cause, "name", None) or "a module"
        typer.echo(
            f"error: `inferact {command}` needs the [eval] extra ({missing} is missing): "
            "pip install 'inferact-langgraph[eval]'",
            err=True,
        )
        raise typer.Exit(EXIT_MISSING_EXTRA) from None


def _check_cache(path: Path) -> None:
    """``--cache`` is a usable verdict cache (an existing one, or a new file)."""
    from inferact_langgraph.cache import CacheError, VerdictCache

    _check_sqlite_file(path, "--cache")
    try:
        VerdictCache(path).close()
    except CacheError as exc:
        _input_error(f"--cache: {exc}")


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
            metavar="SPEC",
            help="A critic to measure; repeatable, e.g. --critic inferact --critic standard. "
            "SPEC is one of inferact, standard, self_consistency, multistep, "
            "multistep:<min|max|mean|product>.",
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
        typer.Option(
            "--risk-aware", metavar=FLAG, help="Add the paper's risk-aware sentence to every check."
        ),
    ] = False,
    rules: Annotated[
        Path | None,
        typer.Option(
            "--rules",
            exists=True,
            dir_okay=False,
            readable=True,
            help="A text file with the rules the agent follows (its policy or system prompt); "
            "the critics that judge an action see them.",
        ),
    ] = None,
    thought_tools: Annotated[
        str,
        typer.Option(
            "--thought-tools",
            metavar="NAMES",
            help="Comma-separated tools whose calls are the agent's thoughts, left out of the "
            "action chain as the guard leaves them out; '' keeps every call.",
        ),
    ] = "think",  # trajectory.THOUGHT_TOOLS (not imported here: --help stays fast)
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
    no_cache: Annotated[
        bool, typer.Option("--no-cache", metavar=FLAG, help="Do not use the cache.")
    ] = False,
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
            "--progress/--no-progress",
            metavar=FLAG,
            help="Progress bar with running calls and tokens.",
        ),
    ] = True,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            file_okay=False,
            help="Directory for report.json, pr_curves.png, reliability.png and the "
            "calibration files.",
        ),
    ] = Path("report"),
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate/--no-calibrate",
            metavar=FLAG,
            help="Fit a calibration (score -> P(on track)) per critic: on the dev part with "
            "--dev-split, measured on the held-out part (ECE, Brier before and after).",
        ),
    ] = True,
    calibration_cv: Annotated[
        int | None,
        typer.Option(
            "--calibration-cv",
            min=2,
            help="Also measure calibration by repeated stratified k-fold over all the data "
            "with this many folds (for small data sets): ECE of the pooled out-of-fold "
            "probabilities, per-fold ECE, and the ECE right probabilities would show.",
        ),
    ] = None,
    cost_missed: Annotated[
        float | None,
        typer.Option(
            "--cost-missed",
            callback=lambda v: _open_interval(v, "--cost-missed", 0.0, None),
            help="Cost of one off-track action that runs unflagged (with --cost-review: "
            "pick the threshold of lowest expected cost on the dev part).",
        ),
    ] = None,
    cost_review: Annotated[
        float | None,
        typer.Option(
            "--cost-review",
            callback=lambda v: _open_interval(v, "--cost-review", 0.0, None),
            help="Cost of one human review of a flagged action.",
        ),
    ] = None,
) -> None:
    """Measure critics on labelled trajectories (paper Table 1, Table 3, Appendix D)."""
    _require_eval_extra("eval")
    from rich.console import Console

    from inferact_langgraph import _factory as factory
    from inferact_langgraph._redact import redact_url
    from inferact_langgraph.cache import CacheError
    from inferact_langgraph.errors import DatasetError
    from inferact_langgraph.eval import evaluate_critics, output_console, render_tables

    if (cost_missed is None) != (cost_review is None):
        raise typer.BadParameter(
            "give both --cost-missed and --cost-review (the cost of a missed off-track action "
            "and of one human review), or neither",
            param_hint="--cost-missed/--cost-review",
        )
    costs = (
        (cost_missed, cost_review) if cost_missed is not None and cost_review is not None else None
    )
    console, errors = output_console(), Console(stderr=True)
    _writable_dir(out, "--out")
    rules_text = _rules_text(rules)
    thought_tool_names = _tool_names(thought_tools, "--thought-tools")
    if not no_cache:
        _check_cache(cache)
    try:
        extra = {"max_tokens": max_tokens} if max_tokens else {}
        chat_model = factory.build_model(
            model, base_url=base_url, api_key=api_key, timeout=timeout, **extra
        )
    except factory.ModelSetupError as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from None
    try:
        critics = factory.build_critics(
            critic,
            model=chat_model,
            preset=preset,
            risk_aware=risk_aware,
            rules=rules_text,
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
                "base_url": redact_url(base_url),  # never a password in report.json
                "preset": preset,
                "risk_aware": risk_aware,
                "rules": str(rules) if rules else None,
                "thought_tools": thought_tools,
                "critic_specs": list(critic),
            },
            calibrate=calibrate,
            calibration_cv=calibration_cv,
            costs=costs,
            thought_tools=thought_tool_names,
        )
    except DatasetError as exc:
        message = str(exc)
        _input_error(message if str(data) in message else f"{data}: {message}")
    except CacheError as exc:
        _input_error(f"--cache: {exc}")
    except OSError as exc:  # e.g. --out removed or made read-only during the run
        where = f" {exc.filename}" if exc.filename else ""
        _input_error(f"cannot write{where}: {exc.strerror or exc}")
    render_tables(report, console)
    labels = {"json": "report", "plot": "plot", "reliability": "reliability"}
    for kind, path in report.files.items():
        if path.exists():  # name only what this run wrote
            label = labels.get(kind) or kind.replace("calibration:", "calibration of ")
            typer.echo(f"{label}: {path}")
    if report.interrupted:
        errors.print(
            "[yellow]interrupted: the report covers the checks that finished; run "
            "the same command again to resume from the cache.[/yellow]"
        )
        raise typer.Exit(EXIT_INTERRUPTED)
    failed = report.failed_critics()
    if failed:
        for name, first in failed.items():
            summary = report.critics[name]
            errors.print(
                f"[red]error:[/red] every check of critic {name!r} failed "
                f"({summary.errors} of {summary.checked}); first error: {first}",
                markup=True,
                highlight=False,
                soft_wrap=True,
            )
        errors.print("no figures for these critics: fix the cause and run the command again")
        raise typer.Exit(EXIT_CHECKS_FAILED)


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
            "--auto-feedback",
            metavar=FLAG,
            help="A simulated human rejects with feedback (unattended runs).",
        ),
    ] = False,
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            help="Resume this thread (from --db) where it stopped; a finished thread is only "
            "shown (its decisions and outcome), never run again.",
        ),
    ] = None,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            metavar=FLAG,
            help="Forget the feedback remembered for this task in --db first, so the actor "
            "starts without it.",
        ),
    ] = False,
    db: Annotated[
        Path,
        typer.Option(
            "--db", dir_okay=False, help="SQLite file for checkpoints and feedback memory."
        ),
    ] = Path(".inferact-demo.sqlite"),
) -> None:
    """Run one task end to end: the actor acts, InferAct checks, a human reviews, retry."""
    from inferact_langgraph._demo import DemoError, run_demo

    _check_sqlite_file(db, "--db")
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
            fresh=fresh,
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
        typer.Option(
            "--critic",
            metavar="SPEC",
            help="A critic to run; repeatable, e.g. --critic inferact --critic standard "
            "(default: inferact).",
        ),
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
        typer.Option(
            "--upper-bound/--no-upper-bound",
            metavar=FLAG,
            help="Also run the post-execution bound.",
        ),
    ] = True,
    plot: Annotated[
        bool, typer.Option("--plot/--no-plot", metavar=FLAG, help="Write trials.png.")
    ] = True,
    out: Annotated[
        Path, typer.Option("--out", file_okay=False, help="Directory for trials.json / .png.")
    ] = Path("trials"),
) -> None:
    """Success rate over trials with a critic and a simulated human (paper Table 2, Figure 4)."""
    _require_eval_extra("trials")
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


def _add_memory_commands() -> None:
    from inferact_langgraph._memory_cli import memory_app

    app.add_typer(memory_app, name="memory")


def _add_label_commands() -> None:
    from inferact_langgraph._calibrate_cli import calibrate_command, labels_app

    app.command("calibrate")(calibrate_command)
    app.add_typer(labels_app, name="labels")


_add_memory_commands()
_add_label_commands()
