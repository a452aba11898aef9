"""The guard's state: one schema for both entry points, read once per step into a view."""

from __future__ import annotations

from typing import get_type_hints

import pytest
from guard_helpers import buy_now, search
from langchain.agents import create_agent
from langchain.agents.middleware.types import AgentState
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import InferActMiddleware, with_inferact
from inferact_langgraph.guard import state as guard_state
from inferact_langgraph.guard.state import KEYS, GuardState, InferActState, StateView
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic


def _channel_shape(channel):
    """What a key does with a write: its channel type and its reducer, if it has one."""
    return type(channel).__name__, getattr(channel, "operator", None)


def test_the_guard_state_declares_exactly_the_key_constants():
    assert set(get_type_hints(GuardState)) == set(KEYS)
    assert len(set(KEYS)) == len(KEYS)


def test_the_middleware_state_is_the_agent_state_plus_the_guard_state():
    hints = set(get_type_hints(InferActState))
    assert hints == set(get_type_hints(AgentState)) | set(KEYS)
    assert InferActMiddleware(critic=ScriptedCritic(scores=[0.9])).state_schema is InferActState


def test_both_entry_points_keep_every_guard_key_with_the_same_reducer():
    actor = ScriptedChatModel(replies=["Done."])
    critic = ScriptedCritic(scores=[0.9])
    graph = with_inferact(
        create_agent(actor, [search, buy_now]), critic=critic, checkpointer=InMemorySaver()
    )
    agent = create_agent(
        actor,
        [search, buy_now],
        middleware=[InferActMiddleware(critic=critic)],
        checkpointer=InMemorySaver(),
    )
    for key in KEYS:
        assert _channel_shape(graph.channels[key]) == _channel_shape(agent.channels[key]), key
    # Parallel writes merge (checks, audit, feedback) or the latest wins (memory, route).
    assert graph.channels[guard_state.CHECKS].operator is guard_state.merge_checks
    assert graph.channels[guard_state.AUDIT].operator is guard_state.append
    assert graph.channels[guard_state.MEMORY].operator is guard_state.latest


def test_no_guard_key_is_part_of_the_agents_input():
    critic = ScriptedCritic(scores=[0.9])
    agent = create_agent(
        ScriptedChatModel(replies=["Done."]),
        [search, buy_now],
        middleware=[InferActMiddleware(critic=critic)],
    )
    inputs = set(agent.get_input_jsonschema()["properties"])
    assert "messages" in inputs
    assert not inputs & set(KEYS)


def test_reducers_treat_a_missing_value_as_empty():
    assert guard_state.append(None, [1]) == [1]
    assert guard_state.append([1], None) == [1]
    assert guard_state.merge_checks(None, {"c": {}}) == {"c": {}}
    assert guard_state.latest({"task": "a"}, None) is None


def _thread() -> list:
    return [
        HumanMessage("buy a mug"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[
                {"name": "search", "args": {"q": "mug"}, "id": "s1"},
                {"name": "buy_now", "args": {"asin": "B1", "price": 5.0}, "id": "b1"},
            ],
        ),
        ToolMessage("found", tool_call_id="s1"),
    ]


def test_a_view_holds_the_last_ai_message_and_its_unanswered_calls():
    checks = {"b1": {"tool_call_id": "b1"}}
    view = StateView.read({"messages": _thread(), guard_state.CHECKS: checks})
    assert view.ai is not None and view.ai.id == "a1"
    assert view.ai_position == 1
    assert [(i, c["id"]) for i, c in view.pending] == [(1, "b1")]
    assert view.checks == checks
    assert StateView.read(view) is view  # a view is never read twice
    assert guard_state.messages_of(view) is view.messages


def test_a_view_with_other_messages_keeps_the_other_keys():
    view = StateView.read({"messages": _thread(), guard_state.TRIAL: 2})
    edited = view.ai.model_copy(update={"tool_calls": view.ai.tool_calls[1:]})
    other = view.with_messages([*view.messages[:1], edited])
    assert other.trial == 2
    assert [c["id"] for _, c in other.pending] == ["b1"]
    assert other.state["messages"][1] is edited


@pytest.mark.parametrize("state", [{}, {"messages": []}, {"messages": [HumanMessage("hi")]}])
def test_a_view_of_a_state_without_an_ai_message_has_nothing_pending(state):
    view = StateView.read(state)
    assert view.ai is None and view.ai_position is None and view.pending == []


class _CountingState(dict):
    """A state that counts how often its messages are read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads = 0

    def get(self, key, default=None):
        if key == "messages":
            self.reads += 1
        return super().get(key, default)

    def __getitem__(self, key):
        if key == "messages":
            self.reads += 1
        return super().__getitem__(key)


def test_a_critic_step_reads_the_messages_of_the_state_once():
    from inferact_langgraph.guard.check import CriticStep
    from inferact_langgraph.guard.marks import CriticalSpec

    step = CriticStep(critic=ScriptedCritic(scores=[0.9]), specs={"buy_now": CriticalSpec()})
    state = _CountingState(messages=_thread())
    update = step.check(state)
    assert list(update[guard_state.CHECKS]) == ["b1"]
    assert update[guard_state.CHECKS]["b1"]["task"] == "buy a mug"
    assert state.reads == 1


def test_closing_a_skipped_review_reads_the_messages_of_the_state_once():
    from inferact_langgraph.guard.core import InferActGuard
    from inferact_langgraph.guard.marks import CriticalSpec

    guard = InferActGuard(critic=ScriptedCritic(scores=[0.9]), specs={"buy_now": CriticalSpec()})
    state = _CountingState(messages=[*_thread(), HumanMessage("never mind, stop")])
    update = guard.protocol.supersede_pending(state)
    assert [m.tool_call_id for m in update["messages"] if isinstance(m, ToolMessage)] == [
        "s1",
        "b1",
    ]
    assert state.reads == 1
