"""with_inferact on three graph kinds and InferActMiddleware in both review modes: interrupt,
resume, feedback."""

from __future__ import annotations

import pytest
from guard_helpers import (
    KINDS,
    LEDGER,
    MIDDLEWARE_KINDS,
    STEP_REVIEW_KINDS,
    assert_valid_history,
    build_graph,
    buy_now,
    call,
    delete_account,
    review_in,
    search,
    shop_actor,
)
from inferact_langgraph.memory import FEEDBACK_MARKER
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from inferact_langgraph import (
    CriticalSpec,
    InferActMiddleware,
    ResumeError,
    UnauthorizedCriticalCall,
    UnsupportedGraphError,
    allow_critical_calls,
    with_inferact,
)
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic

TASK = "I need 66x66 inch blackout shades under $90"


@pytest.fixture(autouse=True)
def _clear_ledger():
    LEDGER.clear()
    yield
    LEDGER.clear()


def guarded(kind, actor, critic, *, tools=None, store=None, **options):
    tools = tools or [search, buy_now]
    if kind in MIDDLEWARE_KINDS:
        return create_agent(
            actor,
            tools,
            checkpointer=InMemorySaver(),
            store=store,
            middleware=[InferActMiddleware(critic=critic, review_in=review_in(kind), **options)],
        )
    return with_inferact(
        build_graph(kind, actor, tools),
        critic=critic,
        checkpointer=InMemorySaver(),
        store=store,
        **options,
    )


def cfg(thread="t1"):
    return {"configurable": {"thread_id": thread}}


@pytest.mark.parametrize("kind", KINDS)
def test_doubtful_call_interrupts_before_the_tool_runs(kind):
    critic = ScriptedCritic(scores=[0.2])
    graph = guarded(kind, shop_actor(), critic)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert LEDGER == []  # the side effect has not happened
    (intr,) = out["__interrupt__"]
    request = intr.value
    assert request["action_requests"][0]["name"] == "buy_now"
    assert request["action_requests"][0]["args"] == {"asin": "B02", "price": 40.0}
    section = request["action_requests"][0]["inferact"]
    assert section["score"] == 0.2 and section["threshold"] == 0.5
    assert section["tool_call_id"] == "buy-1" and section["risk"] == "low"
    assert request["review_configs"] == [
        {"action_name": "buy_now", "allowed_decisions": ["approve", "edit", "reject", "respond"]}
    ]
    # The critic saw the thought-free chain with the pending call last.
    (trajectory,) = critic.trajectories
    assert trajectory.task == TASK
    assert [s.tool_name for s in trajectory.steps] == ["search", "buy_now"]
    assert "66x66 shades" not in trajectory.render().split("Action 2")[1]  # no thought text
    assert "I will buy" not in trajectory.render()


@pytest.mark.parametrize("kind", KINDS)
def test_confident_critic_lets_the_call_run_without_asking(kind):
    critic = ScriptedCritic(scores=[0.9])
    graph = guarded(kind, shop_actor(), critic)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert "__interrupt__" not in out
    assert LEDGER == [{"asin": "B02", "price": 40.0}]
    assert critic.calls == 1
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert [(a["tool"], a["decision"], a["decided_by"]) for a in audit] == [
        ("buy_now", "approve", "critic")
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_approve_runs_the_tool_exactly_once_and_resume_never_calls_the_critic(kind):
    critic = ScriptedCritic(scores=[0.2])
    graph = guarded(kind, shop_actor(), critic)
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert critic.calls == 1
    out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    assert critic.calls == 1
    assert LEDGER == [{"asin": "B02", "price": 40.0}]
    assert out["messages"][-1].content == "All done."
    assert_valid_history(out["messages"])
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert [(a["decision"], a["decided_by"], a["score"]) for a in audit] == [
        ("approve", "human", 0.2)
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_reject_never_runs_the_tool_and_the_actor_sees_the_feedback(kind):
    actor = shop_actor()
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.2]))
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    out = graph.invoke(
        Command(resume={"decisions": [{"type": "reject", "message": "wrong size: 66x66"}]}), cfg()
    )
    assert LEDGER == []
    assert_valid_history(out["messages"])
    rejection = next(
        m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "buy-1"
    )
    assert rejection.status == "error" and "wrong size: 66x66" in rejection.content
    # The actor's next model call contains the feedback.
    last_prompt = actor.prompts[-1]
    assert any("wrong size: 66x66" in str(m.content) for m in last_prompt)
    state = graph.get_state(cfg()).values
    assert state["inferact_feedback"][0]["feedback"] == "wrong size: 66x66"
    assert state["inferact_audit"][-1]["decision"] == "reject"


