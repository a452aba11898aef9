"""Reviewers' decisions as labels, and spot checks of what the critic passed.

Every human decision on a reviewed call is a label on the critic's check: *approve* means the
call was on track (a flagged one was a false alarm), *reject* and *edit* mean it was off track
(a caught mistake), *respond* is kept unlabelled (``on_track`` is ``None``; ``inferact
calibrate --respond-as`` decides). A label keeps what the audit entry keeps (tool, arguments,
risk, the task and the action chain judged, the critic's numbers) plus the raw and calibrated
scores, the critic's preset, who decided and when, with every string passed through the same
redaction of secrets as error texts (:func:`~inferact_langgraph._redact.redact`).

Labels live in the LangGraph store the guard already uses (in-memory, SQLite, Postgres, the
LangGraph server's), under ``("inferact", "labels", <deployment>, *owner)``: per deployment
and per user, never per thread, so deleting a thread loses no label. ``inferact calibrate``
reads them back and fits a calibration for this deployment; ``inferact labels clear`` deletes
them per user or per deployment.

A label is only unbiased evidence about calls the critic *passed* when a human sees some of
them too: ``spot_check=0.02`` sends that share of the passed calls to a human anyway
(:class:`SpotCheck`). The draw is per call, recorded in the check record, and reproducible
with ``spot_check_seed``; each label keeps the probability that its call was reviewed
(``inclusion``: 1 for a call the critic flagged, the rate for a spot check), so the fit and
the miss rate weigh spot checks by the inverse of that rate.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> labels = ReviewLabels(deployment="shop")
    >>> record = {"tool_call_id": "c1", "tool": "buy_now", "args": {"asin": "B1"},
    ...           "score": 0.3, "threshold": 0.5, "critic": "inferact", "task": "buy a mug"}
    >>> label = labels.label(record, {"decision": "approve", "time": 1.0}, owner=("shared",),
    ...                      thread_id="t1")
    >>> label["on_track"], label["inclusion"], label["false_alarm"]
    (True, 1.0, True)
    >>> labels.save(store, label)
    >>> [(x["thread_id"], x["decision"]) for x in labels.list_labels(store)]
    [('t1', 'approve')]
    >>> labels.clear(store, deployment="shop")
    1
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from typing_extensions import TypedDict

from inferact_langgraph._redact import redact

__all__ = [
    "LABELS_NAMESPACE",
    "SPOT_CHECK_NOTE",
    "LabelSummary",
    "ReviewLabel",
    "ReviewLabels",
    "SpotCheck",
    "SpotCheckMark",
    "current_thread_id",
    "is_spot_check",
    "label_summary",
    "labels_of_outcome",
    "on_track_of",
]

LABELS_NAMESPACE: tuple[str, ...] = ("inferact", "labels")
"""The store namespace prefix of every label: ``(*LABELS_NAMESPACE, deployment, *owner)``."""

SPOT_CHECK_NOTE = "The critic passed this; you are checking it (a spot check)."
"""What a spot check's review says (the description shown in Agent Chat UI and the inbox)."""

_LABELLED = {"approve": True, "reject": False, "edit": False, "respond": None}
_WEEK = 7 * 24 * 3600.0
_SYSTEM_RANDOM = random.SystemRandom()


def on_track_of(decision: str) -> bool | None:
    """The label a human decision gives: approve = on track, reject/edit = off track.

    ``respond`` (the human answered in the tool's place) says nothing about the call: ``None``.

    Example:
        >>> on_track_of("approve"), on_track_of("edit"), on_track_of("respond")
        (True, False, None)
    """
    if decision not in _LABELLED:
        raise ValueError(f"decision must be one of {sorted(_LABELLED)}, got {decision!r}")
    return _LABELLED[decision]


# ---------------------------------------------------------------------------- spot checks
class SpotCheckMark(TypedDict):
    """The check record's ``spot_check`` field: the draw for one call the critic passed."""

    rate: float
    """The share of passed calls sent to a human (``spot_check=``)."""
    draw: float
    """The uniform draw in [0, 1) for this call; selected when ``draw < rate``."""
    selected: bool
    """Whether this call waits for a human although the critic passed it."""
    seeded: bool
    """Whether the draw came from ``spot_check_seed`` (reproducible) or the system's RNG."""


