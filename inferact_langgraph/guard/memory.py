"""Feedback memory: what humans said about rejected actions, for the actor's next trial.

Feedback lives in graph state (``inferact_feedback``) and, when a LangGraph ``Store`` is
configured, under ``("inferact", "feedback", *owner, <task key>)``: the next trial of the same
task *by the same user*, in a new thread or another process, starts with the earlier feedback
in the actor's context. The owner comes from the run's config (:func:`memory_owner`): the
LangGraph server's authenticated user, else ``configurable["user_id"]``, else ``("shared",)``,
one namespace for every run that names no user.

The memory reaches the actor's model call and nowhere else: it is kept in the state key
``inferact_memory`` (:class:`MemoryContext`), never as a message of the thread.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> mem = FeedbackMemory()
    >>> alice = memory_owner({"configurable": {"user_id": "alice"}})
    >>> mem.save(store, "Buy 66x66 shades", {"tool": "buy_now", "feedback": "wrong size"},
    ...          owner=alice)
    >>> [e["feedback"] for e in mem.load(store, "Buy 66x66 shades", owner=alice)]
    ['wrong size']
    >>> mem.load(store, "Buy 66x66 shades")  # another user (here: the shared namespace)
    []
    >>> print(render_feedback(mem.load(store, "Buy 66x66 shades", owner=alice)))
    Feedback from earlier trials of this task (a human reviewed and rejected these actions):
    1. buy_now: wrong size
    >>> [(e["owner"], e["feedback"]) for e in mem.list_entries(store)]
    [(('user', 'alice'), 'wrong size')]
    >>> mem.clear(store, owner=alice)
    1
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.types import Command

from inferact_langgraph._store import asearch_all, search_all
from inferact_langgraph.guard.records import FeedbackEntry, MemoryContext
from inferact_langgraph.guard.state import MEMORY, raw_state, value_of
from inferact_langgraph.trajectory import TrajectoryError

__all__ = [
    "FEEDBACK_MARKER",
    "MEMORY_ID",
    "MEMORY_NAME",
    "SHARED_OWNER",
    "FeedbackMemory",
    "MemoryContext",
    "MemoryKeeper",
    "is_injected",
    "memory_context",
    "memory_message",
    "memory_owner",
    "system_message_with",
    "without_memory_messages",
]

FEEDBACK_MARKER = "Feedback from earlier trials of this task"
Owner = Sequence[str]
"""Labels naming whose memory it is, such as ``("user", "alice")``."""
SHARED_OWNER: tuple[str, ...] = ("shared",)
"""The owner of the feedback of runs that name no user: every such run shares it."""
MEMORY_NAME = MEMORY
"""The ``name`` of the message that carries earlier feedback into the actor's input."""
MEMORY_ID = "do-not-render-inferact-memory"
"""Its id: Agent Chat UI does not render a message whose id starts with ``do-not-render-``."""
# Ids that memory messages kept in the state of older threads carry: never a request either.
_KEPT_MEMORY_PREFIX = "inferact-memory-"

MemoryNamespace = Callable[[Mapping[str, Any]], Sequence[str]]
"""``config -> labels``: whose feedback memory a run reads and writes (a user, a tenant)."""


# ---------------------------------------------------------------------------- the actor's view
def is_injected(message: Any) -> bool:
    """Whether a message is InferAct's own (earlier feedback), never the user's words."""
    ident = str(getattr(message, "id", None) or "")
    return (
        getattr(message, "name", None) == MEMORY_NAME
        or ident.startswith((MEMORY_ID, _KEPT_MEMORY_PREFIX))
    )


def memory_message(text: str) -> HumanMessage:
    """The message that carries earlier feedback into the actor's input (never into state).

    ``with_inferact`` adds it to the actor node's input only and drops it from the node's
    output. Its ``name`` and id mark it as InferAct's: Agent Chat UI does not render a
    message whose id starts with ``do-not-render-``, and no request is ever taken from it.

    Example:
        >>> m = memory_message("Feedback from earlier trials of this task: ...")
        >>> m.name, m.id
        ('inferact_memory', 'do-not-render-inferact-memory')
    """
    return HumanMessage(content=text, name=MEMORY_NAME, id=MEMORY_ID)


def memory_text(state: Any) -> str | None:
    """The memory the actor should see now (``None`` when there is none)."""
    memory = value_of(state, MEMORY)
    text = memory.get("text") if isinstance(memory, Mapping) else None
    return text or None


def without_memory_messages(out: Any) -> Any:
    """A node's output without the memory message (a node returning its input's messages)."""
    if isinstance(out, list):
        return [without_memory_messages(item) for item in out]
    if isinstance(out, Command) and isinstance(out.update, dict):
        return dataclasses.replace(out, update=without_memory_messages(out.update))
    if isinstance(out, dict) and isinstance(out.get("messages"), list):
        kept = [m for m in out["messages"] if not is_injected(m)]
        if len(kept) != len(out["messages"]):
            return {**out, "messages": kept}
    return out


