"""Replay the 100 tau-bench airline conversations with the request-boundary judge on.

Each conversation (tests/data/README.md) is replayed turn by turn through ``create_agent``
guarded by ``with_inferact``: the agent's model replays what gpt-4o said, every tool returns
what it returned then, and a scripted critic that passes everything records the task each
critical call was judged against. The six state-changing tools are critical. Where the
deterministic rule begins a new request after the first, the judge model decides whether the
message continues an earlier one (:mod:`inferact_langgraph.guard.boundaries`).

Every check is then compared with the maintainers' reading of where each request begins
(tests/data/tau-airline-dev-request-starts.json): a check whose task starts at a message
read as continuing is wrong, and so is one whose task was merged across a message read as
new. ``tests/test_tau_conversations.py`` runs the same replay offline, with the judge's
recorded answers (tests/data/tau-airline-dev-request-boundary-answers.jsonl).

Run against any OpenAI-compatible endpoint (prints each decision, then the counts)::

    python bench/bench_request_boundaries.py --base-url http://127.0.0.1:8765/v1 \\
        --api-key x --model relay

``--transcript FILE`` replays recorded answers instead; ``--rules`` runs the rule alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import with_inferact
from inferact_langgraph.guard._compat import guard_of
from inferact_langgraph.guard.requests import candidate_starts
from inferact_langgraph.guard.state import BOUNDARIES
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic
from inferact_langgraph.trajectory import THOUGHT_TOOLS

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CONVERSATIONS = DATA / "tau-airline-dev-conversations.json"
LABELS = DATA / "tau-airline-dev-request-starts.json"
ANSWERS = DATA / "tau-airline-dev-request-boundary-answers.jsonl"
STATE_CHANGING = (
    "book_reservation",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
    "send_certificate",
)


@dataclass(frozen=True)
class Check:
    """One critical call of a replayed conversation, as the critic was asked to judge it.

    Attributes:
        conversation: Index of the conversation in the JSON list.
        tool: The critical tool.
        task: The task the critic judged the call against.
        chain: The tools of the action chain it judged, the pending call last.
        said: The customer's messages before the call, in order.
        made: How many tool calls the agent made before this one (thought tools' calls, which
            never enter S, not counted).
        start: The customer message (index among theirs) the task begins at.
    """

    conversation: int
    tool: str
    task: str
    chain: list[str]
    said: list[str]
    made: int
    start: int


@dataclass
class Replayed:
    """One conversation replayed: its checks, its candidate starts and the judge's decisions.

    Attributes:
        candidates: The customer messages (index among theirs) where the rule begins a request
            after the first one.
        decisions: The judge's decision per candidate index (``continues``, ``decided_by``,
            ``reason``), as kept in the guard's state.
    """

    conversation: int
    checks: list[Check] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)
    decisions: dict[int, dict[str, Any]] = field(default_factory=dict)


def turns(conversation: dict) -> list[tuple[str, list[AIMessage]]]:
    """The conversation as (the customer's message, the agent's messages after it).

    It ends before a call that was never answered (the conversation stopped there).
    """
    traj = conversation["traj"]
    out: list[tuple[str, list[AIMessage]]] = []
    for position, message in enumerate(traj):
        following = {m.get("tool_call_id") for m in traj[position + 1 : position + 1 + 8]}
        if any(c["id"] not in following for c in message.get("tool_calls") or []):
            break
        if message["role"] == "user":
            out.append((message["content"] or "", []))
        elif message["role"] == "assistant" and out:
            calls = [
                {
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"]),
                    "id": call["id"],
                }
                for call in message.get("tool_calls") or []
            ]
            out[-1][1].append(AIMessage(message.get("content") or "", tool_calls=calls))
    if out and out[-1][1] and out[-1][1][-1].tool_calls:
        out[-1][1].append(AIMessage("(the conversation ended here)"))  # the model's last word
    return out


def _call_key(name: str, args: Any) -> str:
    return f"{name}:{json.dumps(args, sort_keys=True)}"


def recorded_tools(conversation: dict) -> list[StructuredTool]:
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


def _said_before_calls(conversation: dict) -> list[tuple[str, list[str], int]]:
    """Per critical call of the recorded conversation: (tool, customer messages, calls made)."""
    said: list[str] = []
    made = 0
    out = []
    for message in conversation["traj"]:
        if message["role"] == "user":
            said.append(message["content"] or "")
        for call in message.get("tool_calls") or []:
            if call["function"]["name"] in STATE_CHANGING:
                out.append((call["function"]["name"], list(said), made))
            made += call["function"]["name"] not in THOUGHT_TOOLS
    return out


def _start_of(task: str, said: Sequence[str]) -> int:
    """The customer message the task begins at (the task is their messages from it on)."""
    for start in range(len(said) - 1, -1, -1):
        if "\n".join(said[start:]) == task:
            return start
    raise AssertionError(f"the task is not a run of the customer's messages: {task[:80]!r}")


@dataclass
class _Run:
    """One conversation ready to replay: the guarded graph, its critic, what the customer sends."""

    graph: Any
    critic: ScriptedCritic
    inputs: list[dict[str, Any]]
    config: dict[str, Any]


def _setup(index: int, conversation: dict, boundaries: Any, timeout: float | None) -> _Run | None:
    flow = turns(conversation)
    tools = recorded_tools(conversation)
    if not any(t.name in STATE_CHANGING for t in tools):
        return None  # nothing critical to judge (and nothing for the guard to guard)
    critic = ScriptedCritic(scores=[0.9])
    replies = [message for _, agent in flow for message in agent]
    graph = with_inferact(
        create_agent(ScriptedChatModel(replies=replies), tools),
        critic=critic,
        critical=[t.name for t in tools if t.name in STATE_CHANGING],
        checkpointer=InMemorySaver(),
        request_boundaries=boundaries,
    )
    guard_of(graph).boundary_judge.timeout = timeout
    # The customer's closing message, which the agent never answered, is left out.
    inputs = [{"messages": [HumanMessage(customer)]} for customer, agent in flow if agent]
    return _Run(graph, critic, inputs, {"configurable": {"thread_id": f"tau-{index}"}})


def _collect(index: int, conversation: dict, critic: ScriptedCritic, values: Any) -> Replayed:
    replayed = Replayed(conversation=index)
    messages = values.get("messages") or []
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    decisions = values.get(BOUNDARIES) or {}
    for position in candidate_starts(messages, set(STATE_CHANGING)):
        user = humans.index(position)
        replayed.candidates.append(user)
        if messages[position].id in decisions:
            replayed.decisions[user] = decisions[messages[position].id]
    calls = _said_before_calls(conversation)
    assert len(calls) == len(critic.trajectories), (index, len(calls), len(critic.trajectories))
    for (tool, said, made), judged in zip(calls, critic.trajectories, strict=True):
        assert judged.steps[-1].tool_name == tool
        replayed.checks.append(
            Check(
                conversation=index,
                tool=tool,
                task=judged.task,
                chain=[s.tool_name for s in judged.steps],
                said=said,
                made=made,
                start=_start_of(judged.task, said),
            )
        )
    return replayed


def replay(
    index: int, conversation: dict, *, boundaries: Any = "rules", timeout: float | None = 60.0
) -> Replayed:
    """Replay one conversation (sync) with ``request_boundaries=boundaries``."""
    run = _setup(index, conversation, boundaries, timeout)
    if run is None:
        return Replayed(conversation=index)
    for payload in run.inputs:
        run.graph.invoke(payload, run.config)
    return _collect(index, conversation, run.critic, run.graph.get_state(run.config).values)


async def areplay(
    index: int, conversation: dict, *, boundaries: Any = "rules", timeout: float | None = 60.0
) -> Replayed:
    """Async :func:`replay` (the judge's calls are awaited: conversations run concurrently)."""
    run = _setup(index, conversation, boundaries, timeout)
    if run is None:
        return Replayed(conversation=index)
    for payload in run.inputs:
        await run.graph.ainvoke(payload, run.config)
    state = await run.graph.aget_state(run.config)
    return _collect(index, conversation, run.critic, state.values)


def conversations() -> list[dict]:
    """The 100 dev conversations."""
    return json.loads(CONVERSATIONS.read_text(encoding="utf-8"))


def labels() -> dict[tuple[int, int], str]:
    """The maintainers' reading: (conversation, customer message) -> new / continues / either."""
    data = json.loads(LABELS.read_text(encoding="utf-8"))
    return {(x["conversation"], x["user_message"]): x["start"] for x in data["labels"]}


def wrong_checks(replayed: Sequence[Replayed], read: dict[tuple[int, int], str]) -> list[Check]:
    """The checks judged against another request than the reader draws.

    A check is wrong when its task starts at a candidate read as continuing, or when it was
    merged across a candidate read as new (``either`` is right both ways).

    Raises:
        KeyError: A candidate that decides a check has no reading.
    """
    wrong = []
    for conversation in replayed:
        for check in conversation.checks:
            now = len(check.said) - 1
            key = (check.conversation, check.start)
            starts_at_continuing = check.start in conversation.candidates and (
                read[key] == "continues"
            )
            merged = [c for c in conversation.candidates if check.start < c <= now]
            merged_across_new = any(read[(check.conversation, c)] == "new" for c in merged)
            if starts_at_continuing or merged_across_new:
                wrong.append(check)
    return wrong


async def _run_all(boundaries: Any, timeout: float | None, concurrency: int) -> list[Replayed]:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, conversation: dict) -> Replayed:
        async with gate:
            return await areplay(index, conversation, boundaries=boundaries, timeout=timeout)

    return list(await asyncio.gather(*(one(i, c) for i, c in enumerate(conversations()))))


