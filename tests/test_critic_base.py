"""One way to do each thing in the critics: preset lookup and retries in
the base critic, one trajectory hash for every verdict cache, graphs compiled only on use."""

from __future__ import annotations

import pytest

from inferact_langgraph import cache as cache_module
from inferact_langgraph import trajectory as trajectory_module
from inferact_langgraph.cache import CachedCritic, critic_fingerprint
from inferact_langgraph.critics import (
    Critic,
    InferActCritic,
    LogprobCritic,
    StandardEvalCritic,
    Usage,
)
from inferact_langgraph.eval import datasets
from inferact_langgraph.prompts import get_preset
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic
from inferact_langgraph.trajectory import Step, Trajectory, trajectory_hash

TRAJ = Trajectory("buy a red mug", (Step("search(q=mug)", "B01 red mug"), Step("buy(B01)")))


class Custom(Critic):
    name = "custom"

    async def _aevaluate(self, trajectory, *, risk=None):
        return self.verdict(score=0.5, usage=Usage())


def test_every_critic_gets_its_preset_from_the_base() -> None:
    assert Custom(model=None, preset="webshop").preset_config is get_preset("webshop")
    assert (
        StandardEvalCritic(calibration=None, model=None, preset="hotpotqa").preset_config.name
        == "hotpotqa"
    )
    with pytest.raises(ValueError, match="unknown preset 'shop'"):
        Custom(model=None, preset="shop")


def test_one_trajectory_hash_for_every_cache() -> None:
    assert cache_module.chain_key is trajectory_hash is trajectory_module.trajectory_hash
    assert datasets.trajectory_hash is trajectory_hash
    [item] = datasets.load_dataset(
        [{"task": TRAJ.task, "steps": [{"action": "buy(B01)"}], "label": "correct"}]
    ).items
    assert item.content_hash == trajectory_hash(item.trajectory)
    # the guard's cache and the evaluation's now agree on what the same check is
    retried = Trajectory(TRAJ.task, (TRAJ.steps[0], Step("buy(B01)", tool_call_id="retry-2")))
    assert trajectory_hash(retried) == trajectory_hash(TRAJ)
    changed = Trajectory(TRAJ.task, (TRAJ.steps[0], Step("buy(B02)")))
    assert trajectory_hash(changed) != trajectory_hash(TRAJ)


def test_argument_order_does_not_change_the_hash() -> None:
    a = Step("pay()", tool_name="pay", tool_args={"to": "bob", "amount": 5, "tags": {"x", "y"}})
    b = Step("pay()", tool_name="pay", tool_args={"amount": 5, "tags": {"y", "x"}, "to": "bob"})
    assert trajectory_hash(Trajectory("t", (a,))) == trajectory_hash(Trajectory("t", (b,)))


def test_inferact_compiles_no_graph_until_asked() -> None:
    critic = InferActCritic(calibration=None, model=ScriptedChatModel(replies=["x"]))
    before = critic_fingerprint(critic)
    assert not {"graph", "inference_graph", "verification_graph"} & set(vars(critic))
    assert critic.graph.name == "inferact"  # built on first access, then kept
    assert critic.graph is critic.graph
    assert critic.verification_graph.name == "inferact_task_verification"
    assert critic_fingerprint(critic) == before  # building graphs changes no cache key


def _flaky(replies: list, fails: int) -> ScriptedChatModel:
    return ScriptedChatModel(replies=[ConnectionError("reset")] * fails + replies)


@pytest.mark.parametrize("retries", [0, 2])
def test_retries_apply_to_every_kind_of_model_call(retries: int) -> None:
    ok = retries > 0
    standard = StandardEvalCritic(
        calibration=None,
        model=_flaky(["The answer is: Correct\nConfidence: 0.8"], 2),
        max_retries=retries,
    )
    logprob = LogprobCritic(
        model=ScriptedChatModel(
            replies=["A. buy a red mug", ConnectionError("reset"), "Answer: A\nConfidence: 0.9"]
        ),
        logprobs=False,
        max_retries=retries,
    )
    for critic, score in ((standard, 0.8), (logprob, 0.9)):
        if ok:
            assert critic.evaluate(TRAJ).score == pytest.approx(score)
        else:
            with pytest.raises(Exception, match="reset"):
                critic.evaluate(TRAJ)


def test_cached_critic_keeps_the_inner_preset_and_fingerprint() -> None:
    inner = ScriptedCritic(scores=[0.3])
    cached = CachedCritic(inner)
    assert cached.preset_config is inner.preset_config
    assert cached.cache_fingerprint() == critic_fingerprint(inner)