@pytest.mark.parametrize("kind", KINDS)
def test_edit_is_rechecked_and_runs_with_the_edited_arguments(kind):
    critic = ScriptedCritic(scores=[0.2, 0.95])
    graph = guarded(kind, shop_actor(), critic)
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    edit = {
        "type": "edit",
        "edited_action": {"name": "buy_now", "args": {"asin": "B01", "price": 85.0}},
    }
    out = graph.invoke(Command(resume={"decisions": [edit]}), cfg())
    assert critic.calls == 2  # the edit itself was checked
    assert critic.trajectories[1].steps[-1].tool_args == {"asin": "B01", "price": 85.0}
    assert critic.trajectories[1].steps[-1].tool_call_id == "buy-1"
    assert LEDGER == [{"asin": "B01", "price": 85.0}]
    assert_valid_history(out["messages"])


@pytest.mark.parametrize("kind", ["create_agent", "middleware"])
def test_an_edit_the_critic_still_doubts_is_reviewed_again(kind):
    critic = ScriptedCritic(scores=[0.2, 0.1])
    graph = guarded(kind, shop_actor(), critic)
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    edit = {
        "type": "edit",
        "edited_action": {"name": "buy_now", "args": {"asin": "B09", "price": 99.0}},
    }
    out = graph.invoke(Command(resume={"decisions": [edit]}), cfg())
    assert LEDGER == []
    request = out["__interrupt__"][0].value["action_requests"][0]
    assert (
        request["args"] == {"asin": "B09", "price": 99.0} and request["inferact"]["risk"] == "high"
    )
    out = graph.invoke(Command(resume=True), cfg())
    assert critic.calls == 2
    assert LEDGER == [{"asin": "B09", "price": 99.0}]


@pytest.mark.parametrize("kind", STEP_REVIEW_KINDS)
def test_parallel_calls_each_doubtful_call_reviewed_others_run(kind):
    actor = shop_actor(
        call("buy_now", {"asin": "B02", "price": 40.0}, "buy-a"),
        call("search", {"query": "more"}, "s-2"),
        call("buy_now", {"asin": "B01", "price": 85.0}, "buy-b"),
    )
    critic = ScriptedCritic(
        score_fn=lambda t: 0.9 if t.steps[-1].tool_args["asin"] == "B01" else 0.1
    )
    graph = guarded(kind, actor, critic)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert critic.calls == 2
    requests = out["__interrupt__"][0].value["action_requests"]
    assert [r["inferact"]["tool_call_id"] for r in requests] == ["buy-a"]
    assert LEDGER == []
    out = graph.invoke(Command(resume="not that one"), cfg())
    assert LEDGER == [{"asin": "B01", "price": 85.0}]
    assert_valid_history(out["messages"])
    assert critic.calls == 2


