"""The guard's options, one frozen object shared by ``with_inferact``, the middleware and the guard.

Example:
    >>> options = GuardOptions(on_reject="retry", max_trials=2)
    >>> options.on_critic_error, options.allowed_decisions
    ('interrupt', ('approve', 'edit', 'reject', 'respond'))
    >>> GuardOptions(on_reject="later")
    Traceback (most recent call last):
    ...
    ValueError: on_reject must be 'continue', 'retry' or 'end', got 'later'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from typing_extensions import TypedDict

from inferact_langgraph.critics.base import Critic
from inferact_langgraph.guard.marks import CriticalSpec
from inferact_langgraph.guard.memory import FeedbackMemory, MemoryNamespace
from inferact_langgraph.guard.payloads import DECISION_TYPES, is_decision_type

__all__ = [
    "GuardArguments",
    "GuardOptions",
    "MemoryNamespace",
    "OnCriticError",
    "OnReject",
    "Scope",
    "critic_from",
    "options_from",
    "resolve_critic",
    "resolve_options",
]

OnCriticError = Literal["interrupt", "block", "allow"]
OnReject = Literal["continue", "retry", "end"]
Scope = Literal["request", "thread"]


@dataclass(frozen=True, kw_only=True)
class GuardOptions:
    """How the guard decides, validated when built (never at the first call).

    Attributes:
        on_critic_error: ``"interrupt"`` (default, fail closed: ask the human, saying why),
            ``"block"`` (reject without asking) or ``"allow"`` (run it, logged; only calls
            whose risk is explicitly ``"low"`` or ``"medium"``).
        on_reject: ``"continue"`` (the actor sees the feedback and carries on), ``"retry"``
            (a new trial: messages cleared, task and feedback kept) or ``"end"``.
        max_trials: With ``"retry"``, the run ends after this many trials.
        scope: ``"request"`` (default): a call is judged against the user's newest request,
            on the actions taken since it. ``"thread"``: against all the user's requests in
            order, on every action of the thread (see :mod:`inferact_langgraph.guard.requests`).
        task_extractor: ``state -> str``: the user's real task, instead of the request(s).
        memory: Where feedback is kept across threads (a ``FeedbackMemory``).
        memory_namespace: ``config -> labels``: whose feedback memory a run uses. Default:
            the LangGraph server's authenticated user
            (``config["configurable"]["langgraph_auth_user_id"]``), else
            ``config["configurable"]["user_id"]``, else one namespace shared by every run.
        allowed_decisions: The decisions a human may make.
        signing_key: Sign every record with HMAC-SHA256 and honour only signed ones, so that
            no tool or caller that writes the state can forge an approval. Give every process
            that serves the graph the same key (e.g. from a secret store); ``None``: unsigned.
    """

    on_critic_error: OnCriticError = "interrupt"
    on_reject: OnReject = "continue"
    max_trials: int = 3
    scope: Scope = "request"
    task_extractor: Callable[[Mapping[str, Any]], str] | None = None
    memory: Any = None
    memory_namespace: MemoryNamespace | None = None
    allowed_decisions: Sequence[str] = DECISION_TYPES
    signing_key: bytes | str | None = field(default=None, repr=False)

    @property
    def key(self) -> bytes | None:
        """The signing key as bytes, or ``None``."""
        if self.signing_key is None:
            return None
        if isinstance(self.signing_key, str):
            return self.signing_key.encode("utf-8")
        return bytes(self.signing_key)

    def __post_init__(self) -> None:
        if self.signing_key is not None and (
            not isinstance(self.signing_key, (bytes, str)) or len(self.signing_key) < 16
        ):
            raise ValueError("signing_key must be bytes or str of at least 16 characters")
        if self.on_critic_error not in get_args(OnCriticError):
            raise ValueError(
                "on_critic_error must be 'interrupt', 'block' or 'allow', "
                f"got {self.on_critic_error!r}"
            )
        if self.on_reject not in get_args(OnReject):
            raise ValueError(
                f"on_reject must be 'continue', 'retry' or 'end', got {self.on_reject!r}"
            )
        if self.scope not in get_args(Scope):
            raise ValueError(f"scope must be 'request' or 'thread', got {self.scope!r}")
        for name in ("task_extractor", "memory_namespace"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ValueError(f"{name} must be a function, got {type(value).__name__}")
        if not isinstance(self.max_trials, int) or self.max_trials < 1:
            raise ValueError(f"max_trials must be an int >= 1, got {self.max_trials!r}")
        decisions = tuple(self.allowed_decisions)
        if not decisions or not all(is_decision_type(d) for d in decisions):
            raise ValueError(f"allowed_decisions must be a non-empty subset of {DECISION_TYPES}")
        object.__setattr__(self, "allowed_decisions", decisions)


def resolve_options(options: GuardOptions | None, **policy: Any) -> GuardOptions:
    """The options of ``with_inferact`` / ``InferActMiddleware``: ``options=`` or the keywords.

    Both constructors take every policy option as an explicit keyword (what users see and type
    checkers check) and, alternatively, one shared :class:`GuardOptions`. A keyword that is not
    at its default next to ``options=`` would be silently ignored, so it is an error.

    Raises:
        TypeError: ``options`` is not a ``GuardOptions``.
        ValueError: ``options`` and a policy keyword given together, or a bad policy value.

    Example:
        >>> resolve_options(None, on_reject="end").on_reject
        'end'
        >>> resolve_options(GuardOptions(), on_reject="end")
        Traceback (most recent call last):
        ...
        ValueError: give the policy as options= or as keywords, not both (got on_reject= too)
    """
    if options is None:
        return GuardOptions(**policy)
    if not isinstance(options, GuardOptions):
        raise TypeError(f"options must be a GuardOptions, got {type(options).__name__}")
    defaults = {f.name: f.default for f in fields(GuardOptions)}
    given = [name for name, value in policy.items() if value != defaults[name]]
    if given:
        named = ", ".join(f"{name}=" for name in given)
        raise ValueError(f"give the policy as options= or as keywords, not both (got {named} too)")
    return options


def resolve_critic(
    *,
    model: Any = None,
    critic: Critic | None = None,
    threshold: float | None = None,
    preset: str = "generic",
    cache: Any = None,
    calibration: Any = None,
) -> Critic:
    """The critic to use: the given one, or InferAct on ``model``; cached if ``cache`` is set.

    ``cache=True`` keeps verdicts in memory; a verdict store
    (:class:`~inferact_langgraph.cache.InMemoryVerdictCache`,
    :class:`~inferact_langgraph.cache.VerdictCache`) can be given instead. ``calibration``
    (a :class:`~inferact_langgraph.calibration.Calibration` or the path of its file) maps
    InferAct's score to P(on track) before it meets ``threshold``.

    Raises:
        ValueError: Neither or both of ``model`` / ``critic`` given, or ``threshold`` or
            ``calibration`` given together with a ready-made critic (set them on the critic
            instead); a calibration that is not one (``CalibrationError``).
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
        if calibration is not None:
            raise ValueError(
                "calibration= goes to the critic you built, with its threshold: "
                'make_critic("<spec>", model=..., calibration="calibration.json", threshold=...) '
                "or InferActCritic(..., calibration=...); then pass critic= alone"
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
    """With ``model``: a :class:`~inferact_langgraph.calibration.Calibration` or the path of its
    file (``inferact eval`` writes one per critic) mapping InferAct's score to P(on track), so
    ``threshold`` is a probability. With ``critic=``, give it to that critic instead."""
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
    """``"request"`` (default): a call is judged against the user's newest request, on the
    actions since it; ``"thread"``: against all their requests, in order."""
    task_extractor: Callable[[Mapping[str, Any]], str] | None
    """``state -> str`` giving the user's real task (replaces the text of the request(s); the
    scope still decides which actions are judged)."""
    memory: FeedbackMemory | None
    """Feedback memory settings (store namespace, task key); used when there is a store."""
    memory_namespace: MemoryNamespace | None
    """``config -> labels``: whose feedback memory a run uses (default: the server's
    authenticated user, else ``configurable["user_id"]``, else shared)."""
    allowed_decisions: Sequence[str]
    """Decisions offered to the human (default: all four)."""
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
        calibration=arguments.get("calibration"),
    )
