"""The alfworld example graph: a scripted ReAct agent guarded by InferAct, served by ``langgraph.json``.

Offline by default: the actor is the scripted policy of
``inferact_langgraph.examples`` and the critic is InferAct on an ORACLE-scripted critic model
(answers decided from the task's gold data; an offline demo, not live judgement). Pass
``actor_model=`` / ``critic_model=`` (chat models or ``init_chat_model`` strings) for real ones.
The module-level ``graph`` has no checkpointer: the LangGraph server provides one.
"""

from __future__ import annotations

from typing import Any

from inferact_langgraph.examples.demo_models import build_env_graph

__all__ = ["build_graph", "graph"]


def build_graph(
    *,
    actor_model: Any = None,
    critic_model: Any = None,
    critic: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    task_index: int = 0,
    **options: Any,
) -> Any:
    """The alfworld agent wrapped with ``with_inferact``; ``options`` go to ``with_inferact``."""
    return build_env_graph(
        "alfworld", actor_model=actor_model, critic_model=critic_model, critic=critic,
        checkpointer=checkpointer, store=store, task_index=task_index, **options,
    )[1]


graph = build_graph()
