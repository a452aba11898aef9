"""Which task a critical call is judged against, and on which actions: the scope of a check.

In a chat, one thread holds many requests, and one request spans several messages: the ask,
then the ids, the choices among the options the agent offered, and the confirmation. By default
(``scope="request"``) the user's real task t* is the user's *current request*: every message of
theirs since the request began, one per line, so that "Yes, please go ahead" is judged together
with what it confirms. The action chain S is what the agent did since the request began.

A new request begins at a user message that follows a *finished* action: a call to a critical
tool that ran (its answer is not an error) since the user's previous message, after which the
agent did not ask the user anything (its last reply is not a question, other than a closing
"anything else I can help with?"), or the user wrote it instead of answering a pending review.
So "email the Q3 numbers to Dana", answered "Sent.", then
"now transfer 500 dollars to Bob" are two requests: the transfer is judged against itself, on
its own actions, and an e-mail sent again is judged against the transfer. While the agent is
still asking (which flight? shall I proceed?) the user's answers continue the request.

The rule is deterministic and free, but it cannot read meaning: "could you adjust the payment
method?" right after a booking ran looks like a new request to it. Its starts after the first
request are therefore only *candidates* (:func:`candidate_starts`): in the critic step, before
the calls are judged, the request-boundary judge
(:class:`~inferact_langgraph.guard.boundaries.BoundaryJudge`) asks the guard's chat model, once
per candidate user message, whether it begins a new request or continues, revises or returns
to an earlier one. It sees the user's messages, grouped by request, and the critical actions
that ran (name and arguments), never a tool's output or the agent's prose. Its decisions are
kept in state by message id (``inferact_boundaries``) and every reader of the state (later
checks, the review, the memory) applies them: a ``CONTINUES`` merges the candidate into the
request before it, and nothing else moves a start (the judge can merge, never split). A failed
judgement keeps the rule's start. ``request_boundaries="rules"`` turns the judge off.

``scope="thread"`` judges every call against all the user's requests, listed in order, on every
action of the thread. A ``task_extractor`` (``state -> str``) replaces the task text in either
scope.

A human message counts as a request of the user unless InferAct put it there (earlier
feedback, :func:`is_injected`) or a tool did. A tool's human message (a page or an image a tool
returns as a ``HumanMessage`` in its ``Command``, say: its text is the environment's, never the
user's) is known by its mark, which the enforcement points put on every human message in a
tool's ``Command`` (:func:`~inferact_langgraph.guard.provenance.is_tool_added`), and, as a second
line for threads written without it, by its position: right after tool results, or between an
AI message's tool calls and their answers.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> msgs = [
    ...     HumanMessage("e-mail the Q3 numbers to our CFO"),
    ...     AIMessage("", tool_calls=[{"name": "send_email", "args": {}, "id": "e1"}]),
    ...     ToolMessage("sent", tool_call_id="e1"),
    ...     AIMessage("Sent."),
    ...     HumanMessage("now transfer 500 dollars to Bob"),
    ...     AIMessage("", tool_calls=[{"name": "transfer", "args": {"to": "Bob"}, "id": "t1"}]),
    ... ]
    >>> state = {"messages": msgs}
    >>> locator = TaskLocator(critical_tools={"send_email", "transfer"})
    >>> locator.task(state)
    'now transfer 500 dollars to Bob'
    >>> [s.tool_name for s in locator.trajectory(state, "t1").steps]
    ['transfer']
    >>> chat = [
    ...     HumanMessage("book me the cheapest flight to Seattle on May 20"),
    ...     AIMessage("HAT136 at 7pm for $152 or HAT218 at 6pm for $158. Which one?"),
    ...     HumanMessage("HAT136"),
    ...     AIMessage("Booking HAT136 with your card 7447. Shall I proceed?"),
    ...     HumanMessage("yes"),
    ... ]
    >>> print(locator.task({"messages": chat}))
    book me the cheapest flight to Seattle on May 20
    HAT136
    yes
    >>> print(TaskLocator(scope="thread", critical_tools={"send_email"}).task(state))
    The user's requests in this conversation, in order:
    1. e-mail the Q3 numbers to our CFO
    2. now transfer 500 dollars to Bob
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from inferact_langgraph.guard.memory import is_injected
from inferact_langgraph.guard.options import Scope
from inferact_langgraph.guard.provenance import is_tool_added
from inferact_langgraph.guard.records import BoundaryBy, BoundaryDecision
from inferact_langgraph.guard.state import boundaries_of, messages_of, raw_state
from inferact_langgraph.trajectory import THOUGHT_TOOLS, Trajectory, TrajectoryError, _text_of

__all__ = ["Scope", "TaskLocator"]

# Tool answers written when the user sent a new message instead of answering a review
# (review.ReviewProtocol.supersede_pending): a human message after them is the user's.
# They are told apart by this id prefix, never by their text: a tool's output can say anything.
SUPERSEDED_ID_PREFIX = "inferact-superseded-"


def _superseded(message: ToolMessage) -> bool:
    return str(message.id or "").startswith(SUPERSEDED_ID_PREFIX)


def _inside_tool_calls(messages: Sequence[BaseMessage]) -> list[bool]:
    """For each position: whether it lies between a tool call and that call's answer.

    A message there was written by a tool (a ``Command`` whose messages put a
    ``HumanMessage`` before its ``ToolMessage``, or a sub-agent's whole transcript): the user
    cannot write while a call they did not skip is still running. Each answer closes the
    latest open call with its id (providers reuse ids across messages); the answers InferAct
    writes for a skipped review close a call without making it a tool's span.
    """
    open_calls: dict[str, int] = {}
    depth = [0] * (len(messages) + 1)
    for position, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                open_calls[str(call.get("id"))] = position
        elif isinstance(message, ToolMessage):
            called_at = open_calls.pop(str(message.tool_call_id), None)
            if called_at is not None and not _superseded(message):
                depth[called_at + 1] += 1
                depth[position] -= 1
    inside, running = [], 0
    for position in range(len(messages)):
        running += depth[position]
        inside.append(running > 0)
    return inside


def _request_flags(messages: Sequence[BaseMessage]) -> list[bool]:
    inside = _inside_tool_calls(messages)
    flags: list[bool] = []
    previous: BaseMessage | None = None  # the closest earlier message that is not human
    for position, message in enumerate(messages):
        if not isinstance(message, HumanMessage):
            previous = message
            flags.append(False)
            continue
        flags.append(
            not is_injected(message)
            and not is_tool_added(message)
            and not inside[position]
            and (not isinstance(previous, ToolMessage) or _superseded(previous))
        )
    return flags


def is_request(messages: Sequence[BaseMessage], position: int) -> bool:
    """Whether ``messages[position]`` is a request the user wrote.

    A human message that InferAct injected is not; nor is one a tool added: one marked as a
    tool's (``additional_kwargs["inferact_origin"] == "tool"``, written where tool results
    pass), a human message whose closest earlier non-human message is a tool result (other
    than the answers written when the user skipped a review), or one between a tool call and
    that call's answer. A user who forges the mark on their own message only hides it: the
    task falls back to their earlier request, or the check fails closed.
    """
    return _request_flags(messages)[position]


def request_positions(messages: Sequence[BaseMessage]) -> list[int]:
    """The positions of the user's requests, oldest first (empty text skipped)."""
    return [
        i
        for i, flag in enumerate(_request_flags(messages))
        if flag and _text_of(messages[i].content).strip()
    ]


