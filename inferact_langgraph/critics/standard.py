r"""Standard evaluation (paper section 4.3, Appendix A.1): ask the model whether it is correct.

The critic model sees the user's task and the trajectory and answers ``Correct``/``Incorrect``
with a confidence. Unlike InferAct it is *told* the task, which is this baseline's design.

One difference from the paper: the paper's baselines saw the agent's thoughts; our trajectories
never carry thoughts (actions and observations only), for every critic alike.

Example:
    >>> from inferact_langgraph.testing import ScriptedChatModel
    >>> from inferact_langgraph.trajectory import Step, Trajectory
    >>> judge = ScriptedChatModel(replies=["The answer is: Incorrect\nConfidence: 0.9"])
    >>> critic = StandardEvalCritic(model=judge, calibration=None)  # the raw confidence
    >>> v = critic.evaluate(Trajectory("buy a mug", (Step("buy(B02)"),)))
    >>> round(v.score, 2), v.flagged
    (0.1, True)
"""

from __future__ import annotations

from typing import Any, ClassVar

from inferact_langgraph._parsing import parse_standard
from inferact_langgraph.critics.base import Critic, RiskLevel, Verdict
from inferact_langgraph.trajectory import Trajectory

__all__ = ["StandardEvalCritic"]


class StandardEvalCritic(Critic):
    r"""Standard evaluation: one call, ``Correct``/``Incorrect`` plus a confidence.

    The score is the probability that the agent is on track: the label decides the side of 0.5
    and the confidence the distance (see :func:`inferact_langgraph._parsing.parse_standard`).

    Args:
        **kwargs: The :class:`~inferact_langgraph.critics.base.Critic` options.

    Raises:
        ValueError: Unknown preset (at construction).

    Example:
        >>> from inferact_langgraph.testing import ScriptedChatModel
        >>> from inferact_langgraph.trajectory import Step, Trajectory
        >>> judge = ScriptedChatModel(replies=["The answer is: Correct\nConfidence: 0.8"])
        >>> critic = StandardEvalCritic(model=judge, preset="webshop", calibration=None)
        >>> critic.evaluate(Trajectory("buy a mug", (Step("click[Buy Now]"),))).score
        0.8
    """

    name: ClassVar[str] = "standard"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def prompt(self, trajectory: Trajectory, *, risk: RiskLevel | None = None) -> str:
        """The prompt this critic sends for a trajectory (the task is included)."""
        return self.preset_config.standard_prompt(
            trajectory.render(budget=self.budget),
            trajectory.task,
            risk_aware=self.is_risk_aware(risk),
            rules=self.rules,
        )

    async def _aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        prompt = self.prompt(trajectory, risk=risk)
        text, usage = await self.acall(prompt, stage="standard")
        answer = parse_standard(text, stage="standard", prompt=prompt)
        return self.verdict(
            score=answer.score,
            usage=usage,
            justification=answer.justification,
            raw={"standard": text},
            risk=risk,
        )
