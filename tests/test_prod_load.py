"""Load: N concurrent threads on one compiled guarded graph, each reaching a critical call.

Every thread has its own task, its own feedback in the store, and its own tool call id; the
actor's model and the critic answer after a delay (asyncio). Whether threads run concurrently is
read from how many critic checks are in flight at once, never from wall time (a shared machine
makes timings noisy; bench/bench_concurrency.py measures the speed). ``INFERACT_LOAD_N`` sets N
(default 200) for a bigger run.
"""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
import uuid
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from inferact_langgraph import critical
from inferact_langgraph.memory import FeedbackMemory
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic, prompt_text

N = int(os.environ.get("INFERACT_LOAD_N", "200"))
DELAY = 0.2


class _CountingCritic(ScriptedCritic):
    """A scripted critic that doubts every call and counts the checks in flight at once."""

    def __init__(self) -> None:
        super().__init__(score_fn=lambda t: 0.1, delay=DELAY)
        self.in_flight = 0
        self.peak = 0

    async def _aevaluate(self, trajectory: Any, *, risk: Any = None) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await super()._aevaluate(trajectory, risk=risk)
        finally:
            self.in_flight -= 1


def _build() -> tuple[Any, dict[str, list[str]], dict[str, str], _CountingCritic]:
    bought: dict[str, list[str]] = {}
    first_prompts: dict[str, str] = {}

    @critical
    @tool
    def buy_now(item: str) -> str:
        """Buy an item (irreversible)."""
        bought.setdefault(item, []).append(item)
        return f"bought {item}"

    def actor(messages: list) -> Any:
        text = prompt_text(messages)
        item = text.split("ITEM-", 1)[1].split()[0]
        first_prompts.setdefault(item, text)
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(f"Done {item}.", id=f"done-{uuid.uuid4().hex}")
        call = {"name": "buy_now", "args": {"item": item}, "id": f"call-{item}"}
        return AIMessage("", id=f"ai-{uuid.uuid4().hex}", tool_calls=[call])

    from inferact_langgraph import with_inferact

    store = InMemoryStore()
    memory = FeedbackMemory()
    for i in range(N):  # each task has its own earlier feedback
        memory.save(store, f"buy ITEM-{i} now", {"tool": "buy_now", "feedback": f"FEEDBACK-{i}"})
    critic = _CountingCritic()
    graph = with_inferact(
        create_agent(ScriptedChatModel(responder=actor, delay=DELAY), [buy_now]),
        critic=critic,
        checkpointer=InMemorySaver(),
        store=store,
    )
    return graph, bought, first_prompts, critic


async def _one(graph: Any, i: int) -> tuple[dict, dict]:
    config = {"configurable": {"thread_id": f"load-{i}"}}
    first = await graph.ainvoke({"messages": [("user", f"buy ITEM-{i} now")]}, config)
    await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    return first, (await graph.aget_state(config)).values


async def test_many_concurrent_threads_are_isolated_and_concurrent() -> None:
    graph, bought, first_prompts, critic = _build()

    t0 = time.perf_counter()
    single_graph, _, _, _ = _build()
    await single_graph.ainvoke({"messages": [("user", "buy ITEM-0 now")]},
                               {"configurable": {"thread_id": "solo"}})
    await single_graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}),
                               {"configurable": {"thread_id": "solo"}})
    one = time.perf_counter() - t0

    t0 = time.perf_counter()
    results = await asyncio.gather(*(_one(graph, i) for i in range(N)))
    wall = time.perf_counter() - t0

    # Memory: a second batch of N threads on a fresh graph, traced (tracing slows it down, so
    # it is not the timed run). Bounded = well under 1 MiB of Python allocations per thread.
    traced_graph, _, _, _ = _build()
    tracemalloc.start()
    await asyncio.gather(*(_one(traced_graph, i) for i in range(N)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    for i, (first, final) in enumerate(results):
        [request] = first["__interrupt__"][0].value["action_requests"]
        assert request["args"] == {"item": str(i)}
        assert request["inferact"]["tool_call_id"] == f"call-{i}"
        assert final["messages"][-1].content == f"Done {i}."
        assert set(final["inferact_checks"]) == {f"call-{i}"}
        assert [e["tool_call_id"] for e in final["inferact_audit"]] == [f"call-{i}"]
        prompt = first_prompts[str(i)]
        assert f"FEEDBACK-{i}" in prompt
        others = [w for w in prompt.split() if w.startswith("FEEDBACK-") and w != f"FEEDBACK-{i}"]
        assert not others, (i, others)
    assert {k: len(v) for k, v in bought.items()} == {str(i): 1 for i in range(N)}
    ratio = wall / one
    print(f"\nload: N={N} one={one:.2f}s all={wall:.2f}s ratio={ratio:.1f} "
          f"peak_traced={peak / 2**20:.1f} MiB ({peak / N / 1024:.0f} KiB/thread)")
    # Concurrent, not one after another: many checks wait on the critic model at the same time.
    assert critic.peak >= min(N, 10), f"at most {critic.peak} checks were in flight at once"
    assert peak / N < 1 * 2**20, f"{peak / N / 1024:.0f} KiB per thread"
