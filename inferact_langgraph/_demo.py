"""``inferact demo``: one task of an example environment, end to end, in the terminal.

The actor acts, InferAct checks the critical action (inferred tasks, option probabilities,
score versus threshold), and when it doubts, the person at the keyboard approves, edits or
rejects with feedback (or, with ``auto_feedback``, a simulated human rejects with feedback built
from the gold answer). A rejection ends the trial; the next trial runs in a new thread and gets
the feedback from the store. Checkpoints and the store live in one SQLite file, so
``--thread`` resumes an interrupted demo after the terminal was closed, and shows a finished
one (its decisions and outcome) without running anything again.

Offline by default, and it says so on screen: the actor is a scripted policy and the critic
model gives ORACLE-scripted answers (decided from the gold data), never live judgement.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from inferact_langgraph.examples.registry import (
    ENVIRONMENTS,
    ORACLE_LABEL,
    build_env_graph,
    make_env,
)
from inferact_langgraph.memory import SHARED_OWNER, FeedbackMemory

__all__ = ["DemoError", "run_demo"]

EXIT_NO_TTY = 2
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C

#: The answers the review prompt accepts, letters or words, in any case.
CHOICES = {
    "a": "approve",
    "approve": "approve",
    "e": "edit",
    "edit": "edit",
    "r": "reject",
    "reject": "reject",
}


class DemoError(Exception):
    """A demo that cannot run (bad options, no terminal); the message says why."""


def _open_persistence(db: Path) -> tuple[Any, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.sqlite import SqliteStore

    db.parent.mkdir(parents=True, exist_ok=True)
    saver = SqliteSaver(sqlite3.connect(str(db), check_same_thread=False))
    store = SqliteStore(sqlite3.connect(str(db), check_same_thread=False, isolation_level=None))
    store.setup()
    return saver, store


class _Demo:
    def __init__(
        self,
        name: str,
        task: int,
        console: Console,
        auto_feedback: bool,
        graph_kwargs: dict[str, Any],
        checkpointer: Any,
        store: Any,
        critic_label: str = ORACLE_LABEL,
    ) -> None:
        self.critic_label = critic_label
        self.name, self.task, self.console, self.auto = name, task, console, auto_feedback
        self.env = make_env(name)
        self.kwargs = graph_kwargs
        self.edited: set[Any] = set()  # tool call ids the human edited: their re-check is shown
        _, self.graph = build_env_graph(
            name,
            env=self.env,
            task_index=task,
            checkpointer=checkpointer,
            store=store,
            on_reject="end",
            **graph_kwargs,
        )

    # ------------------------------------------------------------------ output
    def show_update(self, node: str, update: Any) -> None:
        if not isinstance(update, dict):
            return
        for message in update.get("messages") or []:
            if isinstance(message, AIMessage):
                # The gate re-emits the actor's message with the human's edits applied: its
                # thought was written for the original call, so only the edited calls are shown.
                rewritten = node == "inferact_gate"
                thought = str(message.content).strip()
                if thought and not rewritten:
                    self.console.print(f"[dim]{escape(thought)}[/dim]")
                for call in message.tool_calls:
                    if rewritten and call["id"] not in self.edited:
                        continue
                    args = json.dumps(call["args"], ensure_ascii=False)
                    label = "Action (as you edited it):" if rewritten else "Action:"
                    self.console.print(
                        f"[bold cyan]{label}[/bold cyan] {escape(call['name'])}({escape(args)})"
                    )
            elif isinstance(message, ToolMessage):
                text = str(message.content)
                short = text if len(text) <= 400 else text[:400] + " …"
                self.console.print(f"[green]Observation:[/green] {escape(short)}")
        memory = update.get("inferact_memory")
        if node == "inferact_memory" and memory and memory.get("text"):
            # The actor receives it in its model call only; it is not a message of the thread.
            self.console.print(
                Panel(str(memory["text"]), title="memory: feedback from an earlier trial")
            )
        if node == "inferact_critic":
            for record in (update.get("inferact_checks") or {}).values():
                self.show_check(record)
        elif node == "inferact_gate":
            for call_id, record in (update.get("inferact_checks") or {}).items():
                if call_id not in self.edited:
                    continue
                if record.get("flagged") and not record.get("decision"):
                    continue  # doubted again: the next review shows the re-check (show_recheck)
                self.edited.discard(call_id)
                if record.get("edited_action"):  # the edited call is not critical: no check
                    self.console.print(
                        "[bold]Your edit[/bold] is not a critical call: it runs without a re-check."
                    )
                elif record.get("verdict"):
                    self.console.print("[bold]Re-check of your edit:[/bold]")
                    self.show_check(record)

    def show_check(self, record: dict[str, Any]) -> None:
        verdict = record.get("verdict") or {}
        table = Table(
            title=f"InferAct check of {record.get('tool')}"
            f"({json.dumps(record.get('args'), ensure_ascii=False)})",
            show_lines=False,
            caption=f"critic model: {self.critic_label}",
        )
        table.add_column("option")
        table.add_column("candidate task")
        table.add_column("p", justify="right")
        options = verdict.get("options") or []
        probs = verdict.get("option_probs") or {}
        n_inferred = len(verdict.get("inferred_tasks") or [])
        for i, text in enumerate(options):
            label = chr(ord("A") + i)
            role = (
                " (inferred)" if i < n_inferred else (" [user's task]" if i == n_inferred else "")
            )
            table.add_row(escape(label + role), escape(text), f"{probs.get(label, 0.0):.2f}")
        self.console.print(table)
        if record.get("error"):
            self.console.print(f"[red]critic error:[/red] {record['error']}")
        score, threshold = record.get("score"), record.get("threshold")
        flagged = record.get("flagged")
        self.console.print(
            f"score p(user's task) = {score if score is None else f'{score:.2f}'}"
            f" vs threshold {threshold} -> "
            + (
                "[bold red]DOUBT: ask the human[/bold red]"
                if flagged
                else "[bold green]OK: the action runs[/bold green]"
            )
        )
        if verdict.get("justification"):
            self.console.print(
                f"[dim]critic's justification: {escape(verdict['justification'])}[/dim]"
            )

    # ------------------------------------------------------------------ decisions
    def ask_choice(self) -> str:
        """``approve``, ``edit`` or ``reject``; anything else is asked again, never guessed."""
        while True:
            raw = self.console.input(escape("[a]pprove / [e]dit / [r]eject with feedback? "))
            choice = CHOICES.get(raw.strip().lower())
            if choice is not None:
                return choice
            self.console.print(
                f"[yellow]{escape(repr(raw.strip()))} is not an answer: type a (approve), "
                "e (edit) or r (reject).[/yellow]"
            )

    def ask_edit(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The edited arguments (a JSON object), or ``None`` to go back to the choice."""
        example = json.dumps(request["args"], ensure_ascii=False)
        while True:
            raw = self.console.input("new arguments as JSON (an empty line goes back): ").strip()
            if not raw:
                return None
            try:
                args = json.loads(raw)
            except json.JSONDecodeError as exc:
                self.console.print(
                    f"[yellow]not JSON ({escape(str(exc))}); give an object "
                    f"like {escape(example)}[/yellow]"
                )
                continue
            if not isinstance(args, dict):
                self.console.print(
                    f"[yellow]the arguments must be a JSON object, like {escape(example)}[/yellow]"
                )
                continue
            return args

    def show_recheck(self, request: dict[str, Any]) -> None:
        """The re-check of an edited call that the critic doubts again (from the request)."""
        info = request.get("inferact") or {}
        score = info.get("score")
        self.console.print(
            "[bold]Re-check of your edit:[/bold] "
            + (
                f"score p(user's task) = {score:.2f} vs threshold {info.get('threshold')} -> "
                if score is not None
                else f"the critic failed ({escape(str(info.get('error')))}) -> "
            )
            + "[bold red]DOUBT again: ask the human[/bold red]"
        )
        if info.get("justification"):
            self.console.print(
                f"[dim]critic's justification: {escape(info['justification'])}[/dim]"
            )

    def decide(self, interrupt_value: dict[str, Any]) -> Any:
        requests = interrupt_value.get("action_requests") or []
        if self.auto:
            feedback = self.env.oracle_feedback(self.task)
            self.console.print(
                Panel(
                    f"reject, with feedback: {feedback}",
                    title="decision (simulated human, --auto-feedback)",
                )
            )
            return {"decisions": [{"type": "reject", "message": feedback} for _ in requests]}
        decisions: list[dict[str, Any]] = []
        for request in requests:
            call_id = (request.get("inferact") or {}).get("tool_call_id")
            if call_id in self.edited:
                self.show_recheck(request)
            self.console.print(
                Panel(
                    f"{request.get('description')}\n{request['name']}"
                    f"({json.dumps(request['args'], ensure_ascii=False)})",
                    title="InferAct asks you",
                )
            )
            decision: dict[str, Any] | None = None
            while decision is None:
                choice = self.ask_choice()
                if choice == "approve":
                    decision = {"type": "approve"}
                elif choice == "edit":
                    args = self.ask_edit(request)
                    if args is not None:
                        decision = {
                            "type": "edit",
                            "edited_action": {"name": request["name"], "args": args},
                        }
                        self.edited.add(call_id)
                else:
                    text = self.console.input("feedback for the agent: ").strip()
                    decision = {
                        "type": "reject",
                        "message": text or "Rejected: this is not what I asked for.",
                    }
            decisions.append(decision)
            self.console.print(f"decision: {decision['type']}")
        return {"decisions": decisions}

    # ------------------------------------------------------------------ trials
    def run_trial(self, thread: str, start: Any) -> tuple[bool, bool]:
        """Run (or resume) one trial; returns (rejected?, success?)."""
        cfg = {"configurable": {"thread_id": thread}}
        payload, rejected = start, _rejects(start)
        while True:
            interrupted = None
            for chunk in self.graph.stream(payload, cfg, stream_mode="updates"):
                for node, update in chunk.items():
                    if node == "__interrupt__":
                        interrupted = update[0].value
                    else:
                        self.show_update(node, update)
            if interrupted is None:
                break
            decision = self.decide(interrupted)
            rejected = rejected or any(d["type"] == "reject" for d in decision["decisions"])
            payload = Command(resume=decision)
        values = self.graph.get_state(cfg).values
        ok = self.env.succeeded(self.task, values.get("messages") or [])
        return rejected, ok


