"""The guard: one object that composes the jobs, and the state keys it adds.

:class:`InferActGuard` is what :func:`~inferact_langgraph.with_inferact` (as graph nodes)
and :class:`~inferact_langgraph.middleware.InferActMiddleware` (from agent hooks) share. Each job
lives in its own module:

* which calls are critical, and the critic's verdicts as bound records:
  :mod:`~inferact_langgraph._critic_step` (:class:`~inferact_langgraph._critic_step.CriticStep`);
* the review round, as a pure outcome: :mod:`~inferact_langgraph._reviewing`
  (:class:`~inferact_langgraph._reviewing.ReviewProtocol`);
* whether a call may run now: :func:`~inferact_langgraph._binding.authorize`, called by the tool
  node (``with_inferact``) or ``wrap_tool_call`` (the middleware);
* feedback memory, written explicitly by the caller of a review
  (:meth:`InferActGuard.save_feedback`).

LangGraph re-runs a node that called ``interrupt()`` from its first line on resume, so the critic
runs in an *earlier* step that writes its records to state, and the review only reads them. An
edit of a critical call is re-checked inside a memoised ``langgraph.func.task``: once.

Example:
    >>> from inferact_langgraph._critical import CriticalSpec
    >>> guard = InferActGuard(critic=None, specs={"buy_now": CriticalSpec()})
    >>> guard.options.on_reject, guard.is_critical({"name": "buy_now", "args": {}})
    ('continue', True)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, cast

from langgraph.func import task
from typing_extensions import TypedDict

from inferact_langgraph._authorization import (
    LEDGER,
    Authorization,
    is_locked,
    issue,
    locked_copy,
)
from inferact_langgraph._binding import args_digest, authorize, current_thread
from inferact_langgraph._critic_step import (
    CriticStep,
)
from inferact_langgraph._critical import CriticalSpec, critical_spec
from inferact_langgraph._options import GuardOptions
from inferact_langgraph._reviewing import (
    ReviewOutcome,
    ReviewProtocol,
    logger,
    memory_context,
)
from inferact_langgraph.critics.base import Critic
from inferact_langgraph.labels import ReviewLabel, ReviewLabels, SpotCheck, labels_of_outcome
from inferact_langgraph.memory import (
    FeedbackMemory,
    MemoryContext,
    memory_owner,
    recorded_owner,
    sign_owner,
)
from inferact_langgraph.records import AuditEntry, CheckRecord, FeedbackEntry
from inferact_langgraph.scope import TaskLocator
from inferact_langgraph.trajectory import TrajectoryError

__all__ = ["USED", "InferActGuard", "InferActStateKeys", "merge_checks", "run_config"]

USED = (
    "its verdict or approval was used already: one decision allows one execution "
    "(propose the call again to have it checked again)"
)


def merge_checks(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Reducer for ``inferact_checks``: updates merge by tool call id (safe under fan-out)."""
    merged = dict(left or {})
    merged.update(right or {})
    return merged


def _latest(left: Any, right: Any) -> Any:
    """Reducer for ``inferact_route``: the latest write wins.

    A tool's or a caller's ``Command(goto=...)`` can make the critic and the gate run in the
    same step; a plain key would then fail the run. Losing a route is safe: the tool node
    still refuses every call without a bound approval.
    """
    return right


class InferActStateKeys(TypedDict):
    """The state keys the guard adds to a graph (all optional for the user)."""

    inferact_checks: NotRequired[Annotated[dict[str, CheckRecord], merge_checks]]
    """The critic's record per checked tool call id, bound to that exact call."""
    inferact_audit: NotRequired[Annotated[list[AuditEntry], operator.add]]
    """One entry per decided critical call: who decided what, when, and why."""
    inferact_feedback: NotRequired[Annotated[list[FeedbackEntry], operator.add]]
    """Human feedback on rejected calls, in order."""
    inferact_trial: NotRequired[int]
    """The current trial (0-based); incremented by ``on_reject="retry"``."""
    inferact_memory: NotRequired[Annotated[MemoryContext | None, _latest]]
    """Earlier feedback for the task in scope, for the actor's model call (never a message)."""
    inferact_route: NotRequired[Annotated[str | None, _latest]]
    """Where the gate sends the run next: ``None``, ``"review"``, ``"retry"`` or ``"end"``."""


def run_config() -> dict[str, Any]:
    """The current run's config (``{}`` outside a graph run)."""
    try:
        from langgraph.config import get_config

        return dict(get_config())
    except RuntimeError:
        return {}


