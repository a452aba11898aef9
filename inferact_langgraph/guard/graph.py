r"""``with_inferact``: put the InferAct critic in front of the critical tools of a ReAct graph.

It takes a ``StateGraph`` builder with a ``ToolNode``, a compiled graph from
``langgraph.prebuilt.create_react_agent`` or from ``langchain.agents.create_agent``, and returns
a new compiled graph (the original is not modified) with three nodes added::

    START -> inferact_memory -> <actor> -> ... -> inferact_critic -> inferact_gate -> tools
                                                                            '-> <actor> / END

* ``inferact_memory`` loads this user's earlier feedback on the task (from the store) into the
  state key ``inferact_memory``; the actor node receives it as an extra message in its input
  only (:func:`~inferact_langgraph.guard.memory.memory_message`), so it is never written to the
  thread's messages;
* ``inferact_critic`` runs the critic on the last AI message's critical calls and writes the
  verdicts to state; only routes that carry a critical call go through it;
* ``inferact_gate`` interrupts for doubtful calls and applies the human's decisions, then sends
  every approved or non-critical call to the tool node, one ``Send`` per call.

Example:
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_core.tools import tool
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from langchain.agents import create_agent
    >>> from inferact_langgraph import critical
    >>> from inferact_langgraph.critics import StandardEvalCritic
    >>> from inferact_langgraph.testing import ScriptedChatModel
    >>> @critical
    ... @tool
    ... def buy_now(asin: str) -> str:
    ...     '''Buy a product.'''
    ...     return f"bought {asin}"
    >>> actor = ScriptedChatModel(replies=[
    ...     AIMessage("", tool_calls=[{"name": "buy_now", "args": {"asin": "B1"}, "id": "c1"}]),
    ...     "Done."])
    >>> judge = ScriptedChatModel(replies=["The answer is: Incorrect\nConfidence: 0.9"])
    >>> guarded = with_inferact(create_agent(actor, [buy_now]),
    ...     critic=StandardEvalCritic(model=judge), checkpointer=InMemorySaver())
    >>> cfg = {"configurable": {"thread_id": "doc"}}
    >>> out = guarded.invoke({"messages": [("user", "buy a red mug")]}, cfg)
    >>> out["__interrupt__"][0].value["action_requests"][0]["name"]
    'buy_now'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast, get_type_hints

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.constants import END, START
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Send
from typing_extensions import TypedDict, Unpack, is_typeddict

from inferact_langgraph.errors import UnauthorizedCriticalCall, UnsupportedGraphError
from inferact_langgraph.guard._compat import (
    add_schema,
    attach_guard,
    copy_builder,
    replace_branch,
    replace_node,
    sent_calls,
    tool_node_messages_key,
    untraced,
)
from inferact_langgraph.guard.arguments import GuardArguments, critic_from, options_from
from inferact_langgraph.guard.authorization import is_locked, permitted
from inferact_langgraph.guard.binding import authorize
from inferact_langgraph.guard.core import InferActGuard
from inferact_langgraph.guard.marks import critical_spec, resolve_critical_tools
from inferact_langgraph.guard.memory import (
    memory_message,
    memory_text,
    without_memory_messages,
)
from inferact_langgraph.guard.provenance import mark_tool_output
from inferact_langgraph.guard.requests import request_positions
from inferact_langgraph.guard.state import (
    MEMORY,
    ROUTE,
    GuardState,
    StateView,
    last_ai_message,
    messages_of,
)

__all__ = ["CRITIC_NODE", "GATE_NODE", "MEMORY_NODE", "with_inferact"]

MEMORY_NODE = MEMORY
CRITIC_NODE = "inferact_critic"
GATE_NODE = "inferact_gate"

SUPPORTED = (
    "a StateGraph builder with a ToolNode, a compiled graph from "
    "langgraph.prebuilt.create_react_agent, or a compiled graph from "
    "langchain.agents.create_agent"
)


def _guard_schema(state_schema: type) -> type:
    """The user's state keys plus the guard's, for the nodes the guard adds."""
    try:
        hints = get_type_hints(state_schema, include_extras=True)
    except Exception as exc:
        raise UnsupportedGraphError(
            f"cannot read the graph's state schema {state_schema!r}: {exc}"
        ) from exc
    hints.update(get_type_hints(GuardState, include_extras=True))
    # Built at run time from the user's keys; mypy checks only TypedDicts written as literals.
    schema: type = TypedDict("InferActGuardState", hints, total=False)  # type: ignore[misc]
    return schema


def _find_tool_node(builder: StateGraph[Any], name: str | None) -> tuple[str, ToolNode]:
    tool_nodes = {
        n: s.runnable for n, s in builder.nodes.items() if isinstance(s.runnable, ToolNode)
    }
    if name is not None:
        if name not in tool_nodes:
            raise UnsupportedGraphError(
                f"tools_node={name!r} is not a ToolNode of this graph; "
                f"ToolNodes: {sorted(tool_nodes)}"
            )
        return name, tool_nodes[name]
    if not tool_nodes:
        raise UnsupportedGraphError(
            f"the graph has no ToolNode; with_inferact supports {SUPPORTED}"
        )
    if len(tool_nodes) > 1:
        raise UnsupportedGraphError(
            f"the graph has several ToolNodes {sorted(tool_nodes)}: pass tools_node=<name>"
        )
    return next(iter(tool_nodes.items()))


def _find_actor(builder: StateGraph[Any], tools: str, name: str | None) -> str:
    if name is not None:
        if name not in builder.nodes:
            raise UnsupportedGraphError(f"actor_node={name!r} is not a node of this graph")
        return name
    targets = {end for start, end in builder.edges if start == tools}
    for branch in builder.branches.get(tools, {}).values():
        targets.update(v for v in (branch.ends or {}).values() if v != END)
    targets.discard(END)
    if len(targets) != 1:
        raise UnsupportedGraphError(
            f"cannot tell which node the tool node {tools!r} returns to ({sorted(targets)}); "
            "pass actor_node=<name>"
        )
    return targets.pop()


def _targets_tools(item: Any, tools: str) -> bool:
    return item == tools or (isinstance(item, Send) and item.node == tools)


def _redirect_branch(spec: Any, tools: str, guard: InferActGuard) -> Any:
    """Wrap a branch so that routes carrying a critical call go to the critic node first."""
    path = spec.path

    def redirect(state: Any, result: Any) -> Any:
        items = result if isinstance(result, list) else [result]
        if not any(_targets_tools(i, tools) for i in items):
            return result  # not bound for the tools: zero added work
        if not guard.critic_step.critical_calls(state):
            return result  # nothing critical: zero added work
        kept = [i for i in items if not _targets_tools(i, tools)]
        return [*kept, CRITIC_NODE]

    def route(state: Any, config: RunnableConfig) -> Any:
        return redirect(state, path.invoke(state, config))

    async def aroute(state: Any, config: RunnableConfig) -> Any:
        return redirect(state, await path.ainvoke(state, config))

    ends = spec.ends
    if isinstance(ends, dict):
        ends = {**ends, CRITIC_NODE: CRITIC_NODE}
    return replace_branch(spec, path=untraced(route, aroute, f"inferact_{path.name}"), ends=ends)


def _route_after_gate(guard: InferActGuard, tools: str, actor: str) -> Callable[[Any], Any]:
    def route(state: Mapping[str, Any]) -> Any:
        where = state.get(ROUTE)
        if where == "end":
            return END
        if where == "retry":
            return MEMORY_NODE
        if where == "review":  # an edit the critic still doubts: a new review, a new interrupt
            return GATE_NODE
        if guard.critic_step.needs_check(state):  # a record that binds nothing here: check afresh
            return CRITIC_NODE
        view = StateView.read(state)
        sends = []
        for _index, call in view.pending:
            # Never send a critical call without a bound verdict or approval (the tool node
            # checks again: this is only where the run goes next).
            if guard.critic_step.is_critical(call):
                _, reason = authorize(view, call, key=guard.options.key)
                if reason is not None:
                    continue
            sends.append(Send(tools, [call]))  # the tool node reads the state itself
        return sends or actor

    return route


def _calls_of(node_input: Any) -> list[ToolCall]:
    """The tool calls a ``ToolNode`` runs for this input (its own three input shapes)."""
    sent = sent_calls(node_input)
    if sent is not None:
        return sent
    ai = last_ai_message(node_input)
    return list(ai.tool_calls) if ai is not None else []


def _as_answers(out: Any) -> list[Any]:
    """A ToolNode's output for a list of calls, as the ToolMessages / Commands it holds."""
    if isinstance(out, dict):
        return [m for v in out.values() for m in v]
    answers: list[Any] = []
    for item in out if isinstance(out, list) else [out]:
        if isinstance(item, dict):
            answers.extend(m for v in item.values() for m in v)
        elif isinstance(item, list):
            answers.extend(item)
        else:
            answers.append(item)
    return answers


