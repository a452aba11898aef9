"""A guarded agent that tries one irreversible purchase, for the tests of a failing critic."""

from __future__ import annotations

import uuid
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.critics import Critic
from inferact_langgraph.testing import ScriptedChatModel


def buying_agent(critic: Critic) -> tuple[Any, list[str]]:
    """``create_agent`` guarded by ``critic`` whose actor calls ``buy_now(asin="B01")`` once.

    Returns the graph (with an in-memory checkpointer) and the list of bought asins, which
    stays empty unless the critical call ran.
    """
    bought: list[str] = []

    @critical
    @tool
    def buy_now(asin: str) -> str:
        """Buy a product (irreversible)."""
        bought.append(asin)
        return "bought"

    def actor(messages: list) -> AIMessage:
        mid = f"ai-{uuid.uuid4().hex}"
        if not any(isinstance(m, ToolMessage) for m in messages):
            call = {"name": "buy_now", "args": {"asin": "B01"}, "id": "b1"}
            return AIMessage("", id=mid, tool_calls=[call])
        return AIMessage("Done.", id=mid)

    graph = with_inferact(
        create_agent(ScriptedChatModel(responder=actor), [buy_now]),
        critic=critic,
        checkpointer=InMemorySaver(),
    )
    return graph, bought
