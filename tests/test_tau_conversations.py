"""The tau-bench airline conversations replayed through a guarded agent: which request each
critical call is judged against.

Each of the 100 real conversations (tests/data/README.md) is replayed turn by turn through
``create_agent`` guarded by ``with_inferact``: the agent's model replays what gpt-4o said,
every tool returns what it returned then, and a scripted critic that passes everything records
the task and the action chain it was given. Only the six state-changing tools are critical.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from conftest import ROOT, TEST_DATA
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import with_inferact
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic

CONVERSATIONS = TEST_DATA / "tau-airline-dev-conversations.json"
STATE_CHANGING = (
    "book_reservation",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
    "send_certificate",
)


def _turns(conversation: dict) -> list[tuple[str, list[AIMessage]]]:
    """The conversation as (the customer's message, the agent's messages after it).

    It ends before a call that was never answered (the conversation stopped there).
    """
    traj = conversation["traj"]
    turns: list[tuple[str, list[AIMessage]]] = []
    for position, message in enumerate(traj):
        following = {m.get("tool_call_id") for m in traj[position + 1 : position + 1 + 8]}
        if any(c["id"] not in following for c in message.get("tool_calls") or []):
            break
        if message["role"] == "user":
            turns.append((message["content"] or "", []))
        elif message["role"] == "assistant" and turns:
            calls = [
                {
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"]),
                    "id": call["id"],
                }
                for call in message.get("tool_calls") or []
            ]
            turns[-1][1].append(AIMessage(message.get("content") or "", tool_calls=calls))
    if turns and turns[-1][1] and turns[-1][1][-1].tool_calls:
        turns[-1][1].append(AIMessage("(the conversation ended here)"))  # the model's last word
    return turns


def _call_key(name: str, args: Any) -> str:
    return f"{name}:{json.dumps(args, sort_keys=True)}"


def _recorded_tools(conversation: dict) -> list[StructuredTool]:
    """One tool per name the agent used, answering each call with its recorded output.

    Calls are matched by name and arguments; a call made twice gets its answers in order.
    """
    pending: dict[str, tuple[str, Any]] = {}  # ids are reused: an answer closes the latest
    answers: dict[str, list[str]] = {}
    names: set[str] = set()
    for message in conversation["traj"]:
        for call in message.get("tool_calls") or []:
            name = call["function"]["name"]
            pending[call["id"]] = (name, json.loads(call["function"]["arguments"]))
            names.add(name)
        if message["role"] == "tool" and message["tool_call_id"] in pending:
            name, args = pending.pop(message["tool_call_id"])
            answers.setdefault(_call_key(name, args), []).append(message["content"])

    def make(name: str) -> StructuredTool:
        def answer(**kwargs: Any) -> str:
            output = answers[_call_key(name, kwargs)].pop(0)
            if output.startswith("Error"):  # tau-bench's tools report a refusal this way
                raise ToolException(output)
            return output

        return StructuredTool.from_function(
            func=answer,
            name=name,
            description=f"The airline's {name} tool (recorded answers).",
            args_schema={"type": "object", "properties": {}, "additionalProperties": True},
            handle_tool_error=True,  # the agent sees the error, as an error ToolMessage
        )

    return [make(name) for name in sorted(names)]


def replay(conversation: dict) -> list[tuple[str, str, list[str]]]:
    """Replay one conversation; per critical call: (tool, task judged against, chain's tools)."""
    turns = _turns(conversation)
    replies = [message for _, agent in turns for message in agent]
    critic = ScriptedCritic(scores=[0.9])
    tools = _recorded_tools(conversation)
    if not any(t.name in STATE_CHANGING for t in tools):
        return []  # nothing critical to judge (and nothing for the guard to guard)
    graph = with_inferact(
        create_agent(ScriptedChatModel(replies=replies), tools),
        critic=critic,
        critical=[t.name for t in tools if t.name in STATE_CHANGING],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "tau"}}
    for customer, agent in turns:
        if agent:  # the customer's closing message, which the agent never answered, is left out
            graph.invoke({"messages": [HumanMessage(customer)]}, config)
    return [
        (t.steps[-1].tool_name, t.task, [s.tool_name for s in t.steps]) for t in critic.trajectories
    ]


@pytest.fixture(scope="module")
def judged() -> list[tuple[str, str, list[str], list[str], int]]:
    """Every critical call of the 100 conversations: tool, task, chain, the customer's messages
    before the call, and how many tool calls the agent had made before it."""
    checks = []
    for conversation in json.loads(CONVERSATIONS.read_text()):
        said: list[str] = []
        made = 0
        calls = iter(replay(conversation))
        for message in conversation["traj"]:
            if message["role"] == "user":
                said.append(message["content"] or "")
            for call in message.get("tool_calls") or []:
                if call["function"]["name"] in STATE_CHANGING:
                    tool, task, chain = next(calls)
                    assert tool == call["function"]["name"]
                    checks.append((tool, task, chain, list(said), made))
                made += 1
    return checks


