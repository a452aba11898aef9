"""Which result the critic sees for each call when a model reuses a tool call id.

gpt-4o reuses ids inside one conversation (25 of the 100 tau-bench dev conversations: a lookup
and, later, a cancellation share ``call_...``). The critic must still see each call with the
result that call returned, and judge the call that is pending, not an earlier one with its id.
"""

from __future__ import annotations

import json
import sys

from conftest import ROOT
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from inferact_langgraph import Trajectory

sys.path.insert(0, str(ROOT / "scripts"))
import pair_tau_observations as pairing  # the script that rebuilt the committed records


def _call(name: str, call_id: str, **args: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def test_a_reused_call_id_pairs_each_call_with_the_result_it_returned() -> None:
    messages = [
        HumanMessage("cancel all my reservations"),
        _call("get_reservation", "call_A", id="R1"),
        ToolMessage("R1: business, insured", tool_call_id="call_A"),
        _call("get_reservation", "call_A", id="R2"),
        ToolMessage("R2: basic economy", tool_call_id="call_A"),
        _call("cancel_reservation", "call_B", id="R1"),
    ]
    steps = Trajectory.from_messages(messages).steps
    assert [(s.action, s.observation) for s in steps] == [
        ('get_reservation(id="R1")', "R1: business, insured"),
        ('get_reservation(id="R2")', "R2: basic economy"),
        ('cancel_reservation(id="R1")', None),
    ]


def test_the_pending_call_is_the_newest_call_with_its_id_not_an_earlier_one() -> None:
    # If the earliest call with the id were taken as pending, the critic would judge a harmless
    # lookup while the cancellation runs.
    messages = [
        HumanMessage("cancel R1"),
        _call("get_reservation", "call_A", id="R2"),
        ToolMessage("R2: economy", tool_call_id="call_A"),
        _call("cancel_reservation", "call_A", id="R2"),
    ]
    trajectory = Trajectory.from_messages(messages, pending_tool_call_id="call_A")
    assert trajectory.pending is not None
    assert trajectory.pending.action == 'cancel_reservation(id="R2")'
    assert [s.observation for s in trajectory.steps] == ["R2: economy", None]


def test_a_call_without_its_own_result_stays_pending_when_a_later_call_reuses_its_id() -> None:
    messages = [
        HumanMessage("book it"),
        _call("search", "call_A", q="x"),
        ToolMessage("found x", tool_call_id="call_A"),
        _call("book", "call_A", item="x"),
    ]
    steps = Trajectory.from_messages(messages).steps
    assert [(s.action, s.observation) for s in steps] == [
        ('search(q="x")', "found x"),
        ('book(item="x")', None),
    ]


def test_the_tau_records_show_each_call_with_the_result_it_returned() -> None:
    records = [
        json.loads(line)
        for line in pairing.RECORDS.read_text("utf-8").splitlines()
        if line.strip()
    ]
    conversations = {
        (c["task_id"], c["trial"]): c
        for c in json.loads(pairing.CONVERSATIONS.read_text("utf-8"))
    }
    for record in records:
        task, trial = (int(part[1:]) for part in record["id"].split("-")[2:4])
        calls = pairing.calls_with_results(conversations[(task, trial)])
        assert pairing.paired(record, calls) == record, record["id"]
    # One of the 47 records the published file had wrong: a lookup showed another reservation.
    lookup = next(r for r in records if r["id"] == "tau-airline-t28-r1-c3")["steps"][7]
    assert lookup["action"] == 'get_reservation_details(reservation_id="4XGCCM")'
    assert '"reservation_id": "4XGCCM"' in lookup["observation"]
