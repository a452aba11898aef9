"""A tiny guarded agent for the LangGraph server end-to-end test (no model, no network)."""

from __future__ import annotations

import uuid
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic


@critical
@tool
def buy_now(asin: str) -> str:
    """Buy a product (irreversible)."""
    return f"bought {asin}"


def _actor(messages: list) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return AIMessage(f"Done: {messages[-1].content}", id=f"done-{uuid.uuid4().hex}")
    call = {"name": "buy_now", "args": {"asin": "B01"}, "id": f"call-{uuid.uuid4().hex[:8]}"}
    return AIMessage("", id=f"ai-{uuid.uuid4().hex}", tool_calls=[call])


# The server supplies the checkpointer and the store.
graph = with_inferact(
    create_agent(ScriptedChatModel(responder=_actor), [buy_now]),
    critic=ScriptedCritic(scores=[0.1]),
)
