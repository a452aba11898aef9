r"""The request-boundary judge: one chat-model call per questioned user message, cached in state.

The deterministic rule of :mod:`~inferact_langgraph.guard.requests` proposes where each of the
user's requests begins. It cannot read meaning: "could you adjust the payment method?" right
after a booking ran, or "let's get back to booking that flight" after a side request, look to
it like new requests, and the call that follows would be judged without the original ask.

:class:`BoundaryJudge` asks a chat model about the rule's *candidate* starts (every start
but the first request's), and only those: does this message begin a new request, or does it
continue, revise or return to an earlier one? ``CONTINUES`` merges the candidate into the
request before it; ``NEW`` keeps the start. The judge can merge, never split.

* **When**: in the critic step, before the critical calls of an AI message are judged, for
  each candidate that has no decision yet, from the newest back to the first one judged
  ``NEW``. At most one call per user message, never one per check: the decisions are written
  to the guard's state (``inferact_boundaries``, by message id) with the check records, so a
  second check, a parallel call of the same AI message, a review or a resume reads them. A
  message without an id is taken as ``NEW`` without a call.
* **What it sees**: the user's earlier messages, grouped by request, the critical actions that
  ran (the tool's name and the names of its arguments) where they ran, then the candidate
  message (:mod:`inferact_langgraph.prompts.requests`). Never a tool's output, the agent's
  prose or an argument's value: each can carry text a tool wrote (an agent copies a page into
  an e-mail body), and a prompt injection must not merge requests.
* **Fail safe**: an error, a time-out, or an answer whose last line is not ``Answer: NEW`` or
  ``Answer: CONTINUES`` keeps the rule's start (``NEW``, logged): the smaller request, against
  which fewer actions are justified. No critical call runs because the judge failed.
* **Off**: ``request_boundaries="rules"`` (``with_inferact`` / ``InferActMiddleware`` /
  :class:`~inferact_langgraph.guard.options.GuardOptions`); it is also off with
  ``scope="thread"`` and for a critic without a chat model (``ScriptedCritic``).

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> from inferact_langgraph.guard.state import StateView
    >>> from inferact_langgraph.testing import ScriptedChatModel
    >>> model = ScriptedChatModel(replies=["It changes the payment.\nAnswer: CONTINUES"])
    >>> judge = BoundaryJudge(model=model, critical_tools={"book"})
    >>> view = StateView.read({"messages": [
    ...     HumanMessage("book me a flight to Seattle", id="h1"),
    ...     AIMessage("", tool_calls=[{"name": "book", "args": {"pay": "card"}, "id": "b1"}]),
    ...     ToolMessage("booked", tool_call_id="b1"),
    ...     AIMessage("Booked."),
    ...     HumanMessage("use my gift card instead", id="h2")]})
    >>> decisions = judge.decide(view)
    >>> decisions["h2"]["continues"], decisions["h2"]["decided_by"], model.calls
    (True, 'model', 1)
    >>> judge.decide(view.with_boundaries(decisions)), model.calls  # cached: no second call
    ({}, 1)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langgraph.errors import GraphBubbleUp

from inferact_langgraph._redact import redact, secrets_of
from inferact_langgraph.guard.options import RequestBoundaries, check_request_boundaries
from inferact_langgraph.guard.records import BoundaryDecision
from inferact_langgraph.guard.requests import (
    SUPERSEDED_ID_PREFIX,
    candidate_starts,
    request_positions,
    request_start_positions,
)
from inferact_langgraph.guard.state import StateView
from inferact_langgraph.prompts.requests import Line, request_boundary_prompt
from inferact_langgraph.trajectory import _text_of

__all__ = [
    "DEFAULT_TIMEOUT",
    "BoundaryJudge",
    "RequestBoundaries",
    "judge_input",
    "parse_boundary_answer",
    "resolve_boundary_model",
]

logger = logging.getLogger("inferact_langgraph")

DEFAULT_TIMEOUT = 60.0
"""Seconds the judge waits for its answer before keeping the rule's start."""

_REASON_CHARS = 300  # a decision stays small: it is kept in the thread's state
_ACTION_CHARS = 1000  # an action's arguments, as shown to the judge
_MESSAGE_CHARS = 2000  # a user message, as shown to the judge
_ANSWER = re.compile(r"^[\s*_`\"']*answer\s*:\s*[*_`\"']*(new|continues)[\s*_`\"'.]*$", re.I)

# The sync path waits on a worker so that a hung model cannot block the check past the time-out.
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="inferact-judge")


