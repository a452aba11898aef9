"""A worker process for the durability test: run to the interrupt, or resume, then exit.

Usage: python sqlite_worker.py DB_PATH LEDGER_PATH (start|approve|reject) THREAD
"""

from __future__ import annotations

import json
import sys

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic

db, ledger_path, action, thread = sys.argv[1:5]


@critical
@tool
def buy_now(asin: str) -> str:
    """Buy a product."""
    with open(ledger_path, "a") as ledger:
        ledger.write(json.dumps({"asin": asin}) + "\n")
    return f"bought {asin}"


def policy(messages: list) -> AIMessage | str:
    # Decides from the history, not from a counter: this process may start mid-run.
    if any(m.type == "tool" for m in messages):
        return "done"
    return AIMessage("", tool_calls=[{"name": "buy_now", "args": {"asin": "B1"}, "id": "c1"}])


actor = ScriptedChatModel(responder=policy)
critic = ScriptedCritic(scores=[0.1])
from langchain.agents import create_agent  # noqa: E402

with SqliteSaver.from_conn_string(db) as saver:
    graph = with_inferact(create_agent(actor, [buy_now]), critic=critic, checkpointer=saver)
    cfg = {"configurable": {"thread_id": thread}}
    if action == "start":
        out = graph.invoke({"messages": [("user", "buy B1")]}, cfg)
    elif action == "approve":
        out = graph.invoke(Command(resume=True), cfg)
    else:
        out = graph.invoke(Command(resume="not that one"), cfg)
    print(json.dumps({"interrupted": "__interrupt__" in out, "critic_calls": critic.calls,
                      "last": str(out["messages"][-1].content)}))
