"""Critics: InferAct and the paper's baselines, all behind one interface."""

from inferact_langgraph.critics.base import Critic, RiskLevel, Usage, Verdict

__all__ = ["Critic", "RiskLevel", "Usage", "Verdict"]
