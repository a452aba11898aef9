"""The state the guard adds to a graph, declared once, and the view of a state one step reads.

Both entry points keep the same keys with the same reducers: ``with_inferact`` adds
:class:`GuardState` to the graph's own schema, ``InferActMiddleware`` uses
:class:`InferActState` (LangChain's ``AgentState`` plus :class:`GuardState`). Every key is
left out of the agent's input schema (``OmitFromInput``), and every key name is a constant
here: no other module spells one.

A step reads the state once into a :class:`StateView` (the messages, the last AI message and
its unanswered calls, the check records) and hands the view on, instead of each helper reading
the state again.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> view = StateView.read({"messages": [
    ...     HumanMessage("buy a mug"),
    ...     AIMessage("", id="a1", tool_calls=[
    ...         {"name": "search", "args": {}, "id": "s1"},
    ...         {"name": "buy", "args": {"asin": "B1"}, "id": "b1"}]),
    ...     ToolMessage("found", tool_call_id="s1")]})
    >>> view.ai.id, [call["id"] for _, call in view.pending], view.checks
    ('a1', ['b1'], {})
    >>> merge_checks({"c1": {"tool": "a"}}, {"c2": {"tool": "b"}})
    {'c1': {'tool': 'a'}, 'c2': {'tool': 'b'}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import AgentState, OmitFromInput
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from typing_extensions import TypedDict

from inferact_langgraph.guard.records import (
    AuditEntry,
    BoundaryDecision,
    CheckRecord,
    FeedbackEntry,
    MemoryContext,
)

__all__ = [
    "AUDIT",
    "BOUNDARIES",
    "CHECKS",
    "FEEDBACK",
    "KEYS",
    "MEMORY",
    "ROUTE",
    "TRIAL",
    "GuardState",
    "InferActState",
    "StateView",
    "append",
    "latest",
    "merge_checks",
]

CHECKS = "inferact_checks"
"""The critic's record per checked tool call id, bound to that exact call."""
AUDIT = "inferact_audit"
"""One entry per decided critical call."""
FEEDBACK = "inferact_feedback"
"""Human feedback on rejected calls, in order."""
TRIAL = "inferact_trial"
"""The current trial (0-based), incremented by ``on_reject="retry"``."""
MEMORY = "inferact_memory"
"""Earlier feedback for the task in scope, for the actor's model call."""
ROUTE = "inferact_route"
"""Where ``with_inferact``'s gate sends the run next."""
BOUNDARIES = "inferact_boundaries"
"""The request-boundary judge's decision per human message id (does it begin a request?)."""
KEYS = (CHECKS, AUDIT, FEEDBACK, TRIAL, MEMORY, ROUTE, BOUNDARIES)
"""Every key the guard may write."""


