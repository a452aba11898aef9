"""``inferact trials``: the actor over several trials with a critic and a simulated human.

This is the paper's section 5.2 (Table 2, Figure 4).

For each task of an example environment and each critic, the actor runs for up to
``max_trials`` trials, each in a new thread of one checkpointer and one store. In a trial the
critic guards the critical action (``buy_now``, ``finish``, ``heat``/``cool``/``clean``):

* flagged, and the action is actually wrong (gold label) → the simulated human **rejects** it
  with feedback, the trial ends, and the feedback is in the store for the next trial:

  - ``binary``: the resume value is ``False`` ("incorrect"); the actor then writes a
    Reflexion-style self-reflection
    (:func:`~inferact_langgraph.prompts.feedback.reflection_prompt`), which is stored with
    the rejection and is what the next trial sees;
  - ``nl``: an LLM playing the user writes feedback from the task, the gold outcome and the
    failed action chain (paper A.5, :func:`~inferact_langgraph.prompts.feedback.feedback_prompt`);
    offline, :meth:`~inferact_langgraph.examples.base.Environment.oracle_feedback` writes it from a
    template instead (labelled as such);
* flagged, and the action is actually right → the human **approves** it and it runs;
* not flagged → it runs. If it was wrong, the critic **missed** it: the harm is done and the
  task counts as failed for the remaining trials (no feedback reaches the actor), as the paper
  counts it.

The **post-execution upper bound** has no critic: the actor always runs its terminal action
and, when the trial failed, receives the same kind of feedback afterwards.

The report gives, for each method, the cumulative success rate by trial ``k`` (solved at trial
``k`` or earlier); trial 1 is the actor without any feedback (Table 2's ``N=0``).

Offline by default, and the report says so: the actor is the environment's scripted policy
(which errs on trial 1 and corrects itself as soon as its context holds *any* feedback, so
binary and NL feedback help it equally), critic models give ORACLE-scripted answers decided
from the gold data, and NL feedback comes from a template. None of it is live judgement.

Example:
    >>> report = run_trials("webshop", tasks=[0], critics=["inferact"], max_trials=2)
    >>> report.methods["inferact"].cumulative, report.methods["post-execution"].cumulative
    ([0.0, 1.0], [0.0, 1.0])
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from inferact_langgraph.critics import CRITIC_SPECS, Critic, Usage, make_critic
from inferact_langgraph.examples.base import Environment
from inferact_langgraph.examples.oracle import (
    ORACLE_LABEL,
    baseline_oracle_model,
    inferact_oracle_model,
    scripted_reflection_model,
)
from inferact_langgraph.examples.registry import ENVIRONMENTS, build_env_graph, make_env
from inferact_langgraph.memory import FeedbackMemory
from inferact_langgraph.prompts.feedback import feedback_prompt, reflection_prompt
from inferact_langgraph.trajectory import Trajectory

__all__ = [
    "POST_EXECUTION",
    "FeedbackKind",
    "MethodResult",
    "TaskRun",
    "TrialRecord",
    "TrialsError",
    "TrialsReport",
    "parse_tasks",
    "plot_trials",
    "render_trials",
    "run_trials",
]

FeedbackKind = Literal["binary", "nl"]

#: Name of the no-critic upper bound in reports.
POST_EXECUTION = "post-execution"

SCRIPTED_ACTOR_LABEL = (
    "scripted policy (offline): errs on trial 1, corrects itself once any feedback is in context"
)
SCRIPTED_REFLECTION_LABEL = "scripted self-reflection (offline) — not written by a model"
TEMPLATE_FEEDBACK_LABEL = (
    "oracle_feedback template from the gold answer (offline) — not written by an LLM"
)
BINARY_FEEDBACK_LABEL = "binary: 'incorrect' from the gold label, then the actor's self-reflection"


class TrialsError(ValueError):
    """Bad options for a trials run; the message says which and why."""


# ---------------------------------------------------------------------------- records
@dataclass
class TrialRecord:
    """One trial of one task under one method.

    ``outcome`` is ``success``; ``rejected`` (flagged, actually wrong, rejected with
    feedback); ``missed`` (a wrong critical action ran unflagged: the task stays failed);
    ``failed`` (post-execution: the terminal action ran and was wrong, feedback follows);
    ``approved_failed`` (flagged, right, approved, yet the task failed); or ``no_action``
    (the actor stopped without a critical action).
    """

    trial: int
    thread: str
    outcome: str
    success: bool
    action: dict[str, Any] | None = None
    action_correct: bool | None = None
    checked: bool = False
    flagged: bool | None = None
    score: float | None = None
    decision: str | None = None
    feedback: str | None = None
    feedback_source: str | None = None
    memory_entries_at_start: int = 0
    critic_calls: int = 0
    seconds: float = 0.0


@dataclass
class TaskRun:
    """All trials of one task under one method."""

    task: int
    solved_at: int | None
    trials: list[TrialRecord] = field(default_factory=list)


@dataclass
class MethodResult:
    """One critic (or the post-execution upper bound) over all tasks."""

    name: str
    kind: Literal["critic", "upper_bound"]
    critic_model: str | None
    runs: list[TaskRun] = field(default_factory=list)
    max_trials: int = 3

    @property
    def cumulative(self) -> list[float]:
        """Success rate solved by trial k, for k = 1..max_trials (fractions)."""
        n = len(self.runs) or 1
        return [
            sum(1 for r in self.runs if r.solved_at is not None and r.solved_at <= k) / n
            for k in range(1, self.max_trials + 1)
        ]

    def counts(self) -> dict[str, int]:
        """Outcomes over all trials, plus checks and flags."""
        out: dict[str, int] = {}
        for run in self.runs:
            for t in run.trials:
                out[t.outcome] = out.get(t.outcome, 0) + 1
                out["checks"] = out.get("checks", 0) + int(t.checked)
                out["flags"] = out.get("flags", 0) + int(bool(t.flagged))
                out["critic_calls"] = out.get("critic_calls", 0) + t.critic_calls
        return out

    def to_dict(self) -> dict[str, Any]:
        """This method's results as plain JSON data (one entry of ``trials.json``)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "critic_model": self.critic_model,
            "cumulative_success": [round(x, 4) for x in self.cumulative],
            "solved": sum(r.solved_at is not None for r in self.runs),
            "counts": self.counts(),
            "tasks": [
                {
                    "task": r.task,
                    "solved_at": r.solved_at,
                    "trials": [asdict(t) for t in r.trials],
                }
                for r in self.runs
            ],
        }


