"""Feedback memory: what humans said about rejected actions, for the actor's next trial.

Feedback lives in graph state (``inferact_feedback``) and, when a LangGraph ``Store`` is
configured, under ``("inferact", "feedback", <task key>)``, so that the next trial of the same
task, in a new thread or another process, starts with the earlier feedback in its context.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> mem = FeedbackMemory()
    >>> mem.save(store, "Buy 66x66 shades", {"tool": "buy_now", "feedback": "wrong size"})
    >>> [e["feedback"] for e in mem.load(store, "Buy 66x66 shades")]
    ['wrong size']
    >>> print(render_feedback(mem.load(store, "Buy 66x66 shades")))
    Feedback from earlier trials of this task (a human reviewed and rejected these actions):
    1. buy_now: wrong size
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["FEEDBACK_MARKER", "FeedbackMemory", "render_feedback", "task_key"]

FEEDBACK_MARKER = "Feedback from earlier trials of this task"


def task_key(task: str) -> str:
    """A stable store key for a task: a hash of its whitespace-normalised, lower-cased text."""
    normal = " ".join(task.split()).lower()
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:32]


def render_feedback(entries: Sequence[Mapping[str, Any]]) -> str:
    """The memory text the actor sees at the start of a trial."""
    lines = [f"{FEEDBACK_MARKER} (a human reviewed and rejected these actions):"]
    for i, entry in enumerate(entries, start=1):
        text = entry.get("reflection") or entry.get("feedback") or "the action was rejected"
        lines.append(f"{i}. {entry.get('tool', 'action')}: {text}")
    return "\n".join(lines)


class FeedbackMemory:
    """Reads and writes feedback entries in a LangGraph store.

    Args:
        key: Maps the task text to the store key (default: :func:`task_key`). Supply your own
            to share feedback across differently worded tasks, or per user.
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
        self.namespace = namespace
        self.limit = limit

    def _ns(self, task: str) -> tuple[str, ...]:
        return (*self.namespace, self.key(task))

    def save(self, store: Any, task: str, entry: Mapping[str, Any]) -> None:
        """Store one feedback entry for ``task``."""
        record = {"time": time.time(), **entry}
        store.put(self._ns(task), f"{record['time']:.6f}-{uuid.uuid4().hex[:8]}", record)

    async def asave(self, store: Any, task: str, entry: Mapping[str, Any]) -> None:
        """Async :meth:`save`."""
        record = {"time": time.time(), **entry}
        await store.aput(self._ns(task), f"{record['time']:.6f}-{uuid.uuid4().hex[:8]}", record)

    def load(self, store: Any, task: str) -> list[dict[str, Any]]:
        """The most recent entries for ``task``, oldest first."""
        items = store.search(self._ns(task), limit=1000)
        return self._order(items)

    async def aload(self, store: Any, task: str) -> list[dict[str, Any]]:
        """Async :meth:`load`."""
        items = await store.asearch(self._ns(task), limit=1000)
        return self._order(items)

    def _order(self, items: Sequence[Any]) -> list[dict[str, Any]]:
        values = sorted((dict(item.value) for item in items), key=lambda v: v.get("time", 0))
        return values[-self.limit :]
