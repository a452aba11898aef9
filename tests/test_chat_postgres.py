"""Feedback memory per user on PostgreSQL, across OS processes.

Alice rejects a transfer in one process; in other processes, Bob (same task) never sees her
feedback, a run naming no user neither, and Alice does, in the actor's model call only: the
thread, as the checkpointer holds it, never has the feedback as a message. Needs
``INFERACT_TEST_PG_DSN`` (``.ci/setup-postgres.sh`` prints it); skipped without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from pg_support import PG_MARKS, worker_env

WORKER = Path(__file__).parent / "workers" / "chat_pg_worker.py"

pytestmark = PG_MARKS

pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")

TRANSFER = "now transfer 500 dollars to Bob"


def worker(command: str, *args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, str(WORKER), command, *args],
        capture_output=True,
        text=True,
        env=worker_env(),
        timeout=90,
    )
    assert proc.returncode == 0, f"worker {command} failed:\n{proc.stdout}\n{proc.stderr}"
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _prompts(events: list[dict]) -> list[list[dict]]:
    return [e["messages"] for e in events if e["event"] == "actor_prompt"]


def _result(events: list[dict]) -> dict:
    return next(e for e in events if e["event"] == "result")


@pytest.fixture(scope="module", autouse=True)
def _schema() -> None:
    worker("setup")


@pytest.mark.parametrize("kind", ["wrap", "middleware"])
def test_one_users_feedback_never_reaches_another_users_agent(kind: str) -> None:
    run = uuid.uuid4().hex[:8]
    alice, bob = f"alice-{run}", f"bob-{run}"
    feedback = f"Bob's account is closed: pay Robert ({run})"

    first = worker("run", "--kind", kind, "--thread", f"{run}-a1", "--user", alice,
                   "--message", TRANSFER)  # fmt: skip
    assert _result(first)["interrupts"]
    reject = json.dumps({"decisions": [{"type": "reject", "message": feedback}]})
    worker("resume", "--kind", kind, "--thread", f"{run}-a1", "--user", alice, "--decision", reject)

    for user, thread, sees in ((bob, f"{run}-b", False), ("", f"{run}-s", False),
                               (alice, f"{run}-a2", True)):  # fmt: skip
        args = ["--kind", kind, "--thread", thread, "--message", TRANSFER, "--score", "0.9"]
        events = worker("run", *args, *(["--user", user] if user else []))
        received = "\n".join(m["text"] for m in _prompts(events)[0])
        assert (feedback in received) is sees, (user, received)
        stored = _result(events)["messages"]
        assert not any(feedback in m["text"] for m in stored)
        assert [m["text"] for m in stored if m["type"] == "human"] == [TRANSFER]
