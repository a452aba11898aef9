"""``inferact+standard`` and ``inferact-or-standard``: both critics judge the call; the first
averages their raw scores, the second doubts when either calibrated critic doubts."""

from __future__ import annotations

import pytest
from critic_support import buying_agent
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.calibration import default_calibration
from inferact_langgraph.critics import (
    InferActOrStandardCritic,
    InferActStandardCritic,
    make_critic,
)
from inferact_langgraph.errors import CriticError
from inferact_langgraph.testing import (
    ScriptedChatModel,
    answer_critic_prompt,
    scripted_critic_model,
)
from inferact_langgraph.trajectory import Step, Trajectory

TRAJECTORY = Trajectory("buy a red mug", (Step("search(q=mug)", "B01 red mug"), Step("buy(B01)")))


def _judge(p_inferact: float, p_standard: float) -> ScriptedChatModel:
    """A critic model that gives the user's task ``p_inferact`` in InferAct's verification and
    a confidence of ``p_standard`` in standard evaluation."""

    inferact = scripted_critic_model(p_inferact)

    def respond(messages):
        prompt = messages[-1].content
        if "The answer is: <Correct/Incorrect>" in prompt:
            return answer_critic_prompt(prompt, p_task=p_standard)
        return inferact.invoke(messages).content

    return ScriptedChatModel(responder=respond)


def test_the_score_is_the_mean_of_both_raw_scores_and_the_cost_is_both():
    critic = make_critic("inferact+standard", model=_judge(0.9, 0.3), calibration=None)
    verdict = critic.evaluate(TRAJECTORY)
    assert verdict.score == pytest.approx(0.6)
    assert verdict.usage.model_calls == 4  # inference, two verification orders, standard
    assert verdict.inferred_tasks and verdict.options  # the review still shows InferAct's MCQ
    assert "InferAct (0.90):" in verdict.justification  # the reviewer sees who doubted
    assert "Standard evaluation (0.30):" in verdict.justification


async def test_the_async_path_gives_the_same_verdict():
    critic = make_critic("inferact+standard", model=_judge(0.2, 0.4), calibration=None)
    assert (await critic.aevaluate(TRAJECTORY)).score == pytest.approx(0.3)


def test_by_default_the_mean_is_calibrated_with_its_own_shipped_calibration():
    critic = make_critic("inferact+standard", model=_judge(0.9, 0.3))
    shipped = default_calibration("inferact+standard", "generic")
    assert shipped is not None and critic.calibration == shipped
    verdict = critic.evaluate(TRAJECTORY)
    assert verdict.uncalibrated_score == pytest.approx(0.6)
    assert verdict.score == pytest.approx(shipped(0.6))


def test_rules_and_settings_reach_both_critics():
    critic = InferActStandardCritic(model=None, rules="Never buy mugs.", preset="hotpotqa")
    assert critic.inferact.rules == critic.standard.rules == "Never buy mugs."
    assert critic.inferact.preset == critic.standard.preset == "hotpotqa"
    assert critic.inferact.calibration is None and critic.standard.calibration is None


def test_a_failure_of_either_critic_fails_the_check():
    def respond(messages):
        prompt = messages[-1].content
        if "The answer is: <Correct/Incorrect>" in prompt:
            return "I cannot judge this."
        return inferact.invoke(messages).content

    inferact = scripted_critic_model(0.9)
    critic = make_critic("inferact+standard", model=ScriptedChatModel(responder=respond))
    with pytest.raises(CriticError):
        critic.evaluate(TRAJECTORY)


def test_a_guard_with_the_combined_critic_asks_a_human_when_the_mean_is_low():
    @critical
    @tool
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    actor = ScriptedChatModel(
        replies=[AIMessage("", tool_calls=[{"name": "pay", "args": {"amount": 5}, "id": "p1"}])]
    )
    graph = with_inferact(
        create_agent(actor, [pay]),
        critic=make_critic("inferact+standard", model=_judge(0.1, 0.1)),
        checkpointer=InMemorySaver(),
    )
    out = graph.invoke({"messages": [("user", "pay 5")]}, {"configurable": {"thread_id": "c"}})
    assert out["__interrupt__"][0].value["action_requests"][0]["name"] == "pay"


# ---------------------------------------------------------------------------- either doubts
@pytest.mark.parametrize(("p_inferact", "p_standard"), [(0.9, 0.3), (0.3, 0.9), (0.2, 0.1)])
def test_either_critic_doubting_flags_the_call(p_inferact, p_standard):
    critic = make_critic(
        "inferact-or-standard", model=_judge(p_inferact, p_standard), calibration=None
    )
    verdict = critic.evaluate(TRAJECTORY)
    assert verdict.score == pytest.approx(min(p_inferact, p_standard))
    assert verdict.flagged and verdict.usage.model_calls == 4


def test_the_call_passes_only_when_both_critics_pass():
    critic = make_critic("inferact-or-standard", model=_judge(0.9, 0.7), calibration=None)
    assert not critic.evaluate(TRAJECTORY).flagged


def test_by_default_each_critic_maps_its_score_with_its_own_shipped_calibration():
    critic = make_critic("inferact-or-standard", model=_judge(0.9, 0.3))
    inferact = default_calibration("inferact", "generic")
    standard = default_calibration("standard", "generic")
    assert inferact is not None and standard is not None and critic.calibration is None
    assert critic.inferact.calibration == inferact and critic.standard.calibration == standard
    verdict = critic.evaluate(TRAJECTORY)
    assert verdict.score == pytest.approx(min(inferact(0.9), standard(0.3)))


@pytest.mark.parametrize("calibration", ["platt", 0.5, default_calibration("inferact", "generic")])
def test_one_calibration_for_both_critics_is_refused_with_what_is_expected(calibration):
    with pytest.raises(ValueError, match=r"calibration='default'.*or None"):
        InferActOrStandardCritic(model=None, calibration=calibration)


def test_a_guard_with_either_critic_asks_the_human_when_only_standard_evaluation_doubts():
    critic = make_critic("inferact-or-standard", model=_judge(0.95, 0.05))
    graph, bought = buying_agent(critic)
    out = graph.invoke({"messages": [("user", "buy B01")]}, {"configurable": {"thread_id": "e"}})
    assert "__interrupt__" in out and bought == []