def parse_boundary_answer(text: str) -> bool | None:
    r"""``True`` for ``CONTINUES``, ``False`` for ``NEW``, ``None`` for anything else.

    Only the answer's last non-empty line counts (markdown emphasis around it is allowed).

    Example:
        >>> parse_boundary_answer("It revises the payment.\nAnswer: CONTINUES")
        True
        >>> parse_boundary_answer("**Answer: NEW**"), parse_boundary_answer("Answer: NEW\nOK")
        (False, None)
    """
    lines = [line for line in str(text).splitlines() if line.strip()]
    match = _ANSWER.match(lines[-1]) if lines else None
    if match is None:
        return None
    return match.group(1).lower() == "continues"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ran(messages: Sequence[BaseMessage], critical_tools: Container[str]) -> dict[str, int]:
    """The critical calls that ran (answered, not with an error), by id: where they were made."""
    made: dict[str, int] = {}
    ran: dict[str, int] = {}
    for position, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("name") in critical_tools:
                    made[str(call.get("id"))] = position
        elif isinstance(message, ToolMessage) and message.status != "error":
            where = made.pop(str(message.tool_call_id), None)
            if where is not None and not str(message.id or "").startswith(SUPERSEDED_ID_PREFIX):
                ran[str(message.tool_call_id)] = where
    return ran


def judge_input(
    messages: Sequence[BaseMessage],
    position: int,
    critical_tools: Container[str],
    boundaries: Mapping[str, BoundaryDecision],
) -> tuple[list[list[Line]], str]:
    """What the judge sees about the candidate at ``position``: (earlier requests, its text).

    The earlier requests hold the user's own messages (the requests of
    :func:`~inferact_langgraph.guard.requests.request_positions`, grouped as ``boundaries``
    and the rule draw them) and the critical actions that ran (name and argument names), each
    where its AI message stands. Tool results, the agent's text, argument values and human
    messages a tool added are left out.
    """
    earlier = messages[:position]
    users = set(request_positions(earlier))
    starts = set(request_start_positions(earlier, critical_tools, boundaries))
    ran = _ran(earlier, critical_tools)
    requests: list[list[Line]] = []
    for index, message in enumerate(earlier):
        if index in users:
            if index in starts or not requests:
                requests.append([])
            requests[-1].append(("user", _short(_text_of(message.content), _MESSAGE_CHARS)))
        elif isinstance(message, AIMessage) and requests:
            for call in message.tool_calls:
                if ran.get(str(call.get("id"))) == index:
                    # Argument names come from the tool's schema; their values may be a
                    # tool's text, which must not reach the judge.
                    names = ", ".join(str(name) for name in (call.get("args") or {}))
                    action = f"{call.get('name')}({names})"
                    requests[-1].append(("action", _short(action, _ACTION_CHARS)))
    text = _short(_text_of(messages[position].content), _MESSAGE_CHARS)
    return requests, text


def resolve_boundary_model(setting: Any, critic: Any) -> Runnable[Any, Any] | None:
    """The chat model that judges request boundaries, or ``None`` (the rule alone).

    ``"model"``: the critic's own chat model (the ``model=`` given to the guard), if it has
    one; ``"rules"``: none; a chat model instance: that one.

    Raises:
        ValueError: ``setting`` is none of these.

    Example:
        >>> from inferact_langgraph.testing import ScriptedCritic
        >>> resolve_boundary_model("model", ScriptedCritic(scores=[0.9])) is None
        True
        >>> resolve_boundary_model("always", None)
        Traceback (most recent call last):
        ...
        ValueError: request_boundaries must be 'model' (the guard's chat model, if it has one), 'rules' (the deterministic rule alone, no model call) or a chat model instance, got 'always'
    """  # noqa: E501
    check_request_boundaries(setting)
    if isinstance(setting, Runnable):
        return setting
    if setting == "rules":
        return None
    model = getattr(critic, "model", None)
    return model if isinstance(model, Runnable) else None


