"""The human review: the interrupt payload and the resume decisions.

The payload is LangChain's own ``HITLRequest`` (``langchain.agents.middleware.human_in_the_loop``)
with an ``inferact`` section on each action request, so approval UIs that render
``action_requests`` / ``review_configs`` (Agent Chat UI, Agent Inbox) work as is.

Resumes are LangChain's decision types, validated by a pydantic discriminated union that the
guard passes to ``interrupt(..., response_schema=...)``: LangGraph checks the answer *before* it
records it, so a bad answer raises and the review stays pending. Resume with one decision per
action request, by position, or a shorthand:

* ``{"decisions": [{"type": "approve"}, {"type": "reject", "message": "wrong size"}]}``
* ``True`` approves all, ``False`` rejects all (binary feedback), a string rejects all with that
  string as natural-language feedback, and a single decision object when one action awaits.

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

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypeGuard, Union, get_args

from langchain.agents.middleware.human_in_the_loop import (
    ActionRequest,
    ApproveDecision,
    EditDecision,
    HITLRequest,
    RejectDecision,
    RespondDecision,
    ReviewConfig,
)
from pydantic import AfterValidator, BeforeValidator, Discriminator, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from inferact_langgraph.errors import ResumeError
from inferact_langgraph.labels import SPOT_CHECK_NOTE, is_spot_check
from inferact_langgraph.prompts import option_labels

__all__ = [
    "INBOX_LINK_LABEL",
    "ActionRequest",
    "ApproveDecision",
    "Decision",
    "DecisionType",
    "EditDecision",
    "HITLRequest",
    "InferActActionRequest",
    "InferActReviewInfo",
    "RejectDecision",
    "RespondDecision",
    "ReviewConfig",
    "ReviewRequest",
    "inbox_link",
    "parse_resume",
    "resume_schema",
    "review_description",
]

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[DecisionType, ...] = get_args(DecisionType)
MAX_RESUME_DEPTH = 32
"""Deeper resume values are refused before anything runs (no ``RecursionError`` later)."""

EXPECTED_SHAPE = (
    '{"decisions": [<one per action request, in order>]} where each decision is '
    '{"type": "approve"} | {"type": "edit", "edited_action": {"name": str, "args": dict}} | '
    '{"type": "reject", "message": str (optional feedback)} | '
    '{"type": "respond", "message": str}; or the shorthands True (approve all), '
    "False (reject all) or a string (reject all with that feedback)"
)


INBOX_URL_ENV = "INFERACT_INBOX_URL"
"""The inbox page's address (e.g. ``https://agents.example.com/inferact/inbox``), for review
descriptions to link to. Unset, it is found when the guard runs inside a LangGraph server that
serves the inbox app (``"http": {"app": "inferact_langgraph.inbox:app"}``)."""
INBOX_LINK_LABEL = "Review it with every detail in the inbox: "
"""How a description's last line names the thread's inbox page."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_JUSTIFICATION_CHARS = 320


def inbox_link(thread_id: str | None) -> str | None:
    """The inbox page of ``thread_id``'s review, or ``None`` when no inbox is served.

    The page's address is ``INFERACT_INBOX_URL`` when set; else, inside a LangGraph server
    whose ``langgraph.json`` serves ``inferact_langgraph.inbox:app``, the server's own address
    (``LANGGRAPH_API_URL``) with the inbox's default path.

    Example:
        >>> import os
        >>> os.environ["INFERACT_INBOX_URL"] = "https://agents.example.com/inferact/inbox"
        >>> inbox_link("t 1")
        'https://agents.example.com/inferact/inbox#/thread/t%201'
        >>> del os.environ["INFERACT_INBOX_URL"]
    """
    if not thread_id:
        return None
    page = os.environ.get(INBOX_URL_ENV, "").strip().rstrip("/")
    if not page:
        server = os.environ.get("LANGGRAPH_API_URL", "").strip().rstrip("/")
        try:
            http = json.loads(os.environ.get("LANGGRAPH_HTTP") or "null") or {}
        except ValueError:
            http = {}
        app = http.get("app") if isinstance(http, Mapping) else None
        if not server or not (isinstance(app, str) and app.startswith("inferact_langgraph.inbox")):
            return None
        page = f"{server}/inferact/inbox"
    from urllib.parse import quote

    return f"{page}#/thread/{quote(str(thread_id), safe='')}"


