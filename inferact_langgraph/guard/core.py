"""The guard: one object that composes the jobs, and the state keys it adds.

:class:`InferActGuard` is what :func:`~inferact_langgraph.with_inferact` (as graph nodes)
and :class:`~inferact_langgraph.guard.middleware.InferActMiddleware` (from agent hooks)
share. Each job lives in its own module:

* which calls are critical, and the critic's verdicts as bound records:
  :mod:`~inferact_langgraph.guard.check` (:class:`~inferact_langgraph.guard.check.CriticStep`);
* the review round, as a pure outcome: :mod:`~inferact_langgraph.guard.review`
  (:class:`~inferact_langgraph.guard.review.ReviewProtocol`);
* whether a call may run now: :func:`~inferact_langgraph.guard.binding.authorize`, called by
  the tool node (``with_inferact``) or ``wrap_tool_call`` (the middleware);
* feedback memory, written explicitly by the caller of a review
  (:meth:`InferActGuard.save_feedback`).

LangGraph re-runs a node that called ``interrupt()`` from its first line on resume, so the critic
runs in an *earlier* step that writes its records to state, and the review only reads them. An
edit of a critical call is re-checked inside a memoised ``langgraph.func.task``: once.

Example:
    >>> from inferact_langgraph.guard.marks import CriticalSpec
    >>> guard = InferActGuard(critic=None, specs={"buy_now": CriticalSpec()})
    >>> guard.options.on_reject, guard.is_critical({"name": "buy_now", "args": {}})
    ('continue', True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from langgraph.func import task

from inferact_langgraph.critics.base import Critic
from inferact_langgraph.guard.binding import authorize
from inferact_langgraph.guard.check import (
    CriticStep,
)
from inferact_langgraph.guard.marks import CriticalSpec, critical_spec
from inferact_langgraph.guard.memory import (
    FeedbackMemory,
    memory_owner,
    recorded_owner,
    sign_owner,
)
from inferact_langgraph.guard.options import GuardOptions
from inferact_langgraph.guard.records import CheckRecord
from inferact_langgraph.guard.requests import TaskLocator
from inferact_langgraph.guard.review import (
    ReviewOutcome,
    ReviewProtocol,
    memory_context,
)
from inferact_langgraph.guard.state import MEMORY
from inferact_langgraph.trajectory import TrajectoryError

__all__ = ["InferActGuard", "run_config"]


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
        self.memory = self.options.memory or FeedbackMemory()
        self.locator = TaskLocator(
            scope=self.options.scope, task_extractor=self.options.task_extractor
        )
        self.critic_step = CriticStep(
            critic=critic, specs=self.specs, locator=self.locator, key=self.options.key
        )
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
        current = state.get(MEMORY)
        if store is None and not current:
            return None, {}  # nothing to load, nothing to clear: no work on this path
        try:
            task_text = self.task_of(state)
        except TrajectoryError:
            return None, ({MEMORY: None} if current else {})
        if current and current.get("task") == task_text:
            return None, {}  # loaded for this request already (or written by a retry)
        if store is None:
            return None, ({MEMORY: None} if current else {})
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
        return {MEMORY: sign_owner(context, config, self.options.key)}

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
        return {MEMORY: sign_owner(context, config, self.options.key)}

    def feedback_owner(self, state: Any, config: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Whose memory a review's feedback goes to: the thread's user, not the reviewer's.

        The owner recorded when the request's memory was loaded wins (a reviewer, or a resume
        that names no user, must never move a user's feedback into another namespace); else
        the owner of this run's config. With a signing key only a signed owner is recorded.
        """
        memory = state.get(MEMORY) if isinstance(state, Mapping) else None
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
        return outcome.update()
