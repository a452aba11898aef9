"""CachedCritic: an identical pending call is not checked twice."""

from __future__ import annotations

import contextlib

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from inferact_langgraph.cache import CachedCritic, InMemoryVerdictCache, VerdictCache
from inferact_langgraph.testing import ScriptedCritic
from inferact_langgraph.trajectory import Trajectory


def chain(call_id: str, asin: str = "B01", task: str = "buy a red mug") -> Trajectory:
    return Trajectory.from_messages(
        [
            HumanMessage(task),
            AIMessage(
                "thinking", tool_calls=[{"name": "search", "args": {"q": "mug"}, "id": "s1"}]
            ),
            ToolMessage("B01 red mug $9", tool_call_id="s1"),
            AIMessage("", tool_calls=[{"name": "buy", "args": {"asin": asin}, "id": call_id}]),
        ]
    )


def test_a_retried_identical_call_is_answered_from_the_cache():
    inner = ScriptedCritic(scores=[0.3, 0.9])
    critic = CachedCritic(inner)
    first = critic.evaluate(chain("c1"))
    retried = critic.evaluate(chain("c2"))  # same chain, new tool call id
    assert inner.calls == 1
    assert retried.score == first.score == 0.3 and retried.usage.model_calls == 0
    assert critic.name == inner.name and critic.threshold == inner.threshold


def test_other_args_task_or_risk_are_checked_again():
    inner = ScriptedCritic(scores=[0.3])
    critic = CachedCritic(inner)
    critic.evaluate(chain("c1"))
    critic.evaluate(chain("c1", asin="B02"))
    critic.evaluate(chain("c1", task="buy a blue mug"))
    critic.evaluate(chain("c1"), risk="high")
    assert inner.calls == 4


async def test_async_path_and_failures_are_not_cached():
    inner = ScriptedCritic(scores=[RuntimeError("boom"), 0.8])
    critic = CachedCritic(inner, cache=InMemoryVerdictCache(maxsize=8))
    with contextlib.suppress(RuntimeError):
        await critic.aevaluate(chain("c1"))
    assert (await critic.aevaluate(chain("c1"))).score == 0.8
    assert (await critic.aevaluate(chain("c3"))).usage.model_calls == 0
    assert inner.calls == 2


def test_sqlite_cache_is_shared_across_critic_instances(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    CachedCritic(ScriptedCritic(scores=[0.4]), cache=VerdictCache(path)).evaluate(chain("c1"))
    other = ScriptedCritic(scores=[0.4])
    again = CachedCritic(other, cache=VerdictCache(path)).evaluate(chain("c7"))
    assert other.calls == 0 and again.score == 0.4


def test_with_inferact_cache_option_checks_an_identical_pending_call_once():
    from guard_helpers import LEDGER, buy_now, search, shop_actor
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from inferact_langgraph import InferActMiddleware, with_inferact

    for kind in ("with_inferact", "middleware"):
        critic = ScriptedCritic(scores=[0.9])
        shared = InMemoryVerdictCache()
        if kind == "with_inferact":

            def make(critic=critic, shared=shared):
                return with_inferact(
                    create_agent(shop_actor(), [search, buy_now]),
                    critic=critic, cache=shared, checkpointer=InMemorySaver())

            graph = make()
        else:
            middleware = InferActMiddleware(critic=critic, cache=True)  # one in-memory cache
            graph = create_agent(shop_actor(), [search, buy_now], checkpointer=InMemorySaver(),
                                 middleware=[middleware])
        for thread in ("a", "b"):  # the same task and chain in two threads
            config = {"configurable": {"thread_id": thread}}
            graph.invoke({"messages": [("user", "shades")]}, config)
            if kind == "with_inferact":
                graph = make()  # a fresh actor script, the same cached critic
            else:
                graph = create_agent(shop_actor(), [search, buy_now],
                                     checkpointer=InMemorySaver(), middleware=[middleware])
        assert critic.calls == 1, kind
        assert len(LEDGER) == 2
        LEDGER.clear()