@dataclass(eq=False, kw_only=True)
class BoundaryJudge:
    """Asks a chat model whether the rule's candidate request starts really begin a request.

    Args:
        model: The chat model (``None``: no call, every candidate keeps its start).
        critical_tools: The critical tools' names: a call to one that ran can end a request
            (the guard passes its live registry).
        timeout: Seconds to wait for an answer (``None``: no limit).
    """

    model: Runnable[Any, Any] | None
    critical_tools: Container[str] = frozenset()
    timeout: float | None = DEFAULT_TIMEOUT

    def to_judge(self, view: StateView) -> list[int]:
        """The candidate positions, newest first, up to the first one not known to continue.

        Cheap (no model call). A candidate already decided is skipped over when it continues
        and ends the walk when it begins a request; so does one without an id (``NEW``).
        """
        if self.model is None:
            return []
        walk = []
        for position in reversed(candidate_starts(view.messages, self.critical_tools)):
            message = view.messages[position]
            if not message.id:
                break
            decision = view.boundaries.get(message.id)
            if decision is not None and not decision.get("continues"):
                break
            walk.append(position)
        return walk

    def _prompt(self, view: StateView, position: int, known: Mapping[str, Any]) -> str:
        requests, text = judge_input(view.messages, position, self.critical_tools, known)
        return request_boundary_prompt(requests, text)

    @staticmethod
    def _decision(answer: Any, message: BaseMessage) -> BoundaryDecision:
        text = _text_of(getattr(answer, "content", answer))
        verdict = parse_boundary_answer(text)
        if verdict is None:
            logger.warning(
                "InferAct request-boundary judge gave no 'Answer: NEW' or 'Answer: CONTINUES' "
                "line for message %s; kept the rule's start (a new request)",
                message.id,
            )
            return {
                "continues": False,
                "decided_by": "rules",
                "reason": _short(f"no usable answer: {text.strip()}", _REASON_CHARS),
            }
        reason = "\n".join(text.strip().splitlines()[:-1]).strip()
        reason = _short(reason, _REASON_CHARS)
        return {"continues": verdict, "decided_by": "model", "reason": reason}

    def _failed(self, error: BaseException, message: BaseMessage) -> BoundaryDecision:
        # The text is kept in state and logged: no credential a provider echoed may stay in it.
        detail = redact(f"{type(error).__name__}: {error}", secrets_of(self.model))
        logger.warning(
            "InferAct request-boundary judge failed on message %s (%s); kept the rule's start "
            "(a new request)",
            message.id,
            detail,
        )
        what = "timed out" if isinstance(error, TimeoutError) else "failed"
        return {
            "continues": False,
            "decided_by": "rules",
            "reason": _short(f"the judge {what} ({detail})", _REASON_CHARS),
        }

    def decide(self, view: StateView) -> dict[str, BoundaryDecision]:
        """The new decisions the view needs (by message id), one model call each (sync)."""
        decisions: dict[str, BoundaryDecision] = {}
        for position in self.to_judge(view):
            message = view.messages[position]
            assert message.id  # to_judge stops at a message without one
            decision = view.boundaries.get(message.id)
            if decision is None:
                known = {**view.boundaries, **decisions}
                decision = self._judge(view, position, known)
                decisions[message.id] = decision
            if not decision["continues"]:
                break
        return decisions

    async def adecide(self, view: StateView) -> dict[str, BoundaryDecision]:
        """Async :meth:`decide` (``ainvoke``: the event loop is never blocked)."""
        decisions: dict[str, BoundaryDecision] = {}
        for position in self.to_judge(view):
            message = view.messages[position]
            assert message.id
            decision = view.boundaries.get(message.id)
            if decision is None:
                known = {**view.boundaries, **decisions}
                decision = await self._ajudge(view, position, known)
                decisions[message.id] = decision
            if not decision["continues"]:
                break
        return decisions

    def _judge(
        self, view: StateView, position: int, known: Mapping[str, BoundaryDecision]
    ) -> BoundaryDecision:
        model = self.model
        assert model is not None  # to_judge finds nothing without a model
        message = view.messages[position]
        try:
            prompt = self._prompt(view, position, known)
            context = contextvars.copy_context()
            future = _POOL.submit(context.run, model.invoke, [HumanMessage(prompt)])
            return self._decision(future.result(timeout=self.timeout), message)
        except GraphBubbleUp:
            raise
        except TimeoutError:  # concurrent.futures.TimeoutError is TimeoutError on 3.11+
            return self._failed(TimeoutError(f"no answer within {self.timeout}s"), message)
        except Exception as exc:  # noqa: BLE001 - any failure keeps the rule's start
            return self._failed(exc, message)

    async def _ajudge(
        self, view: StateView, position: int, known: Mapping[str, BoundaryDecision]
    ) -> BoundaryDecision:
        model = self.model
        assert model is not None
        message = view.messages[position]
        try:
            prompt = self._prompt(view, position, known)
            call = model.ainvoke([HumanMessage(prompt)])
            answer = await (asyncio.wait_for(call, self.timeout) if self.timeout else call)
            return self._decision(answer, message)
        except GraphBubbleUp:
            raise
        except TimeoutError:
            return self._failed(TimeoutError(f"no answer within {self.timeout}s"), message)
        except Exception as exc:  # noqa: BLE001 - any failure keeps the rule's start
            return self._failed(exc, message)
