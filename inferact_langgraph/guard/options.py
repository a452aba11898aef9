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

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from langchain_core.runnables import Runnable

from inferact_langgraph.guard.memory import MemoryNamespace
from inferact_langgraph.guard.payloads import DECISION_TYPES, is_decision_type
from inferact_langgraph.labels import ReviewLabels, SpotCheck
from inferact_langgraph.trajectory import THOUGHT_TOOLS

__all__ = [
    "GuardOptions",
    "MemoryNamespace",
    "OnCriticError",
    "OnReject",
    "RequestBoundaries",
    "Scope",
    "check_request_boundaries",
    "resolve_options",
]

OnCriticError = Literal["interrupt", "block", "allow"]
OnReject = Literal["continue", "retry", "end"]
Scope = Literal["request", "thread"]
RequestBoundaries = Literal["model", "rules"]
"""``"model"``: a chat model judges the rule's candidate request starts (the guard's, if it has
one); ``"rules"``: the deterministic rule alone, no model call. A chat model instance may be
given instead of either (:mod:`inferact_langgraph.guard.boundaries`)."""


def check_request_boundaries(setting: Any) -> None:
    """Raise ``ValueError`` unless ``setting`` is ``"model"``, ``"rules"`` or a chat model.

    Example:
        >>> check_request_boundaries("always")
        Traceback (most recent call last):
        ...
        ValueError: request_boundaries must be 'model' (the guard's chat model, if it has one), 'rules' (the deterministic rule alone, no model call) or a chat model instance, got 'always'
    """  # noqa: E501
    if isinstance(setting, Runnable):
        return
    if isinstance(setting, str) and setting in get_args(RequestBoundaries):
        return
    shown = repr(setting) if isinstance(setting, str) else f"a {type(setting).__name__}"
    raise ValueError(
        "request_boundaries must be 'model' (the guard's chat model, if it has one), 'rules' "
        "(the deterministic rule alone, no model call) or a chat model instance, got " + shown
    )


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
        scope: ``"request"`` (default): a call is judged against the user's current request
            (their messages since it began), on the actions taken since it. ``"thread"``:
            against all the user's requests in order, on every action of the thread (see
            :mod:`inferact_langgraph.guard.requests`).
        task_extractor: ``state -> str``: the user's real task, instead of the request(s).
        thought_tools: Tools whose calls are the agent's thoughts written down, left out of the
            action chain the critic judges, as InferAct removes thoughts (default: ``think``;
            ``()`` keeps every call).
        request_boundaries: With ``scope="request"``, who decides where a request begins.
            ``"model"`` (default): a deterministic rule proposes the starts and, where it
            proposes a new request, the guard's chat model (``model=``, or the critic's own)
            decides, once per user message, whether the message continues an earlier request
            instead (no model: the rule alone). ``"rules"``: the rule alone, no model call. A
            chat model instance: that model decides (see
            :mod:`inferact_langgraph.guard.boundaries`).
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
    thought_tools: Collection[str] = THOUGHT_TOOLS
    request_boundaries: RequestBoundaries | Runnable[Any, Any] = "model"
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
        check_request_boundaries(self.request_boundaries)
        tools = self.thought_tools
        if (
            isinstance(tools, str)
            or not isinstance(tools, Collection)
            or not all(isinstance(name, str) for name in tools)
        ):
            raise ValueError(
                "thought_tools must be a collection of tool names, e.g. ('think',), "
                f"got {self.thought_tools!r}"
            )
        object.__setattr__(self, "thought_tools", frozenset(self.thought_tools))
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
