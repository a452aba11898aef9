"""The example graphs of ``langgraph.json`` served by ``langgraph dev``, driven by the SDK.

A user of Agent Chat UI types a request; the served graph acts on that request and the critic
judges that request. Two different messages, each judged against itself.
Loopback only; the server runs on a free port and is stopped at the end.
"""

from __future__ import annotations

import json

import pytest
from server_support import ROOT, SERVER_MARKS, langgraph_dev

from inferact_langgraph.examples.registry import MODEL_VARIABLES, make_env

pytestmark = SERVER_MARKS
sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is not installed")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("served_examples")
    served = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    # the repository's graphs, by absolute path, so the server writes only into ``work``
    config = {"graphs": {name: str(ROOT / target.lstrip("./")) for name, target in served.items()}}
    with langgraph_dev(work, config, unset=MODEL_VARIABLES) as url:  # offline
        yield url


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
