"""A guard built with ``calibration=``: ``threshold`` is a probability, both scores are kept.

``with_inferact(..., calibration=...)`` and ``InferActMiddleware(..., calibration=...)`` build
InferAct with the calibration; the critic model is scripted (its raw score is ``p_task``), so
what is flagged follows the calibrated probability, not the raw score.
"""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, SHARED_DATA, read_jsonl
from guard_helpers import (
    KINDS,
    LEDGER,
    MIDDLEWARE_KINDS,
    build_graph,
    buy_now,
    review_in,
    search,
    shop_actor,
)
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from inferact_langgraph import InferActMiddleware, with_inferact
from inferact_langgraph._wrap import build_critic
from inferact_langgraph.calibration import Calibration, CalibrationError, fit_calibration
from inferact_langgraph.critics import make_critic
from inferact_langgraph.testing import ScriptedCritic, scripted_critic_model

TASK = "I need 66x66 inch blackout shades under $90"
SNAPSHOT = "hotpotqa_trial1_scores.json"
HARSH = Calibration.platt(slope=10.0, intercept=-8.0)  # raw 0.6 -> 0.119
LENIENT = Calibration.platt(slope=10.0, intercept=-2.0)  # raw 0.4 -> 0.881


@pytest.fixture(autouse=True)
def _clear_ledger():
    LEDGER.clear()
    yield
    LEDGER.clear()


def guarded(kind, p_task, **options):
    """A shop agent guarded by InferAct on a scripted critic model whose raw score is p_task."""
    model = scripted_critic_model(p_task)
    if kind in MIDDLEWARE_KINDS:
        return create_agent(
            shop_actor(),
            [search, buy_now],
            checkpointer=InMemorySaver(),
            middleware=[InferActMiddleware(model=model, review_in=review_in(kind), **options)],
        )
    return with_inferact(
        build_graph(kind, shop_actor(), [search, buy_now]),
        model=model,
        checkpointer=InMemorySaver(),
        **options,
    )


def cfg(thread="t1"):
    return {"configurable": {"thread_id": thread}}


@pytest.mark.parametrize("kind", KINDS)
def test_a_raw_score_above_the_threshold_is_flagged_when_its_probability_is_below(kind, tmp_path):
    path = HARSH.save(tmp_path / "inferact.json")
    graph = guarded(kind, 0.6, calibration=str(path), threshold=0.5)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert LEDGER == []  # calibrated 0.119 < 0.5: not run
    (request,) = [i.value for i in out["__interrupt__"]]
    action = request["action_requests"][0]
    section = action["inferact"]
    assert section["score"] == pytest.approx(HARSH(0.6)) and section["score"] < 0.5
    assert section["uncalibrated_score"] == pytest.approx(0.6)
    assert section["threshold"] == 0.5
    assert "p(user's task) = 0.12 < threshold 0.50" in action["description"]
    assert "(calibrated; raw score 0.60)" in action["description"]
    # The human approves: the audit keeps both scores.
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    assert LEDGER == [{"asin": "B02", "price": 40.0}]
    (entry,) = graph.get_state(cfg()).values["inferact_audit"]
    assert (entry["decision"], entry["decided_by"]) == ("approve", "human")
    assert entry["score"] == pytest.approx(HARSH(0.6))
    assert entry["uncalibrated_score"] == pytest.approx(0.6)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_raw_score_below_the_threshold_passes_when_its_probability_is_above(kind):
    graph = guarded(kind, 0.4, calibration=LENIENT, threshold=0.5)
    out = await graph.ainvoke({"messages": [("user", TASK)]}, cfg())
    assert "__interrupt__" not in out
    assert LEDGER == [{"asin": "B02", "price": 40.0}]
    state = await graph.aget_state(cfg())
    (entry,) = state.values["inferact_audit"]
    assert (entry["decision"], entry["decided_by"]) == ("approve", "critic")
    assert entry["score"] == pytest.approx(LENIENT(0.4)) and entry["score"] > 0.5
    assert entry["uncalibrated_score"] == pytest.approx(0.4)
    (record,) = state.values["inferact_checks"].values()
    assert record["verdict"]["uncalibrated_score"] == pytest.approx(0.4)