def _guarded_tool_node(guard: InferActGuard, tool_node: ToolNode) -> Any:
    """The graph's tool node, unchanged, behind a check that no route can skip.

    Every input (an edge's state, a ``Send`` of calls, a ``Send`` with an inlined state, a
    caller's or a tool's ``Command(goto=...)``) is turned into a plain list of calls, so the
    state is always read from the graph's channels, never taken from a payload someone built.
    A critical call then runs only if :func:`~inferact_langgraph.guard.binding.authorize` finds a
    record bound to exactly that call; otherwise it is answered with an error and audited.
    The user's ``ToolNode`` (error handling, middleware wrappers) runs the calls it allows.
    Every human message in a tool's ``Command`` (critical or not) leaves marked as the tool's
    (:func:`~inferact_langgraph.guard.provenance.mark_tool_output`): it is never the user's request.
    """
    key = tool_node_messages_key(tool_node)
    user_node = tool_node
    tool_node = guard.locked_tool_node(tool_node)  # tools named in critical=[...] locked too

    def enforce(request: Any, _execute: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        auth = None
        if guard.critic_step.is_critical(call, request.tool):
            auth, reason = guard.permit(request.state, call)
            if reason is not None:
                return guard.protocol.refusal(call, reason)
        else:
            auth = guard.exempt(call, request.tool)
        try:
            with permitted(auth):  # the tool itself consumes it, once
                return _as_answers(tool_node.invoke([call], request.runtime.config))
        except UnauthorizedCriticalCall as exc:
            return guard.protocol.refusal(call, exc.reason)

    async def aenforce(request: Any, _execute: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        auth = None
        if guard.critic_step.is_critical(call, request.tool):
            auth, reason = await guard.apermit(request.state, call)
            if reason is not None:
                return guard.protocol.refusal(call, reason)
        else:
            auth = guard.exempt(call, request.tool)
        try:
            with permitted(auth):
                return _as_answers(await tool_node.ainvoke([call], request.runtime.config))
        except UnauthorizedCriticalCall as exc:
            return guard.protocol.refusal(call, exc.reason)

    checker = ToolNode(
        list(user_node.tools_by_name.values()),
        name=user_node.name or "tools",
        handle_tool_errors=False,  # the user's tool node handles errors as it always did
        wrap_tool_call=enforce,
        awrap_tool_call=aenforce,
    )

    locked = {name for name, tool in tool_node.tools_by_name.items() if is_locked(tool)}

    def needs_check(node_input: Any) -> list[ToolCall] | None:
        calls = _calls_of(node_input)
        enforced = any(guard.critic_step.is_critical(c) or c.get("name") in locked for c in calls)
        return calls if enforced else None

    def run(node_input: Any, config: RunnableConfig) -> Any:
        calls = needs_check(node_input)
        if calls is None:  # nothing critical: the user's node as is (its output marked)
            return mark_tool_output(tool_node.invoke(node_input, config), key)
        return mark_tool_output(checker.invoke(calls, config), key)

    async def arun(node_input: Any, config: RunnableConfig) -> Any:
        calls = needs_check(node_input)
        if calls is None:
            return mark_tool_output(await tool_node.ainvoke(node_input, config), key)
        return mark_tool_output(await checker.ainvoke(calls, config), key)

    return untraced(run, arun, tool_node.name or "tools")


def _with_memory(state: Any) -> Any:
    """The actor's input with the memory message after the newest request, or None."""
    text = memory_text(state)
    if text is None:
        return None
    messages = messages_of(state)
    positions = request_positions(messages)
    at = positions[-1] + 1 if positions else 0
    return {**state, "messages": [*messages[:at], memory_message(text), *messages[at:]]}


def _actor_with_memory(actor: Any) -> Any:
    """The actor node, given the memory in its input only: it never reaches the thread."""

    def run(state: Any, config: RunnableConfig) -> Any:
        given = _with_memory(state)
        if given is None:  # no memory: the user's node as is
            return actor.invoke(state, config)
        return without_memory_messages(actor.invoke(given, config))

    async def arun(state: Any, config: RunnableConfig) -> Any:
        given = _with_memory(state)
        if given is None:
            return await actor.ainvoke(state, config)
        return without_memory_messages(await actor.ainvoke(given, config))

    return untraced(run, arun, getattr(actor, "name", None) or "actor")


def _critical_tool_nodes(builder: StateGraph[Any], guard: InferActGuard, tools: str) -> list[str]:
    """The ToolNodes holding a critical tool (``tools`` always), each reading ``messages``.

    Raises:
        UnsupportedGraphError: Such a node reads its calls from another state key: the
            guard reads ``state["messages"]``, so it would never see those calls.
    """
    found = []
    for name, spec in builder.nodes.items():
        node = spec.runnable
        if not isinstance(node, ToolNode):
            continue
        holds = [
            t for t, tool in node.tools_by_name.items() if t in guard.specs or critical_spec(tool)
        ]
        if name != tools and not holds:
            continue
        key = tool_node_messages_key(node)
        if key != "messages":
            raise UnsupportedGraphError(
                f"the ToolNode {name!r} reads its tool calls from state[{key!r}]; with_inferact "
                "reads the calls it checks from state['messages'], so it cannot guard that node "
                f"(its critical tools {holds} would refuse every call). Use "
                "messages_key='messages', or InferActMiddleware in a create_agent agent"
            )
        found.append(name)
    return found


def _command_routes(builder: StateGraph[Any], tools: str) -> list[str]:
    """Nodes that declare ``Command(goto=<tools>)`` (which would skip the critic node)."""
    return sorted(
        name for name, spec in builder.nodes.items() if name != tools and tools in (spec.ends or ())
    )


def with_inferact(
    graph: StateGraph[Any] | CompiledStateGraph[Any],
    *,
    checkpointer: Any = None,
    store: Any = None,
    tools_node: str | None = None,
    actor_node: str | None = None,
    name: str | None = None,
    **arguments: Unpack[GuardArguments],
) -> CompiledStateGraph[Any]:
    """Guard a ReAct graph's critical tool calls with InferAct and human review.

    Args:
        graph: A ``StateGraph`` builder with a ``ToolNode``, or a compiled graph from
            ``create_react_agent`` / ``create_agent``. It is not modified.
        checkpointer: Required for interrupts (default: the compiled graph's own, if any). A
            run without one raises ``CheckpointerRequiredError`` when a review would open
            (the call is not run); the LangGraph server supplies its own.
        store: Keeps feedback across threads (default: the compiled graph's own, if any).
        tools_node: The tool node's name, when the graph has several.
        actor_node: The node the tools return to, when it cannot be inferred.
        name: Name of the returned graph.
        **arguments: The critic (``model=`` or ``critic=``, ``threshold``, ``preset``,
            ``cache``, ``calibration``), the ``critical`` tools and the policy
            (``on_critic_error``, ``on_reject``, ``max_trials``, ``scope``,
            ``task_extractor``, ``thought_tools``, ``request_boundaries``, ``memory``,
            ``memory_namespace``, ``allowed_decisions``, ``spot_check``, ``spot_check_seed``,
            ``labels``, or ``options=``), as
            ``InferActMiddleware`` takes them: see
            :class:`~inferact_langgraph.guard.arguments.GuardArguments`.

    Returns:
        A compiled graph with the same input and output as ``graph``.

    Raises:
        UnsupportedGraphError: ``graph`` is not one of the supported kinds.
        ValueError: Bad options (``checkpointer=False`` too, or ``options`` together with a
            policy keyword), or no critical tool found.
        TypeError: A keyword ``with_inferact`` does not take.
    """
    options = options_from(arguments, caller="with_inferact")
    if isinstance(graph, CompiledStateGraph):
        builder = getattr(graph, "builder", None)
        if not isinstance(builder, StateGraph):
            raise UnsupportedGraphError(
                f"this compiled graph has no StateGraph builder; supported: {SUPPORTED}"
            )
        checkpointer = checkpointer if checkpointer is not None else graph.checkpointer
        store = store if store is not None else graph.store
        name = name or graph.name
    elif isinstance(graph, StateGraph):
        builder = graph
    else:
        raise UnsupportedGraphError(
            f"with_inferact got {type(graph).__name__}; it supports {SUPPORTED}"
        )
    if checkpointer is False:  # as a subgraph it would borrow the parent's, yet never resume
        raise ValueError(
            "with_inferact cannot guard a graph with checkpointer=False: a review could never be "
            "resumed (the approval would be lost and the graph re-run). Pass a saver, or None to "
            "use the parent graph's (or the LangGraph server's) checkpointer"
        )
    for reserved in (MEMORY_NODE, CRITIC_NODE, GATE_NODE):
        if reserved in builder.nodes:
            raise UnsupportedGraphError(
                f"the graph already has a node {reserved!r}: is it guarded twice?"
            )

    tools_name, tool_node = _find_tool_node(builder, tools_node)
    skipping = _command_routes(builder, tools_name)
    if skipping:
        raise UnsupportedGraphError(
            f"nodes {skipping} route to the tool node {tools_name!r} with Command(goto=...), "
            "which no edge of the graph can redirect to the critic; route to the tools with "
            "a conditional edge (e.g. tools_condition) instead. (Undeclared Command routes "
            "are still safe: the tool node refuses every critical call without a verdict.)"
        )
    actor = _find_actor(builder, tools_name, actor_node)
    available = tool_node.tools_by_name
    specs = resolve_critical_tools(available.values(), arguments.get("critical"))
    unknown = sorted(set(specs) - set(available))
    if unknown:
        raise ValueError(
            f"critical tools {unknown} are not tools of this graph; its tools: {sorted(available)}"
        )
    if not specs:
        raise ValueError(
            "no critical tool: mark tools with @critical or pass critical=[...]; "
            f"the graph's tools are {sorted(available)}"
        )
    guard = InferActGuard(
        critic=critic_from(arguments),
        specs=specs,
        options=options,
        tools=available,
    )

    guarded_nodes = _critical_tool_nodes(builder, guard, tools_name)
    new = copy_builder(builder)
    schema = _guard_schema(builder.state_schema)
    # Every other ToolNode holding a critical tool refuses its calls without an authorization
    # too (no critic route leads there, so it never has one to give).
    for other in guarded_nodes:
        if other != tools_name:
            replace_node(
                new,
                other,
                runnable=_guarded_tool_node(guard, cast(ToolNode, builder.nodes[other].runnable)),
                input_schema=schema,
            )

    # Every route into the tool node passes the critic first when it carries a critical call.
    for branches in new.branches.values():
        for branch_name, spec in list(branches.items()):
            ends = spec.ends
            if ends is None or tools_name in (ends.values() if isinstance(ends, dict) else ends):
                branches[branch_name] = _redirect_branch(spec, tools_name, guard)
    for start, end in list(new.edges):
        if end == tools_name and start != GATE_NODE:
            new.edges.discard((start, end))
            new.edges.add((start, CRITIC_NODE))

    # Memory first: START -> inferact_memory -> (what START led to).
    for start, end in list(new.edges):
        if start == START:
            new.edges.discard((start, end))
            new.edges.add((MEMORY_NODE, end))
    if START in new.branches:
        new.branches[MEMORY_NODE] = new.branches.pop(START)

    # ``state`` is the guard's state schema, a TypedDict built at run time (see _guard_schema).
    def memory_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return guard.start_run(state, _store_from(), config)

    async def amemory_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await guard.astart_run(state, _store_from(), config)

    def gate_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return guard.finish_review(guard.review(state), _store_from(), config, state)

    async def agate_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        outcome = await guard.areview(state)
        return await guard.afinish_review(outcome, _store_from(), config, state)

    # The tool node itself checks every critical call: routes that skip the critic node
    # (a Command, a Send, a caller's goto, a retry) reach a tool that refuses to run.
    replace_node(
        new, tools_name, runnable=_guarded_tool_node(guard, tool_node), input_schema=schema
    )

    # The actor receives earlier feedback in its input only (never written to the thread).
    # A TypedDict state gets the memory key added; other state types are passed unchanged.
    actor_spec = new.nodes[actor]
    actor_schema = actor_spec.input_schema or builder.state_schema
    if is_typeddict(actor_schema):
        actor_input = schema
        if actor_schema is not builder.state_schema:
            actor_input = _guard_schema(actor_schema)
            add_schema(new, actor_input)
        replace_node(
            new, actor, runnable=_actor_with_memory(actor_spec.runnable), input_schema=actor_input
        )

    new.add_node(MEMORY_NODE, RunnableLambda(memory_node, afunc=amemory_node), input_schema=schema)
    step = guard.critic_step
    new.add_node(CRITIC_NODE, RunnableLambda(step.check, afunc=step.acheck), input_schema=schema)
    new.add_node(GATE_NODE, RunnableLambda(gate_node, afunc=agate_node), input_schema=schema)
    new.add_edge(START, MEMORY_NODE)
    new.add_edge(CRITIC_NODE, GATE_NODE)
    new.add_conditional_edges(
        GATE_NODE,
        _route_after_gate(guard, tools_name, actor),
        [tools_name, actor, MEMORY_NODE, GATE_NODE, CRITIC_NODE, END],
    )
    compiled = new.compile(checkpointer=checkpointer, store=store, name=name or "inferact")
    attach_guard(compiled, guard)
    return compiled


def _store_from() -> Any:
    """The current run's store (``None`` without one, or outside a run)."""
    try:
        from langgraph.config import get_store

        return get_store()
    except Exception:  # noqa: BLE001 - no store configured, or not in a graph context
        return None
