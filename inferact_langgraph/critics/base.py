"""What every critic shares: the Verdict, the cost record, the Critic interface, model calls.

All critics (InferAct and the paper's baselines) take a :class:`~inferact_langgraph.trajectory.
Trajectory` and return a :class:`Verdict` whose ``score`` is the probability that the agent is on
track for the user's real task. The graph layer and the evaluation harness only use this
interface, so any critic plugs into either.

Example:
    >>> class AlwaysSure(Critic):
    ...     name = "always-sure"
    ...     async def _aevaluate(self, trajectory, *, risk=None):
    ...         return self.verdict(score=1.0, usage=Usage())
    >>> from inferact_langgraph.trajectory import Step, Trajectory
    >>> v = AlwaysSure(model=None).evaluate(Trajectory("t", (Step("buy"),)))
    >>> v.score, v.flagged
    (1.0, False)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Sequence
from typing import Any, ClassVar, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from inferact_langgraph._redact import redact, secrets_of
from inferact_langgraph.errors import CriticError, CriticModelError, CriticTimeoutError
from inferact_langgraph.guard.marks import RiskLevel
from inferact_langgraph.prompts import Preset, get_preset
from inferact_langgraph.trajectory import DEFAULT_BUDGET, TokenBudget, Trajectory

__all__ = [
    "DEFAULT_TIMEOUT",
    "Critic",
    "RiskLevel",
    "Usage",
    "Verdict",
    "invoke_model",
    "is_timeout",
    "resolve_model",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds a critic waits for each model call by default (a check makes one to five calls).

A hung critic model must not block the agent forever: on expiry the call raises
:class:`~inferact_langgraph.errors.CriticTimeoutError`, which the guard turns into a human
review (fail closed). Pass ``timeout=None`` to wait without limit."""

# A score this close outside [0, 1] is floating-point noise of an aggregation, not an error.
_SCORE_TOLERANCE = 1e-9


class Usage(BaseModel):
    """What a check cost: model calls and tokens (as reported by the model, else estimated).

    Example:
        >>> (Usage(model_calls=1, input_tokens=10) + Usage(model_calls=2)).model_calls
        3
    """

    model_config = ConfigDict(frozen=True)

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            model_calls=self.model_calls + other.model_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class Verdict(BaseModel):
    """A critic's judgement of one pending critical action.

    Attributes:
        critic: The critic's name (``"inferact"``, ``"standard"`` ...).
        score: Probability in [0, 1] that the agent is on track for the user's real task.
        threshold: Below it the action is flagged for human review.
        flagged: ``score < threshold``.
        inferred_tasks: InferAct's inferred tasks (empty for the baselines).
        options: The MCQ options in the original order (InferAct only).
        option_probs: Mean probability per original option label, e.g. ``{"D": 0.4}``.
        order_probs: InferAct only: the probability per *original* option label in each
            option order, ``{"original": {"A": 0.1, ...}, "reversed": {"A": 0.0, ...}}``
            (a label the model did not rate in an order counts 0 there, as in the mean).
            Empty for critics without option orders.
        step_scores: Per-step probabilities (multi-step evaluation).
        justification: The critic model's justification, as written.
        raw: Raw model outputs by stage (``"inference"``, ``"verification_original"`` ...).
        risk: The risk level the check ran with, if any.
        usage: Model calls and tokens spent on this check.
        uncalibrated_score: The critic's raw score when a calibration mapped it to ``score``.
    """

    model_config = ConfigDict(frozen=True)

    critic: str
    score: float = Field(ge=0.0, le=1.0)
    threshold: float = Field(ge=0.0, le=1.0)
    inferred_tasks: list[str] = Field(default_factory=list)
    options: list[str] = Field(default_factory=list)
    option_probs: dict[str, float] = Field(default_factory=dict)
    order_probs: dict[str, dict[str, float]] = Field(default_factory=dict)
    step_scores: list[float] = Field(default_factory=list)
    justification: str = ""
    raw: dict[str, str] = Field(default_factory=dict)
    risk: str | None = None
    usage: Usage = Field(default_factory=Usage)
    uncalibrated_score: float | None = None

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if math.isnan(value):
            raise ValueError("score must be a number in [0, 1], got NaN")
        return value

    @computed_field  # type: ignore[prop-decorator]
    @property
    def flagged(self) -> bool:
        """True when the action should go to a human: ``score < threshold``."""
        return self.score < self.threshold


