"""An alias of :mod:`inferact_langgraph.examples.registry`, so imports of this path keep working.

Example:
    >>> from inferact_langgraph.examples import demo_models, registry
    >>> demo_models.build_env_graph is registry.build_env_graph
    True
"""

from inferact_langgraph.examples.registry import (
    ENVIRONMENTS,
    MODEL_VARIABLES,
    ORACLE_LABEL,
    SYSTEM_PROMPTS,
    build_env_graph,
    graph_builder,
    make_env,
    make_scripted_actor,
    models_from_environment,
    oracle_critic_model,
    oracle_feedback,
)

__all__ = [
    "ENVIRONMENTS",
    "MODEL_VARIABLES",
    "ORACLE_LABEL",
    "SYSTEM_PROMPTS",
    "build_env_graph",
    "graph_builder",
    "make_env",
    "make_scripted_actor",
    "models_from_environment",
    "oracle_critic_model",
    "oracle_feedback",
]