def report(replayed: Sequence[Replayed], read: dict[tuple[int, int], str]) -> dict[str, int]:
    """Print every candidate with a check after it (its reading, the judge's decision), then the
    counts; return the counts."""
    checks = [c for r in replayed for c in r.checks]
    wrong = wrong_checks(replayed, read)
    asked = agreed = 0
    for r in replayed:
        for candidate in r.candidates:
            reading = read.get((r.conversation, candidate))
            decision = r.decisions.get(candidate)
            if reading is None and decision is None:
                continue  # no check after it: nobody asked
            if decision is None:
                shown = "rule (not asked)"
            else:
                asked += decision["decided_by"] == "model"
                answer = "CONTINUES" if decision["continues"] else "NEW"
                shown = f"{answer} ({decision['decided_by']}): {decision['reason'][:160]!r}"
                merged = "continues" if decision["continues"] else "new"
                agreed += reading in (merged, "either")
            print(f"{r.conversation}/{candidate}  read {reading or '-'}  judged {shown}")
    counts = {
        "checks": len(checks),
        "right": len(checks) - len(wrong),
        "wrong": len(wrong),
        "asked": asked,
        "agreed": agreed,
    }
    print(
        f"\n{counts['right']} / {counts['checks']} checks judged against the request as a reader "
        f"draws it ({100 * counts['right'] / max(1, counts['checks']):.1f}%); "
        f"{counts['asked']} model decisions, {counts['agreed']} agreeing with the reading"
    )
    for check in wrong:
        print(f"  wrong: conversation {check.conversation}, {check.tool} after customer message "
              f"{len(check.said) - 1}, task from message {check.start}")
    return counts