def system_message_with(system: SystemMessage | None, text: str) -> SystemMessage:
    """A model call's system message with the memory ``text`` added at its end.

    Example:
        >>> message = system_message_with(SystemMessage("Be brief."), "Earlier: wrong size.")
        >>> message.content.splitlines()
        ['Be brief.', '', 'Earlier: wrong size.']
    """
    if system is None:
        return SystemMessage(text)
    if isinstance(system.content, str):
        content: Any = f"{system.content}\n\n{text}" if system.content else text
    else:
        content = [*system.content, {"type": "text", "text": text}]
    return SystemMessage(content)


def memory_context(
    task: str, entries: Sequence[Mapping[str, Any]], owner: Sequence[str] | None = None
) -> MemoryContext:
    """The memory state value for ``task`` (``text`` None with no entries)."""
    return {
        "task": task,
        "text": render_feedback(entries) if entries else None,
        "owner": None if owner is None else list(owner),
    }


def task_key(task: str) -> str:
    """A stable store key for a task: a hash of its whitespace-normalised, lower-cased text."""
    normal = " ".join(task.split()).lower()
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:32]


def _label(value: Any) -> str:
    # Store namespace labels may not be empty or contain "." (an e-mail address as user id).
    text = str(value).replace("%", "%25").replace(".", "%2E")
    return text or "%00"


def _unlabel(label: str) -> str:
    return "" if label == "%00" else label.replace("%2E", ".").replace("%25", "%")


