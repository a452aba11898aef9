"""End to end through the LangGraph server (``langgraph dev``) with the official SDK client,
the way a review UI drives a guarded agent: create a thread, run, receive the interrupt with its
InferAct section, resume with a decision, read the final state. Loopback only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from server_support import SERVER_MARKS, langgraph_dev

APP = Path(__file__).parent / "server_app"

pytestmark = SERVER_MARKS
sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is not installed")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("server_app")
    shutil.copy(APP / "app.py", work / "app.py")
    config = json.loads((APP / "langgraph.json").read_text())
    with langgraph_dev(work, config) as url:
        yield url


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