@dataclass
class TrialsReport:
    """The result of :func:`run_trials`: one :class:`MethodResult` per critic, plus the bound."""

    env: str
    tasks: list[int]
    feedback: FeedbackKind
    max_trials: int
    methods: dict[str, MethodResult]
    labels: dict[str, str]
    seconds: float = 0.0

    @property
    def offline(self) -> bool:
        """True when any part is scripted / oracle rather than live."""
        return any("offline" in v or "oracle" in v or "scripted" in v for v in self.labels.values())

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON data (the content of ``trials.json``)."""
        return {
            "schema": "inferact-trials/1",
            "env": self.env,
            "tasks": self.tasks,
            "feedback": self.feedback,
            "max_trials": self.max_trials,
            "offline_scripted": self.offline,
            "labels": dict(self.labels),
            "seconds": round(self.seconds, 3),
            "trials": list(range(1, self.max_trials + 1)),
            "methods": {name: m.to_dict() for name, m in self.methods.items()},
        }

    def write(self, out: str | Path, *, plot: bool = True) -> dict[str, Path]:
        """Write ``trials.json`` (and ``trials.png`` when matplotlib is installed)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "trials.json"}
        paths["json"].write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False))
        if plot:
            png = plot_trials(self, out / "trials.png")
            if png is not None:
                paths["png"] = png
        return paths