def _short(text: str, sentences: int = 2) -> str:
    """The first ``sentences`` sentences of ``text`` on one line, at most a few hundred chars."""
    flat = " ".join(text.split())
    head = " ".join(_SENTENCE_END.split(flat)[:sentences])
    if len(head) > _JUSTIFICATION_CHARS:
        head = head[: _JUSTIFICATION_CHARS - 1].rstrip() + "…"
    return head


def review_description(record: Mapping[str, Any], *, link: str | None = None) -> str:
    """The ``description`` of a doubtful call's action request, for any HITL review UI.

    Agent Chat UI and Agent Inbox show only an action request's ``description``, so it says
    why in a few readable lines: the score against the threshold (or why the critic failed),
    the user's task the call was judged against, the task the critic found most likely from
    the agent's actions with its probability, the critic's justification in one or two
    sentences, and ``link`` (the thread's inbox page) when given.

    Args:
        record: The guard's check record of the call (see :class:`~inferact_langgraph.records.
            CheckRecord`).
        link: Where to review the call with every detail (:func:`inbox_link`).

    Example:
        >>> record = {"score": 0.1, "threshold": 0.5, "task": "66x66 inch shades",
        ...           "options": ["a custom size shade", "66x66 inch shades"],
        ...           "option_probs": {"A": 0.8, "B": 0.1},
        ...           "verdict": {"inferred_tasks": ["a custom size shade"],
        ...                       "justification": "It bought B0SHDCUSTM. That is custom."}}
        >>> print(review_description(record))
        InferAct doubts this call: p(user's task) = 0.10 < threshold 0.50.
        Judged against the user's task: "66x66 inch shades"
        Most likely task, from the agent's actions (p = 0.80): "a custom size shade"
        Critic: It bought B0SHDCUSTM. That is custom.
    """
    raw_verdict = record.get("verdict")
    verdict: Mapping[str, Any] = raw_verdict if isinstance(raw_verdict, Mapping) else {}
    lines = [str(record["description"])] if record.get("description") else []
    if record.get("error"):
        lines.append(
            f"The critic could not check this call ({record['error']}); a human must decide."
        )
    elif is_spot_check(record):
        lines.append(
            f"{SPOT_CHECK_NOTE} p(user's task) = {record['score']:.2f} "
            f">= threshold {record['threshold']:.2f}."
        )
    else:
        why = (
            f"InferAct doubts this call: p(user's task) = {record['score']:.2f} "
            f"< threshold {record['threshold']:.2f}."
        )
        if verdict.get("uncalibrated_score") is not None:
            why += f" (calibrated; raw score {verdict['uncalibrated_score']:.2f})"
        lines.append(why)
    if record.get("task"):
        lines.append(f'Judged against the user\'s task: "{_short(str(record["task"]), 3)}"')
    inferred = [str(t) for t in verdict.get("inferred_tasks") or []]
    options = [str(o) for o in record.get("options") or []]
    probs = record.get("option_probs") or {}
    labelled = [
        (probs.get(label), text)
        for label, text in zip(option_labels(len(options)), options, strict=True)
        if text in inferred
    ]
    rated = [(p, text) for p, text in labelled if isinstance(p, int | float)]
    if rated:
        p, text = max(rated, key=lambda pair: pair[0])
        lines.append(f'Most likely task, from the agent\'s actions (p = {p:.2f}): "{_short(text)}"')
    elif inferred:
        lines.append(f'Most likely task, from the agent\'s actions: "{_short(inferred[0])}"')
    if verdict.get("justification"):
        lines.append(f"Critic: {_short(str(verdict['justification']))}")
    if link:
        lines.append(f"{INBOX_LINK_LABEL}{link}")
    return "\n".join(lines)


def is_decision_type(value: object) -> TypeGuard[DecisionType]:
    """Whether ``value`` names one of LangChain's decision types."""
    return value in DECISION_TYPES


class ActionStep(TypedDict):
    """One step of the chain the critic judged (thoughts are never part of it)."""

    action: str
    observation: str | None


