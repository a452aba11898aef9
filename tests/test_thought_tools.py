"""A ``think`` tool's calls are the agent's thoughts: the critic never sees them.

InferAct judges what the agent did, not what it said (the paper removes thoughts; its authors
also drop ALFWorld's ``think:`` steps). Tool agents often write their reasoning through a
``think`` tool (tau-bench's agent does, and Anthropic's guide recommends one); its argument is
the agent's rationale for the next call ("I will proceed to cancel the eligible
reservations"), which would argue the critic into agreeing.
"""

from __future__ import annotations

import uuid

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import InferActMiddleware, Trajectory, critical, with_inferact
from inferact_langgraph.critics.inferact import InferActCritic
from inferact_langgraph.guard.options import GuardOptions
from inferact_langgraph.testing import (
    ScriptedChatModel,
    ScriptedCritic,
    prompt_text,
    scripted_critic_model,
)

THOUGHT = "THOUGHT-SECRET the basic economy one is eligible, I will cancel it"


def _conversation() -> list:
    return [
        HumanMessage("cancel my business-class trip"),
        AIMessage("", tool_calls=[{"name": "get_reservation", "args": {"id": "R1"}, "id": "c1"}]),
        ToolMessage("R1: basic economy, no insurance", tool_call_id="c1"),
        AIMessage("", tool_calls=[{"name": "think", "args": {"thought": THOUGHT}, "id": "c2"}]),
        ToolMessage("", tool_call_id="c2"),
        AIMessage("", tool_calls=[{"name": "cancel", "args": {"id": "R1"}, "id": "c3"}]),
    ]


def _actor(*calls: tuple[str, dict]) -> ScriptedChatModel:
    """An actor that makes ``calls`` one per turn, then says it is done."""

    def respond(messages: list) -> AIMessage:
        made = sum(isinstance(m, ToolMessage) for m in messages)
        mid = f"ai-{uuid.uuid4().hex}"
        if made >= len(calls):
            return AIMessage("Done.", id=mid)
        name, args = calls[made]
        return AIMessage("", id=mid, tool_calls=[{"name": name, "args": args, "id": f"c{made}"}])

    return ScriptedChatModel(responder=respond)


def test_think_calls_are_left_out_of_the_action_chain() -> None:
    steps = Trajectory.from_messages(_conversation()).steps
    assert [s.tool_name for s in steps] == ["get_reservation", "cancel"]


def test_thought_tools_can_be_named_or_turned_off() -> None:
    kept = Trajectory.from_messages(_conversation(), thought_tools=())
    assert [s.tool_name for s in kept.steps] == ["get_reservation", "think", "cancel"]
    named = Trajectory.from_messages(_conversation(), thought_tools={"get_reservation"})
    assert [s.tool_name for s in named.steps] == ["think", "cancel"]


def test_a_records_think_steps_are_left_out_but_its_last_action_is_kept() -> None:
    record = {
        "task": "cancel R1",
        "steps": [
            {"thought": "", "action": 'get_reservation(id="R1")', "observation": "R1: economy"},
            {"thought": "", "action": f'think(thought="{THOUGHT}")', "observation": ""},
            {"thought": "", "action": 'cancel(id="R1")', "observation": None},
        ],
    }
    steps = Trajectory.from_record(record).steps
    assert [s.action for s in steps] == ['get_reservation(id="R1")', 'cancel(id="R1")']
    assert "think" in Trajectory.from_record(record, thought_tools=()).render()


@pytest.mark.parametrize("entry", ["with_inferact", "middleware"])
def test_the_guard_never_shows_a_think_call_to_the_critic(entry: str) -> None:
    @tool
    def think(thought: str) -> str:
        """Write down a thought (no effect)."""
        return ""

    @critical
    @tool
    def cancel(reservation: str) -> str:
        """Cancel a reservation (irreversible)."""
        return "cancelled"

    critic_model = scripted_critic_model(0.9)
    critic = InferActCritic(model=critic_model, calibration=None)
    actor_model = _actor(("think", {"thought": THOUGHT}), ("cancel", {"reservation": "R1"}))
    if entry == "middleware":
        graph = create_agent(
            actor_model,
            [think, cancel],
            middleware=[InferActMiddleware(critic=critic)],
            checkpointer=InMemorySaver(),
        )
    else:
        graph = with_inferact(
            create_agent(actor_model, [think, cancel]),
            critic=critic,
            checkpointer=InMemorySaver(),
        )
    graph.invoke({"messages": [("user", "cancel R1")]}, {"configurable": {"thread_id": "t"}})
    seen = "\n".join(prompt_text(p) for p in critic_model.prompts)
    assert critic_model.calls == 3 and 'cancel(reservation="R1")' in seen
    assert "THOUGHT-SECRET" not in seen


@pytest.mark.parametrize("bad", ["think", 3, ["think", 1]])
def test_thought_tools_must_be_a_collection_of_names(bad) -> None:
    with pytest.raises(ValueError, match=r"thought_tools must be a collection of tool names"):
        GuardOptions(thought_tools=bad)


def test_a_critical_tool_named_like_a_thought_tool_stays_in_the_action_chain() -> None:
    @critical
    @tool
    def think(thought: str) -> str:
        """A tool that acts, although it is called think (irreversible)."""
        return "done"

    critic = ScriptedCritic(scores=[0.9, 0.9])
    actor_model = _actor(("think", {"thought": "act 0"}), ("think", {"thought": "act 1"}))
    graph = with_inferact(
        create_agent(actor_model, [think]),
        critic=critic,
        checkpointer=InMemorySaver(),
    )
    graph.invoke({"messages": [("user", "act twice")]}, {"configurable": {"thread_id": "k"}})
    chain = [s.action for s in critic.trajectories[-1].steps]
    assert chain == ['think(thought="act 0")', 'think(thought="act 1")']
