"""The alfworld example graph, served by ``langgraph.json``: a ReAct agent guarded by InferAct.

Offline by default: the scripted actor plays the task the user's message asks for, in their
own words (e.g. "heat an egg and put it on countertop 1"),
and the critic model gives ORACLE-scripted answers (not live judgement). The ``INFERACT_*``
environment variables make either model live; what they mean and what ``build_graph(...)``
takes: ``models_from_environment`` and ``build_env_graph`` in
``inferact_langgraph.examples.registry``. The module-level ``graph`` has no checkpointer:
the LangGraph server provides one.
"""

from inferact_langgraph.examples.registry import graph_builder

__all__ = ["build_graph", "graph"]

build_graph = graph_builder("alfworld")
graph = build_graph()
