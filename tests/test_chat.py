"""Chat deployments (issue 11): per-request scope, memory only in the actor's call, per user.

Every graph kind: ``with_inferact`` over ``create_agent``, ``create_react_agent`` and a custom
``StateGraph`` with a ``ToolNode``, and ``InferActMiddleware`` in both review modes; sync and
async. A thread first asks for an e-mail, then for a transfer: the transfer is judged against
the transfer request, on the transfer's actions only.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from typing_extensions import TypedDict

from inferact_langgraph import InferActMiddleware, critical, with_inferact
from inferact_langgraph.scope import TaskLocator, is_request
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic

EMAIL = "e-mail the Q3 numbers to our CFO"
TRANSFER = "now transfer 500 dollars to Bob"
SIDE_EFFECTS: list[tuple[str, dict[str, Any]]] = []

KINDS = ["create_agent", "react_agent", "builder", "after_model", "tool_call"]


@pytest.fixture(autouse=True)
def _clear():
    SIDE_EFFECTS.clear()
    yield
    SIDE_EFFECTS.clear()


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found: {query}"


@critical
@tool
def send_email(to: str, body: str) -> str:
    """Send an e-mail (irreversible)."""
    SIDE_EFFECTS.append(("send_email", {"to": to}))
    return f"sent to {to}"


@critical
@tool
def transfer(to: str, amount: int) -> str:
    """Transfer money (irreversible)."""
    SIDE_EFFECTS.append(("transfer", {"to": to, "amount": amount}))
    return f"transferred {amount} to {to}"


TOOLS = [lookup, send_email, transfer]


def _call(name: str, args: dict, call_id: str) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def two_request_actor() -> ScriptedChatModel:
    """Request 1: look up, then e-mail; request 2: transfer."""
    return ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[_call("lookup", {"query": "Q3 numbers"}, "l-1")]),
            AIMessage("", tool_calls=[_call("send_email", {"to": "cfo", "body": "Q3"}, "e-1")]),
            "Sent the Q3 numbers.",
            AIMessage("", tool_calls=[_call("transfer", {"to": "Bob", "amount": 500}, "t-1")]),
            "Transferred.",
        ]
    )


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def custom_builder(model: Any) -> StateGraph:
    def agent(state: ChatState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: ChatState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(ChatState)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def guarded(kind: str, actor: Any, critic: Any, *, checkpointer: Any = "new", **options: Any):
    saver = InMemorySaver() if checkpointer == "new" else checkpointer
    if kind in ("after_model", "tool_call"):
        return create_agent(
            actor,
            TOOLS,
            checkpointer=saver,
            store=options.pop("store", None),
            middleware=[InferActMiddleware(critic=critic, review_in=kind, **options)],
        )
    if kind == "create_agent":
        graph: Any = create_agent(actor, TOOLS)
    elif kind == "react_agent":
        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = create_react_agent(actor, TOOLS)
    else:
        graph = custom_builder(actor)
    return with_inferact(graph, critic=critic, checkpointer=saver, **options)


def cfg(thread: str = "chat", **configurable: Any) -> dict:
    return {"configurable": {"thread_id": thread, **configurable}}


def _interrupt_info(out: dict) -> dict:
    (pending,) = out["__interrupt__"]
    (request,) = pending.value["action_requests"]
    return request["inferact"]


# ---------------------------------------------------------------------------- item 1: scope
@pytest.mark.parametrize("kind", KINDS)
def test_request_two_is_judged_against_itself_on_its_own_actions(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])  # the e-mail passes, the transfer is doubted
    graph = guarded(kind, two_request_actor(), critic)
    graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    assert SIDE_EFFECTS == [("send_email", {"to": "cfo"})]
    out = graph.invoke({"messages": [("user", TRANSFER)]}, cfg())

    first, second = critic.trajectories
    assert first.task == EMAIL and [s.tool_name for s in first.steps] == ["lookup", "send_email"]
    assert second.task == TRANSFER
    assert [s.tool_name for s in second.steps] == ["transfer"]  # no e-mail actions in S
    info = _interrupt_info(out)  # the payload says which task was used
    assert info["task"] == TRANSFER and info["scope"] == "request"
    assert [step["action"] for step in info["action_chain"]] == ['transfer(to="Bob", amount=500)']
    assert SIDE_EFFECTS == [("send_email", {"to": "cfo"})]  # the transfer waits

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert [(e["tool"], e["task"], e["scope"]) for e in audit] == [
        ("send_email", EMAIL, "request"),
        ("transfer", TRANSFER, "request"),
    ]
    assert SIDE_EFFECTS[-1] == ("transfer", {"to": "Bob", "amount": 500})


@pytest.mark.parametrize("kind", KINDS)
async def test_request_scope_async(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])
    graph = guarded(kind, two_request_actor(), critic)
    await graph.ainvoke({"messages": [("user", EMAIL)]}, cfg())
    out = await graph.ainvoke({"messages": [("user", TRANSFER)]}, cfg())
    second = critic.trajectories[1]
    assert second.task == TRANSFER and [s.tool_name for s in second.steps] == ["transfer"]
    assert _interrupt_info(out)["task"] == TRANSFER
    await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    state = await graph.aget_state(cfg())
    assert [e["task"] for e in state.values["inferact_audit"]] == [EMAIL, TRANSFER]


@pytest.mark.parametrize("kind", ["create_agent", "after_model"])
def test_thread_scope_lists_the_requests_in_order_and_keeps_every_action(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])
    graph = guarded(kind, two_request_actor(), critic, scope="thread")
    graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    out = graph.invoke({"messages": [("user", TRANSFER)]}, cfg())
    first, second = critic.trajectories
    assert first.task == EMAIL  # one request so far: the task is just that request
    assert second.task == (
        f"The user's requests in this conversation, in order:\n1. {EMAIL}\n2. {TRANSFER}"
    )
    assert [s.tool_name for s in second.steps] == ["lookup", "send_email", "transfer"]
    assert _interrupt_info(out)["scope"] == "thread"


@pytest.mark.parametrize("kind", ["builder", "tool_call"])
def test_task_extractor_replaces_the_text_and_the_audit_says_custom(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])
    graph = guarded(kind, two_request_actor(), critic, task_extractor=lambda s: "pay Bob 500")
    graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    out = graph.invoke({"messages": [("user", TRANSFER)]}, cfg())
    assert critic.trajectories[1].task == "pay Bob 500"
    assert [s.tool_name for s in critic.trajectories[1].steps] == ["transfer"]
    info = _interrupt_info(out)
    assert info["task"] == "pay Bob 500" and info["scope"] == "custom"


def test_a_new_message_instead_of_a_decision_is_the_new_request():
    """The user skips a review by typing: the skipped call is closed, the new one judged alone."""
    critic = ScriptedCritic(scores=[0.2, 0.9])  # the e-mail is doubted, the transfer is not
    actor = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[_call("lookup", {"query": "Q3"}, "l-1")]),
            AIMessage("", tool_calls=[_call("send_email", {"to": "cfo", "body": "Q3"}, "e-1")]),
            AIMessage("", tool_calls=[_call("transfer", {"to": "Bob", "amount": 500}, "t-1")]),
            "Transferred.",
        ]
    )
    graph = guarded("create_agent", actor, critic)
    assert "__interrupt__" in graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    graph.invoke({"messages": [("user", TRANSFER)]}, cfg())
    last = critic.trajectories[-1]
    assert last.task == TRANSFER and [s.tool_name for s in last.steps] == ["transfer"]
    assert SIDE_EFFECTS == [("transfer", {"to": "Bob", "amount": 500})]


def test_locator_skips_memory_and_tool_generated_human_messages():
    messages = [
        HumanMessage(EMAIL, id="h1"),
        AIMessage("", tool_calls=[_call("lookup", {"query": "chart"}, "l-1")], id="a1"),
        ToolMessage("chart attached", tool_call_id="l-1", id="t1"),
        HumanMessage([{"type": "text", "text": "(image of the chart)"}], id="h2"),  # by a tool
        HumanMessage("Feedback from earlier trials ...", name="inferact_memory", id="m"),
        HumanMessage("old memory", id="inferact-memory-store-1"),
        AIMessage("", tool_calls=[_call("send_email", {"to": "cfo", "body": ""}, "e-1")]),
    ]
    assert [is_request(messages, i) for i in range(len(messages))] == [
        True, False, False, False, False, False, False,
    ]  # fmt: skip
    locator = TaskLocator()
    assert locator.task({"messages": messages}) == EMAIL
    chain = locator.trajectory({"messages": messages}, "e-1")
    assert [s.tool_name for s in chain.steps] == ["lookup", "send_email"]
    with pytest.raises(ValueError, match="scope must be 'request' or 'thread'"):
        TaskLocator(scope="conversation")  # type: ignore[arg-type]
