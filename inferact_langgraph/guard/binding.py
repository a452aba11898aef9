"""Binding a verdict to one exact tool call, and the check every critical tool runs first.

A tool call id alone names nothing reliably: several OpenAI-compatible servers number ids per
message (``call_0`` in every message), some models repeat an id inside one message, and a
caller or a tool can put any AI message in the state. So a verdict or a human decision is bound
to the *proposing AI message id*, the call's *position* in it, the *tool name* and a *hash of the
arguments*, and :func:`authorize` lets a critical tool run only when the state holds such a
record for exactly that call. Calls with missing or colliding ids are renamed first
(:func:`with_unique_call_ids`), before anything is checked.

Example:
    >>> from langchain_core.messages import AIMessage, ToolMessage
    >>> first = AIMessage("", id="a1", tool_calls=[{"name": "search", "args": {}, "id": "call_0"}])
    >>> later = AIMessage("", id="a2", tool_calls=[
    ...     {"name": "buy", "args": {"asin": "B1"}, "id": "call_0"},
    ...     {"name": "buy", "args": {"asin": "B2"}, "id": "call_0"}])
    >>> history = [first, ToolMessage("ok", tool_call_id="call_0")]
    >>> [c["id"] for c in with_unique_call_ids(later, history).tool_calls]
    ['call_0-inferact-0', 'call_0-inferact-1']
    >>> args_digest({"b": 1, "a": 2}) == args_digest({"a": 2, "b": 1})
    True
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from inferact_langgraph.guard.records import CheckRecord, is_unit
from inferact_langgraph.guard.state import CHECKS, answered_after, messages_of, value_of

__all__ = [
    "args_digest",
    "authorize",
    "calls_needing_ids",
    "current_thread",
    "find_proposal",
    "is_approved",
    "is_bound",
    "sign_record",
    "signed_by_id",
    "with_unique_call_ids",
]

_UNSIGNED_FIELDS = frozenset({"signature"})
"""With a key, every other field of a record is signed: what decides (binding, score,
threshold, risk, error, decision, who decided, thread) and what a reviewer or an auditor is
shown (arguments, action chain, task, inferred tasks, description)."""

ID_SUFFIX = "-inferact-"


def args_digest(args: Mapping[str, Any] | None) -> str:
    """A stable SHA-256 of a call's arguments (key order does not matter)."""
    text = json.dumps(dict(args or {}), sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def calls_needing_ids(ai: AIMessage, earlier: Sequence[AnyMessage]) -> list[int]:
    """Positions of calls whose id is missing, repeated in ``ai`` or used earlier in the thread."""
    used: set[str] = set()
    for message in earlier:
        if isinstance(message, AIMessage):
            used.update(call_id for c in message.tool_calls if (call_id := c.get("id")))
        elif isinstance(message, ToolMessage):
            used.add(message.tool_call_id)
    bad, seen = [], set()
    for index, call in enumerate(ai.tool_calls):
        call_id = call.get("id")
        if not call_id or call_id in used or call_id in seen:
            bad.append(index)
        seen.add(call_id)
    return bad


def with_unique_call_ids(ai: AIMessage, earlier: Sequence[AnyMessage]) -> AIMessage:
    """``ai`` with every missing or colliding tool call id replaced by a unique one.

    The same message id is kept, so ``add_messages`` replaces the message in place. The new ids
    are deterministic (the old id plus the call's position), so a re-run renames identically.
    Returns ``ai`` itself when every id is already unique.
    """
    bad = calls_needing_ids(ai, earlier)
    if not bad:
        return ai
    taken = {c.get("id") for c in ai.tool_calls}
    for message in earlier:
        if isinstance(message, AIMessage):
            taken.update(c.get("id") for c in message.tool_calls)
        elif isinstance(message, ToolMessage):
            taken.add(message.tool_call_id)
    calls = [dict(c) for c in ai.tool_calls]
    for index in bad:
        base = f"{calls[index].get('id') or 'call'}{ID_SUFFIX}{index}"
        new_id, n = base, 0
        while new_id in taken:
            n += 1
            new_id = f"{base}-{n}"
        taken.add(new_id)
        calls[index]["id"] = new_id
    return ai.model_copy(update={"tool_calls": calls})


def current_thread() -> str | None:
    """The current run's ``thread_id`` (``None`` outside a run, or without one)."""
    try:
        from langgraph.config import get_config

        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:
        return None
    return None if thread is None else str(thread)


def _signature(record: Mapping[str, Any], key: bytes) -> str:
    signed = {k: v for k, v in record.items() if k not in _UNSIGNED_FIELDS}
    text = json.dumps(signed, default=repr, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def sign_record(record: CheckRecord, key: bytes | None) -> CheckRecord:
    """``record`` bound to this run's thread, with an HMAC-SHA256 ``signature`` (if ``key``).

    With a key (``GuardOptions(signing_key=...)``), a record someone else wrote or rewrote in
    the state (a tool's or a caller's ``Command(update=...)``, ``update_state``, a ``Send``
    with an inlined state, a record copied from another thread) cannot approve a call: every
    field but the signature is signed, the thread included.
    """
    signed: CheckRecord = {**record, "thread": current_thread()}
    if key is None:
        return signed
    signed["signature"] = _signature(signed, key)
    return signed


def signed_by_id(records: Iterable[CheckRecord], key: bytes | None) -> dict[str, CheckRecord]:
    """The state update of the check records: each signed (with a key), by tool call id."""
    return {r["tool_call_id"]: sign_record(r, key) for r in records}


def is_bound(
    record: Any,
    ai: AIMessage | None,
    index: int,
    call: Mapping[str, Any],
    key: bytes | None = None,
) -> TypeGuard[CheckRecord]:
    """Whether ``record`` was written for exactly this call: message, position, name, args.

    The arguments the record shows must be the ones it binds, and a record written in
    another thread binds nothing. With a signing ``key``, the record must also carry a valid
    signature over all its fields. Without an AI message nothing is bound.
    """
    if ai is None or not isinstance(record, Mapping):
        return False
    if key is not None and not hmac.compare_digest(
        str(record.get("signature") or ""), _signature(record, key)
    ):
        return False
    digest = args_digest(call.get("args"))
    return (
        record.get("ai_message_id") == ai.id
        and ai.id is not None
        and record.get("index") == index
        and record.get("tool") == call.get("name")
        and record.get("args_sha256") == digest
        # the arguments a reviewer is shown are the ones that run
        and ("args" not in record or args_digest(record.get("args")) == digest)
        # a record written in another thread binds nothing here
        and ("thread" not in record or record.get("thread") == current_thread())
    )


def is_approved(record: Mapping[str, Any] | None) -> bool:
    """A human's (or the policy's) approval, or a clean verdict with a valid score.

    A critic's approval counts only when its score and threshold are finite numbers in [0, 1]
    and the score is at or above the threshold: an out-of-range score is never an approval.
    """
    if not isinstance(record, Mapping):
        return False
    if record.get("decision") == "approve":
        return True
    if record.get("decision") is not None or record.get("error"):
        return False
    if (record.get("spot_check") or {}).get("selected"):  # a spot check waits for its human
        return False
    score, threshold = record.get("score"), record.get("threshold")
    return is_unit(score) and is_unit(threshold) and score >= threshold


def find_proposal(
    messages: Sequence[AnyMessage], call_id: str | None
) -> tuple[int, AIMessage, int] | str:
    """The one (message position, AI message, call position) that proposed ``call_id``.

    Returns a reason string when there is none or more than one (an ambiguous id).
    """
    if not call_id:
        return "the call has no id"
    found = [
        (position, message, index)
        for position, message in enumerate(messages)
        if isinstance(message, AIMessage)
        for index, call in enumerate(message.tool_calls)
        if call.get("id") == call_id
    ]
    if not found:
        return f"no AI message in the state proposed a call with id {call_id!r}"
    if len(found) > 1:
        return f"the id {call_id!r} names {len(found)} calls in this thread (ambiguous)"
    return found[0]


def authorize(
    state: Any,
    call: Mapping[str, Any],
    checks: Mapping[str, Any] | None = None,
    key: bytes | None = None,
) -> tuple[Mapping[str, Any] | None, str | None]:
    """The record that lets this critical call run now, or the reason it may not.

    The call must have been proposed by exactly one AI message of the state, must not be
    answered already, must be that message's call (same name and arguments), and the record
    for that message and position must bind the same name and arguments and approve it.

    Args:
        state: The graph state as the tool node reads it from its channels.
        call: The tool call about to run.
        checks: The records (default: the state's).
        key: The signing key, when records are signed.

    Returns:
        ``(record, None)`` when the call may run, else ``(None, reason)``.
    """
    messages = messages_of(state)
    found = find_proposal(messages, call.get("id"))
    if isinstance(found, str):
        return None, found
    position, ai, index = found
    if call.get("id") in answered_after(messages, position):
        return None, "the call was answered already (a tool runs at most once per call)"
    proposed = ai.tool_calls[index]
    if proposed.get("name") != call.get("name") or args_digest(proposed.get("args")) != (
        args_digest(call.get("args"))
    ):
        return None, "the call differs from the one the AI message proposed"
    if checks is None:
        checks = value_of(state, CHECKS)
    call_id = call.get("id")
    record = (checks or {}).get(call_id) if isinstance(call_id, str) else None
    if not is_bound(record, ai, index, call, key):
        return None, "no verdict from the critic and no human decision is bound to this call"
    if not is_approved(record):
        return None, "neither the critic nor a human approved this call"
    return record, None
