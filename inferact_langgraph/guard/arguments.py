"""The keywords ``with_inferact`` and ``InferActMiddleware`` take, and what they resolve to.

Both entry points take the same keywords (:class:`GuardArguments`, declared once): the critic
(``model=`` or ``critic=`` and how to build it) and the policy (or ``options=``). Each
resolves them with :func:`critic_from` and :func:`options_from`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from langchain_core.runnables import Runnable
from typing_extensions import TypedDict

from inferact_langgraph.calibration import DEFAULT as DEFAULT_CALIBRATION
from inferact_langgraph.critics.base import Critic
from inferact_langgraph.guard.marks import CriticalSpec
from inferact_langgraph.guard.memory import FeedbackMemory, MemoryNamespace
from inferact_langgraph.guard.options import (
    GuardOptions,
    OnCriticError,
    OnReject,
    RequestBoundaries,
    Scope,
    resolve_options,
)

__all__ = ["GuardArguments", "critic_from", "options_from", "resolve_critic"]


def resolve_critic(
    *,
    model: Any = None,
    critic: Critic | None = None,
    threshold: float | None = None,
    preset: str = "generic",
    cache: Any = None,
    calibration: Any = DEFAULT_CALIBRATION,
    rules: str | None = None,
) -> Critic:
    """The critic to use: the given one, or InferAct on ``model``; cached if ``cache`` is set.

    ``cache=True`` keeps verdicts in memory; a verdict store
    (:class:`~inferact_langgraph.cache.InMemoryVerdictCache`,
    :class:`~inferact_langgraph.cache.VerdictCache`) can be given instead. ``calibration``
    (a :class:`~inferact_langgraph.calibration.Calibration` or the path of its file) maps
    InferAct's score to P(on track) before it meets ``threshold``. ``rules`` (the agent's
    policy) are shown to InferAct's Task Verification.

    Raises:
        ValueError: Neither or both of ``model`` / ``critic`` given, or ``threshold``,
            ``calibration`` or ``rules`` given together with a ready-made critic (set them on
            the critic instead); a calibration that is not one (``CalibrationError``).
        FileNotFoundError: ``calibration`` names a file that does not exist.

    Example:
        >>> from inferact_langgraph.calibration import Calibration
        >>> from inferact_langgraph.testing import scripted_critic_model
        >>> critic = resolve_critic(model=scripted_critic_model(0.6), threshold=0.5,
        ...                         calibration=Calibration.platt(slope=10, intercept=-8))
        >>> critic.calibration.method, critic.threshold
        ('platt', 0.5)
    """
    if critic is not None:
        if not isinstance(critic, Critic):
            raise TypeError(
                f"critic must be an inferact_langgraph Critic, got {type(critic).__name__}"
            )
        if model is not None:
            raise ValueError("pass either model= (InferAct on that model) or critic=, not both")
        if threshold is not None:
            raise ValueError("threshold= goes to the critic you built: Critic(..., threshold=...)")
        if not (isinstance(calibration, str) and calibration == DEFAULT_CALIBRATION):
            raise ValueError(
                "calibration= goes to the critic you built, with its threshold: "
                'make_critic("<spec>", model=..., calibration="calibration.json", threshold=...) '
                "or InferActCritic(..., calibration=...); then pass critic= alone"
            )
        if rules is not None:
            raise ValueError(
                'rules= goes to the critic you built: make_critic("<spec>", model=..., rules=...)'
            )
        return _cached(critic, cache)
    if model is None:
        raise ValueError(
            "with_inferact needs model= (a chat model or an init_chat_model string such as "
            "'openai:gpt-4o') or critic= (any inferact_langgraph critic)"
        )
    from inferact_langgraph.critics.inferact import InferActCritic

    built = InferActCritic(
        model=model,
        threshold=0.5 if threshold is None else threshold,
        preset=preset,
        calibration=calibration,
        rules=rules,
    )
    return _cached(built, cache)


def _cached(critic: Critic, cache: Any) -> Critic:
    if cache is None or cache is False:
        return critic
    from inferact_langgraph.cache import CachedCritic

    return CachedCritic(critic, cache=None if cache is True else cache)


class GuardArguments(TypedDict, total=False):
    """The keywords ``with_inferact`` and ``InferActMiddleware`` share: the critic and the policy.

    Example:
        >>> from inferact_langgraph.testing import ScriptedCritic
        >>> arguments: GuardArguments = {"critic": ScriptedCritic(scores=[0.9]), "on_reject": "end"}
        >>> options_from(arguments, caller="f").on_reject, critic_from(arguments).name
        ('end', 'scripted')
        >>> options_from({"on_rejct": "end"}, caller="with_inferact")
        Traceback (most recent call last):
        ...
        TypeError: with_inferact() got an unexpected keyword argument 'on_rejct'
    """

    model: Any
    """The critic's chat model (an instance or an ``init_chat_model`` string) for InferAct."""
    critic: Critic | None
    """Any critic instead (a baseline, or a configured ``InferActCritic``)."""
    threshold: float | None
    """InferAct's threshold when built from ``model`` (default 0.5)."""
    preset: str
    """InferAct's prompt preset when built from ``model`` (default ``"generic"``)."""
    cache: Any
    """``True`` (in memory) or a verdict store: an identical pending call (same task and action
    chain, e.g. after a retried step) is answered without a model call."""
    calibration: Any
    """With ``model``: ``"default"`` (the calibration shipped for the preset, fitted on a capable
    model's answers: docs/quality.md), a :class:`~inferact_langgraph.calibration.Calibration` or
    the path of its file (``inferact eval`` writes one per critic) mapping InferAct's score to
    P(on track), so ``threshold`` is a probability; ``None`` for the raw score. With
    ``critic=``, give it to that critic instead (``make_critic(..., calibration=...)``)."""
    rules: str | None
    """With ``model``: the rules the agent must follow whatever the user asks (its policy or
    system prompt); InferAct's Task Verification checks the pending action against them
    (:mod:`inferact_langgraph.prompts.rules`). With ``critic=``, give them to that critic."""
    critical: Iterable[str] | Mapping[str, CriticalSpec] | None
    """Names of tools to treat as critical (tools you do not own), or names mapped to
    :class:`~inferact_langgraph.CriticalSpec`; tools marked ``@critical`` are found anyway."""
    on_critic_error: OnCriticError
    """``"interrupt"`` (default: fail closed), ``"block"`` or ``"allow"``."""
    on_reject: OnReject
    """``"continue"`` (default), ``"retry"`` or ``"end"``."""
    max_trials: int
    """Trials allowed with ``on_reject="retry"`` (default 3)."""
    scope: Scope
    """``"request"`` (default): a call is judged against the user's current request (their
    messages since it began, across turns), on the actions since it; ``"thread"``: against all
    their requests, in order."""
    task_extractor: Callable[[Mapping[str, Any]], str] | None
    """``state -> str`` giving the user's real task (replaces the text of the request(s); the
    scope still decides which actions are judged)."""
    thought_tools: Collection[str]
    """Tools whose calls are the agent's thoughts written down (default: ``think``, the think
    tool of tau-bench and Anthropic's guide): left out of the action chain the critic judges,
    as InferAct removes thoughts; ``()`` keeps every call."""
    request_boundaries: RequestBoundaries | Runnable[Any, Any]
    """With ``scope="request"``: ``"model"`` (default) lets the guard's chat model decide, once
    per user message, whether a message the deterministic rule takes for a new request
    continues an earlier one (no chat model: the rule alone); ``"rules"``: the rule alone, no
    model call; or a chat model instance to decide instead
    (:mod:`inferact_langgraph.guard.boundaries`)."""
    memory: FeedbackMemory | None
    """Feedback memory settings (store namespace, task key); used when there is a store."""
    memory_namespace: MemoryNamespace | None
    """``config -> labels``: whose feedback memory a run uses (default: the server's
    authenticated user, else ``configurable["user_id"]``, else shared)."""
    allowed_decisions: Sequence[str]
    """Decisions offered to the human (default: all four)."""
    spot_check: float
    """The share of the calls the critic passed that a human checks anyway (e.g. ``0.02``;
    default ``0``), marked as spot checks in the review."""
    spot_check_seed: int | None
    """Makes the spot-check draws reproducible."""
    labels: Any
    """Where reviewers' decisions are kept as labels for ``inferact calibrate`` (a
    :class:`~inferact_langgraph.labels.ReviewLabels`; default: the ``"default"`` deployment in
    the graph's store); ``False``: none kept."""
    options: GuardOptions | None
    """All policy options at once (shared by both entry points), instead of the policy keywords
    (giving both raises ``ValueError``)."""


_POLICY_ARGUMENTS = tuple(f.name for f in fields(GuardOptions) if f.name != "signing_key")


def options_from(arguments: GuardArguments, *, caller: str) -> GuardOptions:
    """The policy the keywords of ``caller`` give (checked: an unknown keyword is refused).

    Raises:
        TypeError: A keyword ``caller`` does not take.
        ValueError: ``options`` and a policy keyword given together, or a bad policy value.
    """
    for name in arguments:
        if name not in GuardArguments.__annotations__:
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
    policy = {k: v for k, v in arguments.items() if k in _POLICY_ARGUMENTS}
    return resolve_options(arguments.get("options"), **policy)


def critic_from(arguments: GuardArguments) -> Critic:
    """The critic the keywords give (see :func:`resolve_critic`)."""
    return resolve_critic(
        model=arguments.get("model"),
        critic=arguments.get("critic"),
        threshold=arguments.get("threshold"),
        preset=arguments.get("preset", "generic"),
        cache=arguments.get("cache"),
        calibration=arguments.get("calibration", DEFAULT_CALIBRATION),
        rules=arguments.get("rules"),
    )
