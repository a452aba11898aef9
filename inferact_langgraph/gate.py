"""The guard: the critic step, the review gate, feedback and the audit trail.

This module holds the logic shared by :func:`~inferact_langgraph.wrap.with_inferact` (which adds
it to a graph as nodes) and :class:`~inferact_langgraph.middleware.InferActMiddleware` (which
runs it from agent hooks). Both follow one rule from LangGraph's interrupt semantics: a node that
calls ``interrupt()`` re-runs from its first line on resume, so the critic runs in an *earlier*
step that writes its verdicts to state (``inferact_checks``, keyed by tool call id), and the
gate only reads them. Resuming never calls the critic again. The one exception, a human's edit
of a critical call, is re-checked inside a memoised ``langgraph.func.task``, so it too runs once.

Example:
    >>> from inferact_langgraph.critical import CriticalSpec
    >>> guard = InferActGuard(critic=None, specs={"buy_now": CriticalSpec()})
    >>> guard.on_reject
    'continue'
"""

from __future__ import annotations

import asyncio
import logging
import operator
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.errors import GraphBubbleUp, _mark_invalid_resume
from langgraph.func import task
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import interrupt
from pydantic import AfterValidator, ValidationError
from typing_extensions import NotRequired, TypedDict

from inferact_langgraph.critical import CriticalSpec
from inferact_langgraph.critics.base import Critic
from inferact_langgraph.errors import ResumeError
from inferact_langgraph.memory import FeedbackMemory, render_feedback
from inferact_langgraph.review import DECISION_TYPES, EXPECTED_SHAPE, Decision, parse_resume
from inferact_langgraph.trajectory import Trajectory, TrajectoryError

__all__ = [
    "InferActGuard",
    "InferActStateKeys",
    "OnCriticError",
    "OnReject",
    "merge_checks",
]

logger = logging.getLogger("inferact_langgraph")

OnCriticError = Literal["interrupt", "block", "allow"]
OnReject = Literal["continue", "retry", "end"]
MEMORY_MESSAGE_PREFIX = "inferact-memory-"