def _show_finished(
    demo: _Demo, console: Console, thread: str, values: dict[str, Any], command: str
) -> bool:
    """Show what a finished thread did (its audit and its outcome); nothing runs again."""
    console.print(
        f"thread {escape(thread)} is finished: nothing is run again. What happened in it:"
    )
    audit = [e for e in values.get("inferact_audit") or [] if isinstance(e, dict)]
    for entry in audit:
        score = entry.get("score")
        console.print(
            f"  {escape(str(entry.get('tool')))}"
            f"({escape(json.dumps(entry.get('args'), ensure_ascii=False))}): "
            f"{entry.get('decision')} by {entry.get('decided_by')}"
            + (f" (p={score:.2f})" if isinstance(score, int | float) else "")
            + (f" - {escape(str(entry['feedback']))}" if entry.get("feedback") else "")
        )
    if not audit:
        console.print("  no critical call was checked in this thread")
    ok = demo.env.succeeded(demo.task, values.get("messages") or [])
    console.print(
        "outcome: "
        + ("[bold green]SUCCESS[/bold green]" if ok else "[bold red]not successful[/bold red]")
    )
    console.print(
        "To try the task again in a new thread (the actor acts again, and its critical "
        "actions may run again): "
        + escape(command)
    )
    return ok


def _remembered(store: Any, task_text: str) -> list[dict[str, Any]]:
    """The feedback the demo's memory holds for this task (runs that name no user)."""
    return FeedbackMemory().list_entries(store, owner=SHARED_OWNER, task=task_text)


