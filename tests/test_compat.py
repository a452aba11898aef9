"""Each private LangGraph name the guard relies on (guard/_compat.py), checked against LangGraph.

A failure here means the installed LangGraph changed something ``with_inferact`` or the review
depends on: fix the one function in ``inferact_langgraph/guard/_compat.py`` that the failing
test names, not the guard.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.errors import is_invalid_resume
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Send
from typing_extensions import TypedDict

from inferact_langgraph.guard import _compat


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def refuse(text: str) -> str:
    """Raise an error marked as an invalid resume."""
    error = ValueError(f"bad resume: {text}")
    _compat.mark_invalid_resume(error)
    raise error


@tool
def fail(text: str) -> str:
    """Raise an ordinary error."""
    raise ValueError(f"failed: {text}")


def _run_tool_node(node: ToolNode, payload) -> list:
    """The messages a ``ToolNode`` writes for ``payload``, sent to it as a graph would."""
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_conditional_edges(START, lambda state: [Send("tools", payload)], ["tools"])
    builder.add_edge("tools", END)
    return builder.compile().invoke({"messages": []})["messages"]


def _builder() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": []})
    builder.add_node("tools", ToolNode([echo]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def test_copy_builder_knows_every_attribute_of_a_state_graph():
    # A new attribute of StateGraph may need copying too: look at copy_builder.
    assert set(vars(_builder())) == _compat.BUILDER_ATTRIBUTES


def test_a_copied_builder_changes_without_touching_the_original():
    builder = _builder()
    before = {name: repr(value) for name, value in vars(builder).items()}
    new = _compat.copy_builder(builder)
    new.add_node("extra", lambda state: {})
    new.add_edge("extra", END)
    new.edges.discard(("tools", "agent"))
    new.branches["agent"].clear()
    new.compile()
    assert {name: repr(value) for name, value in vars(builder).items()} == before
    assert builder.compiled is False
    builder.compile()  # the original still compiles as it was


def test_add_schema_registers_the_channels_of_a_node_input_schema():
    class WithNote(TypedDict):
        note: str

    builder = _builder()
    assert "note" not in builder.channels
    _compat.add_schema(builder, WithNote)
    assert "note" in builder.channels


def test_replace_node_changes_a_node_spec_in_place():
    builder = _builder()
    assert dataclasses.is_dataclass(builder.nodes["agent"])
    runnable = RunnableLambda(lambda state: {"messages": []}, name="other")
    _compat.replace_node(builder, "agent", runnable=runnable)
    assert builder.nodes["agent"].runnable is runnable


def test_replace_branch_gives_a_branch_another_path_and_ends():
    spec = _builder().branches["agent"]["tools_condition"]
    path = RunnableLambda(lambda state: END)
    new = _compat.replace_branch(spec, path=path, ends={"x": "x"})
    assert new.path is path and new.ends == {"x": "x"}
    assert new is not spec and spec.path is not path


def test_the_tool_node_messages_key_is_read_from_the_node():
    assert _compat.tool_node_messages_key(ToolNode([echo])) == "messages"
    # A renamed attribute would silently fall back to "messages": this catches it.
    assert _compat.tool_node_messages_key(ToolNode([echo], messages_key="history")) == "history"


def test_a_tool_node_runs_the_call_sent_with_its_context():
    call = {"name": "echo", "args": {"text": "hi"}, "id": "c1", "type": "tool_call"}
    sent = {
        "__type": _compat.TOOL_CALL_WITH_CONTEXT,
        "tool_call": call,
        "state": {"messages": [AIMessage("", tool_calls=[call])]},
    }
    assert _compat.sent_calls(sent) == [call]
    assert _compat.sent_calls([call]) == [call]
    assert _compat.sent_calls({"messages": []}) is None
    messages = _run_tool_node(ToolNode([echo]), sent)
    assert [(m.tool_call_id, m.content) for m in messages] == [("c1", "hi")]


def test_untraced_is_langgraphs_untraced_runnable_with_both_twins():
    async def afunc(value: int) -> int:
        return value + 2

    runnable = _compat.untraced(lambda value: value + 1, afunc, "twins")
    assert not isinstance(runnable, RunnableLambda)  # the import did not fall back
    assert type(runnable).__name__ == "RunnableCallable"
    assert runnable.trace is False and runnable.name == "twins"
    assert runnable.invoke(1) == 2
    assert asyncio.run(runnable.ainvoke(1)) == 3


def test_a_marked_error_is_an_invalid_resume_that_a_tool_node_reraises():
    error = ValueError("x")
    assert not is_invalid_resume(error)
    _compat.mark_invalid_resume(error)
    assert is_invalid_resume(error)
    node = ToolNode([refuse], handle_tool_errors=True)  # would answer any other error
    call = {"name": "refuse", "args": {"text": "t"}, "id": "c1", "type": "tool_call"}
    with pytest.raises(ValueError, match="bad resume"):
        _run_tool_node(node, [call])
    messages = _run_tool_node(ToolNode([fail], handle_tool_errors=True), [{**call, "name": "fail"}])
    assert [(m.tool_call_id, m.status) for m in messages] == [("c1", "error")]


def test_a_compiled_graph_keeps_the_guard_attached_to_it():
    compiled = _builder().compile()
    assert _compat.guard_of(compiled) is None
    guard = object()
    _compat.attach_guard(compiled, guard)
    assert _compat.guard_of(compiled) is guard


def test_run_checkpointer_is_the_saver_of_the_running_graph_sync_and_async():
    from langgraph.checkpoint.memory import InMemorySaver

    seen: list = []

    def node(state):
        seen.append(_compat.run_checkpointer())
        return {"messages": []}

    async def anode(state):
        seen.append(_compat.run_checkpointer())
        return {"messages": []}

    saver = InMemorySaver()
    for step in (node, anode):
        builder = StateGraph(MessagesState)
        builder.add_node("a", step)
        builder.add_edge(START, "a")
        builder.add_edge("a", END)
        config = {"configurable": {"thread_id": "t"}}
        if step is node:
            builder.compile(checkpointer=saver).invoke({"messages": []}, config)
            builder.compile().invoke({"messages": []})
        else:
            graph = builder.compile(checkpointer=saver)
            asyncio.run(graph.ainvoke({"messages": []}, config))
            asyncio.run(builder.compile().ainvoke({"messages": []}))
    assert seen[0] is saver and seen[2] is saver
    assert seen[1] is None and seen[3] is None
    assert _compat.run_checkpointer() is None  # outside a run


def test_a_tool_node_with_other_tools_keeps_the_nodes_settings():
    def wrap(request, execute):
        return execute(request)

    async def awrap(request, execute):
        return await execute(request)

    node = ToolNode(
        [echo],
        name="shop",
        tags=["t"],
        handle_tool_errors=False,
        messages_key="chat",
        wrap_tool_call=wrap,
        awrap_tool_call=awrap,
    )
    copy = _compat.tool_node_with_tools(node, [fail])
    assert list(copy.tools_by_name) == ["fail"]
    assert (copy.name, copy.tags) == ("shop", ["t"])
    assert _compat.tool_node_messages_key(copy) == "chat"
    assert copy._handle_tool_errors is False
    assert copy._wrap_tool_call is wrap and copy._awrap_tool_call is awrap
