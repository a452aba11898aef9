"""Answering a review at most once, even when several workers answer at the same moment.

LangGraph does not lock a thread: two processes that resume the same interrupt at the same time
both run the gate, and an approved tool would run twice. :func:`resume_review` holds a lock keyed
by the thread id while it checks that the interrupt is still pending and resumes it; a second
resumer waits, then finds the interrupt answered and gets :class:`AlreadyResumedError`.

Locks: :func:`thread_lock` (one process), :func:`postgres_advisory_lock` (many processes sharing
a Postgres database), or any ``thread_id -> context manager`` of your own.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_core.tools import tool
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from inferact_langgraph import critical, with_inferact
    >>> from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic
    >>> @critical
    ... @tool
    ... def pay(amount: int) -> str:
    ...     '''Pay.'''
    ...     return "paid"
    >>> actor = ScriptedChatModel(replies=[AIMessage("", tool_calls=[
    ...     {"name": "pay", "args": {"amount": 5}, "id": "p1"}]), "ok"])
    >>> graph = with_inferact(create_agent(actor, [pay]), critic=ScriptedCritic(scores=[0.1]),
    ...                       checkpointer=InMemorySaver())
    >>> cfg = {"configurable": {"thread_id": "r"}}
    >>> _ = graph.invoke({"messages": [("user", "pay 5")]}, cfg)
    >>> lock = thread_lock()
    >>> resume_review(graph, cfg, True, lock=lock)["messages"][-1].content
    'ok'
    >>> resume_review(graph, cfg, True, lock=lock)
    Traceback (most recent call last):
    ...
    inferact_langgraph.resume.AlreadyResumedError: thread r has no pending review ...
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from langgraph.types import Command

from inferact_langgraph.errors import InferActError

__all__ = [
    "AlreadyResumedError",
    "aresume_review",
    "postgres_advisory_lock",
    "resume_review",
    "thread_lock",
]

LockFactory = Callable[[str], AbstractContextManager[Any]]


class AlreadyResumedError(InferActError):
    """The review was answered already (by another worker), or there is none to answer."""


def thread_lock() -> LockFactory:
    """A lock per thread id for the workers of one process."""
    guard = threading.Lock()
    locks: dict[str, threading.Lock] = {}

    @contextmanager
    def lock(thread_id: str) -> Iterator[None]:
        with guard:
            entry = locks.setdefault(thread_id, threading.Lock())
        with entry:
            yield

    return lock


def postgres_advisory_lock(dsn: str, *, key_space: int = 7) -> LockFactory:
    """A session-level Postgres advisory lock per thread id, for workers in many processes.

    Args:
        dsn: The Postgres connection string (a separate autocommit connection holds the lock).
        key_space: Seed of ``hashtextextended``, to keep these locks apart from others.
    """

    @contextmanager
    def lock(thread_id: str) -> Iterator[None]:
        import psycopg  # the [postgres] extra

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_advisory_lock(hashtextextended(%s, %s))", (thread_id, key_space)
            )
            try:
                yield
            finally:
                conn.execute(
                    "SELECT pg_advisory_unlock(hashtextextended(%s, %s))", (thread_id, key_space)
                )

    return lock


def _pending_id(state: Any, thread_id: str, interrupt_id: str | None) -> str:
    pending = [i.id for i in state.interrupts]
    if interrupt_id is None:
        if not pending:
            raise AlreadyResumedError(
                f"thread {thread_id} has no pending review (already answered?)"
            )
        if len(pending) > 1:
            raise ValueError(
                f"thread {thread_id} has {len(pending)} pending reviews {pending}: "
                "pass interrupt_id="
            )
        return pending[0]
    if interrupt_id not in pending:
        raise AlreadyResumedError(
            f"interrupt {interrupt_id} of thread {thread_id} is no longer pending "
            f"(already answered); pending now: {pending}"
        )
    return interrupt_id


def resume_review(
    graph: Any,
    config: dict[str, Any],
    value: Any,
    *,
    interrupt_id: str | None = None,
    lock: LockFactory | None = None,
    **invoke_kwargs: Any,
) -> Any:
    """Answer a pending review at most once.

    Args:
        graph: The guarded graph.
        config: Its config, with ``configurable.thread_id``.
        value: The resume value (``{"decisions": [...]}``, ``True``, ``False`` or feedback).
        interrupt_id: The interrupt to answer; needed when several are pending.
        lock: ``thread_id -> context manager``; :func:`thread_lock` by default (one process).
        **invoke_kwargs: Passed to ``graph.invoke`` (``durability`` defaults to ``"sync"``, so
            the answer is saved before another worker can take the lock).

    Raises:
        AlreadyResumedError: The interrupt is no longer pending.
    """
    thread_id = str(config["configurable"]["thread_id"])
    lock = lock or _DEFAULT_LOCK
    invoke_kwargs.setdefault("durability", "sync")
    with lock(thread_id):
        target = _pending_id(graph.get_state(config), thread_id, interrupt_id)
        return graph.invoke(Command(resume={target: value}), config, **invoke_kwargs)


async def aresume_review(
    graph: Any,
    config: dict[str, Any],
    value: Any,
    *,
    interrupt_id: str | None = None,
    lock: LockFactory | None = None,
    **invoke_kwargs: Any,
) -> Any:
    """Async :func:`resume_review`; the lock is taken on a worker thread."""
    thread_id = str(config["configurable"]["thread_id"])
    lock = lock or _DEFAULT_LOCK
    invoke_kwargs.setdefault("durability", "sync")
    manager = lock(thread_id)
    await asyncio.to_thread(manager.__enter__)
    try:
        target = _pending_id(await graph.aget_state(config), thread_id, interrupt_id)
        return await graph.ainvoke(Command(resume={target: value}), config, **invoke_kwargs)
    finally:
        await asyncio.to_thread(manager.__exit__, None, None, None)


_DEFAULT_LOCK = thread_lock()
