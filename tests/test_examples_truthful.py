"""The example actors never claim what their tools did not do.

The final words of each scripted actor are read from the tool's result: a failed, rejected or
edited critical call is reported as what really happened. The shop counts orders per thread,
and the WebShop user message is the instruction alone.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from inferact_langgraph.examples import (
    AlfWorldEnv,
    HotPotQAEnv,
    WebShopEnv,
    alfworld_actor,
    hotpotqa_actor,
    webshop_actor,
)
from inferact_langgraph.examples.registry import build_env_graph, oracle_critic_model
from inferact_langgraph.testing import prompt_text


def _run_unguarded(env, actor, index: int, thread: str) -> list:
    agent = create_agent(actor(env, index), tools=env.tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread}}
    return agent.invoke({"messages": [HumanMessage(env.prompt(index))]}, config)["messages"]


def _until_call(messages: list, tool: str) -> tuple[list, dict]:
    """The history up to and including the AI message that calls ``tool``, and that call."""
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"] == tool:
                    return list(messages[: index + 1]), call
    raise AssertionError(f"no {tool} call")


def _interrupted(name: str, index: int = 0):
    env, graph = build_env_graph(name, checkpointer=InMemorySaver(), task_index=index)
    config = {"configurable": {"thread_id": f"{name}-edit"}}
    out = graph.invoke({"messages": [("user", env.prompt(index))]}, config)
    request = out["__interrupt__"][0].value["action_requests"][0]
    return env, graph, config, request


def _edit(graph, config, name: str, args: dict) -> list:
    decision = {"type": "edit", "edited_action": {"name": name, "args": args}}
    graph.invoke(Command(resume={"decisions": [decision]}), config)
    return graph.get_state(config).values["messages"]


# -- WebShop ------------------------------------------------------------------------------------


def test_webshop_user_message_is_the_instruction_alone() -> None:
    env = WebShopEnv()
    for index, task in enumerate(env.tasks):
        assert env.prompt(index) == task["instruction"]
    # ... so the task the critic verifies is written as a user writes it
    critic_model = oracle_critic_model("webshop", env)
    _, graph = build_env_graph(
        "webshop", env=env, critic_model=critic_model, checkpointer=InMemorySaver()
    )
    graph.invoke({"messages": [("user", env.prompt(0))]}, {"configurable": {"thread_id": "p"}})
    verification = [
        prompt_text(p)
        for p in critic_model.prompts
        if "candidate user’s instructions" in prompt_text(p)
    ]
    assert verification
    for prompt in verification:
        assert f". {env.task(0)['instruction']}\n" in prompt
        assert "WebShop. Instruction" not in prompt


def test_webshop_actor_reports_the_edited_purchase_not_its_plan() -> None:
    env, graph, config, request = _interrupted("webshop")
    task = env.task(0)
    assert request["args"]["asin"] == task["distractor"]["asin"]  # the plan: the near miss
    gold = env.products[task["gold"]["asin"]]
    messages = _edit(
        graph,
        config,
        "buy_now",
        {
            "asin": gold["asin"],
            "options": task["gold"]["options"],
            "price": gold["price"],
        },
    )
    (bought,) = env.purchases(config["configurable"]["thread_id"])
    assert bought["asin"] == gold["asin"]
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert (
        final.content
        == f"I bought {gold['title']} (color: white) for ${gold['price']:.2f} (order 1)."
    )
    assert env.products[task["distractor"]["asin"]]["title"] not in final.content


def test_webshop_actor_reports_a_failed_purchase() -> None:
    env, graph, config, _ = _interrupted("webshop")
    gold = env.task(0)["gold"]  # the right product, so the re-check passes; a wrong price
    messages = _edit(graph, config, "buy_now", {**gold, "price": 1.0})
    assert env.purchases() == []
    final = messages[-1]
    assert final.content.startswith("I did not buy anything: Error: the listed price")
    assert "I bought" not in final.content


def test_webshop_actor_reports_a_purchase_that_was_not_executed() -> None:
    env = WebShopEnv()
    history, call = _until_call(_run_unguarded(WebShopEnv(), webshop_actor, 1, "t"), "buy_now")
    failed = ToolMessage(
        "Error: the payment service is unavailable.",
        tool_call_id=call["id"],
        name="buy_now",
        status="error",
    )
    reply = webshop_actor(env, 1).invoke([*history, failed])
    assert not reply.tool_calls
    assert reply.content == "I did not buy anything: Error: the payment service is unavailable."


def test_webshop_order_numbers_are_counted_per_thread() -> None:
    env = WebShopEnv()
    first = _run_unguarded(env, webshop_actor, 1, "alice")
    second = _run_unguarded(env, webshop_actor, 1, "bob")
    for messages in (first, second):
        (receipt,) = [m for m in messages if isinstance(m, ToolMessage) and m.name == "buy_now"]
        assert "Order 1:" in receipt.content
        assert messages[-1].content.endswith("(order 1).")
    assert [r["order"] for r in env.purchases()] == [1, 1]
    # direct tool calls count per thread id too
    buy = env.tools[2]
    assert "Order 1:" in buy.invoke({"asin": "B0KETTLE17"})
    assert "Order 2:" in buy.invoke({"asin": "B0KETTLE17"})


def test_webshop_order_numbers_continue_within_a_thread() -> None:
    env = WebShopEnv()
    agent = create_agent(webshop_actor(env, 1), tools=env.tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage(env.prompt(1))]}, config)
    out = agent.invoke({"messages": [HumanMessage(env.prompt(1))]}, config)["messages"]
    receipts = [m.content for m in out if isinstance(m, ToolMessage) and m.name == "buy_now"]
    assert ["Order 1:" in receipts[0], "Order 2:" in receipts[1]] == [True, True]


# -- HotPotQA -----------------------------------------------------------------------------------


def test_hotpotqa_actor_reports_the_edited_answer_not_its_plan() -> None:
    env, graph, config, request = _interrupted("hotpotqa")
    planned = request["args"]["answer"]
    gold = env.task(0)["gold_answer"]
    assert planned != gold
    messages = _edit(graph, config, "finish", {"answer": gold})
    assert messages[-1].content == f"My answer is: {gold}"
    assert [r["answer"] for r in env.answers()] == [gold]


def test_hotpotqa_actor_reports_an_answer_that_was_not_recorded() -> None:
    env = HotPotQAEnv()
    history, call = _until_call(_run_unguarded(HotPotQAEnv(), hotpotqa_actor, 0, "t"), "finish")
    failed = ToolMessage("Error: timeout.", tool_call_id=call["id"], name="finish", status="error")
    reply = hotpotqa_actor(env, 0).invoke([*history, failed])
    assert not reply.tool_calls
    assert reply.content == "I did not submit an answer: Error: timeout."


# -- ALFWorld -----------------------------------------------------------------------------------


def test_alfworld_actor_stops_and_says_so_when_an_operation_did_not_run() -> None:
    env = AlfWorldEnv()
    history, call = _until_call(_run_unguarded(AlfWorldEnv(), alfworld_actor, 0, "t"), "cool")
    failed = ToolMessage(
        "Error: the fridge is broken.", tool_call_id=call["id"], name="cool", status="error"
    )
    reply = alfworld_actor(env, 0).invoke([*history, failed])
    assert not reply.tool_calls  # no blind retry of an operation that did not run
    assert reply.content == "I did not cool anything: Error: the fridge is broken."