def resolve_model(model: BaseChatModel | Runnable[Any, Any] | str | None, **kwargs: Any) -> Any:
    """Accept a chat model instance or an ``init_chat_model`` string (``"openai:gpt-4o"``).

    Raises:
        TypeError: ``model`` is neither.
    """
    if model is None or isinstance(model, Runnable):
        return model
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        return init_chat_model(model, **kwargs)
    raise TypeError(
        "model must be a LangChain chat model or an init_chat_model string such as "
        f"'openai:gpt-4o', got {type(model).__name__}"
    )


def _usage_of(message: Any, prompt: str) -> Usage:
    meta = getattr(message, "usage_metadata", None) or {}
    text = message.content if isinstance(message, BaseMessage) else str(message)
    if not isinstance(text, str):
        text = str(text)
    return Usage(
        model_calls=1,
        input_tokens=int(meta.get("input_tokens") or len(prompt) // 4),
        output_tokens=int(meta.get("output_tokens") or len(text) // 4),
    )


def _text(message: Any) -> str:
    if isinstance(message, AIMessage):
        content = message.content
        if isinstance(content, list):
            return "\n".join(
                b.get("text", "") if isinstance(b, dict) else str(b)
                for b in content
                if not isinstance(b, dict) or b.get("type") == "text"
            )
        return str(content)
    return str(message)


class Critic(ABC):
    """The interface shared by InferAct and the baselines.

    Subclasses implement :meth:`_aevaluate` (async, the primary path) and may override
    :meth:`_evaluate` with a native sync path; by default the sync path runs the async one in
    a fresh event loop on a worker thread, so it is safe to call from inside a running loop.

    Args:
        model: A chat model instance or an ``init_chat_model`` string.
        threshold: ``score`` below it flags the action (default 0.5).
        preset: Prompt preset: a registered name (``generic``, the default, ``webshop``,
            ``alfworld``, ``hotpotqa``) or a :class:`~inferact_langgraph.prompts.Preset`;
            looked up once, as :attr:`preset_config`.
        risk_aware: Always add the paper's risk-aware sentence (A.4), not only on high risk.
        budget: Bounds the rendered trajectory; ``None`` renders everything.
        timeout: Seconds to wait for each model call, sync and async (default
            :data:`DEFAULT_TIMEOUT`, 60; ``None``: no limit). On expiry the check raises
            :class:`~inferact_langgraph.errors.CriticTimeoutError`.
        max_retries: Retries of a failed model call (default 0: fail fast).
        calibration: ``"default"`` (the default): the calibration shipped for this critic and
            preset, fitted on a capable model's answers
            (:func:`~inferact_langgraph.calibration.default_calibration`; none for critics
            and presets without one). A :class:`~inferact_langgraph.calibration.Calibration`
            or the path of a calibration file (``inferact eval`` writes them) instead; ``None``
            for the raw score. The raw score is mapped to a probability of being on track
            before it is compared with ``threshold``.
        rules: The rules the agent must follow whatever the user asks (its policy or system
            prompt, as you wrote it), or ``None``. The prompts that judge an action (InferAct's
            Task Verification, standard and multi-step evaluation) show them and count an
            action that breaks one as not on track; Task Inference never sees them
            (:mod:`inferact_langgraph.prompts.rules`). The shipped calibrations were fitted
            without rules; with rules, ``"default"`` is the one fitted with the airline's
            policy as the rules, where shipped (docs/quality.md), else none.

    Raises:
        ValueError: A threshold outside [0, 1], a time-out that is not a positive number of
            seconds, a negative ``max_retries``, or ``rules`` that are not a non-empty string
            (at construction).
    """

    name: ClassVar[str] = "critic"

    def __init__(
        self,
        *,
        model: BaseChatModel | Runnable[Any, Any] | str | None,
        threshold: float = 0.5,
        preset: str = "generic",
        risk_aware: bool = False,
        budget: TokenBudget | None = DEFAULT_BUDGET,
        timeout: float | None = DEFAULT_TIMEOUT,
        max_retries: int = 0,
        calibration: Any = "default",
        rules: str | None = None,
    ) -> None:
        if rules is not None and (not isinstance(rules, str) or not rules.strip()):
            raise ValueError(
                "rules must be the text of the rules the agent follows (a non-empty string) "
                f"or None, got {rules!r}"
            )
        if not 0.0 <= threshold <= 1.0 or math.isnan(threshold):
            raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < math.inf
        ):
            raise ValueError(
                f"timeout must be a positive number of seconds (or None: no limit), got {timeout!r}"
            )
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        self.model = resolve_model(model)
        # What error text must never show (the model's API key, a URL password).
        self._secrets = secrets_of(self.model)
        self.threshold = float(threshold)
        self.preset = preset
        self.preset_config: Preset = get_preset(preset)  # ValueError for an unknown name
        self.risk_aware = risk_aware
        self.budget = budget
        self.timeout = timeout
        self.max_retries = max_retries
        self.rules = rules
        from inferact_langgraph.calibration import (
            DEFAULT,
            default_calibration,
            load_calibration,
        )

        self.calibration = (
            default_calibration(self.name, self.preset_config.name, with_rules=rules is not None)
            if isinstance(calibration, str) and calibration == DEFAULT
            else load_calibration(calibration)
        )

    # ------------------------------------------------------------------ public API
    def evaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None = None) -> Verdict:
        """Judge the trajectory's pending action (sync).

        Raises:
            CriticError: The model failed, timed out, or its answer could not be parsed.
        """
        self._check_input(trajectory)
        return self.calibrated(self._evaluate(trajectory, risk=risk))

    async def aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None = None) -> Verdict:
        """Judge the trajectory's pending action (async; never blocks the event loop).

        Raises:
            CriticError: The model failed, timed out, or its answer could not be parsed.
        """
        self._check_input(trajectory)
        return self.calibrated(await self._aevaluate(trajectory, risk=risk))

    def calibrated(self, verdict: Verdict) -> Verdict:
        """``verdict`` with its score mapped by :attr:`calibration` (unchanged without one).

        The raw score is kept in ``uncalibrated_score``; ``flagged`` compares the calibrated
        score with the threshold.
        """
        if self.calibration is None or verdict.uncalibrated_score is not None:
            return verdict
        return verdict.model_copy(
            update={"score": self.calibration(verdict.score), "uncalibrated_score": verdict.score}
        )

    def is_risk_aware(self, risk: RiskLevel | None) -> bool:
        """Whether the risk-aware prompt addendum applies to a check at this risk level."""
        return self.risk_aware or risk == "high"

    def verdict(self, *, score: float, usage: Usage, **fields: Any) -> Verdict:
        """Build a Verdict with this critic's name and threshold.

        A score that is not a number in [0, 1] is an error, never clamped: clamping 7.0 or
        ``inf`` to 1.0 would approve a critical call on a broken critic (fail open). The guard
        turns the error into a human review.

        Raises:
            CriticError: ``score`` is missing, not a number, NaN, infinite or outside [0, 1].

        Example:
            >>> from inferact_langgraph.critics import StandardEvalCritic
            >>> StandardEvalCritic(model=None).verdict(score=0.25, usage=Usage()).score
            0.25
            >>> StandardEvalCritic(model=None).verdict(score=7.0, usage=Usage())
            Traceback (most recent call last):
            ...
            inferact_langgraph.errors.CriticError: standard: the critic gave the score 7.0; a score must be a number in [0, 1]
        """  # noqa: E501
        real = isinstance(score, numbers.Real) and not isinstance(score, bool)
        value = float(score) if real else math.nan
        if not -_SCORE_TOLERANCE <= value <= 1.0 + _SCORE_TOLERANCE:
            raise CriticError(
                f"{self.name}: the critic gave the score {score!r}; a score must be a number "
                "in [0, 1]"
            )
        return Verdict(
            critic=self.name,
            score=min(1.0, max(0.0, value)),  # only within floating-point noise
            threshold=self.threshold,
            usage=usage,
            **fields,
        )

    # ------------------------------------------------------------------ subclass hooks
    @abstractmethod
    async def _aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        """The async implementation."""

    def _evaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        """The sync implementation; by default the async one on a private event loop."""
        return _run_sync(self._aevaluate(trajectory, risk=risk))

    # ------------------------------------------------------------------ model calls
    def with_retries(self, runnable: Any) -> Any:
        """``runnable`` retried ``max_retries`` times on failure (the one place retry is set)."""
        if self.max_retries:
            return runnable.with_retry(stop_after_attempt=self.max_retries + 1)
        return runnable

    def _runnable(self, temperature: float | None = None) -> Any:
        if self.model is None:
            raise CriticError(f"{self.name}: no model configured")
        model = self.model
        if temperature is not None and isinstance(model, BaseChatModel):
            model = model.bind(temperature=temperature)
        return self.with_retries(model)

    async def acall(
        self, prompt: str, *, stage: str, temperature: float | None = None
    ) -> tuple[str, Usage]:
        """Send one prompt to the critic model; return its text and what it cost.

        Raises:
            CriticTimeoutError: No answer within ``timeout`` seconds.
            CriticModelError: The model call raised.
        """
        runnable = self._runnable(temperature)
        message = await self.ainvoke_typed(runnable, [HumanMessage(prompt)], stage=stage)
        return _text(message), _usage_of(message, prompt)

    async def ainvoke_typed(self, runnable: Any, messages: Any, *, stage: str) -> Any:
        """Invoke a model runnable with this critic's time-out; every failure becomes typed.

        The error text never holds a credential: the model's API key and URL passwords are
        redacted (a server may echo the key in its 401 body), since the text reaches the
        review payload, the audit, the log and reports.

        Raises:
            CriticTimeoutError: No answer within ``timeout`` seconds, or the client timed out.
            CriticModelError: The model call raised anything else.
        """
        try:
            call = invoke_model(runnable, messages)
            return await (asyncio.wait_for(call, self.timeout) if self.timeout else call)
        except TimeoutError as exc:  # asyncio.TimeoutError is TimeoutError on 3.11+
            raise CriticTimeoutError(
                f"{self.name}: the critic model did not answer within {self.timeout}s ({stage})",
                stage=stage,
            ) from exc
        except CriticError:
            raise
        except Exception as exc:  # any provider error becomes one typed error
            kind = CriticTimeoutError if is_timeout(exc) else CriticModelError
            what = "client timed out" if kind is CriticTimeoutError else "call failed"
            detail = redact(f"{type(exc).__name__}: {exc}", self._secrets)
            raise kind(
                f"{self.name}: the critic model {what} during {stage}: {detail}", stage=stage
            ) from exc

    async def acall_many(
        self, prompts: Sequence[str], *, stage: str, temperature: float | None = None
    ) -> list[tuple[str, Usage]]:
        """Send several prompts concurrently (one round trip of wall time, not ``len``)."""
        return list(
            await asyncio.gather(
                *(self.acall(p, stage=stage, temperature=temperature) for p in prompts)
            )
        )

    @staticmethod
    def _check_input(trajectory: Trajectory) -> None:
        if not isinstance(trajectory, Trajectory):
            raise TypeError(
                "expected a Trajectory (build one with Trajectory.from_messages, "
                f"from_record or from_react_text), got {type(trajectory).__name__}"
            )
        if not trajectory.steps:
            raise ValueError("the trajectory has no steps: there is no action to judge")


