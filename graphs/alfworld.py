"""The alfworld example graph, served by ``langgraph.json``: a ReAct agent guarded by InferAct.

It acts on what the user types. Offline (the default), the actor is the scripted policy of
``inferact_langgraph.examples``: it matches the message to one of the environment's tasks
(in the user's own words, e.g. "heat an egg and put it on countertop 1"),
and when nothing matches it answers plainly, without calling a tool, with the tasks it knows.
The critic is InferAct on an ORACLE-scripted critic model (answers decided from the tasks'
gold data; an offline demo, not live judgement). Either way the task the critic verifies is
the user's message as typed.

Live models, from environment variables (each one unset stays offline):

- ``INFERACT_ACTOR_MODEL``: the actor, as ``init_chat_model`` reads it
  (``openai:gpt-4o-mini``), or the model name an OpenAI-compatible server knows;
- ``INFERACT_CRITIC_MODEL``: the critic's model, the same way;
- ``INFERACT_BASE_URL``: an OpenAI-compatible endpoint for both (vLLM, llama.cpp, Ollama);
- ``INFERACT_API_KEY``: its key (else the provider's usual variable, e.g. OPENAI_API_KEY).

``build_graph(actor_model=..., critic_model=..., checkpointer=...)`` builds one in code. The
module-level ``graph`` has no checkpointer: the LangGraph server provides one.
"""

from inferact_langgraph.examples.demo_models import graph_builder

__all__ = ["build_graph", "graph"]

build_graph = graph_builder("alfworld")
graph = build_graph()
