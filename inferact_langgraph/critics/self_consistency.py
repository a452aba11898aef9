"""Standard evaluation with self-consistency (paper section 4.3): m samples, majority vote.

The standard-evaluation prompt is sampled ``m`` times (paper: 5) at temperature 0.7
(paper Appendix B), concurrently. The paper takes the majority vote of the ``Correct``/
``Incorrect`` answers; our score is the **fraction of samples voting Correct**, so that with
the default threshold 0.5 the action is flagged exactly when the majority votes Incorrect (a
tie, possible with an even ``m``, scores 0.5 and is not flagged at that threshold), and a
threshold sweep still gives a curve. Samples whose
answer cannot be parsed are left out of the vote; if none can be parsed the check fails.

Example:
    >>> from inferact_langgraph.testing import ScriptedChatModel
    >>> from inferact_langgraph.trajectory import Step, Trajectory
    >>> judge = ScriptedChatModel(replies=["The answer is: Correct", "The answer is: Incorrect"],
    ...                           cycle=True)
    >>> v = SelfConsistencyCritic(model=judge, samples=3).evaluate(
    ...     Trajectory("buy a mug", (Step("buy(B01)"),)))
    >>> round(v.score, 3), v.flagged, v.usage.model_calls
    (0.667, False, 3)
"""

from __future__ import annotations

from typing import Any, ClassVar

from inferact_langgraph._parsing import StandardAnswer, parse_standard
from inferact_langgraph.critics.base import Critic, RiskLevel, Verdict
from inferact_langgraph.errors import CriticParseError
from inferact_langgraph.trajectory import Trajectory

__all__ = ["SelfConsistencyCritic"]


class SelfConsistencyCritic(Critic):
    r"""Self-consistency: ``samples`` standard evaluations at ``temperature``, majority vote.

    Args:
        samples: m, the number of samples (paper: 5).
        temperature: Sampling temperature (paper: 0.7).
        **kwargs: The :class:`~inferact_langgraph.critics.base.Critic` options.

    Raises:
        ValueError: ``samples`` < 1, a negative temperature, or an unknown preset.

    The verdict's ``score`` is the fraction of parsed samples that answered ``Correct``;
    ``raw`` holds each answer (``sample_1`` ...), ``justification`` that of the first sample
    agreeing with the majority.

    Example:
        >>> from inferact_langgraph.testing import ScriptedChatModel
        >>> from inferact_langgraph.trajectory import Step, Trajectory
        >>> judge = ScriptedChatModel(replies=["The answer is: Incorrect\nConfidence: 0.7"])
        >>> critic = SelfConsistencyCritic(model=judge)
        >>> v = critic.evaluate(Trajectory("buy a mug", (Step("buy(B01)"),)))
        >>> v.score, v.flagged, len(v.raw)
        (0.0, True, 5)
    """

    name: ClassVar[str] = "self_consistency"

    def __init__(self, *, samples: int = 5, temperature: float = 0.7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be a positive integer, got {samples!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        self.samples = samples
        self.temperature = float(temperature)

    def prompt(self, trajectory: Trajectory, *, risk: RiskLevel | None = None) -> str:
        """The standard-evaluation prompt every sample receives (the task is included)."""
        return self.preset_config.standard_prompt(
            trajectory.render(budget=self.budget),
            trajectory.task,
            risk_aware=self.is_risk_aware(risk),
            rules=self.rules,
        )

    async def _aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        prompt = self.prompt(trajectory, risk=risk)
        results = await self.acall_many(
            [prompt] * self.samples, stage="self_consistency", temperature=self.temperature
        )
        answers: list[StandardAnswer] = []
        raw: dict[str, str] = {}
        errors: list[CriticParseError] = []
        for i, (text, _) in enumerate(results, start=1):
            raw[f"sample_{i}"] = text
            try:
                answers.append(parse_standard(text, stage=f"sample_{i}", prompt=prompt))
            except CriticParseError as exc:
                errors.append(exc)
        usage = sum((u for _, u in results[1:]), results[0][1])
        if not answers:
            raise CriticParseError(
                f"none of the {self.samples} samples could be parsed",
                raw=errors[0].raw if errors else None,
                stage="self_consistency",
            )
        votes = sum(a.correct for a in answers)
        justification = next(
            (a.justification for a in answers if a.correct == (2 * votes > len(answers))), ""
        )
        return self.verdict(
            score=votes / len(answers),
            usage=usage,
            justification=justification,
            raw=raw,
            risk=risk,
        )