@pytest.mark.parametrize("threshold", [0.1, 0.2])
def test_the_threshold_is_compared_with_the_probability(threshold):
    # Calibrated 0.119: a probability threshold of 0.1 lets it run, 0.2 stops it.
    graph = guarded("create_agent", 0.6, calibration=HARSH, threshold=threshold)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    assert ("__interrupt__" in out) == (HARSH(0.6) < threshold)
    assert (LEDGER == []) == (HARSH(0.6) < threshold)


def test_without_a_calibration_the_payloads_are_unchanged():
    graph = guarded("create_agent", 0.4, threshold=0.5, calibration=None)
    out = graph.invoke({"messages": [("user", TASK)]}, cfg())
    section = out["__interrupt__"][0].value["action_requests"][0]["inferact"]
    assert section["score"] == pytest.approx(0.4) and "uncalibrated_score" not in section
    assert "calibrated" not in out["__interrupt__"][0].value["action_requests"][0]["description"]


def test_a_calibration_fitted_on_the_real_answers_decides_by_its_probability(tmp_path):
    """Fit on InferAct's scores of the 90 replayed HotPotQA trajectories, guard with the file."""
    # InferAct's scores parsed from the recorded answers (as tests/test_hotpotqa_replay.py).
    snapshot = json.loads((ROOT / "tests" / "snapshots" / SNAPSHOT).read_text())
    labels = {r["id"]: int(r["label"] == "correct") for r in read_jsonl(SHARED_DATA)}
    ids = sorted(snapshot["inferact"])
    calibration = fit_calibration(
        [snapshot["inferact"][i]["score"] for i in ids], [labels[i] for i in ids]
    )
    path = calibration.save(tmp_path / "inferact.json")
    raw_scores = (0.5, 0.55, 0.6, 0.62)
    decided = {}
    for n, raw in enumerate(raw_scores):
        LEDGER.clear()
        graph = guarded("create_agent", raw, calibration=str(path), threshold=0.5)
        out = graph.invoke({"messages": [("user", TASK)]}, cfg(f"t{n}"))
        decided[raw] = "__interrupt__" in out
        assert decided[raw] == (calibration(raw) < 0.5), (raw, calibration(raw))
        assert (LEDGER == []) == decided[raw]
    # The calibration changes decisions: some raw score >= 0.5 has P(on track) < 0.5.
    assert any(flagged for raw, flagged in decided.items() if raw >= 0.5), {
        raw: calibration(raw) for raw in raw_scores
    }


def test_calibration_with_a_ready_made_critic_is_refused_saying_how():
    critic = ScriptedCritic(scores=[0.5])
    with pytest.raises(ValueError, match=r"calibration= goes to the critic you built") as err:
        build_critic(critic=critic, calibration=HARSH)
    assert 'make_critic("<spec>", model=..., calibration=' in str(err.value)
    graph = build_graph("create_agent", shop_actor(), [search, buy_now])
    with pytest.raises(ValueError, match="calibration= goes to the critic you built"):
        with_inferact(graph, critic=critic, calibration=HARSH, checkpointer=InMemorySaver())
    with pytest.raises(ValueError, match="calibration= goes to the critic you built"):
        InferActMiddleware(critic=critic, calibration="inferact.json")
    # What the message says works: the critic carries it.
    built = make_critic("inferact", model=scripted_critic_model(0.6), calibration=HARSH)
    assert build_critic(critic=built).calibration == HARSH


def test_a_bad_calibration_fails_when_the_guard_is_built(tmp_path):
    model = scripted_critic_model(0.6)
    with pytest.raises(FileNotFoundError):
        InferActMiddleware(model=model, calibration=tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    graph = build_graph("create_agent", shop_actor(), [search, buy_now])
    with pytest.raises(CalibrationError, match="not a calibration"):
        with_inferact(graph, model=model, calibration=str(tmp_path / "bad.json"))
    with pytest.raises(CalibrationError, match="calibration must be a Calibration"):
        InferActMiddleware(model=model, calibration=0.5)
