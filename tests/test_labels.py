"""Review labels and spot checks on every graph kind and both middleware review modes, sync and
async; weighting and figures; the labels CLI."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3

import pytest
from guard_helpers import LEDGER, build_graph, buy_now, call, search, shop_actor
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from langgraph.types import Command
from typer.testing import CliRunner

from inferact_langgraph import GuardOptions, InferActMiddleware, with_inferact
from inferact_langgraph._label_fit import fit_deployment
from inferact_langgraph.calibration import fit_calibration
from inferact_langgraph.cli import app
from inferact_langgraph.labels import SPOT_CHECK_NOTE, ReviewLabels, SpotCheck, label_summary
from inferact_langgraph.testing import ScriptedCritic

KINDS = ["create_agent", "react_agent", "builder", "middleware", "middleware-tool-call"]
TASK = "I need 66x66 inch blackout shades under $90"


@pytest.fixture(autouse=True)
def _clear_ledger():
    LEDGER.clear()
    yield
    LEDGER.clear()


def guarded(kind, actor, critic, *, store, checkpointer=None, **options):
    checkpointer = checkpointer or InMemorySaver()
    if kind.startswith("middleware"):
        if kind == "middleware-tool-call":
            options["review_in"] = "tool_call"
        return create_agent(
            actor,
            [search, buy_now],
            checkpointer=checkpointer,
            store=store,
            middleware=[InferActMiddleware(critic=critic, **options)],
        )
    return with_inferact(
        build_graph(kind, actor, [search, buy_now]),
        critic=critic,
        checkpointer=checkpointer,
        store=store,
        **options,
    )


def cfg(thread="t1", user=None):
    configurable = {"thread_id": thread, **({"user_id": user} if user else {})}
    return {"configurable": configurable}


def labels_in(store, **where):
    return ReviewLabels().list_labels(store, **where)


# ---------------------------------------------------------------------------- decisions
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("decision", "on_track"),
    [
        ({"type": "approve"}, True),
        ({"type": "reject", "message": "wrong size"}, False),
        ({"type": "respond", "message": "out of stock"}, None),
        (
            {
                "type": "edit",
                "edited_action": {"name": "buy_now", "args": {"asin": "B01", "price": 85.0}},
            },
            False,
        ),
    ],
)
def test_a_human_decision_is_one_label_with_its_check(kind, decision, on_track):
    store = InMemoryStore()
    critic = ScriptedCritic(scores=[0.2, 0.9])  # the edit's re-check passes
    graph = guarded(kind, shop_actor(), critic, store=store)
    graph.invoke({"messages": [("user", TASK)]}, cfg(user="alice"))
    assert labels_in(store) == []  # no decision yet, no label
    graph.invoke(Command(resume={"decisions": [decision]}), cfg(user="alice"))
    (label,) = labels_in(store)
    assert label["decision"] == decision["type"] and label["on_track"] is on_track
    assert label["false_alarm"] is (decision["type"] == "approve")
    assert (label["deployment"], label["owner"], label["thread_id"]) == (
        "default",
        ["user", "alice"],
        "t1",
    )
    assert label["tool"] == "buy_now" and label["args"] == {"asin": "B02", "price": 40.0}
    assert (label["score"], label["raw_score"], label["threshold"]) == (0.2, 0.2, 0.5)
    assert (label["critic"], label["risk"], label["task"]) == ("scripted", "low", TASK)
    assert [s["action"].split("(")[0] for s in label["action_chain"]] == ["search", "buy_now"]
    assert label["flagged"] and not label["spot_check"] and label["inclusion"] == 1.0
    assert label["decided_by"] == "human" and label["reviewer"] == "alice"


def test_the_async_path_keeps_the_same_label():
    store = InMemoryStore()
    graph = guarded("create_agent", shop_actor(), ScriptedCritic(scores=[0.2]), store=store)

    async def run():
        await graph.ainvoke({"messages": [("user", TASK)]}, cfg())
        await graph.ainvoke(Command(resume={"decisions": [{"type": "reject"}]}), cfg())
        return await ReviewLabels().alist_labels(store)

    (label,) = asyncio.run(run())
    assert label["decision"] == "reject" and label["owner"] == ["shared"]


def test_no_label_is_kept_without_a_store_or_with_labels_off():
    store = InMemoryStore()
    graph = guarded(
        "builder", shop_actor(), ScriptedCritic(scores=[0.2]), store=store, labels=False
    )
    graph.invoke({"messages": [("user", TASK)]}, cfg())
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    assert labels_in(store) == [] and LEDGER == [{"asin": "B02", "price": 40.0}]
    bare = guarded("builder", shop_actor(), ScriptedCritic(scores=[0.2]), store=None)
    bare.invoke({"messages": [("user", TASK)]}, cfg())
    out = bare.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    assert out["messages"][-1].content == "All done."


def test_a_label_is_redacted_like_an_error_text():
    store = InMemoryStore()
    secret_call = call("buy_now", {"asin": "B02 sk-live-abcdefgh12345678", "price": 40.0}, "b-1")
    graph = guarded(
        "create_agent", shop_actor(secret_call), ScriptedCritic(scores=[0.2]), store=store
    )
    graph.invoke({"messages": [("user", f"{TASK}; token=hunter2hunter2")]}, cfg())
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    (label,) = labels_in(store)
    text = json.dumps(label)
    assert "sk-live-abcdefgh12345678" not in text and "hunter2hunter2" not in text
    assert label["args"]["asin"] == "B02 ***"


def test_deleting_the_thread_loses_no_label(tmp_path):
    db = str(tmp_path / "deploy.sqlite")
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    store = SqliteStore(sqlite3.connect(db, check_same_thread=False, isolation_level=None))
    store.setup()
    graph = guarded("create_agent", shop_actor(), ScriptedCritic(scores=[0.2]), store=store,
                    checkpointer=saver)  # fmt: skip
    graph.invoke({"messages": [("user", TASK)]}, cfg("doomed"))
    graph.invoke(Command(resume={"decisions": [{"type": "reject"}]}), cfg("doomed"))
    before = labels_in(store)
    saver.delete_thread("doomed")
    assert graph.get_state(cfg("doomed")).values == {}  # the thread is gone
    assert labels_in(store) == before and before[0]["thread_id"] == "doomed"
    assert before[0]["task"] == TASK and before[0]["decision"] == "reject"


# ---------------------------------------------------------------------------- spot checks
@pytest.mark.parametrize("kind", KINDS)
def test_a_spot_check_holds_a_passed_call_for_a_human_marked_as_such(kind):
    store = InMemoryStore()
    graph = guarded(kind, shop_actor(), ScriptedCritic(scores=[0.9]), store=store, spot_check=1.0)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert LEDGER == []  # the critic passed it, yet it waits for the human
    (action,) = out["__interrupt__"][0].value["action_requests"]
    assert action["inferact"]["spot_check"] is True
    assert SPOT_CHECK_NOTE in action["description"]
    assert "doubts" not in action["description"]
    graph.invoke(Command(resume={"decisions": [{"type": "reject", "message": "wrong"}]}), cfg())
    assert LEDGER == []
    (label,) = labels_in(store)
    assert label["spot_check"] and not label["flagged"] and label["on_track"] is False
    assert label["inclusion"] == 1.0 and label["raw_score"] == 0.9
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert [(a["decision"], a["decided_by"], a.get("spot_check")) for a in audit] == [
        ("reject", "human", True)
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_doubted_call_is_reviewed_as_a_doubt_never_as_a_spot_check(kind):
    store = InMemoryStore()
    graph = guarded(kind, shop_actor(), ScriptedCritic(scores=[0.2]), store=store, spot_check=1.0)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    (action,) = out["__interrupt__"][0].value["action_requests"]
    assert "spot_check" not in action["inferact"] and "doubts" in action["description"]
    record = graph.get_state(cfg()).values["inferact_checks"]["buy-1"]
    assert "spot_check" not in record
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    (label,) = labels_in(store)
    assert label["flagged"] and not label["spot_check"] and label["false_alarm"]


def test_a_spot_check_beside_a_doubted_call_is_asked_in_the_same_review():
    store = InMemoryStore()
    calls = [
        call("buy_now", {"asin": "B02", "price": 40.0}, "buy-1"),
        call("buy_now", {"asin": "B01", "price": 85.0}, "buy-2"),
    ]
    critic = ScriptedCritic(score_fn=lambda t: 0.2 if "B02" in t.steps[-1].action else 0.9)
    graph = guarded("create_agent", shop_actor(*calls), critic, store=store, spot_check=1.0)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    (intr,) = out["__interrupt__"]
    marks = [a["inferact"].get("spot_check", False) for a in intr.value["action_requests"]]
    assert marks == [False, True]
    decisions = [{"type": "reject"}, {"type": "approve"}]
    graph.invoke(Command(resume={"decisions": decisions}), cfg())
    assert LEDGER == [{"asin": "B01", "price": 85.0}]
    got = sorted((x["args"]["asin"], x["spot_check"], x["decision"]) for x in labels_in(store))
    assert got == [("B01", True, "approve"), ("B02", False, "reject")]


def test_spot_checks_are_off_by_default_and_no_draw_is_recorded():
    graph = guarded("builder", shop_actor(), ScriptedCritic(scores=[0.9]), store=InMemoryStore())
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert "__interrupt__" not in out
    assert "spot_check" not in graph.get_state(cfg()).values["inferact_checks"]["buy-1"]


def test_the_draw_is_recorded_and_reproducible_with_a_seed():
    def draws(seed):
        picked = []
        for i in range(12):
            LEDGER.clear()
            critic = ScriptedCritic(scores=[0.9])
            graph = guarded("builder", shop_actor(), critic, store=InMemoryStore(),
                            spot_check=0.5, spot_check_seed=seed)  # fmt: skip
            out = graph.invoke({"messages": [("user", TASK)]}, cfg(f"t{i}"))
            mark = graph.get_state(cfg(f"t{i}")).values["inferact_checks"]["buy-1"]["spot_check"]
            assert mark["selected"] is ("__interrupt__" in out) is (mark["draw"] < 0.5)
            assert mark["rate"] == 0.5 and mark["seeded"]
            picked.append(mark["draw"])
        return picked

    first = draws(3)
    assert first == draws(3) and first != draws(4)
    assert 0 < sum(d < 0.5 for d in first) < 12  # random per call, not all or nothing


def test_spot_check_draws_follow_the_rate():
    spot = SpotCheck(rate=0.1, seed=1)
    share = sum(spot.draw("t", f"c{i}") < 0.1 for i in range(4000)) / 4000
    assert 0.085 < share < 0.115


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"spot_check": 1.5}, "spot_check must be a share in [0, 1]"),
        ({"spot_check": "2%"}, "spot_check must be a share in [0, 1]"),
        ({"spot_check_seed": 1.5}, "spot_check_seed must be an int"),
        ({"labels": "shop"}, "labels must be a ReviewLabels or False"),
        ({"labels": 0}, "labels must be a ReviewLabels or False"),
    ],
)
def test_bad_spot_check_and_label_options_fail_when_built(options, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        GuardOptions(**options)


def test_a_deployment_needs_a_name():
    with pytest.raises(ValueError, match="deployment must be a non-empty name"):
        ReviewLabels(deployment=" ")


# ---------------------------------------------------------------------------- weighting and figures
def test_a_weighted_fit_equals_the_fit_on_repeated_labels():
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.35, 0.65]
    on_track = [0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1]
    weights = [1, 1, 1, 1, 1, 3, 3, 3, 3, 1, 3]
    weighted = fit_calibration(scores, on_track, method="platt", sample_weight=weights)
    repeated = [(s, y) for s, y, w in zip(scores, on_track, weights, strict=True) for _ in range(w)]
    plain = fit_calibration([s for s, _ in repeated], [y for _, y in repeated], method="platt")
    assert weighted.params["slope"] == pytest.approx(plain.params["slope"], rel=1e-6)
    assert weighted.params["intercept"] == pytest.approx(plain.params["intercept"], rel=1e-6)
    iso_w = fit_calibration(scores, on_track, method="isotonic", sample_weight=weights)
    iso_r = fit_calibration([s for s, _ in repeated], [y for _, y in repeated], method="isotonic")
    assert [iso_w(s) for s in scores] == pytest.approx([iso_r(s) for s in scores])


def test_bad_weights_are_refused():
    from inferact_langgraph.calibration import CalibrationError

    with pytest.raises(CalibrationError, match="one positive, finite number per score"):
        fit_calibration([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], sample_weight=[1, 1, 0, 1])


def _row(score, decision, *, spot=False, rate=0.1, t=0.0):
    return {"raw_score": score, "decision": decision, "spot_check": spot, "flagged": not spot,
            "inclusion": rate if spot else 1.0, "critic": "inferact", "preset": "generic",
            "time": t, "threshold": 0.5}  # fmt: skip


def test_spot_checks_stand_for_every_passed_call():
    # 10 flagged calls (all reviewed) and 2 spot checks at rate 0.1 standing for 20 passed calls.
    rows = [_row(0.1 * (i % 4), "reject" if i % 2 else "approve") for i in range(10)]
    rows += [_row(0.8, "reject", spot=True), _row(0.9, "approve", spot=True)]
    fit = fit_deployment(rows, miss_cost=10, review_cost=1)
    assert fit.now.reviewed == pytest.approx(10 / 30)
    assert fit.now.miss_rate.value == pytest.approx(0.5)
    assert fit.now.missed == pytest.approx(10 / 30)
    assert fit.now.recall == pytest.approx(5 / 15)


def test_too_few_labels_say_how_many_more_are_needed():
    rows = (
        [_row(0.1, "reject")] * 6
        + [_row(0.3, "approve")] * 3
        + [_row(0.9, "approve", spot=True, rate=0.05)] * 4
    )
    fit = fit_deployment(rows, miss_cost=10, review_cost=1)
    assert not fit.enough
    assert fit.too_few == (
        "spot checks: 26 more (4 of 30; about 520 more calls the critic passes)",
        "off-track labels: 14 more (6 of 20; about 31 more reviews)",
        "on-track labels: 13 more (7 of 20; about 25 more reviews)",
    )


def test_labels_of_two_critics_need_a_choice():
    rows = [_row(0.2, "reject"), {**_row(0.3, "approve"), "critic": "standard"}]
    with pytest.raises(ValueError, match="choose one with --critic and --preset"):
        fit_deployment(rows, miss_cost=10, review_cost=1)


def test_a_review_costing_more_than_a_miss_reviews_nothing():
    rows = [_row(s / 10, "reject" if s < 5 else "approve") for s in range(10)]
    fit = fit_deployment(rows, miss_cost=1, review_cost=2)
    assert fit.threshold == 0.0 and fit.proposed is not None and fit.proposed.reviewed == 0.0


def test_the_running_figures():
    week = 7 * 24 * 3600
    rows = [
        _row(0.2, "approve", t=0),
        _row(0.2, "reject", t=week + 10),
        _row(0.3, "edit", t=week + 20),
        _row(0.9, "reject", spot=True, t=week + 30),
        _row(0.8, "approve", spot=True, t=week + 40),
    ]
    summary = label_summary(rows, deployment="shop", now=week + 50, db="deploy.sqlite")
    assert summary["reviews_this_week"] == 4
    assert (summary["flagged_reviewed"], summary["false_alarms"], summary["caught"]) == (3, 1, 2)
    assert (summary["spot_checks"], summary["spot_check_misses"]) == (2, 1)
    assert summary["threshold"] == 0.5
    assert summary["command"].startswith("inferact calibrate --db deploy.sqlite --deployment shop")


# ---------------------------------------------------------------------------- the CLI
def _plain(output: str) -> str:
    """The CLI's words without the error box's frame and line breaks."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())


