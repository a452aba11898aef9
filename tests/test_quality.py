"""The figures of docs/quality.md and the shipped calibrations, from real answers replayed.

``bench/bench_quality.py`` replays a capable model's answers (tests/data/README.md) for the
tau-bench airline dev records and the HotPotQA trajectories. A prompt that no longer renders
byte for byte makes the replay fail, naming every check that met an unrecorded request.
"""

from __future__ import annotations

import math
import sys

import pytest
from conftest import ROOT
from critic_support import buying_agent

from inferact_langgraph.calibration import Calibration, default_calibration
from inferact_langgraph.critics import make_critic
from inferact_langgraph.critics.inferact import InferActCritic
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic, scripted_critic_model

sys.path.insert(0, str(ROOT / "bench"))
import bench_quality

pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning")


@pytest.fixture(scope="module")
def replayed() -> dict[str, dict[str, bench_quality.Scored]]:
    return {setting: bench_quality.replay(setting) for setting in bench_quality.SOURCES}


def test_the_quality_page_is_what_the_replay_gives(replayed):
    committed = bench_quality.block(bench_quality.DOC.read_text())
    assert committed == bench_quality.render(replayed)


@pytest.mark.parametrize("setting", sorted(bench_quality.SOURCES))
@pytest.mark.parametrize("critic", bench_quality.CRITICS)
def test_the_shipped_calibration_is_fitted_on_the_recorded_answers(replayed, critic, setting):
    source = bench_quality.SOURCES[setting]
    shipped = default_calibration(critic, source.preset, with_rules=source.rules is not None)
    refit = bench_quality.fit(replayed[setting][critic])
    assert shipped is not None and shipped.method == refit.method == "platt-logit"
    for key in ("slope", "intercept"):
        assert math.isclose(shipped.params[key], refit.params[key], rel_tol=1e-6, abs_tol=1e-9)


def test_the_generic_critic_catches_most_tool_agent_mistakes_at_its_default(replayed):
    """Cross-validated, at threshold 0.5 on the calibrated score: what the docs promise."""
    mistakes, correct = bench_quality.cross_validated(replayed["generic"]["inferact"])
    assert mistakes >= 0.65 and correct <= 0.2


def test_every_critic_uses_its_shipped_calibration_by_default():
    model = ScriptedChatModel(replies=["unused"])
    for critic in (InferActCritic(model=model), make_critic("standard", model=model)):
        assert critic.calibration == default_calibration(critic.name, "generic")
        assert isinstance(critic.calibration, Calibration)
    hotpotqa = InferActCritic(model=model, preset="hotpotqa")
    assert hotpotqa.calibration == default_calibration("inferact", "hotpotqa")
    assert InferActCritic(model=model, calibration=None).calibration is None  # the raw score
    assert InferActCritic(model=model, preset="webshop").calibration is None  # none shipped
    assert ScriptedCritic(scores=[0.5]).calibration is None


@pytest.mark.parametrize("calibration", ["default", None])
def test_a_guard_flags_by_calibrated_probability_by_default(calibration):
    """Between the raw threshold 0.5 and the raw score the shipped calibration maps to 0.5, the
    two disagree: by default the guard decides by the calibrated probability, and
    ``calibration=None`` by the raw score."""
    shipped = default_calibration("inferact", "generic")
    assert shipped is not None
    low, high = 0.0, 1.0  # the raw score that the shipped calibration maps to 0.5
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if shipped(middle) < 0.5 else (low, middle)
    score = round((low + 0.5) / 2, 3)
    raw_asks, calibrated_asks = score < 0.5, shipped(score) < 0.5
    assert raw_asks != calibrated_asks  # the premise: the calibration changes the decision
    asked = calibrated_asks if calibration == "default" else raw_asks
    critic = InferActCritic(model=scripted_critic_model(score), calibration=calibration)
    graph, bought = buying_agent(critic)
    out = graph.invoke({"messages": [("user", "buy B01")]}, {"configurable": {"thread_id": "c"}})
    assert ("__interrupt__" in out) is asked
    assert bought == ([] if asked else ["B01"])