# ---------------------------------------------------------------------------- the trial's outcome
def _terminal_action(env: Environment, values: dict[str, Any]) -> dict[str, Any] | None:
    """The last executed critical call of the trial, if any."""
    messages = values.get("messages") or []
    answered = {
        m.tool_call_id for m in messages if isinstance(m, ToolMessage) and m.status != "error"
    }
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            for call in reversed(message.tool_calls):
                if call["name"] in env.critical_tools and call["id"] in answered:
                    return {"id": call["id"], "name": call["name"], "args": dict(call["args"])}
    return None


def _chain(values: dict[str, Any], task: str, pending: str | None = None) -> str:
    messages = values.get("messages") or []
    try:
        trajectory = Trajectory.from_messages(messages, task=task, pending_tool_call_id=pending)
    except Exception:  # noqa: BLE001 - the chain is context for feedback, never fatal
        trajectory = Trajectory.from_messages(messages, task=task)
    return trajectory.render(budget=None)


# ---------------------------------------------------------------------------- offline models
class _NoCritic(Critic):
    """The post-execution upper bound: never flags (no model calls)."""

    name = "none"

    async def _aevaluate(self, trajectory: Trajectory, *, risk: Any = None) -> Any:
        return self.verdict(score=1.0, usage=Usage(), justification="no critic (upper bound)")


_FEEDBACK_LINE = re.compile(r"Feedback\s*:\s*(.*)", re.S | re.I)


def _model_text(model: Any, prompt: str) -> str:
    reply = model.invoke(prompt)
    content = getattr(reply, "content", reply)
    if isinstance(content, list):
        content = "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content).strip()


