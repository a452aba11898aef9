"""A critic fails closed: scores outside [0, 1] are errors, and no model call waits forever."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from typing import Any

import pytest
from critic_support import buying_agent

from inferact_langgraph import _factory as factory
from inferact_langgraph.critics import (
    Critic,
    InferActCritic,
    LogprobCritic,
    MultiStepCritic,
    SelfConsistencyCritic,
    StandardEvalCritic,
    Usage,
)
from inferact_langgraph.critics.base import DEFAULT_TIMEOUT
from inferact_langgraph.errors import CriticError, CriticTimeoutError
from inferact_langgraph.testing import ScriptedChatModel
from inferact_langgraph.trajectory import Step, Trajectory

TRAJ = Trajectory("buy a red mug", (Step("search(q=mug)", "B01 red mug"), Step("buy(B01)")))


class Fixed(Critic):
    """A custom critic that returns whatever score it is given."""

    name = "fixed"

    def __init__(self, score: Any, **kw: Any) -> None:
        super().__init__(model=None, **kw)
        self.score = score

    async def _aevaluate(self, trajectory, *, risk=None):
        return self.verdict(score=self.score, usage=Usage())


BAD_SCORES = [7.0, 1.5, -0.2, math.inf, -math.inf, math.nan, "0.9", None, True]


@pytest.mark.parametrize("score", BAD_SCORES, ids=repr)
def test_a_score_outside_0_1_is_an_error_never_clamped(score: Any) -> None:
    with pytest.raises(CriticError, match="a score must be a number in"):
        Fixed(score).evaluate(TRAJ)
    with pytest.raises(CriticError, match="a score must be a number in"):
        asyncio.run(Fixed(score).aevaluate(TRAJ))


@pytest.mark.parametrize("score", [0.0, 1.0, 0.25, 1 + 1e-12])
def test_valid_scores_pass(score: float) -> None:
    assert Fixed(score).evaluate(TRAJ).score == min(1.0, score)


@pytest.mark.parametrize("score", [7.0, math.inf, math.nan])
def test_guard_reviews_a_call_whose_critic_gave_a_bad_score(score: float) -> None:
    graph, bought = buying_agent(Fixed(score))
    out = graph.invoke(
        {"messages": [("user", "buy a red mug")]},
        {"configurable": {"thread_id": uuid.uuid4().hex}},
    )
    assert bought == [] and "__interrupt__" in out
    [request] = out["__interrupt__"][0].value["action_requests"]
    assert request["inferact"]["score"] is None
    assert "a score must be a number in [0, 1]" in request["inferact"]["error"]


# ---------------------------------------------------------------------------- time-outs
CRITICS = [
    InferActCritic,
    StandardEvalCritic,
    SelfConsistencyCritic,
    MultiStepCritic,
    LogprobCritic,
]


@pytest.mark.parametrize("cls", CRITICS)
def test_every_critic_has_a_default_time_out(cls) -> None:
    assert DEFAULT_TIMEOUT == 60.0
    assert cls(model=ScriptedChatModel(replies=["x"])).timeout == DEFAULT_TIMEOUT
    assert cls(model=None, timeout=None).timeout is None  # explicitly unlimited


@pytest.mark.parametrize("cls", CRITICS)
def test_a_hung_model_times_out_sync_and_async(cls) -> None:
    hung = ScriptedChatModel(replies=["never"], delay=30, cycle=True)
    critic = cls(model=hung, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(CriticTimeoutError, match=r"did not answer within 0\.3s"):
        critic.evaluate(TRAJ)
    with pytest.raises(CriticTimeoutError):
        asyncio.run(critic.aevaluate(TRAJ))
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "5", True])
def test_invalid_time_outs_are_refused_at_construction(bad: Any) -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        InferActCritic(model=None, timeout=bad)


def test_factory_passes_the_time_out_to_critics_and_the_model() -> None:
    hung = ScriptedChatModel(replies=["never"], delay=30, cycle=True)
    critics = factory.build_critics(["inferact", "standard"], model=hung, timeout=0.25)
    assert {c.timeout for c in critics.values()} == {0.25}
    with pytest.raises(CriticTimeoutError):
        critics["standard"].evaluate(TRAJ)
    model = factory.build_model("openai:m", base_url="http://127.0.0.1:9/v1", timeout=12)
    assert model.request_timeout == 12
