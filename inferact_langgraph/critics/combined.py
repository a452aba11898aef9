r"""InferAct and standard evaluation together: both judge the call, their raw scores averaged.

On real tool-agent conversations (docs/quality.md) their mean flags fewer correct calls than
either critic alone, for about the same share of mistakes: InferAct doubts a call whose
details reveal another task, standard evaluation one whose details break what the user said,
and a call that only one of them doubts is less often wrong.

:class:`InferActStandardCritic` (spec ``"inferact+standard"``) runs both concurrently on the
same trajectory and averages their *raw* scores; its own calibration (shipped for the
``generic`` and ``hotpotqa`` presets) then maps the mean to P(on track). It costs both: four
model calls per check (three for InferAct, one for standard evaluation), about 1.3 times
InferAct's tokens.

:class:`InferActOrStandardCritic` (spec ``"inferact-or-standard"``) runs the same two calls but
doubts a call when *either* critic, each with its own calibration, doubts it: its score is the
lower of the two calibrated probabilities. It catches more mistakes than either critic for more
false alarms than InferAct (docs/quality.md), at the same cost.

The review still shows InferAct's inferred tasks and options, and both justifications.

Example:
    >>> from inferact_langgraph.testing import scripted_critic_model
    >>> from inferact_langgraph.trajectory import Step, Trajectory
    >>> critic = InferActStandardCritic(model=scripted_critic_model(0.8), calibration=None)
    >>> v = critic.evaluate(Trajectory("buy a mug", (Step("buy(B01)"),)))
    >>> round(v.score, 2), v.usage.model_calls, sorted(v.raw)
    (0.8, 4, ['inference', 'standard', 'verification_original', 'verification_reversed'])
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from typing import Any, ClassVar

from inferact_langgraph.critics.base import Critic, RiskLevel, Verdict
from inferact_langgraph.critics.inferact import InferActCritic
from inferact_langgraph.critics.standard import StandardEvalCritic
from inferact_langgraph.trajectory import Trajectory

__all__ = ["InferActOrStandardCritic", "InferActStandardCritic"]


class _BothCritics(Critic):
    """Runs InferAct and standard evaluation concurrently on one trajectory.

    Subclasses say how the two verdicts make one score (:meth:`_combine`).
    """

    def __init__(self, *, num_tasks: int = 3, parts_calibration: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        shared: dict[str, Any] = {
            "model": self.model,
            "threshold": self.threshold,
            "preset": self.preset,
            "risk_aware": self.risk_aware,
            "budget": self.budget,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "rules": self.rules,
            "calibration": parts_calibration,
        }
        self.inferact = InferActCritic(num_tasks=num_tasks, **shared)
        self.standard = StandardEvalCritic(**shared)

    def cache_fingerprint(self) -> dict[str, Any]:
        """What decides this critic's verdicts: both critics' settings."""
        from inferact_langgraph.cache import critic_fingerprint

        return {
            "inferact": critic_fingerprint(self.inferact),
            "standard": critic_fingerprint(self.standard),
            "calibration": None if self.calibration is None else self.calibration.params,
        }

    @abstractmethod
    def _combine(self, inferact: float, standard: float) -> float:
        """One score from the two critics' scores."""

    async def _aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        inferact, standard = await asyncio.gather(
            self.inferact.aevaluate(trajectory, risk=risk),
            self.standard.aevaluate(trajectory, risk=risk),
        )
        return self.verdict(
            score=self._combine(inferact.score, standard.score),
            usage=inferact.usage + standard.usage,
            inferred_tasks=inferact.inferred_tasks,
            options=inferact.options,
            option_probs=inferact.option_probs,
            order_probs=inferact.order_probs,
            justification=(
                f"InferAct ({inferact.score:.2f}): {inferact.justification}\n"
                f"Standard evaluation ({standard.score:.2f}): {standard.justification}"
            ),
            raw={**inferact.raw, **standard.raw},
            risk=risk,
        )


class InferActStandardCritic(_BothCritics):
    """InferAct and standard evaluation on one check; the score is the mean of their raw scores.

    Args:
        num_tasks: InferAct's number of inferred tasks (default 3).
        **kwargs: The :class:`~inferact_langgraph.critics.base.Critic` options, shared by both
            critics; ``calibration`` applies to the mean (both run uncalibrated).

    Example:
        >>> from inferact_langgraph.critics import make_critic
        >>> critic = make_critic("inferact+standard", model=None)
        >>> critic.name, critic.calibration.info["critic"]
        ('inferact+standard', 'inferact+standard')
    """

    name: ClassVar[str] = "inferact+standard"

    def __init__(self, *, num_tasks: int = 3, **kwargs: Any) -> None:
        # The mean of the raw scores is what this critic calibrates.
        super().__init__(num_tasks=num_tasks, parts_calibration=None, **kwargs)

    def _combine(self, inferact: float, standard: float) -> float:
        return (inferact + standard) / 2


class InferActOrStandardCritic(_BothCritics):
    """InferAct and standard evaluation on one check; it doubts when either of them doubts.

    Each critic maps its raw score with its own calibration; the score is the lower of the two,
    so ``score < threshold`` when either one is below it.

    Args:
        num_tasks: InferAct's number of inferred tasks (default 3).
        calibration: ``"default"`` (each critic's shipped calibration for the preset) or
            ``None`` (both raw scores). One calibration cannot serve two critics: to use your
            own, build :class:`InferActCritic` and :class:`StandardEvalCritic` yourself.
        **kwargs: The other :class:`~inferact_langgraph.critics.base.Critic` options, shared
            by both critics.

    Raises:
        ValueError: ``calibration`` is neither ``"default"`` nor ``None``.

    Example:
        >>> from inferact_langgraph.testing import scripted_critic_model
        >>> from inferact_langgraph.trajectory import Step, Trajectory
        >>> critic = InferActOrStandardCritic(model=scripted_critic_model(0.8), calibration=None)
        >>> v = critic.evaluate(Trajectory("buy a mug", (Step("buy(B01)"),)))
        >>> round(v.score, 2), v.flagged, v.usage.model_calls
        (0.8, False, 4)
    """

    name: ClassVar[str] = "inferact-or-standard"

    def __init__(self, *, num_tasks: int = 3, calibration: Any = "default", **kwargs: Any) -> None:
        if calibration is not None and not (
            isinstance(calibration, str) and calibration == "default"
        ):
            raise ValueError(
                "inferact-or-standard takes calibration='default' (each critic's shipped "
                f"calibration) or None (raw scores), got {calibration!r}; for your own "
                "calibrations build InferActCritic and StandardEvalCritic"
            )
        # Each part is calibrated; the lower probability needs no mapping of its own.
        super().__init__(
            num_tasks=num_tasks, parts_calibration=calibration, calibration=None, **kwargs
        )

    def _combine(self, inferact: float, standard: float) -> float:
        return min(inferact, standard)