# ---------------------------------------------------------------------------- the loop
def parse_tasks(spec: str | Iterable[int] | None, count: int) -> list[int]:
    """``"all"``/None → every task; ``"0,2"`` → [0, 2]; validated against ``count``."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
        return list(range(count))
    if isinstance(spec, str):
        try:
            wanted = [int(x) for x in spec.replace(" ", "").split(",") if x != ""]
        except ValueError:
            raise TrialsError(
                f"--tasks must be 'all' or indices like 0,1,2; got {spec!r}"
            ) from None
    else:
        wanted = [int(x) for x in spec]
    if not wanted:
        raise TrialsError("no task selected")
    bad = [i for i in wanted if not 0 <= i < count]
    if bad:
        raise TrialsError(
            f"task index out of range {bad}: this environment has tasks 0..{count - 1}"
        )
    return list(dict.fromkeys(wanted))


class _Runner:
    def __init__(
        self,
        name: str,
        *,
        feedback: FeedbackKind,
        max_trials: int,
        actor_model: Any,
        actor_factory: Callable[[str, Any, int], Any] | None,
        critic_model: Any,
        feedback_model: Any,
        reflection_model: Any,
        threshold: float,
        on_trial: Callable[[str, int, TrialRecord], None] | None,
    ) -> None:
        self.name, self.feedback, self.max_trials = name, feedback, max_trials
        self.actor_model, self.actor_factory = actor_model, actor_factory
        self.critic_model, self.feedback_model = critic_model, feedback_model
        self.reflection_model, self.threshold = reflection_model, threshold
        self.on_trial = on_trial
        self.memory = FeedbackMemory()

    # -- builders
    def _critic(self, spec: str, env: Environment, task: int) -> Critic:
        if spec == POST_EXECUTION:
            return _NoCritic(model=None)
        model = self.critic_model
        oracle = model is None
        if model is None:
            model = (
                inferact_oracle_model(env)
                if spec == "inferact"
                else baseline_oracle_model(env, task, spec)
            )
        return make_critic(
            spec,
            model=model,
            preset=env.preset,
            threshold=self.threshold,
            calibration=None if oracle else "default",  # scripted scores are not calibrated
        )

    def _actor(self, env: Environment, task: int) -> Any:
        if self.actor_model is not None:
            return self.actor_model
        if self.actor_factory is not None:
            return self.actor_factory(self.name, env, task)
        return env.scripted_actor(task)

    # -- feedback
    def nl_feedback(self, env: Environment, task: int, chain: str) -> tuple[str, str]:
        if self.feedback_model is None:
            return env.oracle_feedback(task), "template"
        text = _model_text(
            self.feedback_model,
            feedback_prompt(
                env.preset,
                task=env.task_text(task),
                gold=env.gold_text(task),
                incorrect_action_chain=chain,
            ),
        )
        match = _FEEDBACK_LINE.search(text)
        return (match.group(1).strip() if match else text) or text, "llm"

    def reflect(self, env: Environment, task: int, chain: str) -> tuple[str, str]:
        model = self.reflection_model
        source = "actor"
        if model is None:
            model, source = scripted_reflection_model(), "scripted"
        text = _model_text(
            model,
            reflection_prompt(task=env.task_text(task), trajectory=chain, outcome="incorrect"),
        )
        return text, source

    def _attach_reflection(self, store: Any, prompt: str, reflection: str) -> None:
        ns = self.memory.namespace_for(prompt)  # runs name no user: the shared namespace
        for item in store.search(ns, limit=1000):
            if item.value.get("binary") and not item.value.get("reflection"):
                store.put(ns, item.key, {**item.value, "reflection": reflection})

    # -- one method on one task
    def run_task(self, spec: str, task: int) -> TaskRun:
        env = make_env(self.name)
        store, saver = InMemoryStore(), InMemorySaver()
        critic = self._critic(spec, env, task)
        _, graph = build_env_graph(
            self.name,
            env=env,
            task_index=task,
            actor_model=self._actor(env, task),
            critic=critic,
            checkpointer=saver,
            store=store,
            on_reject="end",
        )
        prompt = env.prompt(task)
        run = TaskRun(task=task, solved_at=None)
        tag = re.sub(r"[^a-z0-9]+", "-", spec.lower())
        for trial in range(1, self.max_trials + 1):
            record = self.run_trial(
                graph,
                env,
                store,
                task,
                trial,
                f"{tag}-task{task}-trial{trial}",
                prompt,
                spec == POST_EXECUTION,
                critic,
            )
            run.trials.append(record)
            if self.on_trial:
                self.on_trial(spec, task, record)
            if record.success:
                run.solved_at = trial
                break
            if record.outcome not in ("rejected", "failed"):
                break  # no feedback reaches the actor: the task stays failed
        return run

    def run_trial(
        self,
        graph: Any,
        env: Environment,
        store: Any,
        task: int,
        trial: int,
        thread: str,
        prompt: str,
        upper_bound: bool,
        critic: Critic,
    ) -> TrialRecord:
        started = time.perf_counter()
        cfg = {"configurable": {"thread_id": thread}}
        memory_entries = len(self.memory.load(store, prompt))
        calls_before = getattr(critic.model, "calls", 0) if critic.model is not None else 0
        record = TrialRecord(
            trial=trial,
            thread=thread,
            outcome="no_action",
            success=False,
            memory_entries_at_start=memory_entries,
        )
        payload: Any = {"messages": [("user", prompt)]}
        rejected_chain: str | None = None
        while True:
            out = graph.invoke(payload, cfg)
            interrupts = out.get("__interrupt__") if isinstance(out, dict) else None
            if not interrupts:
                break
            value = interrupts[0].value
            decisions = []
            for request in value.get("action_requests") or []:
                info = request.get("inferact") or {}
                correct = env.action_is_correct(task, request["name"], request["args"])
                record.action = {"name": request["name"], "args": dict(request["args"])}
                record.action_correct, record.checked, record.flagged = correct, True, True
                record.score = info.get("score")
                if correct:
                    decisions.append({"type": "approve"})
                    record.decision = "approve"
                    continue
                record.decision = "reject"
                values = graph.get_state(cfg).values
                rejected_chain = _chain(values, prompt, info.get("tool_call_id"))
                if self.feedback == "binary":
                    decisions.append({"type": "reject"})
                else:
                    text, source = self.nl_feedback(env, task, rejected_chain)
                    record.feedback, record.feedback_source = text, source
                    decisions.append({"type": "reject", "message": text})
            if self.feedback == "binary" and all(d["type"] == "reject" for d in decisions):
                payload = Command(resume=False)  # binary feedback: "incorrect"
            else:
                payload = Command(resume={"decisions": decisions})
        values = graph.get_state(cfg).values
        checks = values.get("inferact_checks") or {}
        if checks and record.flagged is None:
            last = list(checks.values())[-1]
            record.checked, record.flagged = True, bool(last.get("flagged"))
            record.score = last.get("score")
        record.success = env.succeeded(task, values.get("messages") or [])
        executed = _terminal_action(env, values)
        if executed and record.action is None:
            record.action = {"name": executed["name"], "args": executed["args"]}
            record.action_correct = env.action_is_correct(task, executed["name"], executed["args"])
        if record.success:
            record.outcome = "success"
        elif record.decision == "reject":
            record.outcome = "rejected"
            if self.feedback == "binary":
                reflection, source = self.reflect(env, task, rejected_chain or "")
                self._attach_reflection(store, prompt, reflection)
                record.feedback, record.feedback_source = reflection, f"reflection:{source}"
        elif upper_bound and executed is not None:
            record.outcome = "failed"
            chain = _chain(values, prompt)
            entry: dict[str, Any] = {
                "tool": executed["name"],
                "args": executed["args"],
                "task": prompt,
                "trial": trial,
                "post_execution": True,
            }
            if self.feedback == "binary":
                reflection, source = self.reflect(env, task, chain)
                entry.update(
                    binary=True,
                    reflection=reflection,
                    feedback="The user judged this attempt incorrect (binary feedback).",
                )
                record.feedback, record.feedback_source = reflection, f"reflection:{source}"
            else:
                text, source = self.nl_feedback(env, task, chain)
                entry.update(binary=False, feedback=text)
                record.feedback, record.feedback_source = text, source
            self.memory.save(store, prompt, entry)
        elif record.decision == "approve":
            record.outcome = "approved_failed"
        elif executed is not None:
            record.outcome = "missed"
        if critic.model is not None:
            record.critic_calls = getattr(critic.model, "calls", 0) - calls_before
        record.seconds = round(time.perf_counter() - started, 4)
        return record


def run_trials(
    env: str,
    *,
    tasks: str | Iterable[int] | None = None,
    critics: Sequence[str] = ("inferact",),
    feedback: FeedbackKind = "nl",
    max_trials: int = 3,
    upper_bound: bool = True,
    actor_model: Any = None,
    actor_factory: Callable[[str, Any, int], Any] | None = None,
    critic_model: Any = None,
    feedback_model: Any = None,
    reflection_model: Any = None,
    threshold: float = 0.5,
    labels: dict[str, str] | None = None,
    on_trial: Callable[[str, int, TrialRecord], None] | None = None,
) -> TrialsReport:
    """Run the actor over trials with each critic (and the post-execution upper bound).

    Args:
        env: ``webshop``, ``hotpotqa`` or ``alfworld``.
        tasks: Task indices, ``"0,1,2"`` or ``"all"`` (default: all).
        critics: Critic specs (``inferact``, ``standard``, ``multistep`` ...), each once.
        feedback: ``binary`` (reject as "incorrect", then the actor's self-reflection) or
            ``nl`` (natural-language feedback from ``feedback_model``, paper A.5).
        max_trials: Trials per task; trial 1 is the paper's N=0, so the paper's N=3
            iterations are ``max_trials=4``.
        upper_bound: Also run the no-critic post-execution upper bound.
        actor_model: A live actor chat model for every task (default: the scripted policy).
        actor_factory: ``(env_name, env, task) -> model``, for tests (overrides the default).
        critic_model: The critics' chat model (default: ORACLE-scripted models, offline).
        feedback_model: The LLM writing NL feedback (default: the oracle_feedback template).
        reflection_model: The model writing binary self-reflections (default: ``actor_model``
            if live, else a scripted reflection).
        threshold: The critics' threshold.
        labels: Override the descriptions of actor / critic model / feedback in the report.
        on_trial: Called after each trial with ``(method, task, record)`` (progress).

    Raises:
        TrialsError: Unknown environment or critic, bad tasks, bad options.
    """
    if env not in ENVIRONMENTS:
        raise TrialsError(f"unknown environment {env!r}; choose one of {', '.join(ENVIRONMENTS)}")
    if feedback not in ("binary", "nl"):
        raise TrialsError(f"--feedback must be binary or nl, got {feedback!r}")
    if max_trials < 1:
        raise TrialsError(f"--max-trials must be >= 1, got {max_trials}")
    critics = list(critics)
    bad = [c for c in critics if c not in CRITIC_SPECS]
    if bad:
        raise TrialsError(f"unknown critic {bad[0]!r}; valid: {', '.join(CRITIC_SPECS)}")
    if len(set(critics)) != len(critics):
        raise TrialsError("a critic is given more than once")
    if not critics and not upper_bound:
        raise TrialsError("nothing to run: give a critic or keep the upper bound")
    selected = parse_tasks(tasks, len(make_env(env).tasks))
    if reflection_model is None and actor_model is not None:
        reflection_model = actor_model

    live_actor = actor_model is not None
    info = {
        "actor": "live model"
        if live_actor
        else ("custom actor factory" if actor_factory else SCRIPTED_ACTOR_LABEL),
        "critic_model": "live model"
        if critic_model is not None
        else (
            f"InferAct: {ORACLE_LABEL}; baselines: oracle-scripted from the gold data "
            "(offline) — not live judgement"
        ),
        "feedback": (
            BINARY_FEEDBACK_LABEL
            if feedback == "binary"
            else (
                "NL feedback by an LLM from task, gold outcome and failed chain (paper A.5)"
                if feedback_model is not None
                else TEMPLATE_FEEDBACK_LABEL
            )
        ),
        "human": "simulated from the gold label: reject wrong flagged actions, approve right ones",
    }
    if feedback == "binary":
        info["reflection"] = (
            "the actor model (Reflexion-style prompt)"
            if reflection_model is not None
            else SCRIPTED_REFLECTION_LABEL
        )
    info.update(labels or {})

    runner = _Runner(
        env,
        feedback=feedback,
        max_trials=max_trials,
        actor_model=actor_model,
        actor_factory=actor_factory,
        critic_model=critic_model,
        feedback_model=feedback_model,
        reflection_model=reflection_model,
        threshold=threshold,
        on_trial=on_trial,
    )
    started = time.perf_counter()
    methods: dict[str, MethodResult] = {}
    for spec in [*critics, *([POST_EXECUTION] if upper_bound else [])]:
        kind: Literal["critic", "upper_bound"] = (
            "upper_bound" if spec == POST_EXECUTION else "critic"
        )
        result = MethodResult(
            name=spec,
            kind=kind,
            max_trials=max_trials,
            critic_model=None if kind == "upper_bound" else info["critic_model"],
        )
        for task in selected:
            result.runs.append(runner.run_task(spec, task))
        methods[spec] = result
    return TrialsReport(
        env=env,
        tasks=selected,
        feedback=feedback,
        max_trials=max_trials,
        methods=methods,
        labels=info,
        seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------------------- output
def render_trials(report: TrialsReport, console: Any = None) -> None:
    """Print the cumulative success table (Table 2 / Figure 4 style) and the labels."""
    from rich import box
    from rich.table import Table

    from inferact_langgraph.eval.render import output_console

    console = console or output_console()
    title = (
        f"Cumulative success rate by trial, {report.env}, {report.feedback} feedback, "
        f"{len(report.tasks)} task(s), in %"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    # overflow="fold": a narrow terminal wraps a value, never cuts it to "…"
    table.add_column("method", overflow="fold")
    for k in range(1, report.max_trials + 1):
        table.add_column(f"trial {k}", justify="right", overflow="fold")
    for col in ("solved", "flags", "rejected", "missed"):
        table.add_column(col, justify="right", overflow="fold")
    for name, method in report.methods.items():
        counts = method.counts()
        label = f"{name} (no critic)" if method.kind == "upper_bound" else name
        table.add_row(
            label,
            *(f"{100 * x:.1f}" for x in method.cumulative),
            f"{sum(r.solved_at is not None for r in method.runs)}/{len(method.runs)}",
            str(counts.get("flags", 0)) if method.kind == "critic" else "-",
            str(counts.get("rejected", 0)) if method.kind == "critic" else "-",
            str(counts.get("missed", 0)) if method.kind == "critic" else "-",
        )
    console.print(table)
    console.print(
        "trial k = cumulative success by trial k (trial 1 = no feedback yet, "
        "Table 2's N=0); flags/rejected/missed count trials.",
        soft_wrap=True,
    )
    for key, value in report.labels.items():
        console.print(f"{key}: {value}", soft_wrap=True)
    if report.offline:
        console.print(
            "[bold yellow]OFFLINE / SCRIPTED: these figures come from scripted or "
            "oracle components, not live judgement; they check the loop, not the "
            "method.[/bold yellow]",
            soft_wrap=True,
        )


def plot_trials(report: TrialsReport, path: str | Path) -> Path | None:
    """A Figure 4 style plot (cumulative success vs trial), or None without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(5.5, 4))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    trials = list(range(1, report.max_trials + 1))
    for name, method in report.methods.items():
        style = "--" if method.kind == "upper_bound" else "-"
        axes.plot(trials, [100 * x for x in method.cumulative], style, marker="o", label=name)
    axes.set_xticks(trials)
    axes.set_xlabel("trial")
    axes.set_ylabel("cumulative success rate (%)")
    axes.set_ylim(-2, 102)
    suffix = " — offline, scripted/oracle" if report.offline else ""
    axes.set_title(f"{report.env}, {report.feedback} feedback{suffix}", fontsize=9)
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    return path