# Set while a sync ``evaluate`` runs the shared async code: model calls then use the model's
# *sync* API on worker threads. An async HTTP client (ChatOpenAI's, for one) is bound to the
# event loop it was first used on; sync checks each run on a short-lived loop, so calling its
# async API there fails from the second check on ("Event loop is closed").
_SYNC_MODE: contextvars.ContextVar[bool] = contextvars.ContextVar("inferact_sync", default=False)


# Our own pool, not the loop's default executor: ``asyncio.run`` waits for the default executor
# on exit, which would make a sync check outlive its time-out by as long as the model hangs.
_SYNC_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="inferact")


async def invoke_model(runnable: Any, messages: Any) -> Any:
    """Call a model: ``ainvoke`` on the async path, ``invoke`` on a thread on the sync path."""
    if _SYNC_MODE.get():
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_SYNC_POOL, context.run, runnable.invoke, messages)
    return await runnable.ainvoke(messages)


def is_timeout(exc: BaseException) -> bool:
    """Whether a provider error is a time-out (``openai.APITimeoutError``, httpx's ...)."""
    return any("timeout" in cls.__name__.lower() for cls in type(exc).__mro__)


_T = TypeVar("_T")


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a critic's coroutine from sync code (even inside a running loop), in sync mode."""

    async def in_sync_mode() -> _T:
        _SYNC_MODE.set(True)  # this task's context only; tasks it starts inherit it
        return await coro

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(in_sync_mode())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, in_sync_mode()).result()
