"""The example graphs of ``langgraph.json`` served by ``langgraph dev``, driven by the SDK.

A user of Agent Chat UI types a request; the served graph acts on that request and the critic
judges that request (issue 11, item 5). Two different messages, each judged against itself.
Loopback only; the server runs on a free port and is stopped at the end.
"""

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

from inferact_langgraph.examples.demo_models import MODEL_VARIABLES, make_env

ROOT = Path(__file__).resolve().parents[1]
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
    work = tmp_path_factory.mktemp("served_examples")
    served = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    config = {
        "dependencies": [str(ROOT)],
        # the repository's graphs, by absolute path, so the server writes only into ``work``
        "graphs": {name: str(ROOT / target.lstrip("./")) for name, target in served.items()},
    }
    (work / "langgraph.json").write_text(json.dumps(config))
    port = _free_port()
    environ = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES}  # offline
    log = open(work / "server.log", "w")  # noqa: SIM115 - the server writes to it until it stops
    proc = subprocess.Popen(
        [CLI, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **environ,
            "PYTHONPATH": str(ROOT),
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        },
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
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
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


async def test_two_messages_to_a_served_graph_are_each_judged_against_themselves(server):
    client = sdk.get_client(url=server)
    env = make_env("webshop")
    messages = (
        "blackout shades, 66 x 66 inch, white, for my bedroom window",
        "a white vanity bench under 100 dollars please",
    )
    for message, other in (messages, messages[::-1]):
        thread = await client.threads.create()
        tid = thread["thread_id"]
        await client.runs.wait(
            tid, "webshop", input={"messages": [{"role": "user", "content": message}]}
        )
        state = await client.threads.get_state(tid)
        [pending] = state["interrupts"]
        [request] = pending["value"]["action_requests"]
        task = env.task(env.match_task(message))
        assert request["name"] == "buy_now"
        assert request["args"]["asin"] == task["distractor"]["asin"]  # acted on this message
        assert request["inferact"]["score"] < request["inferact"]["threshold"]
        assert task["instruction"] in request["inferact"]["justification"]
        [check] = state["values"]["inferact_checks"].values()
        options = check["verdict"]["options"]
        assert message in options and other not in options  # the task judged: as typed
        assert task["instruction"] not in options

    # a request the example does not know: a plain answer, no tool, no critic
    thread = await client.threads.create()
    final = await client.runs.wait(
        thread["thread_id"],
        "webshop",
        input={"messages": [{"role": "user", "content": "buy me a toaster"}]},
    )
    answer = final["messages"][-1]
    assert answer["type"] == "ai" and not answer.get("tool_calls")
    assert "is not one of them, so I did nothing" in answer["content"]