def _sqlite_store(path):
    store = SqliteStore(sqlite3.connect(str(path), check_same_thread=False, isolation_level=None))
    store.setup()
    return store


def _put(store, deployment, owner, n, *, decision="reject"):
    labels = ReviewLabels(deployment=deployment)
    for i in range(n):
        record = {"tool_call_id": f"c{i}", "tool": "buy_now", "args": {"i": i}, "score": 0.2,
                  "threshold": 0.5, "critic": "inferact"}  # fmt: skip
        entry = {"decision": decision, "decided_by": "human", "time": float(i)}
        labels.save(store, labels.label(record, entry, owner=owner, thread_id=f"{deployment}{i}"))


def test_labels_clear_deletes_one_users_or_one_deployments_labels(tmp_path):
    db = tmp_path / "labels.sqlite"
    store = _sqlite_store(db)
    _put(store, "shop", ("user", "alice"), 2)
    _put(store, "shop", ("user", "bob"), 3)
    _put(store, "desk", ("user", "alice"), 1)
    runner = CliRunner()
    listed = runner.invoke(app, ["labels", "list", "--db", str(db), "--user", "alice"])
    assert listed.exit_code == 0 and listed.stdout.count("buy_now") == 3
    result = runner.invoke(app, ["labels", "clear", "--db", str(db), "--user", "alice",
                                 "--deployment", "shop", "--yes"])  # fmt: skip
    assert result.exit_code == 0 and "deleted 2 labels" in result.stdout
    assert sorted((x["deployment"], x["owner"][1]) for x in labels_in(store)) == [
        ("desk", "alice"), ("shop", "bob"), ("shop", "bob"), ("shop", "bob")
    ]  # fmt: skip
    result = runner.invoke(app, ["labels", "clear", "--db", str(db), "--deployment", "shop", "-y"])
    assert "deleted 3 labels" in result.stdout
    assert [x["deployment"] for x in labels_in(store)] == ["desk"]
    refused = runner.invoke(app, ["labels", "clear", "--db", str(db)], input="n\n")
    assert refused.exit_code == 1 and len(labels_in(store)) == 1