# The closing offers that end an agent's reply without asking the user anything about the
# request ("Is there anything else I can help you with?"): a message after one starts anew.
_CLOSING_OFFER = re.compile(
    r"\b(anything else|something else|any other (questions?|requests?|help)|"
    r"further (assistance|help|questions?)|else (can|may|could) i|help you with today)\b",
    re.IGNORECASE,
)


def _asks_the_user(message: AIMessage) -> bool:
    """Whether the agent's reply waits for the user's answer (a question, not a closing offer)."""
    text = _text_of(message.content).strip().rstrip("\"')*_ ")
    if not text.endswith("?"):
        return False
    questions = [q for q in re.split(r"(?<=[.!?])\s+", text) if q.rstrip().endswith("?")]
    # "Shall I book it, or is there anything else I can help with?" still asks about the booking.
    parts = [part for q in questions for part in re.split(r",?\s+or\s+", q)]
    return not all(_CLOSING_OFFER.search(part) for part in parts)


def _finished_an_action(messages: Sequence[BaseMessage], critical_tools: Container[str]) -> bool:
    """Whether a critical call among ``messages`` ran (answered, and not with an error)."""
    critical_calls = {
        str(call.get("id"))
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call.get("name") in critical_tools
    }
    return any(
        isinstance(message, ToolMessage)
        and str(message.tool_call_id) in critical_calls
        and message.status != "error"
        and not _superseded(message)
        for message in messages
    )


