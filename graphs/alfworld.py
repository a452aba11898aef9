"""The alfworld example graph: a scripted ReAct agent guarded by InferAct, served by ``langgraph.json``.

Offline by default: the actor is the scripted policy of
``inferact_langgraph.examples`` and the critic is InferAct on an ORACLE-scripted critic model
(answers decided from the task's gold data; an offline demo, not live judgement). Pass
``actor_model=`` / ``critic_model=`` (chat models or ``init_chat_model`` strings) for real ones.
The module-level ``graph`` has no checkpointer: the LangGraph server provides one.
"""

from inferact_langgraph.examples.demo_models import graph_builder

__all__ = ["build_graph", "graph"]

build_graph = graph_builder("alfworld")
graph = build_graph()
