"""The review: one round of human decisions on doubtful calls, as a pure outcome.

:class:`ReviewProtocol` reads the bound records, asks the human once (``interrupt()`` with a
pydantic ``response_schema``), applies the decisions and returns a :class:`ReviewOutcome`; it
never writes the store (its caller does, with the outcome's feedback). It also closes calls the
guard will not run: a refusal at the tool, and calls left pending when the user sent a new
message instead of answering.

Example:
    >>> outcome = ReviewOutcome(route="end")
    >>> outcome.update()
    {'inferact_route': 'end'}
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.config import get_config
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command, interrupt
from pydantic import BaseModel, ValidationError

from inferact_langgraph.errors import CheckpointerRequiredError, ResumeError
from inferact_langgraph.guard._compat import mark_invalid_resume
from inferact_langgraph.guard.binding import (
    args_digest,
    is_approved,
    is_bound,
    signed_by_id,
)
from inferact_langgraph.guard.marks import CriticalSpec
from inferact_langgraph.guard.memory import is_injected, memory_context
from inferact_langgraph.guard.options import GuardOptions
from inferact_langgraph.guard.payloads import (
    EXPECTED_SHAPE,
    ActionRequest,
    Decision,
    DecisionType,
    InferActActionRequest,
    InferActReviewInfo,
    ReviewConfig,
    ReviewRequest,
    inbox_link,
    is_decision_type,
    resume_error,
    resume_schema,
    review_description,
)
from inferact_langgraph.guard.provenance import is_tool_added
from inferact_langgraph.guard.records import (
    AuditEntry,
    CheckDecision,
    CheckRecord,
    DecidedBy,
    FeedbackEntry,
    MemoryContext,
    audit_entry,
    decided,
    evidence,
)
from inferact_langgraph.guard.requests import (
    SUPERSEDED_ID_PREFIX,
    TaskLocator,
    request_positions,
)
from inferact_langgraph.guard.state import (
    AUDIT,
    CHECKS,
    FEEDBACK,
    MEMORY,
    ROUTE,
    TRIAL,
    StateView,
    answered_after,
)
from inferact_langgraph.labels import is_spot_check

__all__ = [
    "Recheck",
    "ReviewOutcome",
    "ReviewProtocol",
]

logger = logging.getLogger("inferact_langgraph")

SUPERSEDED = "The user sent a new message instead of answering the review of this call."


def _thread_id() -> str | None:
    """The thread of the running graph step (None outside one), for the inbox link."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a runnable context
        return None
    thread = configurable.get("thread_id")
    return None if thread is None else str(thread)


