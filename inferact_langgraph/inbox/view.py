"""The inbox's view model: what the page shows for one thread waiting on an InferAct review.

The page never reads a raw interrupt. :func:`thread_view` turns a thread as the LangGraph
server returns it (``threads.search`` / ``threads.get``: ``values``, ``interrupts``,
``metadata``) into plain JSON: per pending review, per action, the tool call, the critic's
score against its threshold, the user's task, the options it verified with their probabilities
in both orders and the mean, its justification, the action chain it judged, and its error.

The payload may be the full one (its ``inferact`` section carries ``task``, ``action_chain``,
``options``, ``option_probs`` and ``order_probs``) or the older, shorter one. Every field the
payload lacks is rebuilt from the thread's state: the task from the first human message, the
action chain with :meth:`~inferact_langgraph.trajectory.Trajectory.from_messages` (thoughts
excluded, ending on the pending call), the options and mean probabilities from the critic's
verdict in ``inferact_checks``, and the per-order probabilities by re-reading the verdict's raw
verification answers. Each action says which fields came from state (``from_state``).

Example:
    >>> thread = {
    ...     "thread_id": "t1", "updated_at": "2026-01-01T00:00:00Z",
    ...     "metadata": {"graph_id": "shop"},
    ...     "values": {"messages": [
    ...         {"type": "human", "content": "buy a red mug"},
    ...         {"type": "ai", "content": "hmm", "tool_calls": [
    ...             {"name": "buy", "args": {"asin": "B01"}, "id": "c1"}]}]},
    ...     "interrupts": {"task-1": [{"id": "i1", "value": {
    ...         "source": "inferact",
    ...         "action_requests": [{"name": "buy", "args": {"asin": "B01"},
    ...             "description": "", "inferact": {"tool_call_id": "c1", "score": 0.2,
    ...             "threshold": 0.5, "inferred_tasks": ["buy a pan"], "justification": "no",
    ...             "risk": "high", "critic": "inferact", "error": None}}],
    ...         "review_configs": [{"action_name": "buy", "allowed_decisions": ["approve"]}],
    ...     }}]},
    ... }
    >>> view = thread_view(thread)
    >>> action = view["reviews"][0]["actions"][0]
    >>> action["task"], action["from_state"]
    ('buy a red mug', ['task', 'action_chain'])
    >>> action["action_chain"]
    [{'action': 'buy(asin="B01")', 'observation': None}]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_messages
from typing_extensions import TypedDict

from inferact_langgraph._parsing import parse_verification
from inferact_langgraph.errors import InferActError
from inferact_langgraph.guard.memory import is_injected
from inferact_langgraph.guard.state import CHECKS
from inferact_langgraph.prompts import option_labels
from inferact_langgraph.trajectory import Trajectory, TrajectoryError

__all__ = [
    "ActionView",
    "ChainStep",
    "OptionView",
    "ReviewView",
    "ThreadView",
    "is_inferact_request",
    "thread_view",
]

logger = logging.getLogger("inferact_langgraph.inbox")

_NONE_OF_THE_ABOVE = "none of the above"
ORDERS = ("original", "reversed")


class ChainStep(TypedDict):
    """One step of the action chain the critic judged (no thoughts)."""

    action: str
    """The tool call as the critic saw it, e.g. ``buy_now(asin="B01")``."""
    observation: str | None
    """What the tool answered; ``None`` for the pending action under review."""


class OptionView(TypedDict):
    """One option of the critic's multiple-choice verification."""

    label: str
    """The option's label in the original order (``A``, ``B`` ...)."""
    text: str
    kind: str
    """``"inferred"`` (a task the critic inferred), ``"task"`` (the user's task), ``"none"``
    (none of the above) or ``"other"``."""
    p_original: float | None
    """Its probability when the options were shown in the original order (None: not recorded)."""
    p_reversed: float | None
    """Its probability in the reversed order."""
    p_mean: float | None
    """The mean over both orders (the user's task's mean is the score)."""


class ActionView(TypedDict):
    """One tool call awaiting a decision, with everything the critic knew."""

    index: int
    tool: str
    args: dict[str, Any]
    description: str
    tool_call_id: str | None
    risk: str | None
    critic: str | None
    score: float | None
    threshold: float | None
    error: str | None
    task: str | None
    inferred_tasks: list[str]
    justification: str
    options: list[OptionView]
    action_chain: list[ChainStep]
    allowed_decisions: list[str]
    from_state: list[str]
    """The fields the payload lacked and the view rebuilt from the thread's state."""


class ReviewView(TypedDict):
    """One pending interrupt (one review request; several actions are decided together)."""

    interrupt_id: str | None
    actions: list[ActionView]


class ThreadView(TypedDict):
    """A thread waiting on at least one InferAct review."""

    thread_id: str
    graph_id: str | None
    assistant_id: str | None
    created_at: str | None
    updated_at: str | None
    task: str | None
    reviews: list[ReviewView]


