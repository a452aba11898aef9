"""Answering a review at most once, even when several workers answer at the same moment.

LangGraph does not lock a thread: two processes that resume the same interrupt at the same time
both run the gate, and an approved tool would run twice. :func:`resume_review` holds a lock keyed
by the thread id while it checks that the interrupt is still pending and resumes it; a second
resumer waits, then finds the interrupt answered and gets :class:`AlreadyResumedError`.

Locks: :func:`thread_lock` (one process), :func:`postgres_advisory_lock` (many processes sharing
a Postgres database), or any ``thread_id -> context manager`` of your own. :func:`aresume_review`
also takes ``thread_id -> async context manager`` (an ``asyncpg`` advisory lock, a Redis lock),
held on the event loop itself.

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
    inferact_langgraph.errors.AlreadyResumedError: thread r has no pending review ...
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from typing import Any

from langgraph.types import Command

from inferact_langgraph.errors import AlreadyResumedError, CheckpointerRequiredError

__all__ = [
    "AlreadyResumedError",
    "CheckpointerRequiredError",
    "aresume_review",
    "postgres_advisory_lock",
    "resume_review",
    "thread_lock",
]

LockFactory = Callable[[str], AbstractContextManager[Any]]
AsyncLockFactory = Callable[[str], AbstractAsyncContextManager[Any]]


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
    pending: list[str] = [i.id for i in state.interrupts]
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


def _thread_and_lock(
    config: dict[str, Any], lock: Any, invoke_kwargs: dict[str, Any]
) -> tuple[str, Callable[[str], Any]]:
    """The thread to resume and its lock; the run saves its answer before it returns."""
    invoke_kwargs.setdefault("durability", "sync")
    return str(config["configurable"]["thread_id"]), lock or _DEFAULT_LOCK


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
    thread_id, lock = _thread_and_lock(config, lock, invoke_kwargs)
    with lock(thread_id):
        target = _pending_id(graph.get_state(config), thread_id, interrupt_id)
        return graph.invoke(Command(resume={target: value}), config, **invoke_kwargs)


async def aresume_review(
    graph: Any,
    config: dict[str, Any],
    value: Any,
    *,
    interrupt_id: str | None = None,
    lock: LockFactory | AsyncLockFactory | None = None,
    **invoke_kwargs: Any,
) -> Any:
    """Async :func:`resume_review`; never blocks the event loop or its default executor.

    Resumes of one thread in this process first queue on an ``asyncio.Lock``. The one at the
    front then takes ``lock``: an async context manager is entered on the loop; a blocking one
    on a thread of its own (entered and left on that same thread), so any number of concurrent
    resumes occupy no thread of the loop's default executor, which the winner's graph run may
    need.
    """
    thread_id, chosen = _thread_and_lock(config, lock, invoke_kwargs)
    manager = chosen(thread_id)
    held = manager if isinstance(manager, AbstractAsyncContextManager) else _held(manager)
    async with _local_queue(chosen, thread_id), held:
        target = _pending_id(await graph.aget_state(config), thread_id, interrupt_id)
        return await graph.ainvoke(Command(resume={target: value}), config, **invoke_kwargs)


# One asyncio.Lock per (event loop, lock factory, thread id): resumes in one process queue here.
_QUEUES: weakref.WeakKeyDictionary[Any, dict[tuple[int, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


class _local_queue:  # noqa: N801 - used like a function: ``async with _local_queue(...)``
    """Queue the resumes of one thread in this process on an ``asyncio.Lock``."""

    def __init__(self, lock: Callable[[str], Any], thread_id: str) -> None:
        loop = asyncio.get_running_loop()
        locks = _QUEUES.setdefault(loop, {})
        self._key = (id(lock), thread_id)
        self._locks = locks
        self._lock = locks.setdefault(self._key, asyncio.Lock())

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(self, *exc: Any) -> None:
        self._lock.release()
        if not self._lock.locked() and not getattr(self._lock, "_waiters", None):
            self._locks.pop(self._key, None)  # no one queued: forget it


class _held:  # noqa: N801 - used like a function: ``async with _held(manager)``
    """Hold a blocking context manager from a dedicated thread while the body runs.

    The thread enters the manager, reports back, waits until the body is done and leaves the
    manager from the same thread (a lock owned by a thread is released by that thread). If the
    waiting coroutine is cancelled, the thread still leaves the manager as soon as it got in.
    """

    def __init__(self, manager: AbstractContextManager[Any]) -> None:
        self._manager = manager
        self._done = threading.Event()

    def _run(
        self,
        loop: asyncio.AbstractEventLoop,
        entered: asyncio.Future[None],
        left: asyncio.Future[None],
    ) -> None:
        def settle(future: asyncio.Future[None], error: BaseException | None) -> None:
            if future.done():
                return
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

        def tell(future: asyncio.Future[None], error: BaseException | None = None) -> None:
            try:
                loop.call_soon_threadsafe(settle, future, error)
            except RuntimeError:  # the loop is closed: nobody waits any more
                self._done.set()

        try:
            self._manager.__enter__()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
            tell(entered, exc)
            return
        try:
            tell(entered)
            self._done.wait()
        finally:
            try:
                self._manager.__exit__(None, None, None)
            finally:
                tell(left)

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        entered: asyncio.Future[None] = loop.create_future()
        self._left: asyncio.Future[None] = loop.create_future()
        thread = threading.Thread(
            target=self._run,
            args=(loop, entered, self._left),
            name="inferact-resume-lock",
            daemon=True,
        )
        thread.start()
        try:
            await entered
        except BaseException:
            self._done.set()  # cancelled or failed: the thread leaves the lock once it has it
            raise

    async def __aexit__(self, *exc: Any) -> None:
        self._done.set()
        await self._left  # released before the next resume may look at the thread


_DEFAULT_LOCK = thread_lock()