def memory_owner(config: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Whose feedback a run reads and writes, from its config.

    The LangGraph server's authenticated user (``configurable["langgraph_auth_user_id"]``),
    else ``configurable["user_id"]``, else :data:`SHARED_OWNER`.

    Example:
        >>> memory_owner({"configurable": {"langgraph_auth_user_id": "u-1", "user_id": "x"}})
        ('user', 'u-1')
        >>> memory_owner({})
        ('shared',)
    """
    configurable = (config or {}).get("configurable") or {}
    for key in ("langgraph_auth_user_id", "user_id"):
        value = configurable.get(key)
        if value is not None and str(value) != "":
            return ("user", str(value))
    return SHARED_OWNER


def _owner_mac(owner: Sequence[str], config: Mapping[str, Any] | None, key: bytes) -> str:
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    text = json.dumps([[str(part) for part in owner], str(thread)])
    return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def sign_owner(
    context: MemoryContext, config: Mapping[str, Any] | None, key: bytes | None
) -> MemoryContext:
    """``context`` with its owner bound to this run's thread by an HMAC (when there is a key)."""
    owner = context.get("owner")
    if key is None or not owner:
        return context
    return {**context, "owner_signature": _owner_mac(owner, config, key)}


def recorded_owner(
    context: Any, config: Mapping[str, Any] | None, key: bytes | None
) -> tuple[str, ...] | None:
    """The owner recorded in an ``inferact_memory`` value, or None when absent or untrusted.

    With a signing ``key`` the owner must carry a valid signature for this thread: whoever can
    write a thread's state (``update_state``) could otherwise send a review's feedback into
    another user's memory. Without a key a recorded owner is taken as written.
    """
    owner = context.get("owner") if isinstance(context, Mapping) else None
    if not owner or isinstance(owner, str):
        return None
    if key is not None:
        given = str(context.get("owner_signature") or "")
        if not hmac.compare_digest(given, _owner_mac(owner, config, key)):
            return None
    return tuple(str(part) for part in owner)


def render_feedback(entries: Sequence[Mapping[str, Any]]) -> str:
    """The memory text the actor sees at the start of a trial."""
    lines = [f"{FEEDBACK_MARKER} (a human reviewed and rejected these actions):"]
    for i, entry in enumerate(entries, start=1):
        text = entry.get("reflection") or entry.get("feedback") or "the action was rejected"
        lines.append(f"{i}. {entry.get('tool', 'action')}: {text}")
    return "\n".join(lines)


class FeedbackMemory:
    """Reads, writes, lists and clears feedback entries in a LangGraph store, per owner.

    Args:
        key: Maps the task text to the store key (default: :func:`task_key`). Supply your own
            to share feedback across differently worded tasks.
        namespace: The namespace prefix (default ``("inferact", "feedback")``).
        limit: At most this many most recent entries are loaded.
    """

    def __init__(
        self,
        *,
        key: Callable[[str], str] = task_key,
        namespace: tuple[str, ...] = ("inferact", "feedback"),
        limit: int = 20,
    ) -> None:
        if limit <= 0:
            raise ValueError(f"limit must be > 0, got {limit}")
        self.key = key
        self.namespace = tuple(namespace)
        self.limit = limit

    def namespace_for(self, task: str, owner: Sequence[str] = SHARED_OWNER) -> tuple[str, ...]:
        """The store namespace of ``owner``'s feedback on ``task``."""
        return (*self.namespace, *self._owner(owner), self.key(task))

    @staticmethod
    def _owner(owner: Sequence[str]) -> tuple[str, ...]:
        if isinstance(owner, str) or not owner:
            raise ValueError(
                "owner must be a non-empty tuple of labels such as ('user', 'alice'), "
                f"got {owner!r}"
            )
        return tuple(_label(part) for part in owner)

    def _item(
        self, task: str, entry: Mapping[str, Any], owner: Sequence[str]
    ) -> tuple[tuple[str, ...], str, dict[str, Any]]:
        """(namespace, key, value) of a new entry: keys sort by time, never collide."""
        now = time.time()
        key = f"{now:.6f}-{uuid.uuid4().hex[:8]}"
        return self.namespace_for(task, owner), key, {"time": now, **entry}

    def save(
        self, store: Any, task: str, entry: Mapping[str, Any], *, owner: Owner = SHARED_OWNER
    ) -> None:
        """Store one feedback entry of ``owner`` for ``task``."""
        store.put(*self._item(task, entry, owner))

    async def asave(
        self, store: Any, task: str, entry: Mapping[str, Any], *, owner: Owner = SHARED_OWNER
    ) -> None:
        """Async :meth:`save`."""
        await store.aput(*self._item(task, entry, owner))

    def load(
        self, store: Any, task: str, *, owner: Sequence[str] = SHARED_OWNER
    ) -> list[dict[str, Any]]:
        """``owner``'s most recent entries for ``task``, oldest first."""
        namespace = self.namespace_for(task, owner)
        return self._order(namespace, store.search(namespace, limit=1000))

    async def aload(
        self, store: Any, task: str, *, owner: Sequence[str] = SHARED_OWNER
    ) -> list[dict[str, Any]]:
        """Async :meth:`load`."""
        namespace = self.namespace_for(task, owner)
        return self._order(namespace, await store.asearch(namespace, limit=1000))

    def _order(self, namespace: tuple[str, ...], items: Sequence[Any]) -> list[dict[str, Any]]:
        # A store search matches a namespace *prefix*: an owner whose labels extend this one's
        # (("org", "acme", <task key>) under ("org", "acme")) must not be read as this owner's.
        mine = (dict(item.value) for item in items if tuple(item.namespace) == namespace)
        values = sorted(mine, key=lambda v: v.get("time", 0))
        return values[-self.limit :]

    # ------------------------------------------------------------------ list and clear
    def _prefix(self, owner: Sequence[str] | None) -> tuple[str, ...]:
        return self.namespace if owner is None else (*self.namespace, *self._owner(owner))

    def _listed(self, items: Sequence[Any], task: str | None) -> list[dict[str, Any]]:
        wanted = None if task is None else self.key(task)
        out = []
        for item in items:
            namespace = tuple(item.namespace)
            owner, key = namespace[len(self.namespace) : -1], namespace[-1]
            if not owner or (wanted is not None and key != wanted):
                continue  # an entry of an older layout (no owner), or another task
            out.append(
                {
                    **dict(item.value),
                    "owner": tuple(_unlabel(p) for p in owner),
                    "task_key": key,
                    "key": item.key,
                    "namespace": namespace,
                }
            )
        return sorted(out, key=lambda v: (v["owner"], v.get("time", 0)))



    def list_entries(
        self, store: Any, *, owner: Sequence[str] | None = None, task: str | None = None
    ) -> list[dict[str, Any]]:
        """Remembered feedback, by owner then time: every owner's, or ``owner``'s, on ``task``.

        Each entry is the stored one plus ``owner``, ``task_key``, ``key`` and ``namespace``
        (what :meth:`clear` deletes).
        """
        return self._listed(search_all(store, self._prefix(owner)), task)

    async def alist_entries(
        self, store: Any, *, owner: Sequence[str] | None = None, task: str | None = None
    ) -> list[dict[str, Any]]:
        """Async :meth:`list_entries`."""
        return self._listed(await asearch_all(store, self._prefix(owner)), task)

    def clear(
        self, store: Any, *, owner: Sequence[str] | None = None, task: str | None = None
    ) -> int:
        """Delete remembered feedback (all, ``owner``'s, and/or on ``task``); the count deleted."""
        entries = self.list_entries(store, owner=owner, task=task)
        for entry in entries:
            store.delete(entry["namespace"], entry["key"])
        return len(entries)

    async def aclear(
        self, store: Any, *, owner: Sequence[str] | None = None, task: str | None = None
    ) -> int:
        """Async :meth:`clear`."""
        entries = await self.alist_entries(store, owner=owner, task=task)
        for entry in entries:
            await store.adelete(entry["namespace"], entry["key"])
        return len(entries)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MemoryKeeper:
    """One guard's feedback memory: whose it is, loading it for a request, saving a review's.

    Args:
        memory: Where feedback is kept in the store.
        task_of: ``state -> task``: the task in scope, whose feedback is loaded.
        namespace: ``config -> labels``: whose memory a run uses (default
            :func:`memory_owner`).
        key: The signing key: the owner recorded in the state is signed with it.

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> keeper = MemoryKeeper(memory=FeedbackMemory(), task_of=lambda state: "buy a mug")
        >>> store, alice = InMemoryStore(), {"configurable": {"user_id": "alice"}}
        >>> keeper.save([{"task": "buy a mug", "tool": "buy", "feedback": "too big"}],
        ...             store, alice, state={})
        >>> keeper.load({}, store, alice)["inferact_memory"]["text"].splitlines()[1]
        '1. buy: too big'
    """

    memory: FeedbackMemory
    task_of: Callable[[Any], str]
    namespace: MemoryNamespace | None = None
    key: bytes | None = None

    def owner(self, config: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Whose feedback memory this run uses (see ``memory_namespace``).

        Raises:
            ValueError: A ``memory_namespace`` hook that does not return labels.
        """
        if self.namespace is None:
            return memory_owner(config)
        labels = self.namespace(config or {})
        if (
            isinstance(labels, str)
            or not isinstance(labels, Sequence)
            or not labels
            or not all(isinstance(x, str) and x for x in labels)
        ):
            raise ValueError(
                "memory_namespace must return a non-empty tuple of non-empty strings, such as "
                f"('org', 'acme', 'user', 'alice'); got {labels!r}"
            )
        return tuple(labels)

    def _task_to_load(self, state: Any, store: Any) -> tuple[str | None, dict[str, Any]]:
        """(the task to load memory for, or None with the update to return instead)."""
        current = value_of(state, MEMORY)
        if store is None and not current:
            return None, {}  # nothing to load, nothing to clear: no work on this path
        try:
            task = self.task_of(raw_state(state))
        except TrajectoryError:
            return None, ({MEMORY: None} if current else {})
        if current and current.get("task") == task:
            return None, {}  # loaded for this request already (or written by a retry)
        if store is None:
            return None, ({MEMORY: None} if current else {})
        return task, {}

    def _loaded(
        self, task: str, entries: Sequence[Mapping[str, Any]], owner: tuple[str, ...], config: Any
    ) -> dict[str, Any]:
        return {MEMORY: sign_owner(memory_context(task, entries, owner), config, self.key)}

    def load(
        self, state: Any, store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The state update with this user's earlier feedback on the task in scope.

        Loaded once per task, into the memory key, never into the messages: the actor's model
        call receives it, the thread (and a chat UI showing it) does not.
        """
        task, update = self._task_to_load(state, store)
        if task is None:
            return update
        owner = self.owner(config)
        return self._loaded(task, self.memory.load(store, task, owner=owner), owner, config)

    async def aload(
        self, state: Any, store: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Async :meth:`load`."""
        task, update = self._task_to_load(state, store)
        if task is None:
            return update
        owner = self.owner(config)
        return self._loaded(task, await self.memory.aload(store, task, owner=owner), owner, config)

    def feedback_owner(self, state: Any, config: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Whose memory a review's feedback goes to: the thread's user, not the reviewer's.

        The owner recorded when the request's memory was loaded wins (a reviewer, or a resume
        that names no user, must never move a user's feedback into another namespace); else
        the owner of this run's config. With a signing key only a signed owner is recorded.
        """
        return recorded_owner(value_of(state, MEMORY), config, self.key) or self.owner(config)

    def _writes(
        self, feedback: Sequence[FeedbackEntry], store: Any, config: Any, state: Any
    ) -> list[tuple[FeedbackEntry, tuple[str, ...]]]:
        """Each feedback entry to keep, with the owner it is kept under (none without a store)."""
        if store is None or not feedback:
            return []
        owner = self.feedback_owner(state, config)
        return [(entry, owner) for entry in feedback]

    def save(
        self, feedback: Sequence[FeedbackEntry], store: Any, config: Any = None, *, state: Any
    ) -> None:
        """Keep a review's feedback in the memory of the thread's user (with a store)."""
        for entry, owner in self._writes(feedback, store, config, state):
            self.memory.save(store, entry["task"], entry, owner=owner)

    async def asave(
        self, feedback: Sequence[FeedbackEntry], store: Any, config: Any = None, *, state: Any
    ) -> None:
        """Async :meth:`save`."""
        for entry, owner in self._writes(feedback, store, config, state):
            await self.memory.asave(store, entry["task"], entry, owner=owner)