def require_checkpointer(config: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`CheckpointerRequiredError` unless this run can be resumed.

    Checked when a review is about to open, not when the graph is compiled: the LangGraph
    server compiles graphs without a checkpointer and supplies its own with every run. The run's
    config carries the checkpointer under ``langgraph.constants.CONFIG_KEY_CHECKPOINTER`` (the
    key the server itself sets).

    Args:
        config: The run's config; by default the current run's (``langgraph.config.get_config``).

    Example:
        >>> require_checkpointer({"configurable": {"__pregel_checkpointer": None}})
        Traceback (most recent call last):
        ...
        inferact_langgraph.errors.CheckpointerRequiredError: InferAct needs a checkpointer ...
    """
    from langgraph.constants import CONFIG_KEY_CHECKPOINTER

    if config is None:
        try:
            from langgraph.config import get_config

            config = get_config()
        except RuntimeError:
            return  # not inside a graph run: nothing to check
    configurable = config.get("configurable") or {}
    if configurable.get(CONFIG_KEY_CHECKPOINTER):
        return
    raise CheckpointerRequiredError(
        "InferAct needs a checkpointer to pause for a human review: a doubtful critical call "
        "was not run, and without a checkpointer the review could never be resumed. Pass one "
        "(with_inferact(..., checkpointer=InMemorySaver()) or create_agent(..., "
        "checkpointer=...)) and a thread_id in the config. Served by the LangGraph server, the "
        "server supplies it."
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


# ---------------------------------------------------------------------------- review outcome
@dataclass
class ReviewOutcome:
    """What a review decided: the records, audit and feedback to keep, and what runs next.

    Attributes:
        checks: Records to merge into ``inferact_checks``.
        audit: New audit entries.
        feedback: New feedback entries; the caller writes them to the store.
        messages: Messages to add (tool answers, the AI message with edits, a new trial).
        route: ``None`` (tools / actor), ``"review"`` (an edit needs another review),
            ``"retry"`` or ``"end"``.
        edits: Edited calls by tool call id.
        trial: The new trial number, after ``on_reject="retry"``.
        memory: The actor's memory for the new trial (``inferact_memory``), after a retry.
    """

    checks: dict[str, CheckRecord] = field(default_factory=dict)
    audit: list[AuditEntry] = field(default_factory=list)
    feedback: list[FeedbackEntry] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    route: str | None = None
    edits: dict[str, dict[str, Any]] = field(default_factory=dict)
    trial: int | None = None
    memory: MemoryContext | None = None

    def decide(
        self,
        record: CheckRecord,
        decision: CheckDecision,
        decided_by: DecidedBy,
        feedback: str | None = None,
    ) -> None:
        """Keep a decision about the call of ``record``: in its record and in the audit."""
        self.checks[record["tool_call_id"]] = decided(record, decision, decided_by)
        self.audit.append(
            audit_entry(record, decision=decision, decided_by=decided_by, feedback=feedback)
        )

    def update(self) -> dict[str, Any]:
        """The graph state update (without the feedback's store write)."""
        # The route is always written: a stale "review" must never send the run round again.
        update: dict[str, Any] = {ROUTE: self.route}
        if self.checks:
            update[CHECKS] = self.checks
        if self.audit:
            update[AUDIT] = self.audit
        if self.feedback:
            update[FEEDBACK] = self.feedback
        if self.messages:
            update["messages"] = self.messages
        if self.trial is not None:
            update[TRIAL] = self.trial
        if self.memory is not None:
            update[MEMORY] = self.memory
        return update


Recheck = tuple[dict[str, Any], int, dict[str, Any]]
"""An edited critical call to check again before it may run: (state with the edit, position,
call)."""


def _with_edits(ai: AIMessage, edits: Mapping[str, dict[str, Any]]) -> AIMessage:
    """``ai`` with each edited call in place of the original (same id, same position)."""
    calls = [edits.get(c["id"] or "", c) for c in ai.tool_calls]  # an id-less call is never edited
    return ai.model_copy(update={"tool_calls": calls})


class ReviewProtocol:
    """One review round on the bound, doubtful records of the last AI message.

    Args:
        options: The shared :class:`~inferact_langgraph.GuardOptions`.
        specs: Critical tool names mapped to specs (shared with the critic step).
        tools: Tools by name (shared), to validate a human's edits.
        locator: The task and the window of messages a call is judged on (a retry clears
            that window).
    """

    def __init__(
        self,
        *,
        options: GuardOptions,
        specs: dict[str, CriticalSpec],
        tools: dict[str, Any],
        locator: TaskLocator,
    ) -> None:
        self.key = options.key
        self.options = options
        self.specs = specs
        self.tools = tools
        self.locator = locator

    def task_of(self, state: Any) -> str:
        """The user's real task t*."""
        return self.locator.task(state)

    @property
    def allowed_decisions(self) -> list[DecisionType]:
        """The decisions a human may make (validated by ``GuardOptions``)."""
        return [d for d in self.options.allowed_decisions if is_decision_type(d)]

    # ------------------------------------------------------------------ the review
    def to_review(
        self, state: Any, only: str | None = None
    ) -> tuple[list[CheckRecord], list[CheckRecord], list[CheckRecord]]:
        """Split the bound, doubtful, undecided records: (ask, blocked, allowed by policy)."""
        ask: list[CheckRecord] = []
        block: list[CheckRecord] = []
        allow: list[CheckRecord] = []
        view = StateView.read(state)
        ai, pending, checks = view.ai, view.pending, view.checks
        # Driven by the checkpointed records, not by the tool specs: a process that resumes
        # the review may never have seen the tools.
        for index, call in pending:
            if only is not None and call.get("id") != only:
                continue
            record = checks.get(call.get("id") or "")
            if not is_bound(record, ai, index, call, self.key) or is_approved(record):
                continue
            if record.get("decision"):
                continue
            if record.get("error") and self.options.on_critic_error == "block":
                block.append(record)
            elif (
                record.get("error")
                and self.options.on_critic_error == "allow"
                and record.get("risk") in ("low", "medium")  # only an explicit, not-high risk
            ):
                allow.append(record)
            else:
                ask.append(record)
        return ask, block, allow

    def review_request(self, records: Sequence[CheckRecord]) -> ReviewRequest:
        """The interrupt value for these flagged calls (a ``HITLRequest`` plus ``inferact``)."""
        action_requests: list[ActionRequest] = []
        review_configs: list[ReviewConfig] = []
        link = inbox_link(_thread_id())
        for r in records:
            description = review_description(r, link=link)
            info = cast(
                InferActReviewInfo,
                {
                    **evidence(r),
                    "ai_message_id": r.get("ai_message_id"),
                    "index": r.get("index"),
                    "scope": r.get("scope"),
                },
            )
            if is_spot_check(r):
                info["spot_check"] = True
            action: InferActActionRequest = {
                "name": r["tool"],
                "args": r["args"],
                "description": description,
                "inferact": info,
            }
            action_requests.append(action)
            review_configs.append(
                {"action_name": r["tool"], "allowed_decisions": list(self.allowed_decisions)}
            )
        return {
            "action_requests": action_requests,
            "review_configs": review_configs,
            "source": "inferact",
        }

    def check_edit(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Validate an edit: a known tool, arguments its schema accepts (coerced where it can).

        Agent Chat UI sends every edited value as a string (``"72.99"``, ``'{"a": 1}'``): a
        string that the schema wants as a number is coerced by pydantic, one it wants as an
        object or a list is parsed as JSON. Anything else is refused with the tool's errors.

        Raises:
            ResumeError: Unknown tool, or arguments the tool's schema refuses.
        """
        if not self.tools:  # tools never seen in this process: the tool node validates
            return args
        tool = self.tools.get(name)
        if tool is None:
            raise ResumeError(
                f"the edit names the tool {name!r}, which this agent does not have; "
                f"its tools: {sorted(self.tools)}",
                expected=EXPECTED_SHAPE,
                received={"name": name, "args": args},
            )
        schema = getattr(tool, "tool_call_schema", None)
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            return args
        candidate = dict(args)
        for _ in range(2):
            try:
                validated = schema.model_validate(candidate)
            except ValidationError as exc:
                parsed = False
                for error in exc.errors():
                    key = error["loc"][0] if error.get("loc") else None
                    if not isinstance(key, str):
                        continue
                    value = candidate.get(key)
                    if isinstance(value, str) and error.get("type", "").endswith(
                        ("dict_type", "list_type", "model_type", "model_attributes_type")
                    ):
                        try:
                            candidate[key] = json.loads(value)
                            parsed = True
                        except ValueError:
                            pass
                if not parsed:
                    problems = "; ".join(
                        f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
                    )
                    raise ResumeError(
                        f"the edited arguments do not fit {name}'s schema ({problems})",
                        expected=EXPECTED_SHAPE,
                        received={"name": name, "args": args},
                    ) from None
                continue
            return validated.model_dump(mode="json", exclude_unset=True)
        raise ResumeError(  # pragma: no cover - the loop returns or raises
            f"the edited arguments do not fit {name}'s schema",
            expected=EXPECTED_SHAPE,
            received={"name": name, "args": args},
        )

    def _ask(self, request: ReviewRequest, *, count: int) -> list[Decision]:
        """``interrupt()`` with the resume validated *before* LangGraph records it.

        The ``response_schema`` is a pydantic discriminated union of LangChain's decisions
        (:func:`~inferact_langgraph.guard.payloads.resume_schema`). A malformed resume raises
        :class:`ResumeError` and is not saved, so the thread stays interrupted.
        """
        # Without a checkpointer the interrupt could never be answered: fail before it, so the
        # call does not run and the run does not end on a review nobody can resume.
        require_checkpointer()
        schema = resume_schema(
            count=count, allowed=self.allowed_decisions, check_edit=self.check_edit
        )
        try:
            # interrupt() is typed Any; the response_schema made it the list of decisions.
            return cast(list[Decision], interrupt(request, response_schema=schema))
        except ValidationError as exc:
            error = resume_error(exc)
            # LangGraph marks its own ValidationError; ours replaces it with a clearer error,
            # which must carry the same mark so ToolNode re-raises it instead of answering
            # the call with it. There is no public API to set that mark.
            mark_invalid_resume(error)
            raise error from None

    def steps(
        self, state: Any, only: str | None
    ) -> Generator[Recheck, CheckRecord, ReviewOutcome]:
        """One review round; it yields ``(state, index, call)`` when an edit needs a re-check.

        A generator, so that the sync and async drivers share every line: the re-check is the
        only step that differs. There is exactly one ``interrupt()`` per round: an edit that
        the critic still doubts is reviewed again in a *new* step (a new interrupt id), so a
        late answer to the first interrupt can never approve the second.
        """
        outcome = ReviewOutcome()
        view = StateView.read(state)
        ask, block, allow = self.to_review(view, only)
        if not (ask or block or allow):
            return outcome
        ai = view.ai
        assert ai is not None  # there are critical calls, so there is an AI message
        for r in block:
            reason = f"blocked: the critic failed ({r['error']}) and on_critic_error='block'"
            outcome.messages.append(_rejection_message(r, None, reason=reason))
            outcome.decide(r, "reject", "policy", feedback=reason)
        for r in allow:
            logger.warning("InferAct: running %s unchecked (on_critic_error='allow')", r["tool"])
            outcome.decide(r, "approve", "policy")

        if ask:
            request = self.review_request(ask)
            if only is not None:  # a per-call review: also LangChain's per-call request shape
                first = request["action_requests"][0]
                request = {
                    "type": "tool_approval",
                    "tool_call_id": only,
                    "name": first["name"],
                    "args": first["args"],
                    "description": first["description"],
                    **request,
                }
            decisions = self._ask(request, count=len(ask))
            for record, decision in zip(ask, decisions, strict=True):
                recheck = self._apply(view, ai, record, decision, outcome)
                if recheck is None:
                    continue
                new_record = yield recheck
                call_id = recheck[2]["id"]
                if is_approved(new_record):
                    outcome.decide(new_record, "approve", "critic")
                else:
                    outcome.checks[call_id] = new_record
                    outcome.route = "review"

        if outcome.edits:
            outcome.messages.insert(0, _with_edits(ai, outcome.edits))
        self._after_rejection(view, ai, outcome)
        outcome.checks = signed_by_id(outcome.checks.values(), self.key)
        return outcome

    def _after_rejection(self, view: StateView, ai: AIMessage, outcome: ReviewOutcome) -> None:
        """Apply ``on_reject`` once a call was rejected."""
        if not any(e["decision"] == "reject" for e in outcome.audit):
            return
        if self.options.on_reject == "end":
            outcome.messages.extend(self._cancel_others(view, ai, outcome))
            outcome.route = "end"
        elif self.options.on_reject == "retry":
            trial = view.trial + 1
            if trial >= self.options.max_trials:
                outcome.messages.extend(self._cancel_others(view, ai, outcome))
                outcome.route = "end"
            else:
                outcome.route = "retry"
                outcome.trial = trial
                outcome.messages = self._new_trial(view)
                task = self.task_of(view)
                feedback = [  # this task's feedback only: a thread may hold other requests
                    e
                    for e in [*view.get(FEEDBACK, []), *outcome.feedback]
                    if e.get("task") == task
                ]
                earlier = view.get(MEMORY, {})
                outcome.memory = memory_context(task, feedback, earlier.get("owner"))
                if earlier.get("owner_signature"):  # the same owner, still signed
                    outcome.memory["owner_signature"] = earlier["owner_signature"]

    def _new_trial(self, view: StateView) -> list[Any]:
        """Messages that clear the trial's working memory, keeping the user's request(s).

        With a ``task_extractor`` the thread restarts from the task text (as in the paper);
        otherwise the messages after the request in scope are removed, except the user's
        requests, so earlier turns of a chat stay as they were.
        """
        if self.options.task_extractor is not None:
            return [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage(self.task_of(view))]
        messages = view.messages
        start = self.locator.start(messages, view.boundaries)
        keep = set(request_positions(messages))
        return [
            RemoveMessage(id=m.id)
            for i, m in enumerate(messages)
            if i > start and i not in keep and m.id is not None
        ]

    def _apply(
        self,
        view: StateView,
        ai: AIMessage,
        record: CheckRecord,
        decision: Decision,
        outcome: ReviewOutcome,
    ) -> Recheck | None:
        """Apply one decision; an edit of a critical call asks for a re-check."""
        call_id = record["tool_call_id"]
        if decision.type == "approve":
            outcome.decide(record, "approve", "human")
        elif decision.type == "reject":
            outcome.messages.append(_rejection_message(record, decision.message))
            outcome.decide(record, "reject", "human", feedback=decision.message)
            outcome.feedback.append(
                {
                    "tool": record["tool"],
                    "args": record["args"],
                    "tool_call_id": call_id,
                    "feedback": decision.message
                    or "The user judged this action incorrect (binary feedback).",
                    "binary": decision.message is None,
                    "task": record.get("task") or self.task_of(view),
                    "trial": view.trial,
                }
            )
        elif decision.type == "respond":
            outcome.messages.append(
                ToolMessage(
                    content=decision.message or "", tool_call_id=call_id, name=record["tool"]
                )
            )
            outcome.decide(record, "respond", "human", feedback=decision.message)
        else:  # edit: bound to the same message and position, with the new name and args
            edited = decision.edited_action or {}
            new_call = {
                "name": edited["name"],
                "args": edited["args"],
                "id": call_id,
                "type": "tool_call",
            }
            index = int(record.get("index") or 0)
            outcome.edits[call_id] = new_call
            outcome.audit.append(
                audit_entry(record, decision="edit", decided_by="human", edited=edited)
            )
            spec = self.specs.get(new_call["name"])
            if spec is None or not spec.applies(new_call["args"]):
                outcome.checks[call_id] = {
                    **record,
                    "tool": new_call["name"],
                    "args": dict(new_call["args"]),
                    "args_sha256": args_digest(new_call["args"]),
                    "decision": "approve",
                    "decided_by": "human",
                    "edited_action": edited,
                }
                return None
            # An edited critical call is checked as the tool it names: no bypass by editing.
            edited_ai = _with_edits(ai, outcome.edits)
            with_edit = view.with_messages([edited_ai if m is ai else m for m in view.messages])
            return with_edit.state, index, new_call
        return None

    def _cancel_others(
        self, view: StateView, ai: AIMessage, outcome: ReviewOutcome
    ) -> list[ToolMessage]:
        """Answer every other pending call so the history stays valid when the run ends."""
        messages, position = view.messages, view.ai_position
        assert position is not None  # a review has an AI message
        assert messages[position] is ai
        done = answered_after(messages, position) | {
            m.tool_call_id for m in outcome.messages if isinstance(m, ToolMessage)
        }
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

    # ------------------------------------------------------------------ refusing at the tool
    def refusal(self, call: Mapping[str, Any], reason: str) -> Any:
        """The answer that replaces a critical call the guard refuses to run (with an audit)."""
        logger.warning("InferAct refused to run %s: %s", call.get("name"), reason)
        message = ToolMessage(
            content=f"The call to {call.get('name')} was not executed: {reason}.",
            tool_call_id=call.get("id") or "",
            name=call.get("name"),
            status="error",
        )
        record = {
            "tool_call_id": call.get("id"),
            "tool": call.get("name"),
            "args": dict(call.get("args") or {}),
        }
        entry = audit_entry(record, decision="reject", decided_by="guard", feedback=reason)
        return Command(update={"messages": [message], AUDIT: [entry]})

    # ------------------------------------------------------------------ a new user message
    def supersede_pending(self, state: Any) -> dict[str, Any]:
        """Answer calls left pending when the user sent a new message instead of a decision.

        LangGraph drops a pending interrupt when the thread gets new input. The AI message's
        unanswered calls would then have no tool answer (providers reject such a history)
        and the review would vanish from the audit. So each such call gets a tool answer
        saying it was not executed, placed before the new message, and each critical one an
        audit entry (``decision="reject"``, ``decided_by="user"``). The new message is then
        answered as usual.
        """
        view = StateView.read(state)
        messages, ai_position, ai = view.messages, view.ai_position, view.ai
        if ai is None or ai_position is None:
            return {}
        later = messages[ai_position + 1 :]
        first_human = next(
            (
                i
                for i, m in enumerate(later)
                if isinstance(m, HumanMessage) and not is_injected(m) and not is_tool_added(m)
            ),  # a tool's human message is no new message of the user's
            None,
        )
        if first_human is None:
            return {}
        done = answered_after(messages, ai_position)
        open_calls = [(i, c) for i, c in enumerate(ai.tool_calls) if c.get("id") not in done]
        if not open_calls:
            return {}
        checks = view.checks
        answers: list[ToolMessage] = []
        closed = ReviewOutcome()
        for index, call in open_calls:
            call_id = call["id"] or ""  # a call without an id has no record
            record = checks.get(call_id)
            reviewed = (
                record
                if is_bound(record, ai, index, call, self.key) and not record.get("decision")
                else None
            )
            text = (
                f"Not executed: {SUPERSEDED}"
                if reviewed is not None
                else "No result: the run stopped before this call was answered, and the user "
                "sent a new message."
            )
            answers.append(
                ToolMessage(
                    content=text,
                    tool_call_id=call["id"],
                    name=call["name"],
                    status="error",
                    id=f"{SUPERSEDED_ID_PREFIX}{uuid.uuid4().hex}",  # requests.is_request reads it
                )
            )
            if reviewed is not None:
                closed.decide(reviewed, "reject", "user", feedback=SUPERSEDED)
        # Tool answers must follow their AI message, before the new turn. add_messages cannot
        # insert, so the list is rewritten in order (every message keeps its id).
        head = messages[: ai_position + 1] + later[:first_human]
        update: dict[str, Any] = {
            "messages": [
                RemoveMessage(id=REMOVE_ALL_MESSAGES),
                *head,
                *answers,
                *later[first_human:],
            ],
        }
        if closed.checks:
            update[CHECKS] = signed_by_id(closed.checks.values(), self.key)
        if closed.audit:
            update[AUDIT] = closed.audit
        return update
