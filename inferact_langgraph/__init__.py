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
import sys
import warnings
from typing import Any

from inferact_langgraph.critics import Critic, InferActCritic, Verdict, make_critic
from inferact_langgraph.errors import (
    CriticError,
    InferActError,
    ResumeError,
    UnauthorizedCriticalCall,
    UnsupportedGraphError,
)
from inferact_langgraph.guard.authorization import allow_critical_calls
from inferact_langgraph.guard.graph import with_inferact
from inferact_langgraph.guard.marks import CriticalSpec, critical
from inferact_langgraph.guard.memory import FeedbackMemory
from inferact_langgraph.guard.middleware import InferActMiddleware
from inferact_langgraph.guard.options import GuardOptions
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

# The guard's public modules keep the import paths the documentation teaches
# (``inferact_langgraph.resume``, ``inferact_langgraph.review`` ...), now that they live in
# :mod:`inferact_langgraph.guard`: each old path names the same module object.
for _path, _module in {
    "memory": "memory",
    "middleware": "middleware",
    "records": "records",
    "resume": "resume",
    "review": "payloads",
    "scope": "requests",
}.items():
    sys.modules[f"{__name__}.{_path}"] = globals()[_path] = importlib.import_module(
        f"{__name__}.guard.{_module}"
    )
del _path, _module

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