def test_every_critical_call_of_the_conversations_is_checked(judged):
    assert len(judged) == 123
    assert Counter(tool for tool, *_ in judged)["book_reservation"] > 0


def test_the_task_is_the_customers_request_not_their_newest_message(judged):
    """A request spans turns: the ask, the ids, the choices, "yes, go ahead". Each call is
    judged against the customer's messages of the current request, which always end with the
    newest one; 95% or more of the calls against more than that newest message (the rest
    follow a finished action: "could you also add 2 checked bags?" is a request of its own)."""
    lone = 0
    for _tool, task, _chain, said, _made in judged:
        assert task.endswith(said[-1])  # the newest message is always part of it
        assert "\n".join(said).endswith(task)  # the customer's own messages, in order, a suffix
        lone += task == said[-1] and len(said) > 1
    assert lone / len(judged) <= 0.05, lone


def test_a_request_that_began_after_a_finished_action_leaves_the_finished_one_out(judged):
    """After a cancellation ran and the agent closed ("feel free to ask!"), "I also want to
    upgrade one of my reservations" is judged on its own, on the actions taken since."""
    split_off = [c for c in judged if not "\n".join(c[3]).startswith(c[1])]
    whole = [c for c in judged if "\n".join(c[3]).startswith(c[1])]
    assert len(whole) >= 90 and 0 < len(split_off) <= 33
    for _tool, _task, chain, _said, made in split_off:
        assert len(chain) < made + 1  # S starts at the request, not at the conversation's start
    for _tool, _task, chain, _said, made in whole:
        assert len(chain) == made + 1  # S is every action since the first message


def test_a_new_request_after_a_finished_one_is_judged_alone_and_a_repeat_is_flagged():
    """ "email the Q3 numbers to Dana" was done; "now transfer 500 dollars to Bob" follows. The
    transfer is judged against the transfer; an e-mail sent again is judged against the
    transfer too, so a critic that reads the task doubts it and the human is asked."""
    sent: list[tuple[str, dict]] = []

    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        sent.append(("send_email", {"to": to}))
        return "sent"

    def transfer(to: str, amount: int) -> str:
        """Transfer money."""
        sent.append(("transfer", {"to": to, "amount": amount}))
        return "done"

    def email(call_id: str) -> AIMessage:
        args = {"to": "dana", "body": "Q3"}
        return AIMessage("", tool_calls=[{"name": "send_email", "args": args, "id": call_id}])

    actor = ScriptedChatModel(replies=[email("e-1"), "Sent.", email("e-2"), "Done."])
    tools = [StructuredTool.from_function(send_email), StructuredTool.from_function(transfer)]
    critic = ScriptedCritic(
        score_fn=lambda t: 0.9 if t.steps[-1].tool_name.split("_")[-1] in t.task else 0.1
    )
    graph = with_inferact(
        create_agent(actor, tools),
        critic=critic,
        critical=["send_email", "transfer"],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "dana"}}
    graph.invoke({"messages": [HumanMessage("email the Q3 numbers to Dana")]}, config)
    out = graph.invoke({"messages": [HumanMessage("now transfer 500 dollars to Bob")]}, config)
    first, again = critic.trajectories
    assert first.task == "email the Q3 numbers to Dana"
    assert again.task == "now transfer 500 dollars to Bob"
    assert [s.tool_name for s in again.steps] == ["send_email"]  # only this request's actions
    assert "__interrupt__" in out and sent == [("send_email", {"to": "dana"})]
    (request,) = out["__interrupt__"][0].value["action_requests"]
    assert request["inferact"]["task"] == "now transfer 500 dollars to Bob"  # shown to the human


def test_the_quality_page_states_the_replayed_counts(judged):
    """docs/quality.md's table of which request the calls were judged against is this replay."""
    lone = sum(task == said[-1] and len(said) > 1 for _t, task, _c, said, _m in judged)
    whole = sum("\n".join(said).startswith(task) for _t, task, _c, said, _m in judged)
    page = " ".join((ROOT / "docs" / "quality.md").read_text().split())
    assert f"| judged against the newest message alone | 115 / 123 | {lone} / 123 |" in page
    assert f"| judged against every customer message so far | 8 / 123 | {whole} / 123 |" in page
    assert f"since a finished action | — | {len(judged) - whole} / 123 |" in page