def merge_checks(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Reducer for ``inferact_checks``: updates merge by tool call id (safe under fan-out)."""
    merged = dict(left or {})
    merged.update(right or {})
    return merged


class InferActStateKeys(TypedDict):
    """The state keys the guard adds to a graph (all optional for the user)."""

    inferact_checks: NotRequired[Annotated[dict[str, dict[str, Any]], merge_checks]]
    """The critic's record per checked tool call id: verdict, score, decision."""
    inferact_audit: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """One entry per decided critical call: who decided what, when, and why."""
    inferact_feedback: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """Human feedback on rejected calls, in order."""
    inferact_trial: NotRequired[int]
    """The current trial (0-based); incremented by ``on_reject="retry"``."""
    inferact_memory_loaded: NotRequired[bool]
    """Whether earlier feedback from the store has been put in the actor's context."""
    inferact_route: NotRequired[str | None]
    """Where the gate sends the run next: ``None`` (tools / actor), ``"retry"`` or ``"end"``."""


def _messages(state: Mapping[str, Any]) -> list[AnyMessage]:
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if messages is None:
        messages = getattr(state, "messages", None)
    return list(messages or [])


def last_ai_message(state: Mapping[str, Any]) -> AIMessage | None:
    """The last AI message of the state's messages, if it is the newest message with tool calls."""
    for message in reversed(_messages(state)):
        if isinstance(message, AIMessage):
            return message
    return None


def answered_ids(messages: Sequence[AnyMessage]) -> set[str]:
    """Tool call ids that already have a tool message."""
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def trusted_record(state: Mapping[str, Any], ai: AIMessage, call: Mapping[str, Any]) -> dict | None:
    """The critic's record for ``call`` if it was written for this very AI message and these args.

    Records are bound to the id of the AI message that proposed the call (an id no tool can know
    in advance) and to the call's arguments, so a record forged through a tool's
    ``Command(update=...)`` for a future call, or left over from other arguments, is ignored
    and the call is checked again.
    """
    record = (state.get("inferact_checks") or {}).get(call.get("id"))
    if not isinstance(record, Mapping):
        return None
    if record.get("ai_message_id") != ai.id or record.get("args") != dict(call.get("args") or {}):
        return None
    return dict(record)


def is_approved(record: Mapping[str, Any] | None) -> bool:
    """A clean verdict, or a decision to run it (approve / allowed by policy)."""
    return record is not None and (not record.get("flagged") or record.get("decision") == "approve")


class InferActGuard:
    """Runs the critic on critical tool calls, asks a human when it doubts, records everything.

    Args:
        critic: Any :class:`~inferact_langgraph.critics.base.Critic`.
        specs: Critical tool names mapped to their specs.
        on_critic_error: ``"interrupt"`` (default, fail closed: ask the human, saying why),
            ``"block"`` (reject without asking) or ``"allow"`` (run it; only for calls whose
            risk is not high, and logged).
        on_reject: ``"continue"`` (the actor sees the feedback and carries on), ``"retry"``
            (start a new trial: messages cleared, task and feedback kept) or ``"end"``.
        max_trials: With ``"retry"``, the run ends after this many trials.
        task_extractor: ``state -> str``: the user's real task (default: first human message).
        memory: Where feedback is kept across threads (used when the graph has a store).
        allowed_decisions: The decisions a human may make.
    """

    def __init__(
        self,
        *,
        critic: Critic | None,
        specs: Mapping[str, CriticalSpec],
        on_critic_error: OnCriticError = "interrupt",
        on_reject: OnReject = "continue",
        max_trials: int = 3,
        task_extractor: Callable[[Mapping[str, Any]], str] | None = None,
        memory: FeedbackMemory | None = None,
        allowed_decisions: Sequence[str] = DECISION_TYPES,
    ) -> None:
        if on_critic_error not in ("interrupt", "block", "allow"):
            raise ValueError(
                f"on_critic_error must be 'interrupt', 'block' or 'allow', got {on_critic_error!r}"
            )
        if on_reject not in ("continue", "retry", "end"):
            raise ValueError(f"on_reject must be 'continue', 'retry' or 'end', got {on_reject!r}")
        if max_trials < 1:
            raise ValueError(f"max_trials must be >= 1, got {max_trials}")
        bad = [d for d in allowed_decisions if d not in DECISION_TYPES]
        if bad or not allowed_decisions:
            raise ValueError(f"allowed_decisions must be a non-empty subset of {DECISION_TYPES}")
        self.critic = critic
        self.specs = dict(specs)
        self.on_critic_error = on_critic_error
        self.on_reject = on_reject
        self.max_trials = max_trials
        self.task_extractor = task_extractor
        self.memory = memory or FeedbackMemory()
        self.allowed_decisions = list(allowed_decisions)
        # Memoised across resumes: an edited critical call is re-checked exactly once.
        self._recheck_task = task(name="inferact_recheck")(self._recheck_sync)
        self._arecheck_task = task(name="inferact_recheck")(self._recheck_async)

    # ------------------------------------------------------------------ what needs checking
    def task_of(self, state: Mapping[str, Any]) -> str:
        """The user's real task t*."""
        if self.task_extractor is not None:
            task_text = self.task_extractor(state)
            if not isinstance(task_text, str) or not task_text.strip():
                raise TrajectoryError("task_extractor must return a non-empty string")
            return task_text
        for message in _messages(state):
            if isinstance(message, HumanMessage) and not str(message.id or "").startswith(
                MEMORY_MESSAGE_PREFIX
            ):
                text = str(message.text)
                if text:
                    return text
        raise TrajectoryError(
            "cannot find the user's task: no human message in state['messages']; "
            "pass task_extractor= to with_inferact / InferActMiddleware"
        )

    def critical_calls(self, state: Mapping[str, Any]) -> list[tuple[dict[str, Any], CriticalSpec]]:
        """The last AI message's unanswered tool calls that must be checked."""
        ai = last_ai_message(state)
        if ai is None or not ai.tool_calls:
            return []
        done = answered_ids(_messages(state))
        calls = []
        for call in ai.tool_calls:
            spec = self.specs.get(call["name"])
            if spec is None or call.get("id") in done:
                continue
            if spec.applies(call.get("args") or {}):
                calls.append((call, spec))
        return calls

    def needs_check(self, state: Mapping[str, Any]) -> bool:
        """Whether the critic must run before the tools (cheap: no model call)."""
        if not self.specs:
            return False
        ai = last_ai_message(state)
        return any(
            trusted_record(state, ai, call) is None for call, _ in self.critical_calls(state)
        )

    # ------------------------------------------------------------------ the critic step
    def _trajectory(self, state: Mapping[str, Any], call: Mapping[str, Any]) -> Trajectory:
        messages = _messages(state)
        return Trajectory.from_messages(
            messages, task=self.task_of(state), pending_tool_call_id=call.get("id")
        )

    def _base_record(
        self, state: Mapping[str, Any], call: Mapping[str, Any], spec: CriticalSpec
    ) -> dict[str, Any]:
        args = dict(call.get("args") or {})
        ai = last_ai_message(state)
        return {
            "tool_call_id": call.get("id"),
            "ai_message_id": ai.id if ai is not None else None,
            "tool": call["name"],
            "args": args,
            "risk": spec.risk_for(args),
            "description": spec.description,
            "critic": getattr(self.critic, "name", None),
            "threshold": getattr(self.critic, "threshold", None),
            "checked_at": time.time(),
        }

    def _record_from(self, record: dict[str, Any], verdict: Any = None, error: Any = None) -> dict:
        if error is not None:
            logger.warning("InferAct critic failed on %s: %s", record["tool"], error)
            return {
                **record,
                "score": None,
                "flagged": True,
                "verdict": None,
                "error": f"{type(error).__name__}: {error}",
            }
        return {
            **record,
            "score": verdict.score,
            "flagged": verdict.flagged,
            "verdict": verdict.model_dump(mode="json"),
            "error": None,
        }

    async def _acheck_one(
        self, state: Mapping[str, Any], call: Mapping, spec: CriticalSpec
    ) -> dict:
        record = self._base_record(state, call, spec)
        try:
            if self.critic is None:
                raise RuntimeError("no critic configured")
            trajectory = self._trajectory(state, call)
            verdict = await self.critic.aevaluate(trajectory, risk=record["risk"])
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure fails closed, never open
            return self._record_from(record, error=exc)
        return self._record_from(record, verdict=verdict)

    def _check_one(self, state: Mapping[str, Any], call: Mapping, spec: CriticalSpec) -> dict:
        record = self._base_record(state, call, spec)
        try:
            if self.critic is None:
                raise RuntimeError("no critic configured")
            trajectory = self._trajectory(state, call)
            verdict = self.critic.evaluate(trajectory, risk=record["risk"])
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure fails closed, never open
            return self._record_from(record, error=exc)
        return self._record_from(record, verdict=verdict)

    def _check_update(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        audit = [
            _audit_entry(r, decision="approve", decided_by="critic")
            for r in records
            if not r["flagged"]
        ]
        update: dict[str, Any] = {
            "inferact_checks": {r["tool_call_id"]: r for r in records},
            "inferact_route": None,
        }
        if audit:
            update["inferact_audit"] = audit
        return update

    async def acheck(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Check every unchecked critical call of the last AI message, concurrently."""
        ai = last_ai_message(state)
        todo = [
            (c, s) for c, s in self.critical_calls(state) if trusted_record(state, ai, c) is None
        ]
        if not todo:
            return {}
        records = await asyncio.gather(*(self._acheck_one(state, c, s) for c, s in todo))
        return self._check_update(records)

    def check(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Sync :meth:`acheck` (calls are checked one after the other)."""
        ai = last_ai_message(state)
        todo = [
            (c, s) for c, s in self.critical_calls(state) if trusted_record(state, ai, c) is None
        ]
        if not todo:
            return {}
        return self._check_update([self._check_one(state, c, s) for c, s in todo])

    # ------------------------------------------------------------------ edits are re-checked
    def _recheck_sync(self, state: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
        return self._check_one(state, call, self.specs[call["name"]])

    async def _recheck_async(self, state: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
        return await self._acheck_one(state, call, self.specs[call["name"]])

    # ------------------------------------------------------------------ the gate
    def _to_review(self, state: Mapping[str, Any]) -> tuple[list[dict], list[dict], list[dict]]:
        """Split flagged records into (ask the human, blocked by policy, allowed by policy)."""
        ask, block, allow = [], [], []
        ai = last_ai_message(state)
        done = answered_ids(_messages(state))
        # Driven by the checkpointed records, not by the tool specs: a process that resumes
        # the review may never have seen the tools.
        for call in ai.tool_calls if ai is not None else []:
            if call.get("id") in done:
                continue
            record = trusted_record(state, ai, call)
            if record is None or not record.get("flagged") or record.get("decision"):
                continue
            if record.get("error") and self.on_critic_error == "block":
                block.append(record)
            elif (
                record.get("error")
                and self.on_critic_error == "allow"
                and record.get("risk") != "high"
            ):
                allow.append(record)
            else:
                ask.append(record)
        return ask, block, allow

    def review_request(self, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The interrupt value for these flagged calls (a HumanInTheLoopMiddleware superset)."""
        action_requests, review_configs = [], []
        for r in records:
            verdict = r.get("verdict") or {}
            if r.get("error"):
                why = f"The critic could not check this call ({r['error']}); a human must decide."
            else:
                why = (
                    f"InferAct doubts this call: p(user's task) = {r['score']:.2f} "
                    f"< threshold {r['threshold']:.2f}."
                )
            description = "\n".join(x for x in (r.get("description"), why) if x)
            action_requests.append(
                {
                    "name": r["tool"],
                    "args": r["args"],
                    "description": description,
                    "inferact": {
                        "tool_call_id": r["tool_call_id"],
                        "score": r.get("score"),
                        "threshold": r.get("threshold"),
                        "inferred_tasks": list(verdict.get("inferred_tasks") or []),
                        "justification": verdict.get("justification") or "",
                        "risk": r.get("risk"),
                        "critic": r.get("critic"),
                        "error": r.get("error"),
                    },
                }
            )
            review_configs.append(
                {"action_name": r["tool"], "allowed_decisions": list(self.allowed_decisions)}
            )
        return {
            "action_requests": action_requests,
            "review_configs": review_configs,
            "source": "inferact",
        }

    def review(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Ask a human about every doubtful critical call (sync); return the state update."""
        steps = self._review_steps(state)
        try:
            request = next(steps)
            while True:
                request = steps.send(self._recheck_task(*request).result())
        except StopIteration as done:
            return done.value

    async def areview(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Async :meth:`review` (edited critical calls are re-checked with the async critic)."""
        steps = self._review_steps(state)
        try:
            request = next(steps)
            while True:
                request = steps.send(await self._arecheck_task(*request))
        except StopIteration as done:
            return done.value

    def _review_steps(self, state: Mapping[str, Any]) -> Generator[tuple, dict, dict[str, Any]]:
        """The review loop; it yields ``(state, call)`` when an edit needs a re-check.

        Written as a generator so that the sync and async drivers share every line of it: the
        re-check is the only step that differs, and ``interrupt()`` must be called in the same
        order on every resume.
        """
        ask, block, allow = self._to_review(state)
        if not (ask or block or allow):
            return {}
        ai = last_ai_message(state)
        assert ai is not None  # there are critical calls, so there is an AI message
        tool_messages: list[ToolMessage] = []
        checks: dict[str, dict] = {}
        audit: list[dict] = []
        feedback: list[dict] = []
        edits: dict[str, dict] = {}
        for r in block:
            reason = f"blocked: the critic failed ({r['error']}) and on_critic_error='block'"
            tool_messages.append(_rejection_message(r, None, reason=reason))
            checks[r["tool_call_id"]] = {**r, "decision": "reject"}
            audit.append(_audit_entry(r, decision="reject", decided_by="policy", feedback=reason))
        for r in allow:
            logger.warning("InferAct: running %s unchecked (on_critic_error='allow')", r["tool"])
            checks[r["tool_call_id"]] = {**r, "decision": "approve"}
            audit.append(_audit_entry(r, decision="approve", decided_by="policy"))

        rounds = 0
        while ask:
            rounds += 1
            resume = self._ask(self.review_request(ask), count=len(ask))
            decisions = parse_resume(resume, count=len(ask), allowed=self.allowed_decisions)
            next_round: list[dict] = []
            for record, decision in zip(ask, decisions, strict=True):
                outcome = self._apply(
                    state, ai, record, decision, tool_messages, checks, audit, feedback, edits
                )
                if isinstance(outcome, _Recheck):
                    new_record = yield (outcome.state, outcome.call)
                    call_id = outcome.call["id"]
                    if new_record.get("flagged"):
                        checks[call_id] = new_record
                        next_round.append(new_record)
                    else:
                        checks[call_id] = {**new_record, "decision": "approve"}
                        audit.append(
                            _audit_entry(new_record, decision="approve", decided_by="critic")
                        )
            ask = next_round

        update: dict[str, Any] = {"inferact_checks": checks, "inferact_audit": audit}
        messages: list[Any] = []
        if edits:
            calls = [edits.get(c["id"], c) for c in ai.tool_calls]
            messages.append(ai.model_copy(update={"tool_calls": calls}))
        messages.extend(tool_messages)
        if feedback:
            update["inferact_feedback"] = feedback
        rejected = any(e["decision"] == "reject" for e in audit)
        if rejected and self.on_reject == "end":
            messages.extend(self._cancel_others(state, ai, tool_messages, edits))
            update["inferact_route"] = "end"
        elif rejected and self.on_reject == "retry":
            trial = int(state.get("inferact_trial") or 0) + 1
            if trial >= self.max_trials:
                messages.extend(self._cancel_others(state, ai, tool_messages, edits))
                update["inferact_route"] = "end"
            else:
                all_feedback = list(state.get("inferact_feedback") or []) + feedback
                update["inferact_route"] = "retry"
                update["inferact_trial"] = trial
                messages = [
                    RemoveMessage(id=REMOVE_ALL_MESSAGES),
                    HumanMessage(self.task_of(state)),
                    memory_message(all_feedback, trial=trial),
                ]
        if messages:
            update["messages"] = messages
        update["_store_feedback"] = feedback  # popped by the caller, which owns the store
        return update

    def _ask(self, request: dict[str, Any], *, count: int) -> Any:
        """``interrupt()`` with the resume validated *before* LangGraph records it.

        A malformed resume raises :class:`ResumeError` and is not saved, so the thread stays
        interrupted and accepts a correct resume afterwards.
        """
        allowed = self.allowed_decisions

        def validate(value: Any) -> Any:
            parse_resume(value, count=count, allowed=allowed)
            return value

        try:
            return interrupt(request, response_schema=Annotated[Any, AfterValidator(validate)])
        except ValidationError as exc:
            errors = exc.errors()
            cause = errors[0].get("ctx", {}).get("error") if errors else None
            error = (
                cause
                if isinstance(cause, ResumeError)
                else ResumeError(str(exc), expected=EXPECTED_SHAPE, received=None)
            )
            _mark_invalid_resume(error)
            raise error from None

    def _apply(
        self,
        state: Mapping[str, Any],
        ai: AIMessage,
        record: dict,
        decision: Decision,
        tool_messages: list,
        checks: dict,
        audit: list,
        feedback: list,
        edits: dict,
    ) -> _Recheck | None:
        """Apply one decision; an edit of a critical call asks for a re-check."""
        call_id = record["tool_call_id"]
        if decision.type == "approve":
            checks[call_id] = {**record, "decision": "approve"}
            audit.append(_audit_entry(record, decision="approve", decided_by="human"))
        elif decision.type == "reject":
            tool_messages.append(_rejection_message(record, decision.message))
            checks[call_id] = {**record, "decision": "reject"}
            audit.append(
                _audit_entry(
                    record, decision="reject", decided_by="human", feedback=decision.message
                )
            )
            feedback.append(
                {
                    "tool": record["tool"],
                    "args": record["args"],
                    "tool_call_id": call_id,
                    "feedback": decision.message
                    or "The user judged this action incorrect (binary feedback).",
                    "binary": decision.message is None,
                    "task": self.task_of(state),
                    "trial": int(state.get("inferact_trial") or 0),
                }
            )
        elif decision.type == "respond":
            tool_messages.append(
                ToolMessage(
                    content=decision.message or "",
                    tool_call_id=call_id,
                    name=record["tool"],
                )
            )
            checks[call_id] = {**record, "decision": "respond"}
            audit.append(
                _audit_entry(
                    record, decision="respond", decided_by="human", feedback=decision.message
                )
            )
        else:  # edit
            edited = decision.edited_action or {}
            new_call = {
                "name": edited["name"],
                "args": edited["args"],
                "id": call_id,
                "type": "tool_call",
            }
            edits[call_id] = new_call
            audit.append(_audit_entry(record, decision="edit", decided_by="human", edited=edited))
            spec = self.specs.get(new_call["name"])
            if spec is None or not spec.applies(new_call["args"]):
                checks[call_id] = {**record, "decision": "approve", "edited_action": edited}
                return None
            # An edited critical call is itself checked: it does not bypass review.
            edited_state = dict(state)
            edited_ai = ai.model_copy(
                update={"tool_calls": [edits.get(c["id"], c) for c in ai.tool_calls]}
            )
            edited_state["messages"] = [edited_ai if m is ai else m for m in _messages(state)]
            return _Recheck(edited_state, new_call)
        return None

    def _cancel_others(
        self, state: Mapping[str, Any], ai: AIMessage, tool_messages: list, edits: dict
    ) -> list[ToolMessage]:
        """Answer every other pending call so the history stays valid when the run ends."""
        done = answered_ids(_messages(state)) | {m.tool_call_id for m in tool_messages}
        return [
            ToolMessage(
                content="Not executed: the run ended because another action was rejected.",
                tool_call_id=call["id"],
                name=call["name"],
                status="error",
            )
            for call in ai.tool_calls
            if call["id"] not in done
        ]

    # ------------------------------------------------------------------ memory
    def memory_update(self, state: Mapping[str, Any], store: Any) -> dict[str, Any]:
        """Put earlier feedback for this task (from the store) in the actor's context, once."""
        if state.get("inferact_memory_loaded"):
            return {}
        update: dict[str, Any] = {"inferact_memory_loaded": True}
        if store is None:
            return update
        try:
            entries = self.memory.load(store, self.task_of(state))
        except TrajectoryError:
            return update
        if entries:
            update["messages"] = [memory_message(entries, trial=None)]
        return update

    async def amemory_update(self, state: Mapping[str, Any], store: Any) -> dict[str, Any]:
        """Async :meth:`memory_update`."""
        if state.get("inferact_memory_loaded"):
            return {}
        update: dict[str, Any] = {"inferact_memory_loaded": True}
        if store is None:
            return update
        try:
            entries = await self.memory.aload(store, self.task_of(state))
        except TrajectoryError:
            return update
        if entries:
            update["messages"] = [memory_message(entries, trial=None)]
        return update

    def save_feedback(self, update: dict[str, Any], store: Any) -> dict[str, Any]:
        """Write the review's new feedback to the store; return the update without it."""
        entries = update.pop("_store_feedback", None) or []
        if store is not None:
            for entry in entries:
                self.memory.save(store, entry["task"], entry)
        return update

    async def asave_feedback(self, update: dict[str, Any], store: Any) -> dict[str, Any]:
        """Async :meth:`save_feedback`."""
        entries = update.pop("_store_feedback", None) or []
        if store is not None:
            for entry in entries:
                await self.memory.asave(store, entry["task"], entry)
        return update


class _Recheck:
    """An edited critical call that must be checked again before it may run."""

    def __init__(self, state: dict, call: dict) -> None:
        self.state, self.call = state, call


def memory_message(entries: Sequence[Mapping[str, Any]], *, trial: int | None) -> HumanMessage:
    """The message that carries earlier feedback into the actor's context."""
    suffix = f"trial-{trial}" if trial is not None else "store"
    return HumanMessage(
        content=render_feedback(entries),
        id=f"{MEMORY_MESSAGE_PREFIX}{suffix}-{len(entries)}",
    )


def _rejection_message(
    record: Mapping[str, Any], message: str | None, reason: str | None = None
) -> ToolMessage:
    if reason:
        text = f"The call to {record['tool']} was not executed: {reason}."
    elif message:
        text = (
            f"The user rejected this call to {record['tool']} before it ran. "
            f"Their feedback: {message}"
        )
    else:
        text = (
            f"The user rejected this call to {record['tool']} before it ran: the action was "
            "judged incorrect. Reflect on what went wrong and try a different approach."
        )
    return ToolMessage(
        content=text, tool_call_id=record["tool_call_id"], name=record["tool"], status="error"
    )


def _audit_entry(
    record: Mapping[str, Any], *, decision: str, decided_by: str, **extra: Any
) -> dict:
    verdict = record.get("verdict") or {}
    entry = {
        "tool_call_id": record.get("tool_call_id"),
        "tool": record.get("tool"),
        "args": record.get("args"),
        "risk": record.get("risk"),
        "critic": record.get("critic"),
        "score": record.get("score"),
        "threshold": record.get("threshold"),
        "inferred_tasks": list(verdict.get("inferred_tasks") or []),
        "justification": verdict.get("justification") or "",
        "error": record.get("error"),
        "decision": decision,
        "decided_by": decided_by,
        "time": time.time(),
    }
    entry.update({k: v for k, v in extra.items() if v is not None})
    return entry