def candidate_starts(
    messages: Sequence[BaseMessage], critical_tools: Container[str] = frozenset()
) -> list[int]:
    """The positions where the deterministic rule begins a new request, after the first one.

    Only these can be questioned by the request-boundary judge
    (:mod:`~inferact_langgraph.guard.boundaries`): a message continues the request before it
    when a critical call ran since the user's previous message and the agent's last reply
    before it asks nothing, or when the user wrote it instead of deciding a pending review
    (the skipped calls were closed with InferAct's "superseded" answers).
    """
    positions = request_positions(messages)
    starts: list[int] = []
    for previous, position in itertools.pairwise(positions):
        between = messages[previous + 1 : position]
        replies = [m for m in between if isinstance(m, AIMessage) and not m.tool_calls]
        asked = bool(replies) and _asks_the_user(replies[-1])
        skipped = any(isinstance(m, ToolMessage) and _superseded(m) for m in between)
        if skipped or (_finished_an_action(between, critical_tools) and not asked):
            starts.append(position)
    return starts


def continues(message: BaseMessage, boundaries: Mapping[str, BoundaryDecision]) -> bool:
    """Whether a judged decision merges ``message`` into the request before it."""
    decision = boundaries.get(message.id) if message.id else None
    return bool(decision and decision.get("continues"))


def request_start_positions(
    messages: Sequence[BaseMessage],
    critical_tools: Container[str] = frozenset(),
    boundaries: Mapping[str, BoundaryDecision] | None = None,
) -> list[int]:
    """The positions of the user's messages that begin a request, oldest first.

    Every other request position continues the request before it (an answer to the agent's
    question, a choice, a confirmation). The first request always begins one; after it, the
    rule's :func:`candidate_starts` do, except those a judged decision in ``boundaries``
    (by message id) says continue an earlier request: a decision can only merge, never split.
    """
    positions = request_positions(messages)
    candidates = candidate_starts(messages, critical_tools)
    if boundaries:
        candidates = [p for p in candidates if not continues(messages[p], boundaries)]
    return positions[:1] + candidates


