"""The guard: the jobs put together, for both entry points.

:class:`InferActGuard` is what :func:`~inferact_langgraph.with_inferact` (as graph nodes)
and :class:`~inferact_langgraph.guard.middleware.InferActMiddleware` (from agent hooks)
share. Each job lives in its own module:

* which calls are critical, and the critic's verdicts as bound records:
  :mod:`~inferact_langgraph.guard.check` (:class:`~inferact_langgraph.guard.check.CriticStep`);
* the review round, as a pure outcome: :mod:`~inferact_langgraph.guard.review`
  (:class:`~inferact_langgraph.guard.review.ReviewProtocol`);
* whether a call may run now: :func:`~inferact_langgraph.guard.binding.authorize`, called by
  the tool node (``with_inferact``) or ``wrap_tool_call`` (the middleware);
* the lock: :meth:`InferActGuard.permit` turns a bound approval into a single-use
  :class:`~inferact_langgraph.guard.authorization.Authorization` that the critical tool itself
  consumes (:mod:`~inferact_langgraph.guard.authorization`);
* feedback memory: :class:`~inferact_langgraph.guard.memory.MemoryKeeper`, loaded when a run
  starts and written by the caller of a review.

LangGraph re-runs a node that called ``interrupt()`` from its first line on resume, so the critic
runs in an *earlier* step that writes its records to state, and the review only reads them. An
edit of a critical call is re-checked inside a memoised ``langgraph.func.task``: once.

Example:
    >>> from inferact_langgraph.guard.marks import CriticalSpec
    >>> guard = InferActGuard(critic=None, specs={"buy_now": CriticalSpec()})
    >>> guard.options.on_reject, guard.critic_step.is_critical({"name": "buy_now", "args": {}})
    ('continue', True)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from langgraph.func import task

from inferact_langgraph.critics.base import Critic
from inferact_langgraph.guard import authorization
from inferact_langgraph.guard._compat import tool_node_with_tools
from inferact_langgraph.guard.binding import args_digest, authorize, current_thread
from inferact_langgraph.guard.boundaries import (
    DEFAULT_TIMEOUT,
    BoundaryJudge,
    resolve_boundary_model,
)
from inferact_langgraph.guard.check import CriticStep
from inferact_langgraph.guard.marks import CriticalSpec, critical_spec
from inferact_langgraph.guard.memory import FeedbackMemory, MemoryKeeper
from inferact_langgraph.guard.options import GuardOptions
from inferact_langgraph.guard.requests import TaskLocator
from inferact_langgraph.guard.review import ReviewOutcome, ReviewProtocol
from inferact_langgraph.guard.state import CHECKS, value_of
from inferact_langgraph.labels import ReviewLabel, ReviewLabels, SpotCheck, labels_of_outcome

__all__ = ["USED", "InferActGuard", "run_config"]

logger = logging.getLogger("inferact_langgraph")

USED = (
    "its verdict or approval was used already: one decision allows one execution "
    "(propose the call again to have it checked again)"
)


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
        locator: Which task and which actions a call is judged on.
        boundary_judge: Decides, once per user message, whether a message the rule takes for
            a new request continues an earlier one (no model: never asked).
        critic_step: Which calls are critical; the critic's records.
        protocol: The review round; refusals; calls closed by a new user message.
        memory: The feedback memory: whose it is, loading and saving it.
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
        self.locator = TaskLocator(
            scope=self.options.scope,
            task_extractor=self.options.task_extractor,
            critical_tools=self.specs,
            thought_tools=self.options.thought_tools,
        )
        judge_model = (
            resolve_boundary_model(self.options.request_boundaries, critic)
            if self.options.scope == "request"
            else None
        )
        self.boundary_judge = BoundaryJudge(
            model=judge_model,
            critical_tools=self.specs,
            timeout=getattr(critic, "timeout", DEFAULT_TIMEOUT)
            if judge_model is getattr(critic, "model", None)
            else DEFAULT_TIMEOUT,
        )
        self.critic_step = CriticStep(
            critic=critic,
            specs=self.specs,
            locator=self.locator,
            judge=self.boundary_judge,
            key=self.options.key,
            spot_check=SpotCheck(rate=self.options.spot_check, seed=self.options.spot_check_seed),
        )
        self.protocol = ReviewProtocol(
            options=self.options, specs=self.specs, tools=self.tools, locator=self.locator
        )
        self.labels = ReviewLabels() if self.options.labels is None else self.options.labels
        self.memory = MemoryKeeper(
            memory=self.options.memory or FeedbackMemory(),
            task_of=self.locator.task,
            namespace=self.options.memory_namespace,
            key=self.options.key,
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

    # ------------------------------------------------------------------ the lock
    def permit(
        self, state: Any, call: Mapping[str, Any]
    ) -> tuple[authorization.Authorization | None, str | None]:
        """``(authorization, None)`` for a critical call that may run now, else ``(None, why)``.

        The authorization is issued from the bound, approving record and is refused when its
        binding was used already (:mod:`~inferact_langgraph.guard.authorization`).
        """
        record, reason = authorize(state, call, key=self.options.key)
        if record is None:
            return None, reason
        auth = authorization.issue(record)
        return (None, USED) if authorization.LEDGER.is_used(auth) else (auth, None)

    async def apermit(
        self, state: Any, call: Mapping[str, Any]
    ) -> tuple[authorization.Authorization | None, str | None]:
        """Async :meth:`permit` (the store is read asynchronously)."""
        record, reason = authorize(state, call, key=self.options.key)
        if record is None:
            return None, reason
        auth = authorization.issue(record)
        return (None, USED) if await authorization.LEDGER.ais_used(auth) else (auth, None)

    def exempt(self, call: Mapping[str, Any], tool: Any) -> authorization.Authorization | None:
        """An authorization for a locked tool's call that the guard's own spec does not check.

        ``critical={"buy_now": CriticalSpec(when=...)}`` overrides a ``@critical`` mark: a
        call its ``when`` leaves out runs as a plain call, once, like any other.
        """
        if not authorization.is_locked(tool) or self.critic_step.is_critical(call, tool):
            return None
        return authorization.Authorization(
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
        if spec is None or authorization.is_locked(tool):
            return tool
        cached = self._locked.get(name)
        if cached is None or cached[0] is not tool:
            cached = (tool, authorization.locked_copy(tool, spec.applies))
            self._locked[name] = cached
        return cached[1]

    def locked_tool_node(self, node: Any) -> Any:
        """A ``ToolNode`` like ``node`` whose critical tools are all locked (``node`` if so)."""
        tools = list(node.tools_by_name.values())
        locked = [self.locked(t) for t in tools]
        if all(a is b for a, b in zip(tools, locked, strict=True)):
            return node
        return tool_node_with_tools(node, locked)

    # ------------------------------------------------------------------ the review
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

    def start_run(
        self, state: Mapping[str, Any], store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The update at the start of a run: close a review the user skipped, load memory.

        Calls left pending when the user sent a new message instead of answering are closed
        (:meth:`ReviewProtocol.supersede_pending`), and this user's earlier feedback on the
        task in scope is loaded (:meth:`MemoryKeeper.load`); the two updates share no key.
        """
        return {**self.protocol.supersede_pending(state), **self.memory.load(state, store, config)}

    async def astart_run(
        self, state: Mapping[str, Any], store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Async :meth:`start_run`."""
        update = self.protocol.supersede_pending(state)
        return {**update, **await self.memory.aload(state, store, config)}

    def finish_review(
        self, outcome: ReviewOutcome, store: Any, config: Mapping[str, Any] | None, state: Any
    ) -> dict[str, Any]:
        """Keep the review's feedback and labels; return the review's state update."""
        self.memory.save(outcome.feedback, store, config, state=state)
        for label in self._labels(outcome, store, config, state):
            try:
                self.labels.save(store, label)
            except Exception as exc:  # noqa: BLE001 - a lost label must not lose the decision
                logger.warning("InferAct could not keep a review label: %s", exc)
        return outcome.update()

    async def afinish_review(
        self, outcome: ReviewOutcome, store: Any, config: Mapping[str, Any] | None, state: Any
    ) -> dict[str, Any]:
        """Async :meth:`finish_review`."""
        await self.memory.asave(outcome.feedback, store, config, state=state)
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
        return labels_of_outcome(
            self.labels,
            value_of(state, CHECKS) or {},
            outcome.audit,
            owner=self.memory.feedback_owner(state, config),
            config=config,
            critic=getattr(self.critic, "critic", None) or self.critic,
        )