class InferActReviewInfo(TypedDict):
    """The critic's side of a review request (the ``inferact`` section of an action)."""

    tool_call_id: str
    ai_message_id: NotRequired[str | None]
    """The AI message that proposed the call: the decision is bound to it."""
    index: NotRequired[int | None]
    """The call's position in that message."""
    score: float | None
    """p(t*): the probability that the agent is on track for the user's real task."""
    threshold: float | None
    inferred_tasks: list[str]
    justification: str
    risk: str | None
    critic: str | None
    error: str | None
    """Why the critic could not judge the call, when it failed (fail closed)."""
    task: NotRequired[str | None]
    """The user's task the critic verified against."""
    scope: NotRequired[str | None]
    """Where that task came from: ``"request"`` (the user's newest request), ``"thread"`` (all
    their requests, in order) or ``"custom"`` (a ``task_extractor``)."""
    action_chain: NotRequired[list[ActionStep]]
    """The steps the critic judged, the pending call last."""
    options: NotRequired[list[str]]
    option_probs: NotRequired[dict[str, float]]
    order_probs: NotRequired[dict[str, dict[str, float]]]
    """Per-order option probabilities (``"original"``, ``"reversed"``), if the critic has them."""
    uncalibrated_score: NotRequired[float]
    """The critic's raw score, when a calibration mapped it to ``score`` (a probability)."""
    spot_check: NotRequired[bool]
    """True when the critic passed this call and it was drawn for a human's spot check
    (``spot_check=``): the reviewer checks the critic, not a doubt."""


class InferActActionRequest(ActionRequest):
    """LangChain's ``ActionRequest`` plus the critic's ``inferact`` section."""

    inferact: InferActReviewInfo


class ReviewRequest(HITLRequest):
    """The interrupt value: LangChain's ``HITLRequest`` with InferAct's action requests.

    A review of one call in its tool task (``review_in="tool_call"``) also carries LangChain's
    per-call ``ToolApprovalRequest`` keys (``type``, ``tool_call_id``, ``name``, ``args``,
    ``description``), so clients of either HITL mode can read it.
    """

    source: NotRequired[str]
    """Always ``"inferact"``: tells clients where the request comes from."""
    type: NotRequired[str]
    """``"tool_approval"`` for a per-call review."""
    tool_call_id: NotRequired[str]
    name: NotRequired[str]
    args: NotRequired[dict[str, Any]]
    description: NotRequired[str]


@dataclass(frozen=True)
class Decision:
    """A validated human decision for one action request."""

    type: DecisionType
    message: str | None = None
    edited_action: dict[str, Any] | None = None


# ---------------------------------------------------------------------------- the union
# LangChain's own decision TypedDicts, discriminated by "type": pydantic checks an answer only
# against the branch its type names, so a bad answer gets one precise error.
_DecisionModel = Annotated[
    Union[ApproveDecision, EditDecision, RejectDecision, RespondDecision],  # noqa: UP007
    Discriminator("type"),
]


class _Resume(TypedDict):
    decisions: list[_DecisionModel]


EditCheck = Callable[[str, dict[str, Any]], dict[str, Any]]
"""``(tool name, args) -> args``: validates (and coerces) an edit, raising ``ResumeError``."""