class InferActGuard:
    """Runs the critic on critical tool calls, asks a human when it doubts, records everything.

    Args:
        critic: Any :class:`~inferact_langgraph.critics.base.Critic`.
        specs: Critical tool names mapped to their specs.
        options: The shared options (policy on errors and rejections, trials, memory).
        tools: The graph's tools by name, used to validate a human's edits (may be learnt
            later with :meth:`learn_tools`).

    Attributes:
        critic_step: Which calls are critical; the critic's records.
        protocol: The review round; refusals; calls closed by a new user message.
    """

    def __init__(
        self,
        *,
        critic: Critic | None,
        specs: Mapping[str, CriticalSpec],
        options: GuardOptions | None = None,
        tools: Mapping[str, Any] | None = None,
    ) -> None:
        self.options = options or GuardOptions()
        self.critic = critic
        # One dict each, shared by the jobs: the middleware learns tools and specs later.
        self.specs: dict[str, CriticalSpec] = dict(specs)
        self.tools: dict[str, Any] = dict(tools or {})
        self._locked: dict[str, tuple[Any, Any]] = {}  # name -> (the user's tool, locked copy)
        self.memory = self.options.memory or FeedbackMemory()
        self.locator = TaskLocator(
            scope=self.options.scope,
            task_extractor=self.options.task_extractor,
            critical_tools=self.specs,
        )
        self.critic_step = CriticStep(
            critic=critic,
            specs=self.specs,
            locator=self.locator,
            key=self.options.key,
            spot_check=SpotCheck(rate=self.options.spot_check, seed=self.options.spot_check_seed),
        )
        self.labels = ReviewLabels() if self.options.labels is None else self.options.labels
        self.protocol = ReviewProtocol(
            options=self.options, specs=self.specs, tools=self.tools, locator=self.locator
        )
        # Memoised across resumes: an edited critical call is re-checked exactly once. The
        # decorator is typed here: langgraph's task(name=...) overload leaves its type
        # variables unsolved (mypy reads them as Never). A task returns a future of the record.
        as_task: Callable[[Callable[..., Any]], Callable[..., Any]] = task(name="inferact_recheck")
        self._recheck_task = as_task(self.critic_step.recheck)
        self._arecheck_task = as_task(self.critic_step.arecheck)

    def learn_tools(self, tools: Sequence[Any]) -> None:
        """Remember tools (for edit validation) and the ``@critical`` marks they carry."""
        for tool in tools:
            name = getattr(tool, "name", None)
            if not name:
                continue
            self.tools.setdefault(name, tool)
            spec = critical_spec(tool)
            if spec is not None and name not in self.specs:
                self.specs[name] = spec

    def task_of(self, state: Any) -> str:
        """The user's real task t* (the newest request, by default)."""
        return self.locator.task(state)

    # ------------------------------------------------------------------ the critic step
    def is_critical(self, call: Mapping[str, Any], tool: Any = None) -> bool:
        """Whether this call must have a bound verdict or decision before it runs."""
        return self.critic_step.is_critical(call, tool)

    def critical_calls(self, state: Any) -> list[tuple[int, dict[str, Any], CriticalSpec]]:
        """The last AI message's unanswered critical calls, with their positions."""
        return self.critic_step.critical_calls(state)

    def needs_check(self, state: Any) -> bool:
        """Whether the critic must run before the tools (cheap: no model call)."""
        return self.critic_step.needs_check(state)

    def check(self, state: Any) -> dict[str, Any]:
        """The critic's records for the unchecked critical calls (sync)."""
        return self.critic_step.check(state)

    async def acheck(self, state: Any) -> dict[str, Any]:
        """The critic's records for the unchecked critical calls, judged concurrently."""
        return await self.critic_step.acheck(state)

    # ------------------------------------------------------------------ the review
    def to_review(
        self, state: Any, only: str | None = None
    ) -> tuple[list[CheckRecord], list[CheckRecord], list[CheckRecord]]:
        """The bound, doubtful, undecided records: (ask, blocked, allowed by policy)."""
        return self.protocol.to_review(state, only)

    def review(self, state: Any, *, only: str | None = None) -> ReviewOutcome:
        """Ask a human about the doubtful critical calls (sync), once; return the outcome."""
        steps = self.protocol.steps(state, only)
        try:
            request = next(steps)
            while True:
                request = steps.send(self._recheck_task(*request).result())
        except StopIteration as done:  # StopIteration.value is untyped: it is the outcome
            return cast(ReviewOutcome, done.value)

    async def areview(self, state: Any, *, only: str | None = None) -> ReviewOutcome:
        """Async :meth:`review` (edited critical calls are re-checked with the async critic)."""
        steps = self.protocol.steps(state, only)
        try:
            request = next(steps)
            while True:
                request = steps.send(await self._arecheck_task(*request))
        except StopIteration as done:  # StopIteration.value is untyped: it is the outcome
            return cast(ReviewOutcome, done.value)

    def authorize(self, state: Any, call: Mapping[str, Any]) -> tuple[Any, str | None]:
        """``(record, None)`` if this critical call may run now, else ``(None, why)``."""
        return authorize(state, call, key=self.options.key)

    def permit(
        self, state: Any, call: Mapping[str, Any]
    ) -> tuple[Authorization | None, str | None]:
        """``(authorization, None)`` for a critical call that may run now, else ``(None, why)``.

        The authorization is issued from the bound, approving record and is refused when its
        binding was used already (:mod:`~inferact_langgraph._authorization`).
        """
        record, reason = self.authorize(state, call)
        if record is None:
            return None, reason
        auth = issue(record)
        return (None, USED) if LEDGER.is_used(auth) else (auth, None)

    async def apermit(
        self, state: Any, call: Mapping[str, Any]
    ) -> tuple[Authorization | None, str | None]:
        """Async :meth:`permit` (the store is read asynchronously)."""
        record, reason = self.authorize(state, call)
        if record is None:
            return None, reason
        auth = issue(record)
        return (None, USED) if await LEDGER.ais_used(auth) else (auth, None)

    def exempt(self, call: Mapping[str, Any], tool: Any) -> Authorization | None:
        """An authorization for a locked tool's call that the guard's own spec does not check.

        ``critical={"buy_now": CriticalSpec(when=...)}`` overrides a ``@critical`` mark: a
        call its ``when`` leaves out runs as a plain call, once, like any other.
        """
        if not is_locked(tool) or self.is_critical(call, tool):
            return None
        return Authorization(
            thread=current_thread(),
            ai_message_id=None,
            index=None,
            tool=str(call.get("name")),
            args_sha256=args_digest(call.get("args")),
            tool_call_id=call.get("id"),
            decided_by="policy",
            single_use=False,
        )

    def locked(self, tool: Any) -> Any:
        """``tool``, locked (a copy, once per tool) when only ``critical=[...]`` names it."""
        name = getattr(tool, "name", None)
        if not isinstance(name, str):
            return tool
        spec = self.specs.get(name)
        if spec is None or is_locked(tool):
            return tool
        cached = self._locked.get(name)
        if cached is None or cached[0] is not tool:
            cached = (tool, locked_copy(tool, spec.applies))
            self._locked[name] = cached
        return cached[1]

    def locked_tool_node(self, node: Any) -> Any:
        """A ``ToolNode`` like ``node`` whose critical tools are all locked (``node`` if so)."""
        tools = list(node.tools_by_name.values())
        locked = [self.locked(t) for t in tools]
        if all(a is b for a, b in zip(tools, locked, strict=True)):
            return node
        from langgraph.prebuilt import ToolNode

        return ToolNode(
            locked,
            name=node.name or "tools",
            tags=node.tags,
            handle_tool_errors=node._handle_tool_errors,
            messages_key=node._messages_key,
            wrap_tool_call=node._wrap_tool_call,
            awrap_tool_call=node._awrap_tool_call,
        )

    def refusal(self, call: Mapping[str, Any], reason: str) -> Any:
        """The answer (and audit entry) that replaces a critical call the guard refuses."""
        return self.protocol.refusal(call, reason)

    def supersede_pending(self, state: Any) -> dict[str, Any]:
        """Close the calls left pending when the user sent a new message instead."""
        return self.protocol.supersede_pending(state)

    # ------------------------------------------------------------------ memory
    def start_run(
        self, state: Mapping[str, Any], store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The update at the start of a run: close a review the user skipped, load memory.

        Calls left pending when the user sent a new message instead of answering are closed
        (:meth:`supersede_pending`), and this user's earlier feedback on the task in scope is
        loaded (:meth:`memory_update`); the two updates share no key.
        """
        return {**self.supersede_pending(state), **self.memory_update(state, store, config)}

    async def astart_run(
        self, state: Mapping[str, Any], store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Async :meth:`start_run`."""
        update = self.supersede_pending(state)
        return {**update, **await self.amemory_update(state, store, config)}

    def owner(self, config: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Whose feedback memory this run uses (see ``memory_namespace``).

        Raises:
            ValueError: A ``memory_namespace`` hook that does not return labels.
        """
        hook = self.options.memory_namespace
        if hook is None:
            return memory_owner(config)
        labels = hook(config or {})
        if (
            isinstance(labels, str)
            or not isinstance(labels, Sequence)
            or not labels
            or not all(isinstance(x, str) and x for x in labels)
        ):
            raise ValueError(
                "memory_namespace must return a non-empty tuple of non-empty strings, such as "
                f"('org', 'acme', 'user', 'alice'); got {labels!r}"
            )
        return tuple(labels)

    def _memory_task(
        self, state: Mapping[str, Any], store: Any
    ) -> tuple[str | None, dict[str, Any]]:
        """(the task to load memory for, or None with the update to return instead)."""
        current = state.get("inferact_memory")
        if store is None and not current:
            return None, {}  # nothing to load, nothing to clear: no work on this path
        try:
            task_text = self.task_of(state)
        except TrajectoryError:
            return None, ({"inferact_memory": None} if current else {})
        if current and current.get("task") == task_text:
            return None, {}  # loaded for this request already (or written by a retry)
        if store is None:
            return None, ({"inferact_memory": None} if current else {})
        return task_text, {}

    def memory_update(
        self, state: Mapping[str, Any], store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Earlier feedback of this user on the task in scope, once per task, as state.

        It goes to ``inferact_memory``, never into the messages: the actor's model call
        receives it, the thread (and a chat UI showing it) does not.
        """
        task_text, update = self._memory_task(state, store)
        if task_text is None:
            return update
        owner = self.owner(config)
        entries = self.memory.load(store, task_text, owner=owner)
        context = memory_context(task_text, entries, owner)
        return {"inferact_memory": sign_owner(context, config, self.options.key)}

    async def amemory_update(
        self, state: Mapping[str, Any], store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Async :meth:`memory_update`."""
        task_text, update = self._memory_task(state, store)
        if task_text is None:
            return update
        owner = self.owner(config)
        entries = await self.memory.aload(store, task_text, owner=owner)
        context = memory_context(task_text, entries, owner)
        return {"inferact_memory": sign_owner(context, config, self.options.key)}

    def feedback_owner(self, state: Any, config: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Whose memory a review's feedback goes to: the thread's user, not the reviewer's.

        The owner recorded when the request's memory was loaded wins (a reviewer, or a resume
        that names no user, must never move a user's feedback into another namespace); else
        the owner of this run's config. With a signing key only a signed owner is recorded.
        """
        memory = state.get("inferact_memory") if isinstance(state, Mapping) else None
        return recorded_owner(memory, config, self.options.key) or self.owner(config)

    def save_feedback(
        self,
        outcome: ReviewOutcome,
        store: Any,
        config: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> dict[str, Any]:
        """Write the review's new feedback to the user's memory; return the state update."""
        if store is not None and outcome.feedback:
            owner = self.feedback_owner(state, config)
            for entry in outcome.feedback:
                self.memory.save(store, entry["task"], entry, owner=owner)
        for label in self._labels(outcome, store, config, state):
            try:
                self.labels.save(store, label)
            except Exception as exc:  # noqa: BLE001 - a lost label must not lose the decision
                logger.warning("InferAct could not keep a review label: %s", exc)
        return outcome.update()

    async def asave_feedback(
        self,
        outcome: ReviewOutcome,
        store: Any,
        config: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> dict[str, Any]:
        """Async :meth:`save_feedback`."""
        if store is not None and outcome.feedback:
            owner = self.feedback_owner(state, config)
            for entry in outcome.feedback:
                await self.memory.asave(store, entry["task"], entry, owner=owner)
        for label in self._labels(outcome, store, config, state):
            try:
                await self.labels.asave(store, label)
            except Exception as exc:  # noqa: BLE001 - a lost label must not lose the decision
                logger.warning("InferAct could not keep a review label: %s", exc)
        return outcome.update()

    def _labels(
        self, outcome: ReviewOutcome, store: Any, config: Mapping[str, Any] | None, state: Any
    ) -> list[ReviewLabel]:
        """The review's human decisions as labels (none without a store or with labels off)."""
        if store is None or not self.labels or not outcome.audit:
            return []
        checks = state.get("inferact_checks") if isinstance(state, Mapping) else None
        return labels_of_outcome(
            self.labels,
            checks or {},
            outcome.audit,
            owner=self.feedback_owner(state, config),
            config=config,
            critic=getattr(self.critic, "critic", None) or self.critic,
        )
