"""``with_inferact`` and ``InferActMiddleware`` take the same keywords, declared once."""

from __future__ import annotations

import pytest
from guard_helpers import buy_now, delete_account, search
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from inferact_langgraph import FeedbackMemory, GuardOptions, InferActMiddleware, with_inferact
from inferact_langgraph.guard._compat import guard_of
from inferact_langgraph.guard.arguments import GuardArguments
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic


def _every_argument() -> GuardArguments:
    """A value for every keyword that is not a default, so that each one is seen to arrive."""
    return {
        "critic": ScriptedCritic(scores=[0.9], threshold=0.4),
        "cache": True,
        "critical": ["delete_account"],
        "on_critic_error": "block",
        "on_reject": "continue",
        "max_trials": 5,
        "scope": "thread",
        "task_extractor": lambda state: "the task",
        "memory": FeedbackMemory(limit=3),
        "memory_namespace": lambda config: ("org", "acme"),
        "allowed_decisions": ("approve", "reject"),
    }


def _guards():
    tools = [search, buy_now, delete_account]
    graph = with_inferact(
        create_agent(ScriptedChatModel(replies=["hi"]), tools),
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        **_every_argument(),
    )
    middleware = InferActMiddleware(**_every_argument())
    middleware.guard.learn_tools(tools)
    return guard_of(graph), middleware.guard


def test_both_entry_points_turn_every_keyword_into_the_same_guard():
    for guard in _guards():
        options = guard.options
        assert (options.on_critic_error, options.max_trials, options.scope) == (
            "block",
            5,
            "thread",
        )
        assert options.allowed_decisions == ("approve", "reject")
        assert guard.memory.memory.limit == 3 and guard.memory.owner({}) == ("org", "acme")
        assert guard.locator.task({"messages": []}) == "the task"
        assert {"buy_now", "delete_account"} <= set(guard.specs)
        assert type(guard.critic).__name__ == "CachedCritic" and guard.critic.threshold == 0.4


def _make(kind: str, **arguments):
    """Build the entry point ``kind`` with these keywords (the graph kind gets an agent)."""
    if kind == "with_inferact":
        agent = create_agent(ScriptedChatModel(replies=["hi"]), [buy_now])
        return with_inferact(agent, **arguments)
    return InferActMiddleware(**arguments)


@pytest.mark.parametrize("kind", ["with_inferact", "InferActMiddleware"])
def test_an_unknown_keyword_is_refused_by_name(kind):
    expected = rf"{kind}\(\) got an unexpected keyword argument 'on_rejct'"
    with pytest.raises(TypeError, match=expected):
        _make(kind, critic=ScriptedCritic(scores=[0.9]), on_rejct="end")


@pytest.mark.parametrize("kind", ["with_inferact", "InferActMiddleware"])
def test_options_and_a_policy_keyword_together_are_refused(kind):
    critic = ScriptedCritic(scores=[0.9])
    with pytest.raises(ValueError, match="not both"):
        _make(kind, critic=critic, options=GuardOptions(), on_reject="end")
