"""resume_review answers a review at most once, even when two workers race."""

from __future__ import annotations

import asyncio
import threading

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.guard.resume import (
    AlreadyResumedError,
    aresume_review,
    resume_review,
    thread_lock,
)
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic


def make_graph(paid: list, *, slow: float = 0.0):
    @critical
    @tool
    def pay(amount: int) -> str:
        """Pay (irreversible)."""
        import time

        time.sleep(slow)
        paid.append(amount)
        return "paid"

    def policy(messages):
        if any(m.type == "tool" for m in messages):
            return "done"
        return AIMessage("", tool_calls=[{"name": "pay", "args": {"amount": 5}, "id": "p1"}])

    return with_inferact(
        create_agent(ScriptedChatModel(responder=policy), [pay]),
        critic=ScriptedCritic(scores=[0.1]),
        checkpointer=InMemorySaver(),
    )


def test_two_racing_resumes_run_the_tool_once():
    paid: list = []
    graph = make_graph(paid, slow=0.2)
    cfg = {"configurable": {"thread_id": "race"}}
    graph.invoke({"messages": [("user", "pay 5")]}, cfg)
    lock, outcomes = thread_lock(), []
    barrier = threading.Barrier(2)

    def worker():
        barrier.wait()
        try:
            resume_review(graph, cfg, True, lock=lock)
            outcomes.append("resumed")
        except AlreadyResumedError as err:
            outcomes.append(f"already: {err}")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert paid == [5]
    assert sorted(o.split(":")[0] for o in outcomes) == ["already", "resumed"]


def test_unknown_interrupt_id_and_nothing_pending_are_clear_errors():
    paid: list = []
    graph = make_graph(paid)
    cfg = {"configurable": {"thread_id": "ids"}}
    graph.invoke({"messages": [("user", "pay 5")]}, cfg)
    with pytest.raises(AlreadyResumedError, match="no longer pending"):
        resume_review(graph, cfg, True, interrupt_id="0" * 32)
    assert paid == [] and graph.get_state(cfg).interrupts
    resume_review(graph, cfg, True)
    assert paid == [5]
    with pytest.raises(AlreadyResumedError, match="no pending review"):
        resume_review(graph, cfg, True)


async def test_async_racing_resumes_run_the_tool_once():
    paid: list = []
    graph = make_graph(paid)
    cfg = {"configurable": {"thread_id": "arace"}}
    await graph.ainvoke({"messages": [("user", "pay 5")]}, cfg)
    lock = thread_lock()
    results = await asyncio.gather(
        aresume_review(graph, cfg, True, lock=lock),
        aresume_review(graph, cfg, True, lock=lock),
        return_exceptions=True,
    )
    assert paid == [5]
    assert sum(isinstance(r, AlreadyResumedError) for r in results) == 1


CONCURRENT_RESUMES = r"""
import asyncio, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
from test_resume import make_graph
from inferact_langgraph.guard.resume import AlreadyResumedError, aresume_review, thread_lock

async def main():
    paid = []
    graph = make_graph(paid, slow=0.05)
    cfg = {"configurable": {"thread_id": "many"}}
    await graph.ainvoke({"messages": [("user", "pay 5")]}, cfg)
    lock = thread_lock()
    results = await asyncio.gather(
        *(aresume_review(graph, cfg, True, lock=lock) for _ in range(int(sys.argv[1]))),
        return_exceptions=True,
    )
    already = sum(isinstance(r, AlreadyResumedError) for r in results)
    others = [repr(r) for r in results if isinstance(r, BaseException)
              and not isinstance(r, AlreadyResumedError)]
    print("RESULT", paid, already, others, flush=True)

asyncio.run(main())
"""


def test_more_concurrent_resumes_than_executor_threads_do_not_deadlock(tmp_path):
    """Waiting resumes must not hold the default-executor threads the winner needs to release
    the lock. Run in a child process: a deadlock there is a timeout here, not a hung test
    session."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    workers = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default
    n = workers * 3
    script = tmp_path / "many_resumes.py"
    script.write_text(CONCURRENT_RESUMES)
    try:
        proc = subprocess.run(
            [sys.executable, str(script), str(n)],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{n} concurrent aresume_review calls deadlocked (no answer in 60 s)")
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT")), None)
    assert line is not None, proc.stderr[-3000:]
    assert line == f"RESULT [5] {n - 1} []", line


async def test_a_cancelled_resume_leaves_the_lock_free():
    paid: list = []
    graph = make_graph(paid)
    cfg = {"configurable": {"thread_id": "cancel"}}
    await graph.ainvoke({"messages": [("user", "pay 5")]}, cfg)
    lock = thread_lock()
    with lock("cancel"):  # someone else holds the thread's lock
        waiting = asyncio.ensure_future(aresume_review(graph, cfg, True, lock=lock))
        await asyncio.sleep(0.1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    await asyncio.wait_for(aresume_review(graph, cfg, True, lock=lock), timeout=10)
    assert paid == [5]


async def test_an_async_lock_is_held_on_the_event_loop_while_the_review_is_answered():
    """A lock shared with other processes (an asyncpg advisory lock, a Redis lock) is often an
    async context manager: the resume waits for it without taking a thread, and answers only
    once it holds it."""
    paid: list = []
    graph = make_graph(paid)
    cfg = {"configurable": {"thread_id": "alock"}}
    await graph.ainvoke({"messages": [("user", "pay 5")]}, cfg)
    other_worker = asyncio.Lock()
    entered_on: list = []

    class SharedLock:
        async def __aenter__(self):
            await other_worker.acquire()
            entered_on.append(threading.current_thread())

        async def __aexit__(self, *exc):
            other_worker.release()

    await other_worker.acquire()  # another worker holds the thread's lock
    resuming = asyncio.ensure_future(aresume_review(graph, cfg, True, lock=lambda t: SharedLock()))
    await asyncio.sleep(0.2)
    assert not resuming.done() and paid == []  # waits for the lock, answers nothing yet
    other_worker.release()
    await asyncio.wait_for(resuming, timeout=10)
    assert paid == [5] and entered_on == [threading.main_thread()]
    assert not other_worker.locked()  # left after the answer
    with pytest.raises(AlreadyResumedError):
        await aresume_review(graph, cfg, True, lock=lambda t: SharedLock())
