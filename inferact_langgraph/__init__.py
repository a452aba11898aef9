"""inferact-langgraph: a preemptive critic for the critical actions of LangGraph agents."""

from inferact_langgraph.cache import CachedCritic, InMemoryVerdictCache
from inferact_langgraph.critical import CriticalSpec, critical
from inferact_langgraph.critics import (
    Critic,
    InferActCritic,
    LogprobCritic,
    MultiStepCritic,
    SelfConsistencyCritic,
    StandardEvalCritic,
    Usage,
    Verdict,
    aggregate_steps,
    make_critic,
)
from inferact_langgraph.errors import (
    CriticError,
    CriticModelError,
    CriticParseError,
    CriticTimeoutError,
    InferActError,
    ResumeError,
    UnsupportedGraphError,
)
from inferact_langgraph.memory import FeedbackMemory
from inferact_langgraph.middleware import InferActMiddleware
from inferact_langgraph.prompts import Preset, get_preset
from inferact_langgraph.trajectory import Step, TokenBudget, Trajectory
from inferact_langgraph.wrap import with_inferact

__all__ = [
    "CachedCritic",
    "Critic",
    "CriticError",
    "CriticModelError",
    "CriticParseError",
    "CriticTimeoutError",
    "CriticalSpec",
    "FeedbackMemory",
    "InMemoryVerdictCache",
    "InferActCritic",
    "InferActError",
    "InferActMiddleware",
    "LogprobCritic",
    "MultiStepCritic",
    "Preset",
    "ResumeError",
    "SelfConsistencyCritic",
    "StandardEvalCritic",
    "Step",
    "TokenBudget",
    "Trajectory",
    "UnsupportedGraphError",
    "Usage",
    "Verdict",
    "aggregate_steps",
    "critical",
    "get_preset",
    "make_critic",
    "with_inferact",
]
