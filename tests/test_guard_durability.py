"""A process that dies while waiting for the human loses nothing (SQLite checkpointer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "workers" / "sqlite_worker.py"


def run(tmp_path: Path, action: str, thread: str = "t") -> dict:
    result = subprocess.run(
        [
            sys.executable,
            str(WORKER),
            str(tmp_path / "cp.sqlite"),
            str(tmp_path / "ledger.jsonl"),
            action,
            thread,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def ledger(tmp_path: Path) -> list[dict]:
    path = tmp_path / "ledger.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize(("decision", "bought"), [("approve", [{"asin": "B1"}]), ("reject", [])])
def test_another_process_resumes_and_the_tool_runs_once_on_approval_only(
    tmp_path, decision, bought
):
    first = run(tmp_path, "start")
    assert first == {"interrupted": True, "critic_calls": 1, "last": ""}
    assert ledger(tmp_path) == []
    second = run(tmp_path, decision)  # a new process: its critic has never been called
    assert second["interrupted"] is False and second["critic_calls"] == 0
    assert second["last"] == "done"
    assert ledger(tmp_path) == bought
