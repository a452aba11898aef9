"""The guarded shop agent of the route tests (``test_guard_paths``, ``test_tool_lock``).

Every graph kind over the shop's tools, the run config, and what was bought and audited. The
shop's purchase ledger is cleared around every test of a module that imports ``clear_ledger``.
"""

from __future__ import annotations

from typing import Any

import pytest
from guard_helpers import LEDGER, MIDDLEWARE_KINDS, build_graph, buy_now, search, view_item
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import InferActMiddleware, with_inferact


@pytest.fixture(autouse=True)
def clear_ledger():
    """Each test starts with nothing bought."""
    LEDGER.clear()
    yield
    LEDGER.clear()


def guarded(kind: str, actor: Any, critic: Any, *, tools: list | None = None, **options: Any):
    """The shop agent of ``kind``, guarded by ``critic``, with a fresh in-memory checkpointer."""
    tools = tools or [search, buy_now, view_item]
    if kind in MIDDLEWARE_KINDS:
        review_in = "tool_call" if kind == "middleware_tool_call" else "after_model"
        return create_agent(
            actor,
            tools,
            checkpointer=InMemorySaver(),
            middleware=[InferActMiddleware(critic=critic, review_in=review_in, **options)],
        )
    return with_inferact(
        build_graph(kind, actor, tools), critic=critic, checkpointer=InMemorySaver(), **options
    )


def cfg(thread: str = "t") -> dict:
    """The run config of ``thread``."""
    return {"configurable": {"thread_id": thread}}


def bought() -> list[dict]:
    """The purchases that ran."""
    return [e for e in LEDGER if "asin" in e]


def audit(graph: Any, thread: str = "t") -> list[dict]:
    """The guard's audit entries of ``thread``."""
    return graph.get_state(cfg(thread)).values.get("inferact_audit") or []
