"""Helpers for the inbox tests: the browser, and the test graph in process (its server:
``server_support.langgraph_dev``)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

INBOX_APP = Path(__file__).parent / "inbox_app"
CHROMIUM = (
    os.environ.get("INFERACT_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
    or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NO_CHROMIUM = (
    "Chromium was not found (install it: apt-get install -y chromium, or set INFERACT_CHROMIUM "
    "to its path): the inbox's browser tests need a real browser"
)


@contextmanager
def chromium_context(**options) -> Iterator[object]:
    """A Playwright browser context on the system Chromium, with a fresh profile."""
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="inbox-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=options.pop("viewport", {"width": 1280, "height": 900}),
            **options,
        )
        context.set_default_timeout(15_000)
        try:
            yield context
        finally:
            context.close()


# The test graph as a module (loaded by path: the server loads it the same way).
_spec = importlib.util.spec_from_file_location(
    "inbox_test_graph", INBOX_APP / "inbox_test_graph.py"
)
shop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shop)


def to_json(value: Any) -> Any:
    """What the LangGraph server sends: messages as their dicts, everything as JSON."""
    return json.loads(
        json.dumps(
            value, default=lambda o: o.model_dump() if isinstance(o, BaseMessage) else str(o)
        )
    )


def thread_dict(graph: Any, config: dict, thread_id: str) -> dict:
    """The thread as the server's ``threads.get`` gives it, from an in-process graph."""
    state = graph.get_state(config)
    return {
        "thread_id": thread_id,
        "created_at": "2026-12-01T07:00:00+00:00",
        "updated_at": "2026-12-01T07:01:00+00:00",
        "status": "interrupted" if state.interrupts else "idle",
        "metadata": {"graph_id": "shop", "assistant_id": "a-1"},
        "values": to_json(state.values),
        "interrupts": {
            "task-1": [{"id": i.id, "value": to_json(i.value)} for i in state.interrupts]
        },
    }


def run_shop(task: str, thread_id: str = "t1") -> tuple[Any, dict]:
    """Run the test graph in process (InMemorySaver) until it waits on a review."""
    graph = shop.build_graph(InMemorySaver())
    config = {"configurable": {"thread_id": thread_id}}
    graph.invoke({"messages": [("user", task)]}, config)
    return graph, config
