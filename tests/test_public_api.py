"""The public API is pinned: a change to it is a deliberate change to this list."""

import inferact_langgraph


def test_public_api_is_pinned_and_sorted():
    assert inferact_langgraph.__all__ == sorted(inferact_langgraph.__all__)
    assert inferact_langgraph.__all__ == [
        "CachedCritic", "Critic", "CriticError", "CriticModelError", "CriticParseError", "CriticTimeoutError",
        "CriticalSpec", "FeedbackMemory", "InMemoryVerdictCache", "InferActCritic", "InferActError", "InferActMiddleware", "LogprobCritic",
        "MultiStepCritic", "Preset", "ResumeError", "SelfConsistencyCritic", "StandardEvalCritic",
        "Step", "TokenBudget", "Trajectory", "UnsupportedGraphError", "Usage", "Verdict",
        "aggregate_steps", "critical", "get_preset", "make_critic", "with_inferact",
    ]
    for name in inferact_langgraph.__all__:
        assert getattr(inferact_langgraph, name) is not None
