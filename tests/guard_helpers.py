"""Shared builders for the guard tests: a tiny shop with a side-effect ledger, the graph kinds."""

from __future__ import annotations

import warnings
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

from inferact_langgraph import critical
from inferact_langgraph.testing import ScriptedChatModel

LEDGER: list[dict[str, Any]] = []

#: Every kind of guarded graph the tests run on: ``with_inferact`` over three graph kinds,
#: then ``InferActMiddleware`` reviewing after the model step and inside the tool call.
WRAPPED_KINDS = ["builder", "react_agent", "create_agent"]
MIDDLEWARE_KINDS = ["middleware", "middleware_tool_call"]
KINDS = WRAPPED_KINDS + MIDDLEWARE_KINDS
#: The kinds that review a model step's doubtful calls together, in one interrupt, and can end
#: or restart the run on a rejection; the tool-call middleware reviews each call in its own
#: tool task and supports ``on_reject="continue"`` only.
STEP_REVIEW_KINDS = [kind for kind in KINDS if kind != "middleware_tool_call"]


def review_in(kind: str) -> str:
    """The ``review_in`` of ``InferActMiddleware`` for one of :data:`MIDDLEWARE_KINDS`."""
    if kind not in MIDDLEWARE_KINDS:
        raise ValueError(f"{kind!r} is not a middleware kind: {MIDDLEWARE_KINDS}")
    return "tool_call" if kind == "middleware_tool_call" else "after_model"


@tool
def search(query: str) -> str:
    """Search the shop."""
    return f"Results for {query}: B01 blackout shades 66x66 inch $85; B02 custom size shades $40"


@critical(risk=lambda args: "high" if args.get("price", 0) > 60 else "low")
@tool
def buy_now(asin: str, price: float, options: dict[str, str] | None = None) -> str:
    """Buy a product (irreversible)."""
    LEDGER.append({"asin": asin, "price": price, **({"options": options} if options else {})})
    return f"Bought {asin} for ${price}"


@tool
def view_item(asin: str) -> str:
    """Look at a product's page (harmless)."""
    LEDGER.append({"viewed": asin})
    return f"{asin}: blackout shades"


@tool
def delete_account(user: str) -> str:
    """Delete a user account (a tool 'we do not own': marked by name)."""
    LEDGER.append({"deleted": user})
    return f"deleted {user}"


def call(name: str, args: dict, call_id: str) -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def shop_actor(
    *final_calls: dict, thought: str = "I will buy the 66x66 shades"
) -> ScriptedChatModel:
    """search, then the given calls in one message, then a final answer."""
    calls = list(final_calls) or [call("buy_now", {"asin": "B02", "price": 40.0}, "buy-1")]
    return ScriptedChatModel(
        replies=[
            AIMessage(thought, tool_calls=[call("search", {"query": "66x66 shades"}, "s-1")]),
            AIMessage(thought, tool_calls=calls),
            "All done.",
        ]
    )


class ShopState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def custom_builder(model: Any, tools: list) -> StateGraph:
    """A hand-written ReAct graph (a StateGraph builder with a ToolNode)."""

    def agent(state: ShopState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: ShopState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    from langchain_core.runnables import RunnableLambda

    builder = StateGraph(ShopState)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def build_graph(kind: str, model: Any, tools: list) -> Any:
    """An unguarded agent of the given kind."""
    if kind == "create_agent":
        return create_agent(model, tools)
    if kind == "react_agent":
        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_react_agent(model, tools)
    if kind == "builder":
        return custom_builder(model, tools)
    raise ValueError(kind)


def assert_valid_history(messages: list) -> None:
    """Every tool call id has exactly one tool message (what providers require)."""
    call_ids = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answers = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(call_ids) == sorted(answers), (call_ids, answers)
