"""Every private LangGraph name the guard relies on, in one place.

LangGraph offers no public API for what ``with_inferact`` does to a graph (copy a builder and
rewire it) nor for a few details of its tool node and its interrupts. Each use is wrapped
here, in one function, and ``tests/test_compat.py`` checks each one against the installed
LangGraph, so that an upgrade that changes one of them fails a named test instead of a guard
behaviour far away. No other module of the package touches a private LangGraph name
(``tests/test_architecture.py`` checks that).

Example:
    >>> from langgraph.graph import MessagesState, StateGraph
    >>> builder = StateGraph(MessagesState)
    >>> builder.add_node("a", lambda state: {})
    <langgraph.graph.state.StateGraph object at ...>
    >>> copy = copy_builder(builder)
    >>> copy.add_node("b", lambda state: {})
    <langgraph.graph.state.StateGraph object at ...>
    >>> sorted(builder.nodes), sorted(copy.nodes)
    (['a'], ['a', 'b'])
"""

from __future__ import annotations

import copy
import dataclasses
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableLambda
from langgraph.graph import StateGraph
from langgraph.prebuilt import ToolNode

__all__ = [
    "BUILDER_ATTRIBUTES",
    "CHECKPOINTER_CONFIG_KEY",
    "TOOL_CALL_WITH_CONTEXT",
    "add_schema",
    "attach_guard",
    "copy_builder",
    "guard_of",
    "mark_invalid_resume",
    "replace_branch",
    "replace_node",
    "run_checkpointer",
    "sent_calls",
    "tool_node_messages_key",
    "tool_node_with_tools",
    "untraced",
]

BUILDER_ATTRIBUTES = frozenset(
    {
        "nodes",
        "edges",
        "branches",
        "schemas",
        "channels",
        "managed",
        "compiled",
        "waiting_edges",
        "state_schema",
        "input_schema",
        "output_schema",
        "context_schema",
        "_node_defaults",
    }
)
"""The attributes of a ``StateGraph`` that :func:`copy_builder` knows how to copy."""

TOOL_CALL_WITH_CONTEXT = "tool_call_with_context"
"""The ``__type`` of the input ``create_agent``'s router sends to a ``ToolNode`` per call."""

CHECKPOINTER_CONFIG_KEY = "__pregel_checkpointer"
"""The ``configurable`` key under which LangGraph puts the running graph's checkpointer."""

_GUARD_ATTRIBUTE = "inferact_guard"


def copy_builder(builder: StateGraph[Any]) -> StateGraph[Any]:
    """A copy of ``builder`` whose nodes, edges and branches can change without touching it.

    ``StateGraph`` has no copy method: its containers are copied one by one (the schemas are
    shared; they are never changed).
    """
    new = copy.copy(builder)
    new.nodes = dict(builder.nodes)
    new.edges = set(builder.edges)
    new.branches = defaultdict(dict, {k: dict(v) for k, v in builder.branches.items()})
    new.schemas = dict(builder.schemas)
    new.channels = dict(builder.channels)
    new.managed = dict(builder.managed)
    new.waiting_edges = set(builder.waiting_edges)
    new.compiled = False
    return new


def add_schema(builder: StateGraph[Any], schema: type) -> None:
    """Register a node input schema's channels (``add_node`` does it for a new node only)."""
    builder._add_schema(schema)


def replace_node(builder: StateGraph[Any], name: str, **changes: Any) -> None:
    """Replace fields of a node's spec (``runnable``, ``input_schema``) in place."""
    builder.nodes[name] = dataclasses.replace(builder.nodes[name], **changes)


def replace_branch(spec: Any, *, path: Any, ends: Any) -> Any:
    """A conditional edge's spec with another path function and its possible ends."""
    return spec._replace(path=path, ends=ends)


def tool_node_messages_key(tool_node: ToolNode) -> str:
    """The state key a ``ToolNode`` reads and writes its messages under."""
    return getattr(tool_node, "_messages_key", None) or "messages"


def tool_node_with_tools(tool_node: ToolNode, tools: list[Any]) -> ToolNode:
    """A ``ToolNode`` configured as ``tool_node`` that holds ``tools`` instead.

    The name, tags, error handling, messages key and tool call wrappers are copied; a
    ``ToolNode`` keeps the last three privately.
    """
    return ToolNode(
        tools,
        name=tool_node.name or "tools",
        tags=list(tool_node.tags) if tool_node.tags is not None else None,
        handle_tool_errors=tool_node._handle_tool_errors,
        messages_key=tool_node_messages_key(tool_node),
        wrap_tool_call=tool_node._wrap_tool_call,
        awrap_tool_call=tool_node._awrap_tool_call,
    )


def sent_calls(node_input: Any) -> list[Any] | None:
    """The calls of a ``ToolNode`` input that carries them itself, else ``None``.

    A ``ToolNode`` runs either the last AI message's calls of a state, a list of calls, or
    one call wrapped with its state (``{"__type": "tool_call_with_context", ...}``, what
    ``create_agent``'s router sends).
    """
    if (
        isinstance(node_input, list)
        and node_input
        and isinstance(node_input[-1], dict)
        and node_input[-1].get("type") == "tool_call"
    ):
        return node_input
    if isinstance(node_input, dict) and node_input.get("__type") == TOOL_CALL_WITH_CONTEXT:
        return [node_input["tool_call"]]
    return None


def untraced(func: Callable[..., Any], afunc: Callable[..., Any], name: str) -> Any:
    """A runnable for a route or node that runs on every step: untraced, as LangGraph's own.

    A traced ``RunnableLambda`` there made every non-critical step about 10% slower (see
    docs/benchmarks.md, target 2). ``RunnableCallable`` (re-exported by ``langgraph.utils``,
    the base of ``ToolNode``) is the only runnable with sync and async twins and no trace.
    """
    try:
        # Re-exported there without an __all__, which mypy reads as private.
        from langgraph.utils.runnable import RunnableCallable  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - a future LangGraph moved it: fall back, traced
        return RunnableLambda(func, afunc=afunc, name=name)
    return RunnableCallable(func, afunc, name=name, trace=False)


def mark_invalid_resume(error: BaseException) -> None:
    """Mark ``error`` as LangGraph marks an invalid resume value.

    A ``ToolNode`` re-raises an error with this mark (the interrupt stays pending) instead
    of answering the tool call with it. There is no public API to set it.
    """
    from langgraph.errors import _mark_invalid_resume

    _mark_invalid_resume(error)


def attach_guard(compiled: Any, guard: Any) -> None:
    """Keep the guard behind a compiled graph on it, for introspection and tests."""
    setattr(compiled, _GUARD_ATTRIBUTE, guard)


def guard_of(compiled: Any) -> Any:
    """The guard :func:`attach_guard` kept on a compiled graph (``None`` if there is none)."""
    return getattr(compiled, _GUARD_ATTRIBUTE, None)



def run_checkpointer() -> Any:
    """The checkpointer of the graph run the caller is in (``None`` outside a run or without one).

    LangGraph keeps it in the run's config under a private key; there is no public accessor.
    """
    try:
        from langgraph.config import get_config

        config = get_config()
    except RuntimeError:
        return None
    return (config.get("configurable") or {}).get(CHECKPOINTER_CONFIG_KEY)
