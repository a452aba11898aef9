"""The human review: the interrupt payload and the resume decisions.

The payload is a superset of LangChain's ``HumanInTheLoopMiddleware`` request, so approval UIs
that render ``action_requests`` / ``review_configs`` (Agent Chat UI, Agent Inbox) work as is;
each action request carries an extra ``inferact`` section with the critic's verdict.

Resume with one decision per action request, by position, or a shorthand:

* ``{"decisions": [{"type": "approve"}, {"type": "reject", "message": "wrong size"}]}``
* ``True`` approves all, ``False`` rejects all (binary feedback), a string rejects all with that
  string as natural-language feedback.

Example:
    >>> parse_resume({"decisions": [{"type": "reject", "message": "wrong size"}]}, count=1)
    [Decision(type='reject', message='wrong size', edited_action=None)]
    >>> parse_resume(True, count=2)[1].type
    'approve'
    >>> parse_resume({"decisions": []}, count=1)
    Traceback (most recent call last):
    ...
    inferact_langgraph.errors.ResumeError: expected 1 decision(s), got 0
    Expected: ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from typing_extensions import NotRequired

from inferact_langgraph.errors import ResumeError

__all__ = [
    "ActionRequest",
    "Decision",
    "DecisionType",
    "InferActReviewInfo",
    "ReviewConfig",
    "ReviewRequest",
    "parse_resume",
]

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[str, ...] = ("approve", "edit", "reject", "respond")

EXPECTED_SHAPE = (
    '{"decisions": [<one per action request, in order>]} where each decision is '
    '{"type": "approve"} | {"type": "edit", "edited_action": {"name": str, "args": dict}} | '
    '{"type": "reject", "message": str (optional feedback)} | '
    '{"type": "respond", "message": str}; or the shorthands True (approve all), '
    "False (reject all) or a string (reject all with that feedback)"
)


class InferActReviewInfo(TypedDict):
    """The critic's side of a review request (the ``inferact`` section of an action)."""

    tool_call_id: str
    score: float | None
    """p(t*): the probability that the agent is on track for the user's real task."""
    threshold: float
    inferred_tasks: list[str]
    justification: str
    risk: str | None
    critic: str
    error: str | None
    """Why the critic could not judge the call, when it failed (fail closed)."""


class ActionRequest(TypedDict):
    """One tool call awaiting a decision (HumanInTheLoopMiddleware's shape plus ``inferact``)."""

    name: str
    args: dict[str, Any]
    description: str
    inferact: InferActReviewInfo


class ReviewConfig(TypedDict):
    """What the human may decide for one tool (HumanInTheLoopMiddleware's shape)."""

    action_name: str
    allowed_decisions: list[str]


class ReviewRequest(TypedDict):
    """The interrupt value."""

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]
    source: NotRequired[str]


@dataclass(frozen=True)
class Decision:
    """A validated human decision for one action request."""

    type: DecisionType
    message: str | None = None
    edited_action: dict[str, Any] | None = None


def _parse_one(raw: Any, index: int, allowed: Sequence[str]) -> Decision:
    where = f"decisions[{index}]"
    if not isinstance(raw, Mapping):
        raise ResumeError(f"{where} must be an object", expected=EXPECTED_SHAPE, received=raw)
    kind = raw.get("type")
    if kind not in DECISION_TYPES:
        raise ResumeError(
            f"{where} has unknown type {kind!r}; valid types are {list(DECISION_TYPES)}",
            expected=EXPECTED_SHAPE,
            received=raw,
        )
    if kind not in allowed:
        raise ResumeError(
            f"{where}: {kind!r} is not allowed here; allowed decisions are {list(allowed)}",
            expected=EXPECTED_SHAPE,
            received=raw,
        )
    message = raw.get("message")
    if message is not None and not isinstance(message, str):
        raise ResumeError(
            f"{where}.message must be a string", expected=EXPECTED_SHAPE, received=raw
        )
    if kind == "respond" and not message:
        raise ResumeError(
            f"{where}: a 'respond' decision needs a non-empty message",
            expected=EXPECTED_SHAPE,
            received=raw,
        )
    edited = raw.get("edited_action")
    if kind == "edit":
        if (
            not isinstance(edited, Mapping)
            or not isinstance(edited.get("name"), str)
            or not isinstance(edited.get("args"), Mapping)
        ):
            raise ResumeError(
                f"{where}: an 'edit' needs edited_action with a string 'name' and a dict 'args'",
                expected=EXPECTED_SHAPE,
                received=raw,
            )
        edited = {"name": edited["name"], "args": dict(edited["args"])}
    else:
        edited = None
    return Decision(type=kind, message=message or None, edited_action=edited)


def parse_resume(
    value: Any, *, count: int, allowed: Sequence[str] = DECISION_TYPES
) -> list[Decision]:
    """Validate a resume value against a request with ``count`` action requests.

    Args:
        value: What the caller passed to ``Command(resume=...)``.
        count: How many action requests the interrupt holds.
        allowed: The decision types that may be used.

    Raises:
        ResumeError: The value is not a valid answer; the message shows the expected shape.
    """
    if value is True:
        value = {"decisions": [{"type": "approve"}] * count}
    elif value is False:
        value = {"decisions": [{"type": "reject"}] * count}
    elif isinstance(value, str):
        if not value.strip():
            raise ResumeError(
                "an empty string is not feedback", expected=EXPECTED_SHAPE, received=value
            )
        value = {"decisions": [{"type": "reject", "message": value}] * count}
    elif isinstance(value, Mapping) and "type" in value and "decisions" not in value:
        if count != 1:
            raise ResumeError(
                f"a single decision was given but {count} actions await review",
                expected=EXPECTED_SHAPE,
                received=value,
            )
        value = {"decisions": [value]}
    if not isinstance(value, Mapping) or "decisions" not in value:
        raise ResumeError("unrecognised resume value", expected=EXPECTED_SHAPE, received=value)
    decisions = value["decisions"]
    if not isinstance(decisions, list):
        raise ResumeError("'decisions' must be a list", expected=EXPECTED_SHAPE, received=value)
    if len(decisions) != count:
        raise ResumeError(
            f"expected {count} decision(s), got {len(decisions)}",
            expected=EXPECTED_SHAPE,
            received=value,
        )
    return [_parse_one(raw, i, allowed) for i, raw in enumerate(decisions)]
