"""inferact-langgraph: a preemptive critic for the critical actions of LangGraph agents."""

from inferact_langgraph.critical import CriticalSpec, critical
from inferact_langgraph.critics import Critic, Usage, Verdict
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
from inferact_langgraph.trajectory import Step, TokenBudget, Trajectory
from inferact_langgraph.wrap import with_inferact

__all__ = [
    "Critic",
    "CriticalSpec",
    "CriticError",
    "CriticModelError",
    "CriticParseError",
    "CriticTimeoutError",
    "FeedbackMemory",
    "InferActError",
    "InferActMiddleware",
    "ResumeError",
    "Step",
    "TokenBudget",
    "Trajectory",
    "UnsupportedGraphError",
    "Usage",
    "Verdict",
    "critical",
    "with_inferact",
]