def is_inferact_request(value: Any) -> bool:
    """Whether an interrupt value is an InferAct review request.

    Example:
        >>> is_inferact_request({"action_requests": [{"name": "x", "inferact": {}}]})
        True
        >>> is_inferact_request({"action_requests": [{"name": "x"}]}), is_inferact_request("hi")
        (False, False)
    """
    if not isinstance(value, Mapping):
        return False
    requests = value.get("action_requests")
    if not isinstance(requests, list) or not requests:
        return False
    return value.get("source") == "inferact" or any(
        isinstance(r, Mapping) and isinstance(r.get("inferact"), Mapping) for r in requests
    )


def pending_interrupts(thread: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The thread's pending interrupts (``{"id", "value"}``) that are InferAct reviews.

    The server gives ``interrupts`` as a mapping of task id to a list of interrupts (threads)
    or as a flat list (thread state); both are read.
    """
    raw = thread.get("interrupts") or {}
    groups = raw.values() if isinstance(raw, Mapping) else [raw]
    found = []
    for group in groups:
        for item in group if isinstance(group, list) else [group]:
            if isinstance(item, Mapping) and is_inferact_request(item.get("value")):
                found.append({"id": item.get("id"), "value": item["value"]})
    return found


def thread_view(thread: Mapping[str, Any]) -> ThreadView | None:
    """The view of a thread, or ``None`` when it waits on no InferAct review.

    Args:
        thread: A thread as the LangGraph server returns it (with ``values`` and
            ``interrupts``).
    """
    interrupts = pending_interrupts(thread)
    if not interrupts:
        return None
    values = thread.get("values")
    state = values if isinstance(values, Mapping) else {}
    messages = _messages_of(state)
    reviews: list[ReviewView] = []
    for item in interrupts:
        request = item["value"]
        configs = request.get("review_configs") or []
        actions = [
            action_view(
                raw,
                index=i,
                config=configs[i] if i < len(configs) and isinstance(configs[i], Mapping) else {},
                state=state,
                messages=messages,
            )
            for i, raw in enumerate(request.get("action_requests") or [])
            if isinstance(raw, Mapping)
        ]
        reviews.append({"interrupt_id": item.get("id"), "actions": actions})
    metadata = thread.get("metadata") or {}
    first = reviews[0]["actions"][0] if reviews and reviews[0]["actions"] else None
    return {
        "thread_id": str(thread.get("thread_id")),
        "graph_id": metadata.get("graph_id"),
        "assistant_id": metadata.get("assistant_id"),
        "created_at": _text_or_none(thread.get("created_at")),
        "updated_at": _text_or_none(thread.get("updated_at")),
        "task": first["task"] if first else None,
        "reviews": reviews,
    }


def action_view(
    request: Mapping[str, Any],
    *,
    index: int,
    config: Mapping[str, Any],
    state: Mapping[str, Any],
    messages: Sequence[BaseMessage],
) -> ActionView:
    """The view of one action request; fields the payload lacks come from ``state``."""
    info = request.get("inferact")
    info = info if isinstance(info, Mapping) else {}
    tool = str(request.get("name") or "")
    args = dict(request.get("args") or {}) if isinstance(request.get("args"), Mapping) else {}
    call_id = info.get("tool_call_id")
    from_state: list[str] = []
    verdict = _verdict_for(state, call_id, tool, args)

    task = info.get("task")
    if not isinstance(task, str) or not task:
        task = _task_from(messages)
        if task is not None:
            from_state.append("task")

    chain = _chain_from_payload(info.get("action_chain"))
    if chain is None:
        chain = _chain_from_messages(messages, task=task, call_id=call_id, tool=tool, args=args)
        from_state.append("action_chain")

    inferred = [str(t) for t in info.get("inferred_tasks") or []]
    options_text = info.get("options")
    mean = info.get("option_probs")
    orders = info.get("order_probs")
    n_inferred = len(inferred)
    if not options_text and verdict is not None and verdict.get("options"):
        options_text = verdict.get("options")
        mean = verdict.get("option_probs")
        orders = _order_probs_from_raw(verdict)
        # The options list the verdict's inferred tasks first, then the user's task.
        n_inferred = len(verdict.get("inferred_tasks") or [])
        if not inferred:
            inferred = [str(t) for t in verdict.get("inferred_tasks") or []]
        from_state.append("options")
    options = _options(options_text or [], n_inferred=n_inferred, mean=mean, orders=orders)

    return {
        "index": index,
        "tool": tool,
        "args": args,
        "description": str(request.get("description") or ""),
        "tool_call_id": call_id,
        "risk": _text_or_none(info.get("risk")),
        "critic": _text_or_none(info.get("critic")),
        "score": _number(info.get("score")),
        "threshold": _number(info.get("threshold")),
        "error": _text_or_none(info.get("error")),
        "task": task,
        "inferred_tasks": inferred,
        "justification": str(info.get("justification") or ""),
        "options": options,
        "action_chain": chain,
        "allowed_decisions": [str(d) for d in config.get("allowed_decisions") or []],
        "from_state": from_state,
    }


# ---------------------------------------------------------------------------- helpers
def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _messages_of(state: Mapping[str, Any]) -> list[BaseMessage]:
    raw = state.get("messages") or []
    try:
        return list(convert_to_messages(raw))
    except Exception as exc:  # noqa: BLE001 - a state the view cannot read shows less, not fail
        logger.warning("inbox: cannot read the thread's messages: %s", exc)
        return []


def _task_from(messages: Sequence[BaseMessage]) -> str | None:
    for message in messages:
        # Earlier feedback InferAct gave the actor is never the user's task.
        if isinstance(message, HumanMessage) and not is_injected(message):
            text = message.text if isinstance(message.text, str) else str(message.text)
            if text:
                return text
    return None


def _verdict_for(
    state: Mapping[str, Any], call_id: Any, tool: str, args: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The critic's verdict in state for this very call (same tool and arguments).

    An edited call under a second review has a fresh verdict that is not in state yet; the
    record in state then belongs to the arguments before the edit and must not be shown.
    """
    checks = state.get(CHECKS)
    record = checks.get(call_id) if isinstance(checks, Mapping) and call_id else None
    if not isinstance(record, Mapping):
        return None
    if record.get("tool") != tool or record.get("args") != dict(args):
        return None
    verdict = record.get("verdict")
    return verdict if isinstance(verdict, Mapping) else None


def _chain_from_payload(raw: Any) -> list[ChainStep] | None:
    if not isinstance(raw, list):
        return None
    chain: list[ChainStep] = []
    for step in raw:
        if isinstance(step, Mapping):
            observation = step.get("observation")
            chain.append(
                {
                    "action": str(step.get("action") or ""),
                    "observation": None if observation is None else str(observation),
                }
            )
    return chain


def _chain_from_messages(
    messages: Sequence[BaseMessage],
    *,
    task: str | None,
    call_id: Any,
    tool: str,
    args: Mapping[str, Any],
) -> list[ChainStep]:
    """The chain the critic judged, rebuilt the way the guard builds it.

    The pending call is shown with the arguments under review (after an edit, the AI message
    in state still holds the old ones).
    """
    if not messages or not call_id:
        return []
    edited: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and any(
            c.get("id") == call_id for c in message.tool_calls
        ):
            calls = [
                {**c, "name": tool, "args": dict(args)} if c.get("id") == call_id else c
                for c in message.tool_calls
            ]
            message = message.model_copy(update={"tool_calls": calls})
        edited.append(message)
    try:
        trajectory = Trajectory.from_messages(
            edited, task=task or "(unknown task)", pending_tool_call_id=str(call_id)
        )
    except TrajectoryError as exc:
        logger.warning("inbox: cannot rebuild the action chain: %s", exc)
        return []
    return [{"action": s.action, "observation": s.observation} for s in trajectory.steps]


def _order_probs_from_raw(verdict: Mapping[str, Any]) -> dict[str, dict[str, float]] | None:
    """Per-order probabilities, re-read from the verdict's raw verification answers.

    Each raw answer is in the labels the model was shown; the reversed one is mapped back to
    the original labels (as the critic does). An answer that cannot be read gives no entry.
    """
    raw = verdict.get("raw")
    options = verdict.get("options") or []
    if not isinstance(raw, Mapping) or not options:
        return None
    n = len(options)
    labels = option_labels(n)
    result: dict[str, dict[str, float]] = {}
    for order in ORDERS:
        text = raw.get(f"verification_{order}")
        if not isinstance(text, str):
            continue
        # The paper's two answer formats: "G1: <label> P1: <p>" or "A: Completed P_A: <p>".
        answer_format: Literal["topk", "alfworld"] = (
            "topk" if re.search(r"\bG1\s*:", text) else "alfworld"
        )
        try:
            answer = parse_verification(text, labels, answer_format=answer_format)
        except (InferActError, ValueError):
            continue
        to_original = {labels[i]: labels[i if order == "original" else n - 1 - i] for i in range(n)}
        result[order] = {to_original[k]: v for k, v in answer.probs.items() if k in to_original}
    return result or None


def _options(
    texts: Sequence[Any],
    *,
    n_inferred: int,
    mean: Any,
    orders: Any,
) -> list[OptionView]:
    if not texts:
        return []
    labels = option_labels(len(texts))
    mean = mean if isinstance(mean, Mapping) else {}
    orders = orders if isinstance(orders, Mapping) else {}
    original = orders.get("original") if isinstance(orders.get("original"), Mapping) else None
    reversed_ = orders.get("reversed") if isinstance(orders.get("reversed"), Mapping) else None
    views: list[OptionView] = []
    for i, (label, text) in enumerate(zip(labels, texts, strict=True)):
        text = str(text)
        if i < n_inferred:
            kind = "inferred"
        elif i == n_inferred:
            kind = "task"
        else:
            kind = "none" if text.strip().lower() == _NONE_OF_THE_ABOVE else "other"
        views.append(
            {
                "label": label,
                "text": text,
                "kind": kind,
                # An answer that did not rate an option gave it 0 (the critic's rule).
                "p_original": None if original is None else _number(original.get(label, 0.0)),
                "p_reversed": None if reversed_ is None else _number(reversed_.get(label, 0.0)),
                "p_mean": _number(mean.get(label)),
            }
        )
    return views