def _depth(value: Any) -> int:
    """Nesting depth of a JSON-like value, computed without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_RESUME_DEPTH:
            return level
        if isinstance(item, Mapping):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _expand(value: Any, count: int) -> Any:
    """The shorthands as a full ``{"decisions": [...]}`` value (a before-validator)."""
    if _depth(value) > MAX_RESUME_DEPTH:
        raise ResumeError(
            f"the resume value is nested deeper than {MAX_RESUME_DEPTH} levels",
            expected=EXPECTED_SHAPE,
            received="<too deep to show>",
        )
    if value is True:
        return {"decisions": [{"type": "approve"}] * count}
    if value is False:
        return {"decisions": [{"type": "reject"}] * count}
    if isinstance(value, str):
        if not value.strip():
            raise ResumeError(
                "an empty string is not feedback", expected=EXPECTED_SHAPE, received=value
            )
        return {"decisions": [{"type": "reject", "message": value}] * count}
    if isinstance(value, Mapping) and "type" in value and "decisions" not in value:
        if count != 1:
            raise ResumeError(
                f"a single decision was given but {count} actions await review",
                expected=EXPECTED_SHAPE,
                received=value,
            )
        return {"decisions": [value]}
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
    for index, raw in enumerate(decisions):
        if not isinstance(raw, Mapping):
            raise ResumeError(
                f"decisions[{index}] must be an object", expected=EXPECTED_SHAPE, received=raw
            )
        if raw.get("type") not in DECISION_TYPES:
            raise ResumeError(
                f"decisions[{index}] has unknown type {raw.get('type')!r}; "
                f"valid types are {list(DECISION_TYPES)}",
                expected=EXPECTED_SHAPE,
                received=raw,
            )
    return value


def _finish(
    resume: Mapping[str, Any], allowed: Sequence[str], check_edit: EditCheck | None
) -> list[Decision]:
    """The decisions, with the allowed types enforced and every edit checked (after-validator)."""
    out = []
    for index, item in enumerate(resume["decisions"]):
        where, kind = f"decisions[{index}]", item["type"]
        if kind not in allowed:
            raise ResumeError(
                f"{where}: {kind!r} is not allowed here; allowed decisions are {list(allowed)}",
                expected=EXPECTED_SHAPE,
                received=item,
            )
        if kind == "edit":
            name, args = item["edited_action"]["name"], dict(item["edited_action"]["args"])
            if check_edit is not None:
                args = check_edit(name, args)
            out.append(Decision(type="edit", edited_action={"name": name, "args": args}))
        elif kind == "respond":
            if not item["message"]:
                raise ResumeError(
                    f"{where}: a 'respond' decision needs a non-empty message",
                    expected=EXPECTED_SHAPE,
                    received=item,
                )
            out.append(Decision(type="respond", message=item["message"]))
        elif kind == "reject":
            out.append(Decision(type="reject", message=item.get("message") or None))
        else:
            out.append(Decision(type="approve"))
    return out


def resume_schema(
    *,
    count: int,
    allowed: Sequence[str] = DECISION_TYPES,
    check_edit: EditCheck | None = None,
) -> Any:
    """The ``response_schema`` for a review of ``count`` actions (a pydantic-validated type).

    LangGraph validates a resume against it before recording it; the validated value is the
    list of :class:`Decision`. Shorthands are expanded by a before-validator.
    """
    return Annotated[
        _Resume,
        BeforeValidator(lambda value: _expand(value, count)),
        AfterValidator(lambda resume: _finish(resume, allowed, check_edit)),
    ]


def resume_error(exc: ValidationError, received: Any = None) -> ResumeError:
    """The :class:`ResumeError` behind a ``ValidationError`` of :func:`resume_schema`."""
    errors = exc.errors()
    for error in errors:
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, ResumeError):
            return cause
    if not errors:
        return ResumeError("resume: invalid", expected=EXPECTED_SHAPE, received=received)
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("_Resume",))
    kind = first.get("type", "")
    if kind == "missing" and where.endswith("respond.message"):
        message = f"{where}: a 'respond' decision needs a non-empty message"
    elif kind == "missing" and "edited_action" in where:
        message = f"{where}: an 'edit' needs edited_action with a string 'name' and a dict 'args'"
    else:
        message = f"{where or 'resume'}: {first.get('msg', 'invalid')}"
    if "edited_action" in where and "an 'edit' needs" not in message:
        message += " (an 'edit' needs edited_action with a string 'name' and a dict 'args')"
    return ResumeError(message, expected=EXPECTED_SHAPE, received=received)


def parse_resume(
    value: Any,
    *,
    count: int,
    allowed: Sequence[str] = DECISION_TYPES,
    check_edit: EditCheck | None = None,
) -> list[Decision]:
    """Validate a resume value against a request with ``count`` action requests.

    Args:
        value: What the caller passed to ``Command(resume=...)``.
        count: How many action requests the interrupt holds.
        allowed: The decision types that may be used.
        check_edit: Validates an edit's tool name and arguments (and may coerce them).

    Raises:
        ResumeError: The value is not a valid answer; the message shows the expected shape.
    """
    adapter: TypeAdapter[list[Decision]] = TypeAdapter(
        resume_schema(count=count, allowed=allowed, check_edit=check_edit)
    )
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise resume_error(exc, value if _depth(value) <= MAX_RESUME_DEPTH else None) from None
