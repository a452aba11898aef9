"""Multi-step evaluation (paper section 4.3, Appendix A.2): a probability per step, aggregated.

The critic model sees the task and the trajectory and rates every step; the step scores are
aggregated by ``min``, ``max``, ``mean`` or ``product`` (the paper compares all four; product
was best, Appendix D). The verdict keeps ``step_scores``, so :func:`aggregate_steps` gives every
aggregation from one model call (the evaluation harness reports all four).

The paper's prompts describe steps as "Thought, Action, and Observation"; our trajectories carry
no thoughts (actions and observations only), and steps are rendered as ``Action i:`` /
``Observation i:`` lines rather than ALFWorld's ``>`` lines. The prompts are the paper's text.

Example:
    >>> aggregate_steps([0.9, 0.5], "product"), aggregate_steps([0.9, 0.5], "min")
    (0.45, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, get_args

from inferact_langgraph._parsing import parse_multistep
from inferact_langgraph.critics.base import Critic, RiskLevel, Verdict
from inferact_langgraph.trajectory import Trajectory

__all__ = ["AGGREGATIONS", "Aggregation", "MultiStepCritic", "aggregate_steps"]

Aggregation = Literal["min", "max", "mean", "product"]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
"""The aggregations of the paper: ``min``, ``max``, ``mean``, ``product``."""


def aggregate_steps(scores: Sequence[float], how: str) -> float:
    """Aggregate per-step probabilities into one score.

    Raises:
        ValueError: No scores, or an unknown aggregation.

    Example:
        >>> [round(aggregate_steps([0.9, 0.5, 1.0], h), 3) for h in AGGREGATIONS]
        [0.5, 1.0, 0.8, 0.45]
    """
    if how not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {how!r}; use one of {', '.join(AGGREGATIONS)}")
    values = [float(s) for s in scores]
    if not values:
        raise ValueError("no step scores to aggregate")
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    if how == "mean":
        return sum(values) / len(values)
    return math.prod(values)


class MultiStepCritic(Critic):
    r"""Multi-step evaluation: one call, a probability per step, aggregated.

    Args:
        aggregation: ``min``, ``max``, ``mean`` or ``product`` (default, the paper's best).
        **kwargs: The :class:`~inferact_langgraph.critics.base.Critic` options.

    Raises:
        ValueError: Unknown aggregation or preset (at construction).

    Example:
        >>> from inferact_langgraph.testing import ScriptedChatModel
        >>> from inferact_langgraph.trajectory import Step, Trajectory
        >>> judge = ScriptedChatModel(replies=["Step 1: 0.9\nStep 2:0.4\nJustification: ok"])
        >>> critic = MultiStepCritic(model=judge, aggregation="mean")
        >>> v = critic.evaluate(Trajectory("buy a mug", (Step("search(q=mug)", "B01"),
        ...                                              Step("buy(B01)"))))
        >>> v.step_scores, round(v.score, 2), round(aggregate_steps(v.step_scores, "product"), 2)
        ([0.9, 0.4], 0.65, 0.36)
    """

    name: ClassVar[str] = "multistep"

    def __init__(self, *, aggregation: Aggregation = "product", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if aggregation not in AGGREGATIONS:
            raise ValueError(
                f"unknown aggregation {aggregation!r}; use one of {', '.join(AGGREGATIONS)}"
            )
        self.aggregation: Aggregation = aggregation

    def prompt(self, trajectory: Trajectory, *, risk: RiskLevel | None = None) -> str:
        """The multi-step prompt this critic sends (the task is included)."""
        return self.preset_config.multistep_prompt(
            trajectory.render(budget=self.budget),
            trajectory.task,
            risk_aware=self.is_risk_aware(risk),
            rules=self.rules,
        )

    async def _aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        prompt = self.prompt(trajectory, risk=risk)
        text, usage = await self.acall(prompt, stage="multistep")
        answer = parse_multistep(text, stage="multistep", prompt=prompt)
        return self.verdict(
            score=aggregate_steps(answer.scores, self.aggregation),
            usage=usage,
            step_scores=list(answer.scores),
            justification=answer.justification,
            raw={"multistep": text},
            risk=risk,
        )