def merge_checks(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Reducer for the check records and the boundary decisions: updates merge by key.

    Keyed by tool call id and by message id, they stay safe under fan-out.
    """
    merged = dict(left or {})
    merged.update(right or {})
    return merged


def append(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer for the audit and the feedback: new entries go after the old ones."""
    return [*(left or []), *(right or [])]


def latest(left: Any, right: Any) -> Any:
    """Reducer for the memory and the route: the latest write wins.

    A tool's or a caller's ``Command(goto=...)`` can make two of the guard's nodes run in the
    same step; a plain key would then fail the run. Losing a route is safe: the tool node
    still refuses every call without a bound approval.
    """
    return right


class GuardState(TypedDict):
    """The keys the guard adds to a graph's state (all optional, none in its input)."""

    inferact_checks: NotRequired[Annotated[dict[str, CheckRecord], OmitFromInput, merge_checks]]
    """The critic's record per checked tool call id, bound to that exact call."""
    inferact_audit: NotRequired[Annotated[list[AuditEntry], OmitFromInput, append]]
    """One entry per decided critical call: who decided what, when, and why."""
    inferact_feedback: NotRequired[Annotated[list[FeedbackEntry], OmitFromInput, append]]
    """Human feedback on rejected calls, in order."""
    inferact_trial: NotRequired[Annotated[int, OmitFromInput]]
    """The current trial (0-based); incremented by ``on_reject="retry"``."""
    inferact_memory: NotRequired[Annotated[MemoryContext | None, OmitFromInput, latest]]
    """Earlier feedback for the task in scope, for the actor's model call (never a message)."""
    inferact_route: NotRequired[Annotated[str | None, OmitFromInput, latest]]
    """Where the gate sends the run next: ``None``, ``"review"``, ``"retry"`` or ``"end"``."""
    inferact_boundaries: NotRequired[
        Annotated[dict[str, BoundaryDecision], OmitFromInput, merge_checks]
    ]
    """The request-boundary judge's decision per human message id, written by the check that
    asked (:mod:`inferact_langgraph.guard.boundaries`): asked once per message, then read."""


class InferActState(AgentState, GuardState):
    """``create_agent``'s state with the guard's keys: ``InferActMiddleware``'s schema."""


# ---------------------------------------------------------------------------- reading a state
def messages_of(state: Any) -> list[AnyMessage]:
    """The state's messages (a view, a dict state, an object state, or a message list)."""
    if isinstance(state, StateView):
        return state.messages
    if isinstance(state, list):
        return state
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if messages is None:
        messages = getattr(state, "messages", None)
    return list(messages or [])


def boundaries_of(state: Any) -> Mapping[str, BoundaryDecision]:
    """The request-boundary decisions of a view, a dict state or an object state."""
    if isinstance(state, StateView):
        return state.boundaries
    if isinstance(state, list):  # a bare message list carries no decisions
        return {}
    return value_of(state, BOUNDARIES) or {}


def raw_state(state: Any) -> Any:
    """The state itself, also when given its view (what a user's ``task_extractor`` reads)."""
    return state.state if isinstance(state, StateView) else state


def value_of(state: Any, key: str) -> Any:
    """The value of one of the guard's keys in a view, a dict state or an object state."""
    state = raw_state(state)
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


def answered_after(messages: Sequence[AnyMessage], position: int) -> set[str]:
    """Ids answered by a tool message that comes after ``messages[position]``."""
    return {m.tool_call_id for m in messages[position + 1 :] if isinstance(m, ToolMessage)}


def last_ai_position(messages: Sequence[AnyMessage]) -> int | None:
    """Index of the last AI message, or ``None``."""
    for position in range(len(messages) - 1, -1, -1):
        if isinstance(messages[position], AIMessage):
            return position
    return None


def last_ai_message(state: Any) -> AIMessage | None:
    """The last AI message of the state's messages."""
    if isinstance(state, StateView):
        return state.ai
    messages = messages_of(state)
    position = last_ai_position(messages)
    ai = None if position is None else messages[position]
    return ai if isinstance(ai, AIMessage) else None


@dataclass(frozen=True, slots=True)
class StateView:
    """One reading of a graph state: what the guard's steps look at, computed once.

    Attributes:
        state: The state as the graph gave it (what a ``task_extractor`` receives).
        messages: Its messages.
        ai_position: The position of the last AI message in ``messages``, or ``None``.
        ai: That AI message, or ``None``.
        pending: Its calls that no later tool message answers, with their positions.
        checks: The check records by tool call id.
        boundaries: The request-boundary decisions by human message id.
    """

    state: Any
    messages: list[AnyMessage]
    ai_position: int | None
    ai: AIMessage | None
    pending: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    checks: Mapping[str, CheckRecord] = field(default_factory=dict)
    boundaries: Mapping[str, BoundaryDecision] = field(default_factory=dict)

    @classmethod
    def read(cls, state: Any) -> StateView:
        """The view of ``state`` (a view is returned as it is)."""
        if isinstance(state, StateView):
            return state
        return cls.of(state, messages_of(state))

    @classmethod
    def of(cls, state: Any, messages: list[AnyMessage]) -> StateView:
        """The view of ``state`` with these messages (e.g. with an edited AI message)."""
        position = last_ai_position(messages)
        checks = value_of(state, CHECKS) or {}
        boundaries = value_of(state, BOUNDARIES) or {}
        if position is None:
            return cls(state, messages, None, None, [], checks, boundaries)
        ai = messages[position]
        assert isinstance(ai, AIMessage)  # last_ai_position finds AI messages only
        done = answered_after(messages, position)
        pending = [(i, dict(c)) for i, c in enumerate(ai.tool_calls) if c.get("id") not in done]
        return cls(state, messages, position, ai, pending, checks, boundaries)

    def with_messages(self, messages: list[AnyMessage]) -> StateView:
        """This view with other messages (the state's other keys as they are)."""
        state = self.state
        if isinstance(state, Mapping):
            state = {**state, "messages": messages}
        view = StateView.of(state, messages)
        return replace(view, boundaries=self.boundaries) if self.boundaries else view

    def with_boundaries(self, decisions: Mapping[str, BoundaryDecision]) -> StateView:
        """This view with ``decisions`` added to its boundary decisions (the state unchanged)."""
        if not decisions:
            return self
        return replace(self, boundaries={**self.boundaries, **decisions})

    def get(self, key: str, default: Any = None) -> Any:
        """The value of a key of the state (``default`` when it is not there)."""
        value = value_of(self, key)
        return default if value is None else value

    @property
    def trial(self) -> int:
        """The current trial (0 when no retry happened)."""
        return int(self.get(TRIAL) or 0)