@dataclass(frozen=True)
class SpotCheck:
    """Sends a share of the calls the critic passed to a human anyway.

    Args:
        rate: The share in [0, 1] (``0``: never).
        seed: With a seed, the draw for a call is a hash of the seed, the thread and the call
            id: the same thread replayed draws the same. Without one, the system's RNG.

    Raises:
        ValueError: A rate outside [0, 1] or a seed that is not an int.

    Example:
        >>> spot = SpotCheck(rate=0.5, seed=7)
        >>> spot.draw("thread-1", "call-1") == spot.draw("thread-1", "call-1")
        True
        >>> record = {"tool_call_id": "call-1", "score": 0.9, "threshold": 0.5}
        >>> spot.mark(record, "thread-1")["spot_check"]["rate"]
        0.5
    """

    rate: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        rate = self.rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
            raise ValueError(f"spot_check must be a share in [0, 1] such as 0.02, got {rate!r}")
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int)
        ):
            raise ValueError(f"spot_check_seed must be an int or None, got {self.seed!r}")
        object.__setattr__(self, "rate", float(rate))

    def draw(self, thread_id: str | None, tool_call_id: str | None) -> float:
        """The uniform draw in [0, 1) for one call."""
        if self.seed is None:
            return _SYSTEM_RANDOM.random()
        text = f"{self.seed}\x00{thread_id}\x00{tool_call_id}".encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") / 2**64

    def mark(self, record: Mapping[str, Any], thread_id: str | None) -> dict[str, Any]:
        """``record`` with its ``spot_check`` draw; call it on records the critic passed only."""
        u = self.draw(thread_id, record.get("tool_call_id"))
        mark: SpotCheckMark = {
            "rate": self.rate,
            "draw": u,
            "selected": u < self.rate,
            "seeded": self.seed is not None,
        }
        return {**record, "spot_check": mark}


def is_spot_check(record: Mapping[str, Any] | None) -> bool:
    """Whether ``record`` is a passed call drawn for a human's spot check.

    Example:
        >>> is_spot_check({"spot_check": {"selected": True}}), is_spot_check({})
        (True, False)
    """
    mark = record.get("spot_check") if isinstance(record, Mapping) else None
    return isinstance(mark, Mapping) and mark.get("selected") is True


def current_thread_id() -> str | None:
    """The thread id of the current graph run (``None`` outside one)."""
    try:
        from langgraph.config import get_config

        value = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:
        return None
    return None if value is None else str(value)


# ---------------------------------------------------------------------------- labels
class ReviewLabel(TypedDict, total=False):
    """One human decision on a reviewed call, with the check it decided (a store value)."""

    deployment: str
    owner: list[str]
    """The thread's user (the memory owner), whoever reviewed."""
    thread_id: str | None
    tool_call_id: str | None
    tool: str | None
    args: dict[str, Any] | None
    risk: str | None
    critic: str | None
    preset: str | None
    score: float | None
    """The score the threshold met (calibrated, when the critic has a calibration)."""
    raw_score: float | None
    """The critic's own score, before any calibration: what ``inferact calibrate`` fits."""
    calibrated: bool
    threshold: float | None
    task: str | None
    scope: str | None
    action_chain: list[dict[str, Any]]
    inferred_tasks: list[str]
    justification: str
    error: str | None
    decision: str
    """``approve`` / ``reject`` / ``edit`` / ``respond``."""
    on_track: bool | None
    """approve: True; reject/edit: False; respond: None (unlabelled)."""
    flagged: bool
    """Whether the critic doubted the call (False for a spot check)."""
    false_alarm: bool
    """A flagged call the human approved."""
    spot_check: bool
    inclusion: float
    """The probability that this call was reviewed: 1 when flagged, the rate for a spot check."""
    decided_by: str
    reviewer: str | None
    """Who decided: the deciding run's user (the server's authenticated user, ``user_id``)."""
    time: float
    feedback: str | None
    edited: dict[str, Any] | None


def _label_part(value: Any) -> str:
    # Store namespace labels may not be empty or contain "." (see memory._label).
    text = str(value).replace("%", "%25").replace(".", "%2E")
    return text or "%00"


