"""Shared builders for the chat tests (``test_chat.py``, ``test_chat_attacks.py``): every graph
kind guarded, over each test module's own tools. The unguarded graphs come from
``guard_helpers.build_graph``."""

from __future__ import annotations

from typing import Any

from guard_helpers import KINDS, MIDDLEWARE_KINDS, ShopState, build_graph, review_in
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import InferActMiddleware, with_inferact

__all__ = ["KINDS", "ChatState", "cfg", "guarded"]

#: A state of messages only (what the hand-written graphs of the chat tests use).
ChatState = ShopState


def guarded(
    kind: str, actor: Any, critic: Any, *, tools: list, checkpointer: Any = "new", **options: Any
) -> Any:
    """A guarded agent of the given kind over ``tools``, with a fresh ``InMemorySaver`` unless
    ``checkpointer`` is given (``None`` for none); ``options`` go to the guard."""
    saver = InMemorySaver() if checkpointer == "new" else checkpointer
    if kind in MIDDLEWARE_KINDS:
        return create_agent(
            actor,
            tools,
            checkpointer=saver,
            store=options.pop("store", None),
            middleware=[InferActMiddleware(critic=critic, review_in=review_in(kind), **options)],
        )
    graph = build_graph(kind, actor, tools)
    return with_inferact(graph, critic=critic, checkpointer=saver, **options)


def cfg(thread: str = "chat", **configurable: Any) -> dict:
    """A run config for ``thread`` with more ``configurable`` keys."""
    return {"configurable": {"thread_id": thread, **configurable}}