@pytest.mark.parametrize("kind", STEP_REVIEW_KINDS)
def test_two_doubtful_calls_get_one_request_and_positional_decisions(kind):
    actor = shop_actor(
        call("buy_now", {"asin": "B02", "price": 40.0}, "buy-a"),
        call("buy_now", {"asin": "B01", "price": 85.0}, "buy-b"),
    )
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.1]))
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert len(out["__interrupt__"][0].value["action_requests"]) == 2
    with pytest.raises(ResumeError, match="expected 2 decision"):
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    assert graph.get_state(cfg()).interrupts  # still waiting
    out = graph.invoke(
        Command(resume={"decisions": [{"type": "reject", "message": "no"}, {"type": "approve"}]}),
        cfg(),
    )
    assert LEDGER == [{"asin": "B01", "price": 85.0}]
    assert_valid_history(out["messages"])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "bad",
    [
        {"decisions": [{"type": "maybe"}]},
        {"decisions": "approve"},
        {"decisions": [{"type": "edit", "edited_action": {"name": "buy_now"}}]},
        {"decisions": [{"type": "respond"}]},
        ["approve"],
        "",
    ],
)
def test_malformed_resume_is_a_clear_error_and_the_thread_stays_interrupted(kind, bad):
    graph = guarded(kind, shop_actor(), ScriptedCritic(scores=[0.2]))
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    with pytest.raises(ResumeError) as err:
        graph.invoke(Command(resume=bad), cfg())
    assert "Expected:" in str(err.value) and "decisions" in str(err.value)
    assert LEDGER == []
    assert graph.get_state(cfg()).interrupts
    graph.invoke(Command(resume=True), cfg())
    assert LEDGER == [{"asin": "B02", "price": 40.0}]


@pytest.mark.parametrize("kind", KINDS)
def test_respond_answers_the_call_with_the_humans_message(kind):
    graph = guarded(kind, shop_actor(), ScriptedCritic(scores=[0.2]))
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    out = graph.invoke(
        Command(resume={"decisions": [{"type": "respond", "message": "I bought it myself."}]}),
        cfg(),
    )
    assert LEDGER == []
    answer = next(
        m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "buy-1"
    )
    assert answer.content == "I bought it myself."
    assert_valid_history(out["messages"])


@pytest.mark.parametrize("kind", KINDS)
def test_critic_failure_fails_closed_and_says_why(kind):
    critic = ScriptedCritic(scores=[TimeoutError("critic model timed out")])
    graph = guarded(kind, shop_actor(), critic)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert LEDGER == []
    section = out["__interrupt__"][0].value["action_requests"][0]["inferact"]
    assert "timed out" in section["error"] and section["score"] is None
    graph.invoke(Command(resume=True), cfg())
    assert LEDGER == [{"asin": "B02", "price": 40.0}]
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert "timed out" in audit[-1]["error"]


@pytest.mark.parametrize("kind", ["create_agent", "middleware"])
def test_on_critic_error_block_rejects_without_asking(kind):
    graph = guarded(
        kind, shop_actor(), ScriptedCritic(scores=[RuntimeError("boom")]), on_critic_error="block"
    )
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert "__interrupt__" not in out and LEDGER == []
    assert_valid_history(out["messages"])
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert (audit[-1]["decision"], audit[-1]["decided_by"]) == ("reject", "policy")


@pytest.mark.parametrize("kind", ["create_agent", "middleware"])
def test_on_critic_error_allow_runs_low_risk_calls_only(kind):
    low = guarded(
        kind, shop_actor(), ScriptedCritic(scores=[RuntimeError("x")]), on_critic_error="allow"
    )
    low.invoke({"messages": [("user", TASK)]}, cfg())
    assert LEDGER == [{"asin": "B02", "price": 40.0}]
    LEDGER.clear()
    high_actor = shop_actor(call("buy_now", {"asin": "B01", "price": 85.0}, "buy-h"))
    high = guarded(
        kind, high_actor, ScriptedCritic(scores=[RuntimeError("x")]), on_critic_error="allow"
    )
    out = high.invoke({"messages": [("user", TASK)]}, cfg())
    assert LEDGER == [] and out["__interrupt__"]


@pytest.mark.parametrize("kind", KINDS)
def test_non_critical_calls_never_reach_the_critic(kind):
    actor = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[call("search", {"query": f"q{i}"}, f"s{i}")])
            for i in range(5)
        ]
        + ["done"]
    )
    critic = ScriptedCritic(scores=[0.0])
    graph = guarded(kind, actor, critic)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert critic.calls == 0 and "__interrupt__" not in out
    assert out["messages"][-1].content == "done"


@pytest.mark.parametrize("kind", KINDS)
def test_when_predicate_limits_which_calls_are_checked(kind):
    spec = {"buy_now": CriticalSpec(when=lambda a: a["price"] > 60)}
    critic = ScriptedCritic(scores=[0.0])
    graph = guarded(kind, shop_actor(), critic, critical=spec)
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert critic.calls == 0 and LEDGER == [{"asin": "B02", "price": 40.0}]


