"""inferact-langgraph: a preemptive critic for the critical actions of LangGraph agents.

The top level holds what the README and the guides teach; the rest lives in its module:
the baselines in :mod:`inferact_langgraph.critics`, the verdict caches in
:mod:`inferact_langgraph.cache`, every error in :mod:`inferact_langgraph.errors`, the presets
in :mod:`inferact_langgraph.prompts`.

Example:
    >>> from inferact_langgraph import critical, with_inferact
    >>> from inferact_langgraph.critics import StandardEvalCritic
    >>> callable(with_inferact) and callable(critical)
    True
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from inferact_langgraph._authorization import allow_critical_calls
from inferact_langgraph._critical import CriticalSpec, critical
from inferact_langgraph._options import GuardOptions
from inferact_langgraph._wrap import with_inferact
from inferact_langgraph.critics import Critic, InferActCritic, Verdict, make_critic
from inferact_langgraph.errors import (
    CriticError,
    InferActError,
    ResumeError,
    UnauthorizedCriticalCall,
    UnsupportedGraphError,
)
from inferact_langgraph.memory import FeedbackMemory
from inferact_langgraph.middleware import InferActMiddleware
from inferact_langgraph.trajectory import Step, Trajectory

__all__ = [
    "Critic",
    "CriticError",
    "CriticalSpec",
    "FeedbackMemory",
    "GuardOptions",
    "InferActCritic",
    "InferActError",
    "InferActMiddleware",
    "ResumeError",
    "Step",
    "Trajectory",
    "UnauthorizedCriticalCall",
    "UnsupportedGraphError",
    "Verdict",
    "allow_critical_calls",
    "critical",
    "make_critic",
    "with_inferact",
]

# Names version 0.1 exported from the top level, and the module each lives in now. They still
# resolve, with a DeprecationWarning, so that code written for 0.1 keeps working.
_MOVED: dict[str, str] = {
    "CachedCritic": "inferact_langgraph.cache",
    "InMemoryVerdictCache": "inferact_langgraph.cache",
    "CriticModelError": "inferact_langgraph.errors",
    "CriticParseError": "inferact_langgraph.errors",
    "CriticTimeoutError": "inferact_langgraph.errors",
    "LogprobCritic": "inferact_langgraph.critics",
    "MultiStepCritic": "inferact_langgraph.critics",
    "SelfConsistencyCritic": "inferact_langgraph.critics",
    "StandardEvalCritic": "inferact_langgraph.critics",
    "Usage": "inferact_langgraph.critics",
    "aggregate_steps": "inferact_langgraph.critics",
    "Preset": "inferact_langgraph.prompts",
    "get_preset": "inferact_langgraph.prompts",
    "TokenBudget": "inferact_langgraph.trajectory",
}


def __getattr__(name: str) -> Any:
    """Resolve a name 0.1 exported here from its module, with a DeprecationWarning."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'inferact_langgraph' has no attribute {name!r}")
    warnings.warn(
        f"import {name} from {module}: it is no longer exported by inferact_langgraph",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), name)