def _unlabel(part: str) -> str:
    return "" if part == "%00" else part.replace("%2E", ".").replace("%25", "%")


def _redacted(value: Any, known: Iterable[str]) -> Any:
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, Mapping):
        return {str(k): _redacted(v, known) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v, known) for v in value]
    return value


def _owner_text(config: Mapping[str, Any] | None) -> str | None:
    configurable = (config or {}).get("configurable") or {}
    for key in ("langgraph_auth_user_id", "user_id"):
        value = configurable.get(key)
        if value is not None and str(value) != "":
            return str(value)
    return None


class ReviewLabels:
    """Writes, lists and clears review labels in a LangGraph store, per deployment and user.

    Args:
        deployment: This deployment's name (one guarded agent in one place): labels of
            different deployments are fitted separately.
        namespace: The namespace prefix (default :data:`LABELS_NAMESPACE`).
        secrets: Values to redact besides what :func:`~inferact_langgraph._redact.redact`
            finds by shape (API keys, URL passwords, bearer tokens).

    Raises:
        ValueError: An empty deployment name or namespace.
    """

    def __init__(
        self,
        *,
        deployment: str = "default",
        namespace: Sequence[str] = LABELS_NAMESPACE,
        secrets: Iterable[str] = (),
    ) -> None:
        if not isinstance(deployment, str) or not deployment.strip():
            raise ValueError(f"deployment must be a non-empty name, got {deployment!r}")
        if isinstance(namespace, str) or not namespace or not all(namespace):
            raise ValueError(f"namespace must be non-empty labels, got {namespace!r}")
        self.deployment = deployment
        self.namespace = tuple(namespace)
        self.secrets = frozenset(secrets)

    def __repr__(self) -> str:
        return f"ReviewLabels(deployment={self.deployment!r})"

    # ------------------------------------------------------------------ building a label
    def label(
        self,
        record: Mapping[str, Any],
        entry: Mapping[str, Any],
        *,
        owner: Sequence[str],
        thread_id: str | None,
        config: Mapping[str, Any] | None = None,
        preset: str | None = None,
        known_secrets: Iterable[str] = (),
    ) -> ReviewLabel:
        """The label for one human decision: ``record`` the check, ``entry`` its audit entry."""
        decision = str(entry.get("decision"))
        verdict = record.get("verdict") or {}
        score = record.get("score")
        raw = verdict.get("uncalibrated_score")
        spot = is_spot_check(record)
        mark = record.get("spot_check") if spot else None
        rate = float(mark["rate"]) if isinstance(mark, Mapping) else 1.0
        flagged = not spot
        on_track = on_track_of(decision)
        label: ReviewLabel = {
            "deployment": self.deployment,
            "owner": [str(p) for p in owner],
            "thread_id": thread_id,
            "tool_call_id": record.get("tool_call_id"),
            "tool": record.get("tool"),
            "args": dict(record.get("args") or {}),
            "risk": record.get("risk"),
            "critic": record.get("critic"),
            "preset": record.get("preset") or preset,
            "score": score,
            "raw_score": raw if raw is not None else score,
            "calibrated": raw is not None,
            "threshold": record.get("threshold"),
            "task": record.get("task"),
            "scope": record.get("scope"),
            "action_chain": [dict(s) for s in record.get("action_chain") or []],
            "inferred_tasks": [str(t) for t in verdict.get("inferred_tasks") or []],
            "justification": str(verdict.get("justification") or ""),
            "error": record.get("error"),
            "decision": decision,
            "on_track": on_track,
            "flagged": flagged,
            "false_alarm": flagged and on_track is True,
            "spot_check": spot,
            "inclusion": rate,
            "decided_by": str(entry.get("decided_by") or "human"),
            "reviewer": _owner_text(config),
            "time": float(entry.get("time") or time.time()),
            "feedback": entry.get("feedback"),
            "edited": entry.get("edited"),
        }
        known = {*self.secrets, *known_secrets}
        return cast(ReviewLabel, _redacted(label, known))

    # ------------------------------------------------------------------ the store
    def _owner_parts(self, owner: Sequence[str]) -> tuple[str, ...]:
        if isinstance(owner, str) or not owner:
            raise ValueError(
                f"owner must be non-empty labels such as ('user', 'alice'), got {owner!r}"
            )
        return tuple(_label_part(p) for p in owner)

    def namespace_for(self, owner: Sequence[str], deployment: str | None = None) -> tuple[str, ...]:
        """The namespace of ``owner``'s labels in ``deployment`` (default: this one)."""
        where = self.deployment if deployment is None else deployment
        return (*self.namespace, _label_part(where), *self._owner_parts(owner))

    @staticmethod
    def key_of(label: Mapping[str, Any]) -> str:
        """The label's store key: one per thread, call and arguments (a re-run overwrites)."""
        parts = [label.get("thread_id"), label.get("tool_call_id"), label.get("args")]
        text = repr(parts).encode("utf-8", "surrogatepass")
        return f"{label.get('thread_id')}:{hashlib.sha256(text).hexdigest()[:24]}"

    def save(self, store: Any, label: ReviewLabel) -> None:
        """Put one label into ``store``."""
        store.put(self.namespace_for(label["owner"]), self.key_of(label), dict(label))

    async def asave(self, store: Any, label: ReviewLabel) -> None:
        """Async :meth:`save`."""
        await store.aput(self.namespace_for(label["owner"]), self.key_of(label), dict(label))

    def _prefix(self, deployment: str | None, owner: Sequence[str] | None) -> tuple[str, ...]:
        prefix = self.namespace
        if deployment is not None:
            prefix = (*prefix, _label_part(deployment))
            if owner is not None:
                prefix = (*prefix, *self._owner_parts(owner))
        return prefix

    def _listed(
        self, items: Sequence[Any], deployment: str | None, owner: Sequence[str] | None
    ) -> list[dict[str, Any]]:
        wanted = None if owner is None else tuple(str(p) for p in owner)
        out = []
        for item in items:
            namespace = tuple(item.namespace)
            rest = namespace[len(self.namespace) :]
            if len(rest) < 2:
                continue
            where = _unlabel(rest[0])
            who = tuple(_unlabel(p) for p in rest[1:])
            if deployment is not None and where != deployment:
                continue
            if wanted is not None and who != wanted:
                continue  # another owner whose labels extend this one's
            out.append(
                {
                    **dict(item.value),
                    "deployment": where,
                    "owner": list(who),
                    "key": item.key,
                    "namespace": namespace,
                }
            )
        return sorted(out, key=lambda v: (v.get("time") or 0, v["key"]))

    def read(
        self,
        items: Sequence[Any],
        *,
        deployment: str | None = None,
        owner: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The labels among store items (objects with ``namespace``, ``key``, ``value``).

        For stores reached another way, such as the LangGraph server's through its SDK.
        """
        return self._listed(items, deployment, owner)

    @staticmethod
    def _search_all(store: Any, prefix: tuple[str, ...]) -> list[Any]:
        items: list[Any] = []
        while True:
            page = store.search(prefix, limit=500, offset=len(items))
            items.extend(page)
            if len(page) < 500:
                return items

    @staticmethod
    async def _asearch_all(store: Any, prefix: tuple[str, ...]) -> list[Any]:
        items: list[Any] = []
        while True:
            page = await store.asearch(prefix, limit=500, offset=len(items))
            items.extend(page)
            if len(page) < 500:
                return items

    def list_labels(
        self,
        store: Any,
        *,
        deployment: str | None = None,
        owner: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Labels, oldest first: every deployment's, or ``deployment``'s, or ``owner``'s there.

        ``owner`` without ``deployment`` matches that owner in every deployment. Each label is
        the stored value plus its ``key`` and ``namespace`` (what :meth:`clear` deletes).
        """
        prefix = self._prefix(deployment, owner)
        return self._listed(self._search_all(store, prefix), deployment, owner)

    async def alist_labels(
        self,
        store: Any,
        *,
        deployment: str | None = None,
        owner: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Async :meth:`list_labels`."""
        prefix = self._prefix(deployment, owner)
        return self._listed(await self._asearch_all(store, prefix), deployment, owner)

    def clear(
        self,
        store: Any,
        *,
        deployment: str | None = None,
        owner: Sequence[str] | None = None,
    ) -> int:
        """Delete labels (all, a deployment's, and/or an owner's); return how many."""
        found = self.list_labels(store, deployment=deployment, owner=owner)
        for label in found:
            store.delete(label["namespace"], label["key"])
        return len(found)

    async def aclear(
        self,
        store: Any,
        *,
        deployment: str | None = None,
        owner: Sequence[str] | None = None,
    ) -> int:
        """Async :meth:`clear`."""
        found = await self.alist_labels(store, deployment=deployment, owner=owner)
        for label in found:
            await store.adelete(label["namespace"], label["key"])
        return len(found)


def labels_of_outcome(
    labels: ReviewLabels,
    checks: Mapping[str, Any],
    audit: Sequence[Mapping[str, Any]],
    *,
    owner: Sequence[str],
    config: Mapping[str, Any] | None,
    critic: Any = None,
) -> list[ReviewLabel]:
    """The labels of one review round: one per human decision in ``audit``.

    ``checks`` are the records the round decided (the state's ``inferact_checks`` before it),
    ``critic`` the guard's critic (for its preset and the secrets its model holds).
    """
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    preset = getattr(critic, "preset", None)
    known = getattr(critic, "_secrets", None) or ()
    out: list[ReviewLabel] = []
    for entry in audit:
        if entry.get("decided_by") != "human":
            continue
        record = checks.get(str(entry.get("tool_call_id")))
        if not isinstance(record, Mapping):
            continue
        out.append(
            labels.label(
                record,
                entry,
                owner=owner,
                thread_id=None if thread_id is None else str(thread_id),
                config=config,
                preset=preset if isinstance(preset, str) else None,
                known_secrets=known,
            )
        )
    return out


# ---------------------------------------------------------------------------- running figures
class LabelSummary(TypedDict):
    """The running figures the inbox shows for one deployment."""

    deployment: str
    labels: int
    reviews_this_week: int
    flagged_reviewed: int
    """Flagged calls a human decided (all time)."""
    false_alarms: int
    """Flagged calls the human approved."""
    caught: int
    """Flagged calls the human rejected or edited."""
    spot_checks: int
    spot_check_misses: int
    """Spot checks the human rejected or edited: mistakes the critic passed."""
    threshold: float | None
    """The threshold of the newest label (the one in force)."""
    critic: str | None
    preset: str | None
    command: str
    """The command that fits this deployment's threshold from its labels."""


def label_summary(
    labels: Sequence[Mapping[str, Any]],
    *,
    deployment: str = "default",
    now: float | None = None,
    db: str = "<your store>",
) -> LabelSummary:
    """The running figures of one deployment's labels.

    Example:
        >>> rows = [{"decision": "approve", "flagged": True, "time": 0.0, "threshold": 0.5},
        ...         {"decision": "reject", "flagged": False, "spot_check": True, "time": 1.0,
        ...          "threshold": 0.5}]
        >>> s = label_summary(rows, now=2.0)
        >>> s["false_alarms"], s["spot_checks"], s["spot_check_misses"], s["reviews_this_week"]
        (1, 1, 1, 2)
    """
    now = time.time() if now is None else now
    mine = sorted(labels, key=lambda x: x.get("time") or 0)
    flagged = [x for x in mine if not x.get("spot_check")]
    spots = [x for x in mine if x.get("spot_check")]
    newest = mine[-1] if mine else {}
    command = (
        f"inferact calibrate --db {db} --deployment {deployment} --miss-cost 10 --review-cost 1"
    )
    return {
        "deployment": deployment,
        "labels": len(mine),
        "reviews_this_week": sum(1 for x in mine if now - float(x.get("time") or 0) <= _WEEK),
        "flagged_reviewed": len(flagged),
        "false_alarms": sum(1 for x in flagged if x.get("decision") == "approve"),
        "caught": sum(1 for x in flagged if x.get("decision") in ("reject", "edit")),
        "spot_checks": len(spots),
        "spot_check_misses": sum(1 for x in spots if x.get("decision") in ("reject", "edit")),
        "threshold": newest.get("threshold"),
        "critic": newest.get("critic"),
        "preset": newest.get("preset"),
        "command": command,
    }
