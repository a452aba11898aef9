"""An alias of :mod:`inferact_langgraph.examples.registry`, so imports of this path keep working.

Example:
    >>> from inferact_langgraph.examples import demo_models, registry
    >>> demo_models.build_env_graph is registry.build_env_graph
    True
"""

from inferact_langgraph.examples import registry
from inferact_langgraph.examples.registry import *  # noqa: F403 (the alias re-exports all of it)

__all__ = list(registry.__all__)
