"""inferact-langgraph: a preemptive critic for the critical actions of LangGraph agents."""

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
from inferact_langgraph.trajectory import Step, TokenBudget, Trajectory

__all__ = [
    "Critic",
    "CriticError",
    "CriticModelError",
    "CriticParseError",
    "CriticTimeoutError",
    "InferActError",
    "ResumeError",
    "Step",
    "TokenBudget",
    "Trajectory",
    "UnsupportedGraphError",
    "Usage",
    "Verdict",
]
