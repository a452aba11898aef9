"""InferActMiddleware(review_in="tool_call"): the review runs in the tool task, no extra node."""

from __future__ import annotations

import pytest
from guard_helpers import LEDGER, assert_valid_history, buy_now, call, search, shop_actor
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from inferact_langgraph import InferActMiddleware, ResumeError
from inferact_langgraph.guard.memory import FEEDBACK_MARKER
from inferact_langgraph.testing import ScriptedCritic

TASK = "I need 66x66 inch blackout shades under $90"


@pytest.fixture(autouse=True)
def _clear():
    LEDGER.clear()
    yield
    LEDGER.clear()


def agent(actor, critic, **options):
    return create_agent(
        actor,
        [search, buy_now],
        checkpointer=InMemorySaver(),
        store=options.pop("store", None),
        middleware=[InferActMiddleware(critic=critic, review_in="tool_call", **options)],
    )


def cfg(thread="t"):
    return {"configurable": {"thread_id": thread}}


def test_no_node_is_added_to_the_agent():
    graph = agent(shop_actor(), ScriptedCritic(scores=[0.9]))
    assert not any("after_model" in n for n in graph.get_graph().nodes)
    default = create_agent(
        shop_actor(),
        [search, buy_now],
        middleware=[InferActMiddleware(critic=ScriptedCritic(scores=[0.9]))],
    )
    assert any("after_model" in n for n in default.get_graph().nodes)


def test_doubtful_call_interrupts_in_its_tool_task_and_approve_runs_it_once():
    critic = ScriptedCritic(scores=[0.2])
    graph = agent(shop_actor(), critic)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert LEDGER == []
    (intr,) = out["__interrupt__"]
    assert intr.value["action_requests"][0]["inferact"]["score"] == 0.2
    # Also LangChain's per-call request (HumanInTheLoopMiddleware(interrupt_mode="per_call")).
    assert intr.value["type"] == "tool_approval" and intr.value["tool_call_id"] == "buy-1"
    assert intr.value["name"] == "buy_now" and intr.value["args"] == {"asin": "B02", "price": 40.0}
    out = graph.invoke(Command(resume=True), cfg())
    assert LEDGER == [{"asin": "B02", "price": 40.0}] and critic.calls == 1
    assert_valid_history(out["messages"])
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert [(a["decision"], a["decided_by"]) for a in audit] == [("approve", "human")]


def test_reject_answers_the_call_and_saves_the_feedback_for_the_next_trial():
    store = InMemoryStore()
    graph = agent(shop_actor(), ScriptedCritic(scores=[0.2]), store=store)
    graph.invoke({"messages": [("user", TASK)]}, cfg("a"))
    out = graph.invoke(Command(resume="wrong size"), cfg("a"))
    assert LEDGER == []
    rejection = next(
        m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "buy-1"
    )
    assert rejection.status == "error" and "wrong size" in rejection.content
    assert_valid_history(out["messages"])
    actor2 = shop_actor()
    agent(actor2, ScriptedCritic(scores=[0.9]), store=store).invoke(
        {"messages": [("user", TASK)]}, cfg("b")
    )
    first = "\n".join(str(m.content) for m in actor2.prompts[0])
    assert FEEDBACK_MARKER in first and "wrong size" in first


def test_edit_is_rechecked_and_the_edited_call_runs():
    critic = ScriptedCritic(scores=[0.2, 0.9])
    graph = agent(shop_actor(), critic)
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    edit = {
        "type": "edit",
        "edited_action": {"name": "buy_now", "args": {"asin": "B01", "price": 85.0}},
    }
    graph.invoke(Command(resume={"decisions": [edit]}), cfg())
    assert LEDGER == [{"asin": "B01", "price": 85.0}] and critic.calls == 2


def test_two_doubtful_calls_are_two_interrupts_answered_by_id():
    actor = shop_actor(
        call("buy_now", {"asin": "B02", "price": 40.0}, "buy-a"),
        call("search", {"query": "x"}, "s-2"),
        call("buy_now", {"asin": "B01", "price": 85.0}, "buy-b"),
    )
    critic = ScriptedCritic(scores=[0.1])
    graph = agent(actor, critic)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    interrupts = out["__interrupt__"]
    assert len(interrupts) == 2 and LEDGER == []
    by_call = {i.value["action_requests"][0]["inferact"]["tool_call_id"]: i.id for i in interrupts}
    # Each call is its own review: a malformed answer for one leaves it pending, while the
    # valid approval of the other is carried out.
    with pytest.raises(ResumeError):
        graph.invoke(
            Command(resume={by_call["buy-a"]: {"decisions": []}, by_call["buy-b"]: True}), cfg()
        )
    assert LEDGER == [{"asin": "B01", "price": 85.0}]
    pending = [
        i.value["action_requests"][0]["inferact"]["tool_call_id"]
        for i in graph.get_state(cfg()).interrupts
    ]
    assert pending == ["buy-a"]
    out = graph.invoke(Command(resume={by_call["buy-a"]: "no"}), cfg())
    assert LEDGER == [{"asin": "B01", "price": 85.0}] and critic.calls == 2
    assert_valid_history(out["messages"])


async def test_async_path():
    critic = ScriptedCritic(scores=[0.2])
    graph = agent(shop_actor(), critic)
    out = await graph.ainvoke({"messages": [("user", TASK)]}, cfg())
    assert out["__interrupt__"] and LEDGER == []
    await graph.ainvoke(Command(resume=True), cfg())
    assert LEDGER == [{"asin": "B02", "price": 40.0}] and critic.calls == 1


def test_confident_critic_runs_the_call_without_asking():
    graph = agent(shop_actor(), ScriptedCritic(scores=[0.9]))
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert "__interrupt__" not in out and LEDGER == [{"asin": "B02", "price": 40.0}]


def test_only_continue_is_supported():
    with pytest.raises(ValueError, match="on_reject='continue' only"):
        InferActMiddleware(
            critic=ScriptedCritic(scores=[1.0]), review_in="tool_call", on_reject="end"
        )
    with pytest.raises(ValueError, match="review_in"):
        InferActMiddleware(critic=ScriptedCritic(scores=[1.0]), review_in="later")