@pytest.mark.parametrize("kind", KINDS)
def test_tools_marked_by_name(kind):
    actor = shop_actor(call("delete_account", {"user": "bob"}, "d1"))
    graph = guarded(
        kind,
        actor,
        ScriptedCritic(scores=[0.3]),
        tools=[search, delete_account],
        critical=["delete_account"],
    )
    out = graph.invoke({"messages": [("user", "clean up test users")]}, cfg())
    assert (
        LEDGER == []
        and out["__interrupt__"][0].value["action_requests"][0]["name"] == "delete_account"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_binary_and_text_shorthands(kind):
    graph = guarded(kind, shop_actor(), ScriptedCritic(scores=[0.2]))
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    out = graph.invoke(Command(resume=False), cfg())
    assert LEDGER == []
    feedback = graph.get_state(cfg()).values["inferact_feedback"]
    assert feedback[0]["binary"] is True
    rejection = next(
        m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "buy-1"
    )
    assert "judged incorrect" in rejection.content


@pytest.mark.parametrize("kind", KINDS)
def test_feedback_reaches_the_next_trial_in_a_new_thread_via_the_store(kind):
    store = InMemoryStore()
    graph = guarded(kind, shop_actor(), ScriptedCritic(scores=[0.2]), store=store)
    graph.invoke({"messages": [("user", TASK)]}, cfg("trial-1"))
    graph.invoke(Command(resume="Buy the 66x66 inch ones, not custom size"), cfg("trial-1"))
    actor2 = shop_actor()
    graph2 = guarded(kind, actor2, ScriptedCritic(scores=[0.9]), store=store)
    graph2.invoke({"messages": [("user", TASK)]}, cfg("trial-2"))
    first_prompt = "\n".join(str(m.content) for m in actor2.prompts[0])
    assert FEEDBACK_MARKER in first_prompt
    assert "Buy the 66x66 inch ones, not custom size" in first_prompt
    # A different task does not see it.
    actor3 = shop_actor()
    graph3 = guarded(kind, actor3, ScriptedCritic(scores=[0.9]), store=store)
    graph3.invoke({"messages": [("user", "a red mug")]}, cfg("other"))
    assert FEEDBACK_MARKER not in "\n".join(str(m.content) for m in actor3.prompts[0])


@pytest.mark.parametrize("kind", STEP_REVIEW_KINDS)
def test_on_reject_end_stops_with_a_valid_history(kind):
    actor = shop_actor(
        call("buy_now", {"asin": "B02", "price": 40.0}, "buy-a"),
        call("search", {"query": "x"}, "s-9"),
    )
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.2]), on_reject="end")
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    out = graph.invoke(Command(resume="no"), cfg())
    assert LEDGER == [] and "__interrupt__" not in out
    assert isinstance(out["messages"][-1], ToolMessage)
    assert_valid_history(out["messages"])
    assert actor.calls == 2  # the actor was not called again


@pytest.mark.parametrize("kind", STEP_REVIEW_KINDS)
def test_on_reject_retry_starts_a_new_trial_with_memory(kind):
    actor = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[call("buy_now", {"asin": "B02", "price": 40.0}, "buy-1")]),
            AIMessage("", tool_calls=[call("buy_now", {"asin": "B01", "price": 85.0}, "buy-2")]),
            "done",
        ]
    )
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.2, 0.9]), on_reject="retry", max_trials=3)
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    out = graph.invoke(Command(resume="wrong size"), cfg())
    assert LEDGER == [{"asin": "B01", "price": 85.0}]
    second_trial_prompt = actor.prompts[1]
    # The actor sees the task, then the feedback: in a message of its own (with_inferact) or
    # in the system message of its model request (the middleware).
    memory = [m for m in second_trial_prompt if FEEDBACK_MARKER in str(m.content)]
    assert len(memory) == 1 and "wrong size" in str(memory[0].content)
    if kind in MIDDLEWARE_KINDS:
        assert memory[0].type == "system"
    else:
        assert memory[0].type == "human" and memory[0].name == "inferact_memory"
    assert [m.content for m in second_trial_prompt if m.type == "human" and not m.name] == [TASK]
    assert not any(
        isinstance(m, ToolMessage) for m in second_trial_prompt
    )  # working memory cleared
    values = graph.get_state(cfg()).values
    assert values["inferact_trial"] == 1
    # ... and the thread never holds the feedback as a message the user seems to have typed.
    assert not any(FEEDBACK_MARKER in str(m.content) for m in values["messages"])
    assert [m.content for m in values["messages"] if isinstance(m, HumanMessage)] == [TASK]
    assert_valid_history(out["messages"])


