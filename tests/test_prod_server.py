"""End to end through the LangGraph server (``langgraph dev``) with the official SDK client,
the way a review UI drives a guarded agent: create a thread, run, receive the interrupt with its
InferAct section, resume with a decision, read the final state. Loopback only."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = Path(__file__).parent / "server_app"
CLI = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CLI is None, reason="langgraph-cli[inmem] is not installed (the [server] extra)"
    ),
    pytest.mark.allow_hosts(["127.0.0.1"]),
]
sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("server_app")
    shutil.copy(APP / "app.py", work / "app.py")
    config = json.loads((APP / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    (work / "langgraph.json").write_text(json.dumps(config))
    port = _free_port()
    log = open(work / "server.log", "w")  # noqa: SIM115 - the server writes to it until it stops
    proc = subprocess.Popen(
        [CLI, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
        cwd=work, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LANGSMITH_TRACING": "false",
             "LANGGRAPH_CLI_NO_ANALYTICS": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.3)
    if proc.poll() is not None or time.time() >= deadline:
        proc.kill()
        pytest.fail(f"langgraph dev did not start:\n{(work / 'server.log').read_text()[-3000:]}")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


async def test_interrupt_and_resume_through_the_server(server: str) -> None:
    client = sdk.get_client(url=server)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    task = {"messages": [{"role": "user", "content": "buy a mug"}]}
    await client.runs.wait(tid, "guarded", input=task)

    state = await client.threads.get_state(tid)
    assert state["next"] == ["inferact_gate"]
    [pending] = state["interrupts"]
    [request] = pending["value"]["action_requests"]
    assert request["name"] == "buy_now" and request["args"] == {"asin": "B01"}
    assert request["inferact"]["score"] == pytest.approx(0.1)
    assert request["inferact"]["tool_call_id"].startswith("call-")
    assert pending["value"]["review_configs"][0]["allowed_decisions"]

    await client.runs.wait(tid, "guarded", command={"resume": {"decisions": [{"type": "approve"}]}})
    final = await client.threads.get_state(tid)
    assert final["next"] == [] and not final["interrupts"]
    messages = final["values"]["messages"]
    assert messages[-1]["content"] == "Done: bought B01"
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    audit = final["values"]["inferact_audit"]
    assert [(e["decision"], e["decided_by"]) for e in audit] == [("approve", "human")]
