"""The critic step: which calls are critical, and the critic's verdicts as bound records.

A call is checked when its tool is critical (``@critical`` or ``critical=``) and its spec applies
to the arguments. Before anything is checked, the last AI message's call ids are made unique
(:func:`~inferact_langgraph.guard.binding.with_unique_call_ids`); then each unchecked
critical call is judged and written as a
:class:`~inferact_langgraph.guard.records.CheckRecord` bound to its message, position, name
and arguments. A critic that fails, or answers a score outside [0, 1], gives a
record with an ``error``: the call fails closed.

Example:
    >>> from inferact_langgraph.guard.marks import CriticalSpec
    >>> step = CriticStep(critic=None, specs={"buy_now": CriticalSpec()})
    >>> step.is_critical({"name": "buy_now", "args": {}}), step.is_critical({"name": "search"})
    (True, False)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import AIMessage
from langgraph.errors import GraphBubbleUp

from inferact_langgraph.critics.base import Critic
from inferact_langgraph.guard.binding import (
    args_digest,
    is_approved,
    is_bound,
    signed_by_id,
    with_unique_call_ids,
)
from inferact_langgraph.guard.boundaries import BoundaryJudge
from inferact_langgraph.guard.marks import CriticalSpec, critical_spec
from inferact_langgraph.guard.payloads import ActionStep
from inferact_langgraph.guard.records import (
    BoundaryDecision,
    CheckRecord,
    audit_entry,
    verdict_fields,
)
from inferact_langgraph.guard.requests import TaskLocator
from inferact_langgraph.guard.state import AUDIT, BOUNDARIES, CHECKS, ROUTE, StateView
from inferact_langgraph.labels import SpotCheck, current_thread_id
from inferact_langgraph.trajectory import Trajectory

__all__ = ["CriticStep", "CriticalCall", "action_chain"]

logger = logging.getLogger("inferact_langgraph")

CriticalCall = tuple[int, dict[str, Any], CriticalSpec]
"""A pending critical call: its position in the AI message, the call, its spec."""


def action_chain(trajectory: Trajectory) -> list[ActionStep]:
    """The steps of ``trajectory`` as ``{"action", "observation"}`` (no thoughts)."""
    return [{"action": s.action, "observation": s.observation} for s in trajectory.steps]


@dataclass(eq=False, kw_only=True)
class CriticStep:
    """Picks the critical calls of the last AI message and runs the critic on them.

    Args:
        critic: Any :class:`~inferact_langgraph.critics.base.Critic` (``None``: every check
            fails closed).
        specs: Critical tool names mapped to their specs (shared with the guard, which may
            learn more).
        locator: Which task and which actions a call is judged on (default: the user's
            current request, its messages across turns, and the actions since it began).
        key: The records' signing key (``None``: unsigned).
        spot_check: Sends a share of the calls the critic passed to a human anyway.
        judge: Decides the request boundaries the check needs before the calls are judged,
            once per user message; its decisions go to state with the records (``None``:
            the deterministic rule alone).
    """

    critic: Critic | None
    specs: dict[str, CriticalSpec]
    locator: TaskLocator = field(default_factory=TaskLocator)
    key: bytes | None = None
    spot_check: SpotCheck | None = None
    judge: BoundaryJudge | None = None

    def __post_init__(self) -> None:
        if self.spot_check is not None and self.spot_check.rate <= 0:
            self.spot_check = None  # a rate of 0 draws nothing: no work on any call

    # ------------------------------------------------------------------ which calls
    def is_critical(self, call: Mapping[str, Any], tool: Any = None) -> bool:
        """Whether this call must have a bound verdict or decision before it runs."""
        name = call.get("name")
        spec = (self.specs.get(name) if isinstance(name, str) else None) or critical_spec(tool)
        return spec is not None and spec.applies(call.get("args") or {})

    def critical_calls(self, state: Any) -> list[CriticalCall]:
        """The last AI message's unanswered critical calls, with their positions."""
        out: list[CriticalCall] = []
        for index, call in StateView.read(state).pending:
            spec = self.specs.get(call["name"])
            if spec is not None and spec.applies(call.get("args") or {}):
                out.append((index, call, spec))
        return out

    @staticmethod
    def unique_ids(view: StateView) -> AIMessage | None:
        """The last AI message with unique call ids, if any of its ids had to change."""
        if view.ai is None or view.ai_position is None:
            return None
        renamed = with_unique_call_ids(view.ai, view.messages[: view.ai_position])
        return None if renamed is view.ai else renamed

    def _unchecked(self, view: StateView) -> list[CriticalCall]:
        """The critical calls of the view's AI message with no record bound to them."""
        return [
            (i, c, s)
            for i, c, s in self.critical_calls(view)
            if not is_bound(view.checks.get(c.get("id") or ""), view.ai, i, c, self.key)
        ]

    def needs_check(self, state: Any) -> bool:
        """Whether the critic must run before the tools (cheap: no model call)."""
        view = StateView.read(state)
        if not self.specs or not self.critical_calls(view):
            return False
        return self.unique_ids(view) is not None or bool(self._unchecked(view))

    # ------------------------------------------------------------------ the critic step
    def _base_record(
        self, view: StateView, index: int, call: Mapping[str, Any], spec: CriticalSpec
    ) -> CheckRecord:
        ai = view.ai
        assert ai is not None  # a call to check comes from the view's AI message
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
        self, view: StateView, record: CheckRecord
    ) -> tuple[Critic, CheckRecord, Trajectory]:
        """(the critic, ``record`` with the task and action chain, the trajectory to judge)."""
        critic = self.critic
        if critic is None:
            raise RuntimeError("no critic configured")
        task_text = self.locator.task(view)
        trajectory = self.locator.trajectory(view, record["tool_call_id"], task_text)
        prepared: CheckRecord = {
            **record,
            "task": task_text,
            "boundary_by": self.locator.boundary_by(view),
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
        self, view: StateView, index: int, call: Mapping[str, Any], spec: CriticalSpec
    ) -> CheckRecord:
        record = self._base_record(view, index, call, spec)
        try:
            critic, record, trajectory = self._prepare(view, record)
            verdict = await critic.aevaluate(trajectory, risk=record["risk"])
            return {**record, **verdict_fields(verdict)}
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure fails closed, never open
            return self._failed(record, exc)

    def _check_one(
        self, view: StateView, index: int, call: Mapping[str, Any], spec: CriticalSpec
    ) -> CheckRecord:
        record = self._base_record(view, index, call, spec)
        try:
            critic, record, trajectory = self._prepare(view, record)
            verdict = critic.evaluate(trajectory, risk=record["risk"])
            return {**record, **verdict_fields(verdict)}
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure fails closed, never open
            return self._failed(record, exc)

    @staticmethod
    def _edited(state: Any, call: Mapping[str, Any]) -> StateView:
        view = StateView.read(state)
        if view.ai is None:  # pragma: no cover - a re-check's state holds the edited AI message
            raise ValueError(f"no AI message to re-check the edited call {call.get('id')!r}")
        return view

    def recheck(self, state: Any, index: int, call: dict[str, Any]) -> CheckRecord:
        """The record for a human's edit of a critical call (``state`` holds the edit)."""
        view = self._edited(state, call)
        return self._check_one(view, index, call, self.specs[call["name"]])

    async def arecheck(self, state: Any, index: int, call: dict[str, Any]) -> CheckRecord:
        """Async :meth:`recheck`."""
        view = self._edited(state, call)
        return await self._acheck_one(view, index, call, self.specs[call["name"]])

    def _todo(self, state: Any) -> tuple[StateView, AIMessage | None, list[CriticalCall]]:
        """(the view with unique call ids, the renamed AI message or None, the calls to check)."""
        view = StateView.read(state)
        renamed = self.unique_ids(view)
        if renamed is not None:
            position = view.ai_position
            view = view.with_messages(
                [renamed if i == position else m for i, m in enumerate(view.messages)]
            )
        return view, renamed, self._unchecked(view)

    def _check_update(
        self,
        renamed: AIMessage | None,
        records: Sequence[CheckRecord],
        boundaries: Mapping[str, BoundaryDecision] | None = None,
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
        update: dict[str, Any] = {ROUTE: None}
        if records:
            update[CHECKS] = signed_by_id(records, self.key)
        if audit:
            update[AUDIT] = audit
        if boundaries:  # judged once per message: later checks and the review read them
            update[BOUNDARIES] = dict(boundaries)
        if renamed is not None:
            update["messages"] = [renamed]  # same message id: replaced in place, new call ids
        return update

    async def acheck(self, state: Any) -> dict[str, Any]:
        """Check every unchecked critical call of the last AI message, concurrently.

        Calls with a missing or colliding id are given unique ids first (the AI message is
        replaced in place), so every record names exactly one call. The request boundaries
        the calls' task needs are judged first, once for all of them.
        """
        view, renamed, todo = self._todo(state)
        if view.ai is None:  # no AI message, nothing to check
            return self._check_update(renamed, [])
        boundaries = await self.judge.adecide(view) if todo and self.judge else {}
        view = view.with_boundaries(boundaries)
        records = await asyncio.gather(*(self._acheck_one(view, i, c, s) for i, c, s in todo))
        return self._check_update(renamed, records, boundaries)

    def check(self, state: Any) -> dict[str, Any]:
        """Sync :meth:`acheck` (calls are checked one after the other)."""
        view, renamed, todo = self._todo(state)
        if view.ai is None:  # no AI message, nothing to check
            return self._check_update(renamed, [])
        boundaries = self.judge.decide(view) if todo and self.judge else {}
        view = view.with_boundaries(boundaries)
        records = [self._check_one(view, i, c, s) for i, c, s in todo]
        return self._check_update(renamed, records, boundaries)