def _rejects(payload: Any) -> bool:
    """Whether a resume payload rejects a call (a resumed trial that ends on it was rejected)."""
    resume = payload.resume if isinstance(payload, Command) else None
    decisions = resume.get("decisions", []) if isinstance(resume, dict) else []
    return any(d.get("type") == "reject" for d in decisions)


def run_demo(
    env_name: str,
    *,
    task: int = 0,
    model: str | None = None,
    critic_model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    auto_feedback: bool = False,
    thread: str | None = None,
    db: Path = Path(".inferact-demo.sqlite"),
    max_trials: int = 2,
    console: Console | None = None,
    stdin_isatty: bool | None = None,
    fresh: bool = False,
) -> int:
    """Run the demo; returns the exit code (0: the last trial succeeded).

    A ``thread`` that is finished is shown (its audit and outcome; exit code 0), never run
    again: a printed command must not repeat a purchase. ``fresh`` forgets the feedback
    remembered for this task in ``db`` before the run; without it, remembered feedback is
    announced.
    """
    console = console or Console()
    errors = Console(stderr=True)
    if env_name not in ENVIRONMENTS:
        raise DemoError(
            f"unknown environment {env_name!r}; choose one of {', '.join(ENVIRONMENTS)}"
        )
    env = make_env(env_name)
    if not 0 <= task < len(env.tasks):
        raise DemoError(f"--task must be between 0 and {len(env.tasks) - 1} for {env_name}")

    graph_kwargs: dict[str, Any] = {}
    actor_label, critic_label = "scripted policy", ORACLE_LABEL
    if model or critic_model or base_url:
        from inferact_langgraph import _factory as factory

        try:
            if model:
                graph_kwargs["actor_model"] = factory.build_model(
                    model, base_url=base_url, api_key=api_key
                )
                actor_label = f"live model {model}" + (f" at {base_url}" if base_url else "")
            if critic_model or base_url:
                name = critic_model or model
                if not name:
                    raise DemoError(
                        "--base-url needs --critic-model (or --model) to name the model"
                    )
                graph_kwargs["critic_model"] = factory.build_model(
                    name, base_url=base_url, api_key=api_key
                )
                critic_label = f"live model {name}" + (f" at {base_url}" if base_url else "")
        except factory.ModelSetupError as exc:
            raise DemoError(str(exc)) from None

    human_label = (
        "simulated (--auto-feedback), feedback from the gold answer"
        if auto_feedback
        else "you, at this terminal"
    )
    checkpointer, store = _open_persistence(Path(db))
    demo = _Demo(
        env_name, task, console, auto_feedback, graph_kwargs, checkpointer, store, critic_label
    )
    if thread:
        finished = demo.graph.get_state({"configurable": {"thread_id": thread}})
        if finished.values and not finished.next:
            _show_finished(
                demo, console, thread, finished.values, _demo_command(env_name, task, None, db)
            )
            later = re.fullmatch(r"(.+)-trial(\d+)", thread)
            following = (
                f"{later.group(1)}-trial{int(later.group(2)) + 1}" if later else f"{thread}-trial2"
            )
            if demo.graph.get_state({"configurable": {"thread_id": following}}).values:
                console.print(
                    "This session's next trial ran in another thread; see it with: "
                    + escape(_demo_command(env_name, task, following, db))
                )
            return 0
    tty = sys.stdin.isatty() if stdin_isatty is None else stdin_isatty
    if not auto_feedback and not tty:
        errors.print(
            "error: stdin is not a terminal, so nobody can review InferAct's doubts. "
            "Run `inferact demo` in a terminal, or pass --auto-feedback for a "
            "simulated human (CI, pipes)."
        )
        return EXIT_NO_TTY
    task_text = demo.env.prompt(task)
    if fresh:
        count = FeedbackMemory().clear(store, owner=SHARED_OWNER, task=task_text)
        console.print(
            f"--fresh: forgot {count} remembered feedback entr{'y' if count == 1 else 'ies'} "
            f"for this task in {db}"
        )
    console.print(
        Panel(
            f"environment: {env_name} (offline, deterministic), task {task}\n"
            f"actor: {actor_label}\n"
            f"critic: InferAct (task inference + verification), threshold 0.5\n"
            f"critic model: {critic_label}\n"
            f"human: {human_label}\n"
            f"checkpoints + feedback memory: {db}",
            title="inferact demo",
        )
    )
    console.print(f"[bold]Task:[/bold] {demo.env.prompt(task)}")
    remembered = _remembered(store, task_text) if not thread else []
    if remembered:
        clear = (
            f"inferact memory clear --db {shlex.quote(str(db))} --shared "
            f"--task {shlex.quote(task_text)}"
        )
        console.print(
            Panel(
                f"{len(remembered)} feedback entr{'y' if len(remembered) == 1 else 'ies'} "
                f"from earlier runs of this task in {db} will be given to the actor, so it may "
                "act right at once and InferAct may have nothing to ask you.\n"
                f"To start clean: add --fresh, or run {clear}",
                title="using remembered feedback",
            )
        )

    base, trial = thread or f"{env_name}-task{task}-{uuid.uuid4().hex[:8]}", 1
    later_trial = re.fullmatch(r"(.+)-trial(\d+)", base)
    if later_trial:  # a later trial's thread (from a resume hint): keep counting from it
        base, trial = later_trial.group(1), int(later_trial.group(2))

    def thread_of(number: int) -> str:
        return base if number == 1 else f"{base}-trial{number}"

    current = thread_of(trial)
    start: Any = {"messages": [("user", demo.env.prompt(task))]}
    ok = False
    try:
        if thread:
            state = demo.graph.get_state({"configurable": {"thread_id": thread}})
            if state.values and state.next:  # a finished thread was shown above
                console.print(f"resuming thread {thread} where it stopped")
                start = None
                if state.interrupts:
                    start = Command(resume=demo.decide(state.interrupts[0].value))
        while trial <= max_trials:
            current = thread_of(trial)
            console.rule(f"Trial {trial} (thread {current})")
            rejected, ok = demo.run_trial(current, start)
            console.print(
                f"trial {trial}: "
                + (
                    "[bold green]SUCCESS[/bold green]"
                    if ok
                    else "[bold red]not successful[/bold red]"
                )
                + (" (the action was rejected; the feedback is in memory)" if rejected else "")
            )
            if ok or not rejected:
                break
            trial += 1
            start = {"messages": [("user", demo.env.prompt(task))]}
            console.print(
                "The next trial starts in a new thread; InferAct's memory puts the "
                "feedback in context."
            )
    except (KeyboardInterrupt, EOFError) as stop:
        why = "Ctrl-C" if isinstance(stop, KeyboardInterrupt) else "end of input"
        console.print(
            f"\n[bold]stopped ({why}).[/bold] Thread {current} is saved in {db}; a pending "
            "review stays pending (nothing was approved) until you answer it.\n"
            f"resume with: {escape(_demo_command(env_name, task, current, db))}"
        )
        return EXIT_INTERRUPTED
    console.print(
        "see what happened later (nothing runs again) with: "
        + escape(_demo_command(env_name, task, current, db))
    )
    return 0 if ok else 1


def _demo_command(env_name: str, task: int, thread: str | None, db: Path) -> str:
    """The command that resumes (or shows) a thread, or starts a new one, for a POSIX shell."""
    where = f" --thread {shlex.quote(thread)}" if thread else ""
    return f"inferact demo {shlex.quote(env_name)} --task {task}{where} --db {shlex.quote(str(db))}"
