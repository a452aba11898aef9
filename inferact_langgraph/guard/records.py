"""The guard's typed records: the critic's check, the audit entry, the feedback entry.

Each is a ``TypedDict`` kept in graph state (so it checkpoints as plain JSON-like data). A check
record is bound to one exact call (see :mod:`inferact_langgraph.guard.binding`); the audit entry and
the review request copy what a reviewer or an auditor needs from it: the user's task, the
action chain the critic judged, and the critic's numbers.

Example:
    >>> record = CheckRecord(tool_call_id="c1", tool="buy_now", args={}, score=0.2)
    >>> entry = audit_entry(record, decision="approve", decided_by="human")
    >>> entry["decision"], entry["tool_call_id"], entry["action_chain"]
    ('approve', 'c1', [])
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypeGuard, cast

from typing_extensions import TypedDict

from inferact_langgraph.guard.marks import RiskLevel
from inferact_langgraph.guard.payloads import ActionStep

__all__ = [
    "AuditEntry",
    "BoundaryBy",
    "BoundaryDecision",
    "CheckDecision",
    "CheckRecord",
    "DecidedBy",
    "FeedbackEntry",
    "MemoryContext",
    "audit_entry",
    "decided",
    "evidence",
]

DecidedBy = Literal["critic", "human", "policy", "guard", "user"]

BoundaryBy = Literal["rules", "model"]
"""Who drew where the task of a check begins: the deterministic rule alone, or a chat model
that judged a candidate boundary (:mod:`inferact_langgraph.guard.boundaries`)."""


class BoundaryDecision(TypedDict):
    """Whether a user message the rule takes for a new request begins one, as judged once."""

    continues: bool
    """True: it continues, revises or returns to an earlier request (merged into the request
    before it); False: it begins a new request (the rule's start is kept)."""
    decided_by: BoundaryBy
    """``"model"``: the judge's answer; ``"rules"``: no usable answer (a failure, a time-out,
    an answer in no known form), so the rule's start is kept."""
    reason: str
    """The judge's short reason, or why it gave no usable answer (a few hundred characters)."""


class CheckRecord(TypedDict, total=False):
    """The critic's record for one critical call, bound to that exact call."""

    tool_call_id: str
    ai_message_id: str | None
    """The AI message that proposed the call."""
    index: int
    """The call's position in that AI message."""
    tool: str
    args: dict[str, Any]
    args_sha256: str
    """SHA-256 of the arguments (:func:`~inferact_langgraph.guard.binding.args_digest`)."""
    risk: RiskLevel | None
    description: str | None
    critic: str | None
    threshold: float | None
    task: str | None
    """The user's task the critic verified against."""
    scope: str
    """Where that task came from: ``"request"`` (the user's current request), ``"thread"``
    (all their requests, in order) or ``"custom"`` (a ``task_extractor``)."""
    boundary_by: BoundaryBy
    """Whether a chat model judged where the current request begins (``"model"``), or the
    deterministic rule alone drew it (``"rules"``)."""
    action_chain: list[ActionStep]
    """The steps the critic judged (thoughts excluded), the pending call last."""
    score: float | None
    flagged: bool
    verdict: dict[str, Any] | None
    """The full ``Verdict`` as JSON, when the critic answered."""
    options: list[str]
    option_probs: dict[str, float]
    order_probs: dict[str, dict[str, float]] | None
    error: str | None
    """Why the critic could not judge the call (then ``flagged`` is True: fail closed)."""
    decision: CheckDecision
    """Set once decided (by a human, or by the ``on_critic_error`` policy)."""
    decided_by: DecidedBy
    """Who set ``decision`` (a human, the policy, the user by moving on)."""
    edited_action: dict[str, Any]
    checked_at: float
    thread: str | None
    """The thread the record was written in; it binds nothing in another thread."""
    spot_check: dict[str, Any]
    """For a call the critic passed, with ``spot_check=`` on: the draw that decided whether a
    human checks it anyway (:class:`~inferact_langgraph.labels.SpotCheckMark`)."""
    signature: str
    """HMAC-SHA256 of every other field, when records are signed
    (:func:`~inferact_langgraph.guard.binding.sign_record`)."""


class AuditEntry(TypedDict):
    """One decided critical call: who decided what, when, and on which evidence."""

    tool_call_id: str | None
    tool: str | None
    args: dict[str, Any] | None
    risk: RiskLevel | None
    critic: str | None
    score: float | None
    threshold: float | None
    inferred_tasks: list[str]
    justification: str
    error: str | None
    task: str | None
    """The user's task the call was judged against."""
    scope: NotRequired[str]
    """Where that task came from (``"request"``, ``"thread"`` or ``"custom"``)."""
    boundary_by: NotRequired[BoundaryBy]
    """Whether a chat model judged where the request of that task begins (``"model"``)."""
    action_chain: list[ActionStep]
    options: list[str]
    option_probs: dict[str, float]
    order_probs: NotRequired[dict[str, dict[str, float]]]
    uncalibrated_score: NotRequired[float]
    """The critic's raw score, when a calibration mapped it to ``score``."""
    decision: str
    """``approve`` / ``edit`` / ``reject`` / ``respond``."""
    decided_by: DecidedBy
    time: float
    feedback: NotRequired[str]
    edited: NotRequired[dict[str, Any]]
    spot_check: NotRequired[bool]
    """True when the critic passed the call and a human checked it anyway."""


class FeedbackEntry(TypedDict):
    """A human's feedback on a rejected call, kept in state and in the store."""

    tool: str
    args: dict[str, Any]
    tool_call_id: str
    feedback: str
    binary: bool
    """True when the human only said "wrong" (``False`` / a reject without a message)."""
    task: str
    trial: int


class MemoryContext(TypedDict):
    """Earlier feedback for the task in scope, as the actor's model call receives it."""

    task: str
    """The task it was loaded (or written, on a retry) for; a new task loads it again."""
    text: str | None
    """The memory the actor sees (``None``: no feedback for this task)."""
    owner: NotRequired[list[str] | None]
    """Whose memory it is: the user of the run that loaded it. A review's feedback is kept
    under this owner, whoever answers the review."""
    owner_signature: NotRequired[str | None]
    """With ``GuardOptions(signing_key=...)``: an HMAC of ``owner`` and the thread id, so an
    owner someone else wrote into the state (``update_state``) is not honoured."""


def is_unit(value: Any) -> TypeGuard[float]:
    """Whether ``value`` is a finite number in [0, 1] (a bool is not a number here)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def verdict_fields(verdict: Any) -> CheckRecord:
    """The record fields taken from a verdict; raises ``ValueError`` on an invalid score.

    The score and threshold must be finite numbers in [0, 1]: anything else (7.0, inf, NaN
    from a custom critic) is an error, so the call fails closed and is never approved.
    """
    score = getattr(verdict, "score", None)
    threshold = getattr(verdict, "threshold", None)
    if not is_unit(score):
        raise ValueError(f"the critic returned score {score!r}, not a number in [0, 1]")
    if not is_unit(threshold):
        raise ValueError(f"the critic returned threshold {threshold!r}, not a number in [0, 1]")
    dumped = verdict.model_dump(mode="json") if hasattr(verdict, "model_dump") else {}
    order_probs = getattr(verdict, "order_probs", None)
    return {
        "score": float(score),
        "threshold": float(threshold),
        "flagged": bool(score < threshold),  # recomputed: never trust a critic's own flag
        "verdict": dumped,
        "options": list(getattr(verdict, "options", None) or []),
        "option_probs": dict(getattr(verdict, "option_probs", None) or {}),
        "order_probs": dict(order_probs) if order_probs else None,
        "error": None,
    }


CheckDecision = Literal["approve", "reject", "respond"]
"""What was decided about a critical call (an edit is approved or reviewed again)."""


def decided(record: CheckRecord, decision: CheckDecision, decided_by: DecidedBy) -> CheckRecord:
    """A copy of ``record`` carrying ``decision`` and who made it (the original is unchanged)."""
    return {**record, "decision": decision, "decided_by": decided_by}


def evidence(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the critic judged and answered about a call, as reviews and audits show it.

    Example:
        >>> record = CheckRecord(tool_call_id="c1", score=0.2, threshold=0.5,
        ...                      verdict={"inferred_tasks": ["buy a red mug"]})
        >>> found = evidence(record)
        >>> found["inferred_tasks"], found["justification"], found["action_chain"]
        (['buy a red mug'], '', [])
    """
    verdict = record.get("verdict") or {}
    found: dict[str, Any] = {
        "tool_call_id": record.get("tool_call_id"),
        "risk": record.get("risk"),
        "critic": record.get("critic"),
        "score": record.get("score"),
        "threshold": record.get("threshold"),
        "inferred_tasks": list(verdict.get("inferred_tasks") or []),
        "justification": verdict.get("justification") or "",
        "error": record.get("error"),
        "task": record.get("task"),
        "action_chain": list(record.get("action_chain") or []),
        "options": list(record.get("options") or []),
        "option_probs": dict(record.get("option_probs") or {}),
    }
    if order_probs := record.get("order_probs"):
        found["order_probs"] = order_probs
    if verdict.get("uncalibrated_score") is not None:  # score is then the calibrated one
        found["uncalibrated_score"] = verdict["uncalibrated_score"]
    return found


def audit_entry(
    record: Mapping[str, Any],
    *,
    decision: str,
    decided_by: DecidedBy,
    feedback: str | None = None,
    edited: dict[str, Any] | None = None,
) -> AuditEntry:
    """The audit entry for a decision about the call of ``record``.

    ``feedback`` (the human's or the policy's words) and ``edited`` (an edit's new action) are
    kept when given.
    """
    entry = cast(
        AuditEntry,
        {
            **evidence(record),
            "tool": record.get("tool"),
            "args": record.get("args"),
            "decision": decision,
            "decided_by": decided_by,
            "time": time.time(),
        },
    )
    if scope := record.get("scope"):
        entry["scope"] = scope
    if boundary_by := record.get("boundary_by"):
        entry["boundary_by"] = boundary_by
    if (record.get("spot_check") or {}).get("selected"):
        entry["spot_check"] = True
    if feedback is not None:
        entry["feedback"] = feedback
    if edited is not None:
        entry["edited"] = edited
    return entry
