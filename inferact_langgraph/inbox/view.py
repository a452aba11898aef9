"""The inbox's view model: what the page shows for one thread waiting on an InferAct review.

The page never reads a raw interrupt. :func:`thread_view` turns a thread as the LangGraph
server returns it (``threads.search`` / ``threads.get``: ``values``, ``interrupts``,
``metadata``) into plain JSON: per pending review, per action, the tool call, the critic's
score against its threshold, the user's task, the options it verified with their probabilities
in both orders and the mean, its justification, the action chain it judged, and its error.

The page shows what the guard decided from, never a recomputation: the task, the action chain,
the options and their probabilities per order are read from the check record the guard wrote
for the call. The review request's ``inferact`` section carries them; a shorter, older request
that lacks some is completed from the record in the thread's state (``inferact_checks``), and
only when that record is for this very call (same tool and arguments). Each action lists the
fields read from state (``from_state``); a field neither has is shown as not recorded.

Example:
    >>> thread = {
    ...     "thread_id": "t1", "updated_at": "2026-01-01T00:00:00Z",
    ...     "metadata": {"graph_id": "shop"},
    ...     "values": {"inferact_checks": {"c1": {
    ...         "tool": "buy", "args": {"asin": "B01"}, "task": "buy a red mug",
    ...         "action_chain": [{"action": 'buy(asin="B01")', "observation": None}]}}},
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

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict

from inferact_langgraph.prompts import option_labels
from inferact_langgraph.review import INBOX_LINK_LABEL

__all__ = [
    "ActionView",
    "ChainStep",
    "OptionView",
    "ReviewView",
    "ThreadView",
    "is_inferact_request",
    "thread_view",
]

_NONE_OF_THE_ABOVE = "none of the above"


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
    """The fields the payload lacked and the view read from the call's check record in the
    thread's state."""
    spot_check: bool
    """The critic passed this call; a human checks it anyway (a spot check)."""


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
) -> ActionView:
    """The view of one action request; fields the payload lacks come from the call's record."""
    info = request.get("inferact")
    info = info if isinstance(info, Mapping) else {}
    tool = str(request.get("name") or "")
    args = dict(request.get("args") or {}) if isinstance(request.get("args"), Mapping) else {}
    call_id = info.get("tool_call_id")
    record = _record_for(state, call_id, tool, args)
    raw_verdict = record.get("verdict")
    verdict: Mapping[str, Any] = raw_verdict if isinstance(raw_verdict, Mapping) else {}
    from_state: list[str] = []

    def given(name: str, valid: Any) -> Any:
        """The payload's field, else the record's (noted in ``from_state``), else None."""
        if valid(info.get(name)):
            return info.get(name)
        if valid(record.get(name)):
            from_state.append(name)
            return record.get(name)
        return None

    task = given("task", lambda v: isinstance(v, str) and bool(v))
    chain = _chain(given("action_chain", lambda v: isinstance(v, list)))
    # The options, their mean and per-order probabilities come together, from one source.
    if info.get("options"):
        options_source: Mapping[str, Any] = info
        inferred_source: Any = info.get("inferred_tasks")
    elif record.get("options"):
        options_source, inferred_source = record, verdict.get("inferred_tasks")
        from_state.append("options")
    else:
        options_source, inferred_source = {}, info.get("inferred_tasks")
    inferred = [str(t) for t in inferred_source or info.get("inferred_tasks") or []]
    options = _options(
        options_source.get("options") or [],
        n_inferred=len(inferred),
        mean=options_source.get("option_probs"),
        orders=options_source.get("order_probs"),
    )
    justification = info.get("justification") or verdict.get("justification") or ""

    return {
        "index": index,
        "tool": tool,
        "args": args,
        "description": _without_inbox_link(str(request.get("description") or "")),
        "tool_call_id": call_id,
        "risk": _text_or_none(info.get("risk")),
        "critic": _text_or_none(info.get("critic")),
        "score": _number(info.get("score")),
        "threshold": _number(info.get("threshold")),
        "error": _text_or_none(info.get("error")),
        "task": task,
        "inferred_tasks": inferred,
        "justification": str(justification),
        "options": options,
        "action_chain": chain,
        "allowed_decisions": [str(d) for d in config.get("allowed_decisions") or []],
        "from_state": from_state,
        "spot_check": info.get("spot_check") is True,
    }


# ---------------------------------------------------------------------------- helpers
def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _without_inbox_link(description: str) -> str:
    """The description without its link to the inbox (the page showing it is that inbox)."""
    lines = description.splitlines()
    return "\n".join(line for line in lines if not line.startswith(INBOX_LINK_LABEL))


def _record_for(
    state: Mapping[str, Any], call_id: Any, tool: str, args: Mapping[str, Any]
) -> Mapping[str, Any]:
    """The guard's check record in state for this very call (same tool and arguments), or {}.

    An edited call under a second review has a fresh record that is not in state yet; the
    record in state then belongs to the arguments before the edit and must not be shown.
    """
    checks = state.get("inferact_checks")
    record = checks.get(call_id) if isinstance(checks, Mapping) and call_id else None
    if not isinstance(record, Mapping):
        return {}
    if record.get("tool") != tool or record.get("args") != dict(args):
        return {}
    return record


def _chain(raw: Any) -> list[ChainStep]:
    """The recorded action chain as plain steps (``[]`` when none was recorded)."""
    chain: list[ChainStep] = []
    for step in raw if isinstance(raw, list) else []:
        if isinstance(step, Mapping):
            observation = step.get("observation")
            chain.append(
                {
                    "action": str(step.get("action") or ""),
                    "observation": None if observation is None else str(observation),
                }
            )
    return chain


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