@dataclass(frozen=True, kw_only=True)
class TaskLocator:
    """Finds the user's task t* and the window of messages the action chain S is read from.

    Args:
        scope: ``"request"`` (default) or ``"thread"``.
        task_extractor: ``state -> str``, the task text instead of the user's request(s).
        critical_tools: The names of the critical tools: a call to one that ran ends a request
            (the guard passes its live registry, so tools it learns later count too).
        thought_tools: Tools whose calls are thoughts, left out of S.

    Raises:
        ValueError: An unknown scope, or an extractor that is not callable.
    """

    scope: Scope = "request"
    task_extractor: Callable[[Mapping[str, Any]], str] | None = None
    critical_tools: Container[str] = frozenset()
    thought_tools: Collection[str] = THOUGHT_TOOLS

    def __post_init__(self) -> None:
        if self.scope not in get_args(Scope):
            raise ValueError(f"scope must be 'request' or 'thread', got {self.scope!r}")
        if self.task_extractor is not None and not callable(self.task_extractor):
            raise ValueError("task_extractor must be a function of the state returning a string")

    @property
    def label(self) -> str:
        """What the task is: ``"request"``, ``"thread"`` or ``"custom"`` (an extractor's)."""
        return "custom" if self.task_extractor is not None else self.scope

    def requests(self, state: Any) -> list[str]:
        """The texts of the user's requests in the thread, oldest first, one per request.

        A request's text is its messages, one per line.
        """
        messages = messages_of(state)
        positions = request_positions(messages)
        starts = set(request_start_positions(messages, self.critical_tools, boundaries_of(state)))
        grouped: list[list[str]] = []
        for position in positions:
            if position in starts or not grouped:
                grouped.append([])
            grouped[-1].append(_text_of(messages[position].content))
        return ["\n".join(texts) for texts in grouped]

    def start(
        self,
        messages: Sequence[BaseMessage],
        boundaries: Mapping[str, BoundaryDecision] | None = None,
    ) -> int:
        """Where the window starts: the current request's first message (thread: the first).

        ``boundaries`` are the judged decisions by message id (the state's, see
        :func:`request_start_positions`).
        """
        starts = request_start_positions(messages, self.critical_tools, boundaries)
        if not starts:
            return 0
        return starts[0] if self.scope == "thread" else starts[-1]

    def window(self, state: Any) -> list[BaseMessage]:
        """The messages S is read from: from the request in scope to the newest message."""
        messages = messages_of(state)
        return list(messages[self.start(messages, boundaries_of(state)) :])

    def boundary_by(self, state: Any) -> BoundaryBy:
        """``"model"`` when a judged decision drew where the current request begins.

        The candidates are walked from the newest back to the one that begins the request;
        ``"rules"`` when none of them was decided by a model (or the scope is the thread).
        """
        if self.scope != "request":
            return "rules"
        messages = messages_of(state)
        boundaries = boundaries_of(state)
        by: BoundaryBy = "rules"
        for position in reversed(candidate_starts(messages, self.critical_tools)):
            message = messages[position]
            decision = boundaries.get(message.id) if message.id else None
            if decision is None:
                break
            if decision.get("decided_by") == "model":
                by = "model"
            if not decision.get("continues"):
                break
        return by

    def task(self, state: Any) -> str:
        """The user's real task t*.

        Raises:
            TrajectoryError: No request in the thread, or an extractor's answer is empty.
        """
        if self.task_extractor is not None:
            text = self.task_extractor(raw_state(state))
            if not isinstance(text, str) or not text.strip():
                raise TrajectoryError("task_extractor must return a non-empty string")
            return text
        requests = self.requests(state)
        if not requests:
            raise TrajectoryError(
                "cannot find the user's task: no human message in state['messages']; "
                "pass task_extractor= to with_inferact / InferActMiddleware"
            )
        if self.scope == "request" or len(requests) == 1:
            return requests[-1]
        listed = "\n".join(f"{i}. {text}" for i, text in enumerate(requests, start=1))
        return f"The user's requests in this conversation, in order:\n{listed}"

    def trajectory(self, state: Any, call_id: str | None, task: str | None = None) -> Trajectory:
        """The trajectory the critic judges for the call ``call_id``: t* and S, no thoughts.

        Raises:
            TrajectoryError: No task, or the call is not in the window.
        """
        return Trajectory.from_messages(
            self.window(state),
            task=self.task(state) if task is None else task,
            pending_tool_call_id=call_id,
            # A critical tool is an action whatever its name: it never leaves S as a thought.
            thought_tools=[t for t in self.thought_tools if t not in self.critical_tools],
        )
