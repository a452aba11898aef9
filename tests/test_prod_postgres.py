"""Production scenarios on a real PostgreSQL server, with several OS processes.

Every step runs in its own process (``tests/workers/pg_worker.py``) on the Postgres checkpointer
and store, the way a fleet of workers does: the process that asked for a review is gone when the
human answers. Needs ``INFERACT_TEST_PG_DSN`` (``.ci/setup-postgres.sh`` prints it); skipped
without it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from pg_support import DSN, PG_MARKS, worker_env

WORKER = Path(__file__).parent / "workers" / "pg_worker.py"

pytestmark = PG_MARKS

psycopg = pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")


def _events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def worker(command: str, *args: str, check: bool = True, timeout: float = 60) -> list[dict]:
    """Run one worker process to completion and return its events."""
    proc = subprocess.run(
        [sys.executable, str(WORKER), command, *args],
        capture_output=True, text=True, env=worker_env(), timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"worker {command} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return _events(proc.stdout)


def kill_at(command: str, *args: str, marker: str, timeout: float = 60) -> list[dict]:
    """Start a worker, SIGKILL it as soon as it prints ``marker``; return its events."""
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), command, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env(),
    )
    events = []
    deadline = time.time() + timeout
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                events.append(json.loads(line))
                if events[-1]["event"] == marker:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
            if time.time() > deadline:
                break
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, events, proc.stderr.read())
    return events


def result(events: list[dict]) -> dict:
    found = [e for e in events if e["event"] == "result"]
    assert found, events
    return found[-1]


def count(table: str, thread: str) -> int:
    with psycopg.connect(DSN, autocommit=True) as conn:
        query = f"SELECT count(*) FROM {table} WHERE thread_id = %s"
        return conn.execute(query, (thread,)).fetchone()[0]


@pytest.fixture(scope="module", autouse=True)
def _schema() -> None:
    worker("setup")


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:10]


APPROVE = json.dumps({"decisions": [{"type": "approve"}]})


def test_reject_in_one_process_feedback_reaches_next_trial_in_another(run_id: str) -> None:
    task = f"Buy a 66x66 blue window shade (run {run_id})"
    a, c = f"{run_id}-a", f"{run_id}-c"

    # Worker A: runs to the review and exits.
    first = result(worker("run", "--thread", a, "--task", task))
    assert first["next"] == ["inferact_gate"]
    [pending] = first["interrupts"]
    section = pending["value"]["action_requests"][0]["inferact"]
    assert section["tool_call_id"] == f"call-{a}" and section["score"] == pytest.approx(0.1)
    assert count("effects", a) == 0

    # Worker B (a fresh process): rejects with feedback; the tool never runs.
    feedback = f"wrong size, I need 66x66 ({run_id})"
    reject = json.dumps({"decisions": [{"type": "reject", "message": feedback}]})
    second = result(worker("resume", "--thread", a, "--decision", reject))
    assert second["next"] == [] and second["interrupts"] == []
    assert second["last_message"] == "Done."
    assert [(e["decision"], e["decided_by"]) for e in second["audit"]] == [("reject", "human")]
    assert count("effects", a) == 0

    # Worker C: the next trial of the same task in a NEW thread sees the feedback first thing.
    events = worker("run", "--thread", c, "--task", task)
    prompts = [e["text"] for e in events if e["event"] == "actor_prompt"]
    assert feedback in prompts[0]
    assert "Feedback from earlier trials of this task" in prompts[0]
    assert result(events)["interrupts"], "the new trial's buy is reviewed too"

    # Worker D approves the new trial: exactly one side effect.
    approved = result(worker("resume", "--thread", c, "--decision", APPROVE))
    assert approved["last_message"] == "Done."
    assert count("effects", c) == 1 and count("effects", a) == 0


def test_feedback_of_another_task_is_not_shown(run_id: str) -> None:
    a, b = f"{run_id}-a", f"{run_id}-b"
    worker("run", "--thread", a, "--task", f"Buy a lamp ({run_id})")
    worker("resume", "--thread", a, "--decision", json.dumps("too expensive " + run_id))
    events = worker("run", "--thread", b, "--task", f"Buy a chair ({run_id})")
    first_prompt = next(e["text"] for e in events if e["event"] == "actor_prompt")
    assert "too expensive" not in first_prompt and "Feedback from earlier" not in first_prompt


def test_sigkill_during_critic_then_retry_never_runs_tool_unreviewed(run_id: str) -> None:
    t = f"{run_id}-k"
    kill_at("run", "--thread", t, "--task", f"Buy a mug ({run_id})", "--critic-sleep", "60",
            marker="critic_started")
    assert count("effects", t) == 0
    retried = result(worker("retry", "--thread", t))
    assert retried["next"] == ["inferact_gate"] and retried["interrupts"]
    assert count("effects", t) == 0
    done = result(worker("resume", "--thread", t, "--decision", APPROVE))
    assert done["last_message"] == "Done."
    assert count("effects", t) == 1
    # A late retry of a finished thread does nothing.
    worker("retry", "--thread", t)
    assert count("effects", t) == 1


def test_sigkill_before_side_effect_then_retry_runs_it_once(run_id: str) -> None:
    t = f"{run_id}-b"
    worker("run", "--thread", t, "--task", f"Buy a pen ({run_id})")
    kill_at("resume", "--thread", t, "--decision", APPROVE, "--tool-sleep-before", "60",
            marker="tool_started")
    assert count("effects", t) == 0
    done = result(worker("retry", "--thread", t))
    assert done["last_message"] == "Done."
    assert count("effects", t) == 1


def test_sigkill_after_side_effect_is_at_least_once_unless_tool_is_idempotent(run_id: str) -> None:
    """LangGraph re-runs a step that did not finish: the tool body runs again on retry.

    Exactly once therefore needs the tool to be idempotent on its tool call id (the id is
    checkpointed with the approved call, so the retry sees the same one): ``effects_idem``
    (``INSERT ... ON CONFLICT (tool_call_id) DO NOTHING``) has one row, the naive ``effects``
    table two.
    """
    t = f"{run_id}-a"
    worker("run", "--thread", t, "--task", f"Buy a cup ({run_id})")
    kill_at("resume", "--thread", t, "--decision", APPROVE, "--tool-sleep-after", "60",
            marker="tool_inserted")
    assert count("effects", t) == 1
    done = result(worker("retry", "--thread", t))
    assert done["last_message"] == "Done."
    assert count("effects_idem", t) == 1
    assert count("effects", t) == 2  # at-least-once: the naive tool ran twice


def _concurrent_resumes(thread: str, *extra: str) -> list[list[dict]]:
    first = result(worker("run", "--thread", thread, "--task", f"Buy a desk ({thread})"))
    interrupt_id = first["interrupts"][0]["id"]
    start_at = str(time.time() + 3)  # both processes imported and connected by then
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "resume", "--thread", thread, "--decision", APPROVE,
             "--interrupt-id", interrupt_id, "--start-at", start_at, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env(),
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    return [_events(o) for o in outs]


@pytest.mark.xfail(
    strict=True,
    reason="LangGraph has no lock on a thread: two processes that resume the same interrupt with "
    "a bare Command(resume=...) at the same time both run the gate and both run the approved "
    "tool. inferact_langgraph.guard.resume.resume_review with postgres_advisory_lock prevents it "
    "(next test)",
)
def test_two_concurrent_resumes_run_the_tool_at_most_once_without_a_lock(run_id: str) -> None:
    t = f"{run_id}-x"
    both = _concurrent_resumes(t, "--barrier")
    assert count("effects", t) <= 1, both


def test_two_concurrent_resumes_with_advisory_lock_one_wins_other_gets_clear_error(
    run_id: str,
) -> None:
    t = f"{run_id}-l"
    both = _concurrent_resumes(t, "--locked")
    assert count("effects", t) == 1
    errors = [e for events in both for e in events if e["event"] == "error"]
    assert len(errors) == 1, both
    assert errors[0]["type"] == "AlreadyResumedError"
    assert "no longer pending" in errors[0]["message"]
    finals = [result(events) for events in both]
    assert all(f["last_message"] == "Done." and f["interrupts"] == [] for f in finals)
