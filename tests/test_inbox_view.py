"""The inbox's view model, built from real guarded-graph states in both payload shapes: a short
one (``inferact`` without task / chain / options), completed from the guard's check record in
state and never recomputed from the messages, and the full one (with them)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from inbox_support import run_shop, shop
from inbox_support import thread_dict as _thread_dict
from langgraph.types import Command

from inferact_langgraph.inbox import thread_view, validate_decisions

# Fields the guard writes into each action's ``inferact`` section that an older payload lacks;
# the tests of this module start from a payload without them so the fall-back to state is
# tested, and the "extended" tests put them back themselves.
_V02_FIELDS = ("task", "action_chain", "options", "option_probs", "order_probs")


def thread_dict(graph: Any, config: dict, thread_id: str) -> dict:
    """The thread as ``threads.get`` gives it, with ``inferact`` sections lacking those fields."""
    thread = _thread_dict(graph, config, thread_id)
    for interrupts in thread["interrupts"].values():
        for item in interrupts:
            for request in (item.get("value") or {}).get("action_requests", []):
                for field in _V02_FIELDS:
                    (request.get("inferact") or {}).pop(field, None)
    return thread


def test_current_payload_falls_back_to_the_state() -> None:
    graph, config = run_shop("Buy the blue mug B02")
    view = thread_view(thread_dict(graph, config, "t1"))
    assert view is not None and view["task"] == "Buy the blue mug B02"
    [review] = view["reviews"]
    [action] = review["actions"]
    assert review["interrupt_id"] and action["tool"] == "buy_now"
    assert action["args"] == {"asin": "B01"}
    assert (action["score"], action["threshold"], action["risk"]) == (0.25, 0.5, "high")
    assert action["from_state"] == ["task", "action_chain", "options"]
    # The chain the critic judged: the search and its result, then the pending purchase; the
    # actor's thoughts ("I will search first.", "B01 looks right to me.") are not in it.
    chain = action["action_chain"]
    assert [s["action"] for s in chain] == [
        'search(query="Buy the blue mug B02")',
        'buy_now(asin="B01")',
    ]
    assert chain[0]["observation"].startswith("Results for Buy the blue mug B02:\nB01: mug")
    assert chain[1]["observation"] is None
    assert "looks right" not in json.dumps(view)
    # Options: the inferred tasks, the user's task, none of the above; per order as the guard
    # recorded them (the reversed order mapped back to the original labels).
    options = {o["label"]: o for o in action["options"]}
    assert [o["kind"] for o in action["options"]] == ["inferred"] * 3 + ["task", "none"]
    assert options["D"]["text"] == "Buy the blue mug B02"
    assert (options["D"]["p_original"], options["D"]["p_reversed"], options["D"]["p_mean"]) == (
        0.2,
        0.3,
        0.25,
    )
    assert (options["B"]["p_original"], options["B"]["p_reversed"], options["B"]["p_mean"]) == (
        0.6,
        0.6,
        0.6,
    )
    assert options["A"]["p_original"] == 0.0  # not rated: counts 0, as in the critic
    assert action["inferred_tasks"] == shop.INFERRED
    assert action["justification"].startswith('The pending action is buy_now(asin="B01")')
    assert action["allowed_decisions"] == ["approve", "edit", "reject", "respond"]


def test_extended_payload_is_used_as_given() -> None:
    graph, config = run_shop("Buy the blue mug B02")
    thread = thread_dict(graph, config, "t1")
    [item] = thread["interrupts"]["task-1"]
    info = item["value"]["action_requests"][0]["inferact"]
    info.update(
        task="the task as the guard saw it",
        action_chain=[
            {"action": "look()", "observation": "ok"},
            {"action": "buy()", "observation": None},
        ],
        options=["x", "y", "the task as the guard saw it", "None of the above"],
        option_probs={"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.4},
        order_probs={"original": {"C": 0.25, "D": 0.5}, "reversed": {"C": 0.35, "D": 0.3}},
        inferred_tasks=["x", "y"],
    )
    # The state would say otherwise: the payload wins, and nothing is taken from state.
    [action] = thread_view(thread)["reviews"][0]["actions"]
    assert action["from_state"] == []
    assert action["task"] == "the task as the guard saw it"
    assert action["action_chain"] == [
        {"action": "look()", "observation": "ok"},
        {"action": "buy()", "observation": None},
    ]
    assert [
        (o["label"], o["kind"], o["p_original"], o["p_reversed"], o["p_mean"])
        for o in action["options"]
    ] == [
        ("A", "inferred", 0.0, 0.0, 0.1),
        ("B", "inferred", 0.0, 0.0, 0.2),
        ("C", "task", 0.25, 0.35, 0.3),
        ("D", "none", 0.5, 0.3, 0.4),
    ]


def test_extended_payload_without_state_values() -> None:
    """A thread read without its values (e.g. a narrow select) still shows the payload."""
    graph, config = run_shop("Buy the blue mug B02")
    thread = thread_dict(graph, config, "t1")
    info = thread["interrupts"]["task-1"][0]["value"]["action_requests"][0]["inferact"]
    info.update(
        task="T",
        action_chain=[{"action": "buy()", "observation": None}],
        options=["a", "T"],
        option_probs={"B": 0.3},
    )
    thread["values"] = None
    [action] = thread_view(thread)["reviews"][0]["actions"]
    assert action["task"] == "T" and action["action_chain"][0]["action"] == "buy()"
    assert [o["p_original"] for o in action["options"]] == [None, None]  # not recorded
    assert [o["p_mean"] for o in action["options"]] == [None, 0.3]


def test_several_actions_are_one_review() -> None:
    graph, config = run_shop("Buy two mugs: B02 and B04")
    [review] = thread_view(thread_dict(graph, config, "t2"))["reviews"]
    assert [a["args"]["asin"] for a in review["actions"]] == ["B01", "B03"]
    assert [a["index"] for a in review["actions"]] == [0, 1]
    # Each action's chain ends on its own pending call.
    assert [a["action_chain"][-1]["action"] for a in review["actions"]] == [
        'buy_now(asin="B01")',
        'buy_now(asin="B03")',
    ]


def test_an_edited_call_under_review_shows_its_new_arguments_not_the_old_verdict() -> None:
    graph, config = run_shop("Buy the blue mug B02")
    graph.invoke(
        Command(
            resume={
                "decisions": [
                    {"type": "edit", "edited_action": {"name": "buy_now", "args": {"asin": "B03"}}}
                ]
            }
        ),
        config,
    )
    [action] = thread_view(thread_dict(graph, config, "t1"))["reviews"][0]["actions"]
    assert action["args"] == {"asin": "B03"} and action["score"] == 0.25
    assert action["action_chain"][-1] == {"action": 'buy_now(asin="B03")', "observation": None}
    # Options are shown only from a verdict recorded for these very arguments (the guard
    # re-checks an edit and records it for B03); never from the verdict on B01.
    shown = [o["text"] for o in action["options"]]
    records = graph.get_state(config).values["inferact_checks"].values()
    for_b03 = [r for r in records if r.get("args") == {"asin": "B03"} and r.get("verdict")]
    assert shown == [] or any(r["verdict"]["options"] == shown for r in for_b03)
    assert action["inferred_tasks"] == shop.INFERRED  # from the payload


def test_the_task_is_the_one_the_guard_judged_against_not_the_first_human_message() -> None:
    graph, config = run_shop("Buy the blue mug B02")
    thread = thread_dict(graph, config, "t1")
    earlier = {"type": "human", "content": "an earlier request: buy a cheap pan", "id": "h0"}
    thread["values"]["messages"].insert(0, earlier)
    memory = {"type": "human", "content": "Earlier feedback: wrong size", "id": "inferact-mem-1"}
    thread["values"]["messages"].insert(1, memory)
    [action] = thread_view(thread)["reviews"][0]["actions"]
    [record] = graph.get_state(config).values["inferact_checks"].values()
    assert action["task"] == record["task"] == "Buy the blue mug B02"
    assert action["action_chain"] == record["action_chain"]
    assert "task" in action["from_state"]


def test_a_failed_critic_is_shown_and_nothing_unrecorded_is_made_up() -> None:
    graph, config = run_shop("Buy the blue mug B02")
    thread = thread_dict(graph, config, "t1")
    info = thread["interrupts"]["task-1"][0]["value"]["action_requests"][0]["inferact"]
    info.update(score=None, error="CriticTimeoutError: the critic model did not answer in 30s")
    thread["values"]["inferact_checks"] = {}  # no record: the messages are not read instead
    [action] = thread_view(thread)["reviews"][0]["actions"]
    assert action["error"].startswith("CriticTimeoutError") and action["score"] is None
    assert action["task"] is None and action["action_chain"] == [] and action["options"] == []
    assert action["from_state"] == []


def test_threads_without_an_inferact_review_have_no_view() -> None:
    assert thread_view({"thread_id": "x", "values": {}, "interrupts": {}}) is None
    other = {"thread_id": "x", "interrupts": {"t": [{"id": "i", "value": {"question": "ok?"}}]}}
    assert thread_view(other) is None
    hitl = copy.deepcopy(other)
    hitl["interrupts"]["t"][0]["value"] = {"action_requests": [{"name": "x", "args": {}}]}
    assert thread_view(hitl) is None  # plain HumanInTheLoopMiddleware: not ours


@pytest.mark.parametrize(
    ("decisions", "error"),
    [
        ([], "expected 1 decision(s), got 0"),
        ([{"type": "edit", "edited_action": {"name": "buy_now", "args": "B03"}}], "a dict 'args'"),
        ([{"type": "respond"}], "non-empty message"),
        ([{"type": "maybe"}], "unknown type 'maybe'"),
        ("B02 please", "'decisions' must be a list"),
    ],
)
def test_bad_decisions_are_refused_with_the_reason(decisions: Any, error: str) -> None:
    graph, config = run_shop("Buy the blue mug B02")
    request = graph.get_state(config).interrupts[0].value
    value, problem = validate_decisions({"decisions": decisions}, request)
    assert value is None and error in problem


def test_decisions_are_checked_against_each_actions_allowed_decisions() -> None:
    request = {
        "action_requests": [{"name": "buy_now"}, {"name": "search"}],
        "review_configs": [
            {"action_name": "buy_now", "allowed_decisions": ["approve", "reject"]},
            {"action_name": "search", "allowed_decisions": ["approve", "edit"]},
        ],
    }
    ok, _ = validate_decisions(
        {
            "decisions": [
                {"type": "reject"},
                {"type": "edit", "edited_action": {"name": "search", "args": {"q": 1}}},
            ]
        },
        request,
    )
    assert ok == {
        "decisions": [
            {"type": "reject"},
            {"type": "edit", "edited_action": {"name": "search", "args": {"q": 1}}},
        ]
    }
    _, problem = validate_decisions(
        {
            "decisions": [
                {"type": "edit", "edited_action": {"name": "buy_now", "args": {}}},
                {"type": "approve"},
            ]
        },
        request,
    )
    assert problem == (
        "decisions[0]: 'edit' is not allowed for buy_now; "
        "allowed decisions are ['approve', 'reject']"
    )


def test_per_order_probabilities_are_the_recorded_ones_never_a_re_read_of_the_answers() -> None:
    graph, config = run_shop("Buy the blue mug B02")
    thread = thread_dict(graph, config, "t1")
    [record] = thread["values"]["inferact_checks"].values()
    record["order_probs"] = {
        "original": {"B": 0.5, "D": 0.1},
        "reversed": {"B": 0.7, "D": 0.4},
    }
    record["verdict"]["raw"] = {"verification_original": "G1: A P1: 0.99"}  # not what it used
    [action] = thread_view(thread)["reviews"][0]["actions"]
    assert [(o["label"], o["p_original"], o["p_reversed"]) for o in action["options"]] == [
        ("A", 0.0, 0.0),
        ("B", 0.5, 0.7),
        ("C", 0.0, 0.0),
        ("D", 0.1, 0.4),
        ("E", 0.0, 0.0),
    ]


def test_a_record_without_per_order_probabilities_leaves_those_columns_empty() -> None:
    graph, config = run_shop("Buy the blue mug B02")
    thread = thread_dict(graph, config, "t1")
    [record] = thread["values"]["inferact_checks"].values()
    record["order_probs"] = None  # e.g. a critic that verifies in one order only
    [action] = thread_view(thread)["reviews"][0]["actions"]
    assert {o["p_original"] for o in action["options"]} == {None}
    assert [o["p_mean"] for o in action["options"]] == [0.0, 0.6, 0.0, 0.25, 0.0]
