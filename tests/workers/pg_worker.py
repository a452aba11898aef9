"""One OS process of the Postgres scenarios in ``tests/test_prod_postgres.py``.

Each invocation builds the same guarded ``create_agent`` graph on a Postgres checkpointer and
store, does one thing to one thread, prints JSON event lines to stdout and exits:

* ``run``     start the thread with the user's task (``--task``);
* ``retry``   continue the thread from its last checkpoint (after a crash);
* ``resume``  answer the pending review (``--decision`` JSON), optionally under the advisory
  lock of :func:`resume_locked` (``--locked``) and at a given wall-clock time (``--start-at``).

The critical tool ``buy_now`` records its side effect twice: a plain row in ``effects`` (what a
naive tool does) and a row keyed by the tool call id in ``effects_idem`` (an idempotent tool).
Sleeps and markers (``--critic-sleep``, ``--tool-sleep-before``, ``--tool-sleep-after``) let the
test SIGKILL the process in the middle of a step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from typing import Annotated, Any

import psycopg
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore
from langgraph.types import Command

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.resume import postgres_advisory_lock, resume_review
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic, prompt_text

SCHEMA = """
CREATE TABLE IF NOT EXISTS effects (
    id bigserial PRIMARY KEY, thread_id text NOT NULL, tool_call_id text NOT NULL,
    asin text NOT NULL, pid int NOT NULL);
CREATE TABLE IF NOT EXISTS effects_idem (
    tool_call_id text PRIMARY KEY, thread_id text NOT NULL, asin text NOT NULL);
CREATE TABLE IF NOT EXISTS arrivals (thread_id text NOT NULL, pid int NOT NULL);
"""


def emit(event: str, **data: Any) -> None:
    print(json.dumps({"event": event, "pid": os.getpid(), **data}, default=str), flush=True)


def setup(dsn: str) -> None:
    """Create the checkpointer's, the store's and the tests' tables (once, before workers)."""
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
    with PostgresStore.from_conn_string(dsn) as store:
        store.setup()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)


def build_graph(saver: Any, store: Any, args: argparse.Namespace, dsn: str) -> Any:
    thread = args.thread

    @critical
    @tool
    def buy_now(asin: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Buy a product (irreversible)."""
        with psycopg.connect(dsn, autocommit=True) as conn:
            if args.barrier:  # wait until a second worker is in the tool too (or 5 s)
                conn.execute("INSERT INTO arrivals VALUES (%s, %s)", (thread, os.getpid()))
                deadline = time.time() + 5
                while time.time() < deadline:
                    n = conn.execute(
                        "SELECT count(*) FROM arrivals WHERE thread_id = %s", (thread,)
                    ).fetchone()[0]
                    if n >= 2:
                        break
                    time.sleep(0.05)
            emit("tool_started", tool_call_id=tool_call_id)
            time.sleep(args.tool_sleep_before)
            conn.execute(
                "INSERT INTO effects (thread_id, tool_call_id, asin, pid) VALUES (%s, %s, %s, %s)",
                (thread, tool_call_id, asin, os.getpid()),
            )
            conn.execute(
                "INSERT INTO effects_idem VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (tool_call_id, thread, asin),
            )
            emit("tool_inserted", tool_call_id=tool_call_id)
            time.sleep(args.tool_sleep_after)
        return f"bought {asin}"

    def actor(messages: list) -> Any:
        emit("actor_prompt", text=prompt_text(messages))
        # Explicit unique message ids: ScriptedChatModel's default ids ("scripted-<n>") restart
        # at 0 in every process, and add_messages would replace the earlier AI message.
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("Done.", id=f"done-{uuid.uuid4().hex}")
        return AIMessage(
            "",
            id=f"ai-{uuid.uuid4().hex}",
            tool_calls=[{"name": "buy_now", "args": {"asin": "B066"}, "id": f"call-{thread}"}],
        )

    def score(trajectory: Any) -> float:
        emit("critic_started")
        time.sleep(args.critic_sleep)
        return 0.1  # always doubtful: every buy goes to a human

    return with_inferact(
        create_agent(ScriptedChatModel(responder=actor), [buy_now]),
        critic=ScriptedCritic(score_fn=score),
        checkpointer=saver,
        store=store,
    )


def resume_locked(graph: Any, config: dict, value: Any, interrupt_id: str, dsn: str) -> Any:
    """Answer one interrupt at most once across processes: the library's resume_review with a
    Postgres advisory lock keyed by the thread id."""
    return resume_review(
        graph, config, value, interrupt_id=interrupt_id, lock=postgres_advisory_lock(dsn)
    )


def report(graph: Any, config: dict) -> None:
    state = graph.get_state(config)
    messages = state.values.get("messages") or []
    emit(
        "result",
        next=list(state.next),
        interrupts=[{"id": i.id, "value": i.value} for i in state.interrupts],
        last_message=messages[-1].text if messages else None,
        audit=state.values.get("inferact_audit") or [],
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["setup", "run", "retry", "resume"])
    parser.add_argument("--thread", default="")
    parser.add_argument("--task", default="")
    parser.add_argument("--decision", default="null")
    parser.add_argument("--interrupt-id")
    parser.add_argument("--locked", action="store_true")
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--barrier", action="store_true")
    parser.add_argument("--critic-sleep", type=float, default=0.0)
    parser.add_argument("--tool-sleep-before", type=float, default=0.0)
    parser.add_argument("--tool-sleep-after", type=float, default=0.0)
    args = parser.parse_args()
    dsn = os.environ["INFERACT_TEST_PG_DSN"]
    if args.command == "setup":
        setup(dsn)
        emit("setup_done")
        return 0
    config = {"configurable": {"thread_id": args.thread}}
    with (
        PostgresSaver.from_conn_string(dsn) as saver,
        PostgresStore.from_conn_string(dsn) as store,
    ):
        graph = build_graph(saver, store, args, dsn)
        emit("ready")
        if args.start_at:
            time.sleep(max(0.0, args.start_at - time.time()))
        try:
            if args.command == "run":
                graph.invoke({"messages": [("user", args.task)]}, config, durability="sync")
            elif args.command == "retry":
                graph.invoke(None, config, durability="sync")
            else:
                value = json.loads(args.decision)
                if args.locked:
                    resume_locked(graph, config, value, args.interrupt_id, dsn)
                elif args.interrupt_id:
                    graph.invoke(
                        Command(resume={args.interrupt_id: value}), config, durability="sync"
                    )
                else:
                    graph.invoke(Command(resume=value), config, durability="sync")
        except Exception as exc:  # noqa: BLE001 - reported to the test, which asserts on it
            emit("error", type=type(exc).__name__, message=str(exc))
            report(graph, config)
            return 3
        report(graph, config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
