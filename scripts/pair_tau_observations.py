"""Give each step of the tau-bench dev records the observation its own tool call returned.

gpt-4o reuses tool call ids inside one conversation (25 of the 100 dev conversations do: the
same ``call_...`` id names a lookup and, later, a cancellation). The records as published in
``../shared/data/tau-airline-dev.jsonl`` took each step's observation by id, so a repeated id
gave an earlier call a *later* call's result (``get_user_details`` -> ``255.0``, a lookup of
one reservation -> another reservation's details). That is evidence the agent never saw, and a
critic reading it doubts correct calls.

This pairs calls and results by position instead, as the conversation does: a tool message
answers the oldest call with its id that has no answer yet. Actions, tasks, labels and the
pending call are unchanged; every step's action name is checked against the conversation.

Usage:
    python scripts/pair_tau_observations.py            # report what would change
    python scripts/pair_tau_observations.py --write    # rewrite tests/data/tau-airline-dev.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict, deque
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
RECORDS = DATA / "tau-airline-dev.jsonl"
CONVERSATIONS = DATA / "tau-airline-dev-conversations.json"


def calls_with_results(conversation: dict) -> list[tuple[str, str | None]]:
    """Every tool call of a conversation in order: its name and the result that answered it."""
    calls: list[list] = []
    waiting: dict[str, deque[int]] = defaultdict(deque)
    for message in conversation["traj"]:
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or []:
                waiting[call["id"]].append(len(calls))
                calls.append([call["function"]["name"], None])
        elif message["role"] == "tool":
            calls[waiting[message["tool_call_id"]].popleft()][1] = message["content"]
    return [(name, result) for name, result in calls]


def paired(record: dict, calls: list[tuple[str, str | None]]) -> dict:
    """``record`` with each earlier step's observation taken from ``calls`` by position."""
    steps = record["steps"]
    fixed = []
    for index, step in enumerate(steps):
        name, result = calls[index]
        if step["action"].split("(", 1)[0] != name:
            raise ValueError(f"{record['id']} step {index}: {step['action']!r} is not {name!r}")
        pending = index == len(steps) - 1
        fixed.append(step if pending else {**step, "observation": result})
    return {**record, "steps": fixed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the records file")
    args = parser.parse_args()
    conversations = {
        (c["task_id"], c["trial"]): c for c in json.loads(CONVERSATIONS.read_text("utf-8"))
    }
    records = [json.loads(line) for line in RECORDS.read_text("utf-8").splitlines() if line]
    out, changed = [], 0
    for record in records:
        task, trial = (int(part[1:]) for part in record["id"].split("-")[2:4])
        fixed = paired(record, calls_with_results(conversations[(task, trial)]))
        changed += fixed != record
        out.append(fixed)
    print(f"{changed} of {len(records)} records had an observation from another call")
    if args.write:
        RECORDS.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8"
        )


if __name__ == "__main__":
    main()