def test_calibrate_says_plainly_when_labels_are_too_few(tmp_path):
    db = tmp_path / "labels.sqlite"
    _put(_sqlite_store(db), "shop", ("shared",), 5)
    out = tmp_path / "calibration.json"
    result = CliRunner().invoke(app, ["calibrate", "--db", str(db), "--miss-cost", "10",
                                      "--review-cost", "1", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 2
    assert "TOO FEW LABELS" in result.output and "15 more (5 of 20" in result.output
    assert "Turn them on (spot_check=0.02)" in result.output
    assert not out.exists()


def test_calibrate_asks_which_deployment_when_there_are_several(tmp_path):
    db = tmp_path / "labels.sqlite"
    store = _sqlite_store(db)
    _put(store, "shop", ("shared",), 2)
    _put(store, "desk", ("shared",), 2)
    args = ["calibrate", "--db", str(db), "--miss-cost", "10", "--review-cost", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "several deployments ['desk', 'shop']; choose one" in _plain(result.output)
    result = CliRunner().invoke(app, [*args, "--deployment", "nowhere"])
    assert result.exit_code == 2
    assert "no review labels for deployment 'nowhere'" in _plain(result.output)
    result = CliRunner().invoke(app, [*args[:3], "--miss-cost", "-1", "--review-cost", "1"])
    assert result.exit_code == 2 and "must be a positive number" in _plain(result.output)


def test_the_inbox_marks_a_spot_check_in_the_list_and_the_review():
    from inferact_langgraph.inbox.app import _summary
    from inferact_langgraph.inbox.view import thread_view

    graph = guarded("create_agent", shop_actor(), ScriptedCritic(scores=[0.9]),
                    store=InMemoryStore(), spot_check=1.0)  # fmt: skip
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    (intr,) = out["__interrupt__"]
    thread = {
        "thread_id": "t1",
        "metadata": {"graph_id": "shop"},
        "values": {},
        "interrupts": {"task": [{"id": intr.id, "value": intr.value}]},
    }
    view = thread_view(thread)
    (action,) = view["reviews"][0]["actions"]
    assert action["spot_check"] is True and SPOT_CHECK_NOTE in action["description"]
    assert _summary(view)["spot_check"] is True


def test_clearing_labels_asynchronously():
    store = InMemoryStore()
    _put(store, "shop", ("user", "alice"), 2)
    _put(store, "shop", ("user", "alice", "team"), 1)  # an owner whose labels extend alice's

    async def clear():
        return await ReviewLabels().aclear(store, deployment="shop", owner=("user", "alice"))

    assert asyncio.run(clear()) == 2
    assert [x["owner"] for x in labels_in(store)] == [["user", "alice", "team"]]


def test_weighted_estimates_stand_for_every_call_and_the_interval_covers_the_truth():
    # 300 simulated deployments of 2000 calls: the critic flags raw scores below 0.5 (all of
    # them reviewed) and spot-checks 5% of the rest. Weighting spot checks by 1/0.05 recovers
    # the deployment's shares; the 95% interval of the miss rate covers its true value in
    # about 95% of the deployments (Wilson on Kish's effective count).
    import random

    from inferact_langgraph._label_fit import operating_point

    rng = random.Random(0)
    covered, missed_errors, naive_errors = 0, [], []
    runs = 300
    for _ in range(runs):
        calls = [(s, rng.random() < 0.15 + 0.8 * s) for s in (rng.random() for _ in range(2000))]
        passed = [on for s, on in calls if s >= 0.5]
        true_miss = sum(not on for on in passed) / len(passed)
        true_missed_share = sum(not on for on in passed) / len(calls)
        rows = [(True, int(on), 1.0) for s, on in calls if s < 0.5]
        rows += [(False, int(on), 20.0) for on in passed if rng.random() < 0.05]
        point = operating_point(rows)
        low, high = point.miss_rate.low, point.miss_rate.high
        covered += low <= true_miss <= high
        missed_errors.append(point.missed - true_missed_share)
        naive = operating_point([(f, y, 1.0) for f, y, _ in rows])  # weights ignored
        naive_errors.append(naive.missed - true_missed_share)
    assert 0.91 <= covered / runs <= 0.99
    assert abs(sum(missed_errors) / runs) < 0.006  # unbiased: within 3.5 standard errors of 0
    assert sum(naive_errors) / runs < -0.03  # ignoring the weights hides most misses


def test_respond_is_unlabelled_unless_said_otherwise():
    rows = [_row(0.1, "reject"), _row(0.2, "respond"), _row(0.9, "approve")]
    skipped = fit_deployment(rows, miss_cost=10, review_cost=1)
    assert skipped.labels == 2 and skipped.skipped == {"respond (unlabelled)": 1}
    counted = fit_deployment(rows, miss_cost=10, review_cost=1, respond_as="off-track")
    assert (counted.labels, counted.off_track, counted.skipped) == (3, 2, {})
    with pytest.raises(ValueError, match="respond_as must be one of"):
        fit_deployment(rows, miss_cost=10, review_cost=1, respond_as="maybe")