def test_unsupported_graphs_and_bad_options_are_clear_errors():
    with pytest.raises(UnsupportedGraphError, match="create_react_agent"):
        with_inferact(object(), critic=ScriptedCritic(scores=[1.0]))
    graph = build_graph("create_agent", shop_actor(), [search, buy_now])
    with pytest.raises(ValueError, match="not tools of this graph"):
        with_inferact(graph, critic=ScriptedCritic(scores=[1.0]), critical=["nope"])
    with pytest.raises(ValueError, match="no critical tool"):
        with_inferact(
            build_graph("create_agent", shop_actor(), [search]), critic=ScriptedCritic(scores=[1.0])
        )
    with pytest.raises(ValueError, match=r"model= .* or critic="):
        with_inferact(graph)
    with pytest.raises(ValueError, match="on_reject"):
        with_inferact(graph, critic=ScriptedCritic(scores=[1.0]), on_reject="later")
    guarded_once = with_inferact(graph, critic=ScriptedCritic(scores=[1.0]))
    with pytest.raises(UnsupportedGraphError, match="guarded twice"):
        with_inferact(guarded_once, critic=ScriptedCritic(scores=[1.0]))


def test_the_original_graph_is_not_modified():
    graph = build_graph("create_agent", shop_actor(), [search, buy_now])
    nodes_before = set(graph.builder.nodes)
    with_inferact(graph, critic=ScriptedCritic(scores=[1.0]))
    assert set(graph.builder.nodes) == nodes_before
    # Unguarded, the critical tool itself refuses to run: the mark is the lock.
    with pytest.raises(UnauthorizedCriticalCall, match="no verdict or approval"):
        graph.invoke({"messages": [("user", TASK)]})
    assert LEDGER == []
    graph = build_graph("create_agent", shop_actor(), [search, buy_now])
    with allow_critical_calls():  # on purpose, outside a guard: the graph runs as before
        out = graph.invoke({"messages": [("user", TASK)]})
    assert LEDGER == [{"asin": "B02", "price": 40.0}] and out["messages"][-1].content == "All done."


@pytest.mark.parametrize("kind", KINDS)
async def test_async_paths_invoke_and_stream(kind):
    critic = ScriptedCritic(scores=[0.2], delay=0.01)
    graph = guarded(kind, shop_actor(), critic)
    chunks = [
        c async for c in graph.astream({"messages": [("user", TASK)]}, cfg(), stream_mode="updates")
    ]
    assert any("__interrupt__" in c for c in chunks)
    assert LEDGER == []
    out = await graph.ainvoke(Command(resume=True), cfg())
    assert LEDGER == [{"asin": "B02", "price": 40.0}] and critic.calls == 1
    assert_valid_history(out["messages"])


@pytest.mark.parametrize("kind", KINDS)
def test_sync_stream(kind):
    graph = guarded(kind, shop_actor(), ScriptedCritic(scores=[0.2]))
    chunks = list(graph.stream({"messages": [("user", TASK)]}, cfg(), stream_mode="updates"))
    assert any("__interrupt__" in c for c in chunks)
    list(graph.stream(Command(resume=True), cfg()))
    assert LEDGER == [{"asin": "B02", "price": 40.0}]


@pytest.mark.parametrize("kind", KINDS)
def test_task_extractor_for_multi_turn_chats(kind):
    critic = ScriptedCritic(scores=[0.9])
    graph = guarded(kind, shop_actor(), critic, task_extractor=lambda state: "the real task")
    graph.invoke({"messages": [("user", "hi"), ("user", TASK)]}, cfg())
    assert critic.trajectories[0].task == "the real task"