def main(argv: Sequence[str] | None = None) -> dict[str, int]:
    """Run the replay as the command line asks; return the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (…/v1)")
    parser.add_argument("--api-key", default="x")
    parser.add_argument("--model", default="relay", help="the model name the endpoint serves")
    parser.add_argument("--transcript", type=Path, help="replay recorded answers instead")
    parser.add_argument("--rules", action="store_true", help="the deterministic rule alone")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per judge call")
    parser.add_argument("--concurrency", type=int, default=20, help="conversations at once")
    args = parser.parse_args(argv)
    if sum(bool(x) for x in (args.base_url, args.transcript, args.rules)) != 1:
        parser.error("give exactly one of --base-url, --transcript or --rules")
    boundaries: Any = "rules"
    if args.base_url:
        from langchain_openai import ChatOpenAI

        boundaries = ChatOpenAI(
            base_url=args.base_url,
            api_key=args.api_key,
            model=args.model,
            temperature=0,
            timeout=args.timeout,
            max_retries=2,
        )
    elif args.transcript:
        from inferact_langgraph.replay import ReplayChatModel

        boundaries = ReplayChatModel(transcript=args.transcript, temperature=0)
    started = time.perf_counter()
    replayed = asyncio.run(_run_all(boundaries, args.timeout, args.concurrency))
    counts = report(replayed, labels())
    print(f"({time.perf_counter() - started:.0f}s)", file=sys.stderr)
    return counts


if __name__ == "__main__":
    main()
