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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from inferact_langgraph.labels import ReviewLabels, SpotCheck
from inferact_langgraph.review import DECISION_TYPES, is_decision_type

__all__ = [
    "GuardOptions",
    "MemoryNamespace",
    "OnCriticError",
    "OnReject",
    "Scope",
    "resolve_options",
]

OnCriticError = Literal["interrupt", "block", "allow"]
OnReject = Literal["continue", "retry", "end"]
Scope = Literal["request", "thread"]
MemoryNamespace = Callable[[Mapping[str, Any]], Sequence[str]]
"""``config -> labels``: whose feedback memory a run reads and writes (a user, a tenant)."""


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
            order, on every action of the thread (see :mod:`inferact_langgraph.scope`).
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
        spot_check: The share of the calls the critic *passed* that a human checks anyway
            (e.g. ``0.02``; ``0``, the default: none), marked as spot checks, so that the
            miss rate can be estimated (:mod:`inferact_langgraph.labels`).
        spot_check_seed: Makes the spot-check draws reproducible (a hash of the seed, the
            thread and the call id); ``None``: the system's RNG.
        labels: Where reviewers' decisions are kept as labels (a ``ReviewLabels``; default:
            the ``"default"`` deployment) when the graph has a store; ``False``: none kept.
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
    spot_check: float = 0.0
    spot_check_seed: int | None = None
    labels: Any = None

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
        SpotCheck(rate=self.spot_check, seed=self.spot_check_seed)  # ValueError when bad
        off = self.labels is None or self.labels is False
        if not off and not isinstance(self.labels, ReviewLabels):
            raise ValueError(
                f"labels must be a ReviewLabels or False, got {type(self.labels).__name__}"
            )


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
