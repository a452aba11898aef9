"""Helpers for the inbox tests: a ``langgraph dev`` server on loopback, and the browser."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

ROOT = Path(__file__).resolve().parents[1]
INBOX_APP = Path(__file__).parent / "inbox_app"
CLI = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def langgraph_dev(work: Path, config: dict, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``langgraph dev`` in ``work`` with ``config`` as its langgraph.json; yield its URL."""
    config = {**config, "dependencies": [str(ROOT)]}
    (work / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    log_path = work / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 - the server writes to it until it is stopped
    proc = subprocess.Popen(
        [CLI, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            **(env or {}),
        },
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        ready = False
        while time.time() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    ready = True
                    break
            except OSError:
                time.sleep(0.2)
        if not ready:
            pytest.fail(f"langgraph dev did not start:\n{log_path.read_text()[-3000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


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
