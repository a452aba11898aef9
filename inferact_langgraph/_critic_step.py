"""The critic step: which calls are critical, and the critic's verdicts as bound records.

A call is checked when its tool is critical (``@critical`` or ``critical=``) and its spec applies
to the arguments. Before anything is checked, the last AI message's call ids are made unique
(:func:`~inferact_langgraph._binding.with_unique_call_ids`); then each unchecked critical call is
judged and written as a :class:`~inferact_langgraph.records.CheckRecord` bound to its message,
position, name and arguments. A critic that fails, or answers a score outside [0, 1], gives a
record with an ``error``: the call fails closed.

Example:
    >>> from inferact_langgraph._critical import CriticalSpec
    >>> step = CriticStep(critic=None, specs={"buy_now": CriticalSpec()})
    >>> step.is_critical({"name": "buy_now", "args": {}}), step.is_critical({"name": "search"})
    (True, False)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage
from langgraph.errors import GraphBubbleUp

from inferact_langgraph._binding import (
    args_digest,
    is_approved,
    is_bound,
    last_ai_message,
    last_ai_position,
    messages_of,
    pending_calls,
    sign_record,
    with_unique_call_ids,
)
from inferact_langgraph._critical import CriticalSpec, critical_spec
from inferact_langgraph._reviewing import logger
from inferact_langgraph.critics.base import Critic
from inferact_langgraph.labels import SpotCheck, current_thread_id
from inferact_langgraph.records import CheckRecord, audit_entry, verdict_fields
from inferact_langgraph.review import ActionStep
from inferact_langgraph.scope import TaskLocator
from inferact_langgraph.trajectory import Trajectory

__all__ = ["CriticStep", "CriticalCall", "action_chain"]

CriticalCall = tuple[int, dict[str, Any], CriticalSpec]
"""A pending critical call: its position in the AI message, the call, its spec."""


def action_chain(trajectory: Trajectory) -> list[ActionStep]:
    """The steps of ``trajectory`` as ``{"action", "observation"}`` (no thoughts)."""
    return [{"action": s.action, "observation": s.observation} for s in trajectory.steps]


class CriticStep:
    """Picks the critical calls of the last AI message and runs the critic on them.

    Args:
        critic: Any :class:`~inferact_langgraph.critics.base.Critic` (``None``: every check
            fails closed).
        specs: Critical tool names mapped to their specs (shared with the guard, which may
            learn more).
        locator: Which task and which actions a call is judged on (default: the user's
            newest request and the actions since it).
        key: The records' signing key (``None``: unsigned).
        spot_check: Sends a share of the calls the critic passed to a human anyway.
    """

    def __init__(
        self,
        *,
        critic: Critic | None,
        specs: dict[str, CriticalSpec],
        locator: TaskLocator | None = None,
        key: bytes | None = None,
        spot_check: SpotCheck | None = None,
    ) -> None:
        self.critic = critic
        self.spot_check = spot_check if spot_check is not None and spot_check.rate > 0 else None
        self.specs = specs
        self.key = key
        self.locator = locator or TaskLocator()

    # ------------------------------------------------------------------ which calls
    def is_critical(self, call: Mapping[str, Any], tool: Any = None) -> bool:
        """Whether this call must have a bound verdict or decision before it runs."""
        name = call.get("name")
        spec = (self.specs.get(name) if isinstance(name, str) else None) or critical_spec(tool)
        return spec is not None and spec.applies(call.get("args") or {})

    def critical_calls(self, state: Any) -> list[CriticalCall]:
        """The last AI message's unanswered critical calls, with their positions."""
        _, pending = pending_calls(state)
        out: list[CriticalCall] = []
        for index, call in pending:
            spec = self.specs.get(call["name"])
            if spec is not None and spec.applies(call.get("args") or {}):
                out.append((index, call, spec))
        return out

    def unique_ids(self, state: Any) -> AIMessage | None:
        """The last AI message with unique call ids, if any of its ids had to change."""
        messages = messages_of(state)
        position = last_ai_position(messages)
        if position is None:
            return None
        ai = messages[position]
        assert isinstance(ai, AIMessage)  # last_ai_position finds AI messages only
        renamed = with_unique_call_ids(ai, messages[:position])
        return None if renamed is ai else renamed

    def needs_check(self, state: Any) -> bool:
        """Whether the critic must run before the tools (cheap: no model call)."""
        calls = self.critical_calls(state) if self.specs else []
        if not calls:
            return False
        if self.unique_ids(state) is not None:
            return True
        ai = last_ai_message(state)
        checks = state.get("inferact_checks") or {}
        return any(not is_bound(checks.get(c.get("id")), ai, i, c, self.key) for i, c, _ in calls)

    # ------------------------------------------------------------------ the critic step
    def _base_record(
        self, ai: AIMessage, index: int, call: Mapping[str, Any], spec: CriticalSpec
    ) -> CheckRecord:
        args = dict(call.get("args") or {})
        return {
            "tool_call_id": call["id"],  # every call has an id (see with_unique_call_ids)
            "ai_message_id": ai.id,
            "index": index,
            "tool": call["name"],
            "args": args,
            "args_sha256": args_digest(args),
            "risk": spec.risk_for(args),
            "description": spec.description,
            "critic": getattr(self.critic, "name", None),
            "threshold": getattr(self.critic, "threshold", None),
            "task": None,
            "scope": self.locator.label,
            "action_chain": [],
            "options": [],
            "option_probs": {},
            "order_probs": None,
            "checked_at": time.time(),
        }

    def _prepare(
        self, state: Any, record: CheckRecord
    ) -> tuple[Critic, CheckRecord, Trajectory]:
        """(the critic, ``record`` with the task and action chain, the trajectory to judge)."""
        critic = self.critic
        if critic is None:
            raise RuntimeError("no critic configured")
        task_text = self.locator.task(state)
        trajectory = self.locator.trajectory(state, record["tool_call_id"], task_text)
        prepared: CheckRecord = {
            **record,
            "task": task_text,
            "action_chain": action_chain(trajectory),
        }
        return critic, prepared, trajectory

    @staticmethod
    def _failed(record: CheckRecord, error: BaseException) -> CheckRecord:
        logger.warning("InferAct critic failed on %s: %s", record["tool"], error)
        return {
            **record,
            "score": None,
            "flagged": True,
            "verdict": None,
            "error": f"{type(error).__name__}: {error}",
        }

    async def _acheck_one(
        self, state: Any, ai: AIMessage, index: int, call: Mapping[str, Any], spec: CriticalSpec
    ) -> CheckRecord:
        record = self._base_record(ai, index, call, spec)
        try:
            critic, record, trajectory = self._prepare(state, record)
            verdict = await critic.aevaluate(trajectory, risk=record["risk"])
            return {**record, **verdict_fields(verdict)}
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure fails closed, never open
            return self._failed(record, exc)

    def _check_one(
        self, state: Any, ai: AIMessage, index: int, call: Mapping[str, Any], spec: CriticalSpec
    ) -> CheckRecord:
        record = self._base_record(ai, index, call, spec)
        try:
            critic, record, trajectory = self._prepare(state, record)
            verdict = critic.evaluate(trajectory, risk=record["risk"])
            return {**record, **verdict_fields(verdict)}
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure fails closed, never open
            return self._failed(record, exc)

    def _edited(self, state: Mapping[str, Any], call: Mapping[str, Any]) -> AIMessage:
        ai = last_ai_message(state)
        if ai is None:  # pragma: no cover - a re-check's state holds the edited AI message
            raise ValueError(f"no AI message to re-check the edited call {call.get('id')!r}")
        return ai

    def recheck(self, state: Any, index: int, call: dict[str, Any]) -> CheckRecord:
        """The record for a human's edit of a critical call (``state`` holds the edit)."""
        ai = self._edited(state, call)
        return self._check_one(state, ai, index, call, self.specs[call["name"]])

    async def arecheck(self, state: Any, index: int, call: dict[str, Any]) -> CheckRecord:
        """Async :meth:`recheck`."""
        ai = self._edited(state, call)
        return await self._acheck_one(state, ai, index, call, self.specs[call["name"]])

    def _todo(
        self, state: Any
    ) -> tuple[dict[str, Any], AIMessage | None, AIMessage | None, list[CriticalCall]]:
        """(state with unique call ids, renamed AI message or None, last AI message, to check)."""
        renamed = self.unique_ids(state)
        state = dict(state)
        if renamed is not None:
            state["messages"] = [
                renamed if getattr(m, "id", None) == renamed.id else m for m in messages_of(state)
            ]
        ai = last_ai_message(state)
        checks = state.get("inferact_checks") or {}
        todo = [
            (i, c, s)
            for i, c, s in self.critical_calls(state)
            if not is_bound(checks.get(c.get("id")), ai, i, c, self.key)
        ]
        return state, renamed, ai, todo

    def _check_update(
        self, renamed: AIMessage | None, records: Sequence[CheckRecord]
    ) -> dict[str, Any]:
        if renamed is None and not records:
            return {}
        if self.spot_check is not None:  # only calls the critic passed; a doubted call is
            thread = current_thread_id()  # reviewed as such, never as a spot check
            spot = self.spot_check
            records = [
                cast(CheckRecord, spot.mark(r, thread)) if is_approved(r) else r for r in records
            ]
        audit = [
            audit_entry(r, decision="approve", decided_by="critic")
            for r in records
            if is_approved(r)
        ]
        update: dict[str, Any] = {"inferact_route": None}
        if records:
            update["inferact_checks"] = {
                r["tool_call_id"]: sign_record(r, self.key) for r in records
            }
        if audit:
            update["inferact_audit"] = audit
        if renamed is not None:
            update["messages"] = [renamed]  # same message id: replaced in place, new call ids
        return update

    async def acheck(self, state: Any) -> dict[str, Any]:
        """Check every unchecked critical call of the last AI message, concurrently.

        Calls with a missing or colliding id are given unique ids first (the AI message is
        replaced in place), so every record names exactly one call.
        """
        state, renamed, ai, todo = self._todo(state)
        if ai is None:  # no AI message, nothing to check
            return self._check_update(renamed, [])
        records = await asyncio.gather(*(self._acheck_one(state, ai, i, c, s) for i, c, s in todo))
        return self._check_update(renamed, records)

    def check(self, state: Any) -> dict[str, Any]:
        """Sync :meth:`acheck` (calls are checked one after the other)."""
        state, renamed, ai, todo = self._todo(state)
        if ai is None:  # no AI message, nothing to check
            return self._check_update(renamed, [])
        return self._check_update(
            renamed, [self._check_one(state, ai, i, c, s) for i, c, s in todo]
        )