def trials_main(
    env: str,
    *,
    tasks: str,
    critics: Sequence[str],
    model: str | None,
    critic_model: str | None,
    base_url: str | None,
    api_key: str | None,
    feedback: str,
    feedback_model: str | None,
    max_trials: int,
    upper_bound: bool,
    out: Path,
    plot: bool = True,
    console: Any = None,
) -> TrialsReport:
    """The ``inferact trials`` command: build live models if asked, run, print, write."""
    from inferact_langgraph.eval.render import output_console

    console = console or output_console()
    actor = critic = writer = None
    labels: dict[str, str] = {}
    if model or critic_model or feedback_model or base_url:
        from inferact_langgraph import _factory as factory

        where = f" at {base_url}" if base_url else ""
        try:
            if model:
                actor = factory.build_model(model, base_url=base_url, api_key=api_key)
                labels["actor"] = f"live model {model}{where}"
            if critic_model or base_url:
                name = critic_model or model
                if not name:
                    raise TrialsError(
                        "--base-url needs --critic-model (or --model) to name the model"
                    )
                critic = factory.build_model(name, base_url=base_url, api_key=api_key)
                labels["critic_model"] = f"live model {name}{where}"
            if feedback_model:
                writer = factory.build_model(feedback_model, base_url=base_url, api_key=api_key)
                labels["feedback" if feedback == "nl" else "feedback_model"] = (
                    f"NL feedback by live model {feedback_model}{where} (paper A.5)"
                )
        except factory.ModelSetupError as exc:
            raise TrialsError(str(exc)) from None
        if actor is not None and feedback == "binary":
            labels["reflection"] = f"live model {model}{where} (Reflexion-style prompt)"
    report = run_trials(
        env,
        tasks=tasks,
        critics=critics,
        feedback=feedback,  # type: ignore[arg-type]
        max_trials=max_trials,
        upper_bound=upper_bound,
        actor_model=actor,
        critic_model=critic,
        feedback_model=writer,
        labels=labels,
    )
    render_trials(report, console)
    paths = report.write(out, plot=plot)
    for kind, path in paths.items():
        console.print(f"{kind}: {path}", soft_wrap=True)
    return report
