"""Critics: InferAct and the paper's baselines, all behind one interface.

Example:
    >>> from inferact_langgraph.testing import ScriptedChatModel
    >>> critic = make_critic("multistep:min", model=ScriptedChatModel(replies=["Step 1: 1"]))
    >>> type(critic).__name__, critic.aggregation
    ('MultiStepCritic', 'min')
"""

from __future__ import annotations

from typing import Any

from inferact_langgraph.critics.base import Critic, RiskLevel, Usage, Verdict
from inferact_langgraph.critics.combined import InferActOrStandardCritic, InferActStandardCritic
from inferact_langgraph.critics.inferact import InferActCritic
from inferact_langgraph.critics.logprob import LogprobCritic
from inferact_langgraph.critics.multistep import AGGREGATIONS, MultiStepCritic, aggregate_steps
from inferact_langgraph.critics.self_consistency import SelfConsistencyCritic
from inferact_langgraph.critics.standard import StandardEvalCritic

__all__ = [
    "AGGREGATIONS",
    "CRITIC_SPECS",
    "Critic",
    "InferActCritic",
    "InferActOrStandardCritic",
    "InferActStandardCritic",
    "LogprobCritic",
    "MultiStepCritic",
    "RiskLevel",
    "SelfConsistencyCritic",
    "StandardEvalCritic",
    "Usage",
    "Verdict",
    "aggregate_steps",
    "make_critic",
]

CRITIC_SPECS: tuple[str, ...] = (
    "inferact",
    "standard",
    "self_consistency",
    "multistep",
    *(f"multistep:{how}" for how in AGGREGATIONS),
    "logprob",
    "inferact+standard",
    "inferact-or-standard",
)
"""Every spec :func:`make_critic` accepts."""


def make_critic(spec: str, *, model: Any, **kwargs: Any) -> Critic:
    """Build a critic from a short spec.

    The specs: ``inferact``, ``standard``, ``self_consistency``, ``multistep``,
    ``multistep:<min|max|mean|product>``, ``logprob``, ``inferact+standard`` (both InferAct
    and standard evaluation, their scores averaged) and ``inferact-or-standard`` (both, doubting
    when either doubts): :mod:`~inferact_langgraph.critics.combined`.

    Args:
        spec: The critic spec.
        model: A chat model instance or an ``init_chat_model`` string.
        **kwargs: Passed to the critic (``threshold``, ``preset``, ``num_tasks`` ...).

    Raises:
        ValueError: Unknown spec; the message lists the valid ones.

    Example:
        >>> make_critic("standard", model=None, preset="webshop").name
        'standard'
        >>> make_critic("judge", model=None)
        Traceback (most recent call last):
        ...
        ValueError: unknown critic spec 'judge'; valid specs: inferact, standard, \
self_consistency, multistep, multistep:min, multistep:max, multistep:mean, multistep:product, \
logprob, inferact+standard, inferact-or-standard
    """
    name, _, option = str(spec).strip().partition(":")
    if spec not in CRITIC_SPECS:
        raise ValueError(f"unknown critic spec {spec!r}; valid specs: {', '.join(CRITIC_SPECS)}")
    if spec == "inferact+standard":
        return InferActStandardCritic(model=model, **kwargs)
    if spec == "inferact-or-standard":
        return InferActOrStandardCritic(model=model, **kwargs)
    if name == "inferact":
        return InferActCritic(model=model, **kwargs)
    if name == "standard":
        return StandardEvalCritic(model=model, **kwargs)
    if name == "self_consistency":
        return SelfConsistencyCritic(model=model, **kwargs)
    if name == "logprob":
        return LogprobCritic(model=model, **kwargs)
    if option:
        kwargs["aggregation"] = option
    return MultiStepCritic(model=model, **kwargs)
