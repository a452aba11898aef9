"""A chat with a served example graph: ``langgraph dev`` driven by ``langgraph_sdk``.

One thread, two different messages: each is judged against itself, on its own actions. The
server supplies the checkpointer (the graph has none: no ``CheckpointerRequiredError``) and the
store; feedback is kept per user (``configurable["user_id"]``) and listed and cleared with
``inferact memory --db <server URL>``. Loopback only; the server runs on a free port.
"""

from __future__ import annotations

import json

import pytest
from server_support import ROOT, SERVER_MARKS, langgraph_dev
from typer.testing import CliRunner

from inferact_langgraph.cli import app
from inferact_langgraph.examples.registry import MODEL_VARIABLES, make_env

pytestmark = SERVER_MARKS
sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is not installed")

SHADES = "blackout shades, 66 x 66 inch, white, for my bedroom window"
BENCH = "a white vanity bench under 100 dollars please"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("chat_server")
    config = {"graphs": {"webshop": str(ROOT / "graphs/webshop.py:graph")}}
    with langgraph_dev(work, config, unset=MODEL_VARIABLES) as url:  # offline
        yield url


async def _say(client, thread: str, text: str, user: str | None = None) -> dict:
    config = {"configurable": {"user_id": user}} if user else None
    await client.runs.wait(
        thread, "webshop", input={"messages": [{"role": "user", "content": text}]}, config=config
    )
    return await client.threads.get_state(thread)


async def test_two_messages_in_one_thread_are_each_judged_against_themselves(server):
    client = sdk.get_client(url=server)
    env = make_env("webshop")
    thread = (await client.threads.create())["thread_id"]

    judged = []
    for message, other in ((SHADES, BENCH), (BENCH, SHADES)):
        state = await _say(client, thread, message)
        [pending] = state["interrupts"]  # the served graph interrupts: the server checkpoints
        [request] = pending["value"]["action_requests"]
        info = request["inferact"]
        task = env.task(env.match_task(message))
        assert request["args"]["asin"] == task["distractor"]["asin"]  # acted on this message
        assert info["task"] == message and info["scope"] == "request"
        assert message in info["options"] and other not in info["options"]
        chain = " ".join(step["action"] for step in info["action_chain"])
        judged.append(chain)
        await client.runs.wait(
            thread, "webshop", command={"resume": {"decisions": [{"type": "approve"}]}}
        )
    # request 2's chain holds only request 2's actions (no search for shades in it)
    assert "shades" in judged[0] and "shades" not in judged[1] and "bench" in judged[1]

    final = await client.threads.get_state(thread)
    audit = final["values"]["inferact_audit"]
    assert [(e["task"], e["decision"]) for e in audit] == [
        (SHADES, "approve"),
        (BENCH, "approve"),
    ]
    humans = [m["content"] for m in final["values"]["messages"] if m["type"] == "human"]
    assert humans == [SHADES, BENCH]


async def test_feedback_is_kept_per_user_and_listed_from_the_server(server):
    client = sdk.get_client(url=server)
    thread = (await client.threads.create())["thread_id"]
    state = await _say(client, thread, SHADES, user="alice")
    assert state["interrupts"]
    feedback = "wrong size: I need the 66 x 66 inch ones"
    await client.runs.wait(
        thread,
        "webshop",
        # the resume names no user: the feedback is still Alice's (the thread's user)
        command={"resume": {"decisions": [{"type": "reject", "message": feedback}]}},
    )
    final = await client.threads.get_state(thread)
    assert not any(feedback in str(m["content"]) for m in final["values"]["messages"]
                   if m["type"] == "human")  # fmt: skip

    runner = CliRunner()
    listed = runner.invoke(app, ["memory", "list", "--db", server, "--user", "alice", "--json"])
    assert listed.exit_code == 0, listed.output
    entries = [json.loads(line) for line in listed.output.splitlines() if line.strip()]
    assert [e["feedback"] for e in entries] == [feedback] and entries[0]["task"] == SHADES
    other = runner.invoke(app, ["memory", "list", "--db", server, "--user", "bob", "--json"])
    assert other.exit_code == 0 and other.output.strip() == ""
    cleared = runner.invoke(app, ["memory", "clear", "--db", server, "--user", "alice", "-y"])
    assert cleared.exit_code == 0 and "deleted 1 entry" in cleared.output
