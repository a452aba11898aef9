"""One OS process of ``tests/test_chat_postgres.py``: a guarded chat agent on Postgres.

Each invocation builds the same agent (``with_inferact`` over ``create_agent``, or
``InferActMiddleware``) on a Postgres checkpointer and store, does one thing to one thread for
one user and prints JSON event lines: ``actor_prompt`` (what the actor's model received) and
``result`` (the thread's messages as the checkpointer holds them, and the pending review).

* ``run``     the user's message (``--message``) in ``--thread`` as ``--user``;
* ``resume``  answer the pending review with ``--decision`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore
from langgraph.types import Command

from inferact_langgraph import InferActMiddleware, critical, with_inferact
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic


def emit(event: str, **data: Any) -> None:
    print(json.dumps({"event": event, "pid": os.getpid(), **data}, default=str), flush=True)


@critical
@tool
def transfer(to: str, amount: int) -> str:
    """Transfer money (irreversible)."""
    return f"transferred {amount} to {to}"


def actor(messages: list) -> Any:
    emit(
        "actor_prompt",
        messages=[{"type": m.type, "name": m.name, "text": str(m.content)} for m in messages],
    )
    if isinstance(messages[-1], ToolMessage):
        return AIMessage("Done.", id=f"done-{uuid.uuid4().hex}")
    return AIMessage(
        "",
        id=f"ai-{uuid.uuid4().hex}",
        tool_calls=[
            {
                "name": "transfer",
                "args": {"to": "Bob", "amount": 500},
                "id": f"t-{uuid.uuid4().hex[:8]}",
            }
        ],
    )


def build(kind: str, saver: Any, store: Any, score: float) -> Any:
    model = ScriptedChatModel(responder=actor)
    critic = ScriptedCritic(scores=[score])
    if kind == "middleware":
        return create_agent(
            model,
            [transfer],
            checkpointer=saver,
            store=store,
            middleware=[InferActMiddleware(critic=critic)],
        )
    return with_inferact(
        create_agent(model, [transfer]), critic=critic, checkpointer=saver, store=store
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["setup", "run", "resume"])
    parser.add_argument("--kind", choices=["wrap", "middleware"], default="wrap")
    parser.add_argument("--thread", default="")
    parser.add_argument("--user", default="")
    parser.add_argument("--message", default="")
    parser.add_argument("--decision", default="null")
    parser.add_argument("--score", type=float, default=0.1)
    args = parser.parse_args()
    dsn = os.environ["INFERACT_TEST_PG_DSN"]
    with PostgresSaver.from_conn_string(dsn) as saver, PostgresStore.from_conn_string(dsn) as store:
        if args.command == "setup":
            saver.setup()
            store.setup()
            emit("setup_done")
            return 0
        graph = build(args.kind, saver, store, args.score)
        configurable = {"thread_id": args.thread}
        if args.user:
            configurable["user_id"] = args.user
        config = {"configurable": configurable}
        if args.command == "run":
            graph.invoke({"messages": [("user", args.message)]}, config)
        else:
            graph.invoke(Command(resume=json.loads(args.decision)), config)
        state = graph.get_state(config)
        emit(
            "result",
            messages=[
                {"type": m.type, "name": m.name, "text": str(m.content)}
                for m in state.values.get("messages") or []
            ],
            interrupts=[i.value for i in state.interrupts],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
