"""A small guarded shop agent for the inbox tests: a scripted actor, a real InferAct critic on a
scripted critic model, no network. Served by ``tests/inbox_app/langgraph.json`` with the inbox.

The actor searches, then buys; it writes every prompt it receives to the JSON-lines file named
by ``INBOX_PROMPT_LOG`` (when set), so a test can read what the actor's next model call got.
The critic model infers three fixed tasks and rates the user's task high only when the pending
purchase is the product the task names (``B0n``): 0.2 in the original option order and 0.3 in
the reversed one (mean 0.25) when it is not, 0.9 / 0.8 when it is.

Task words steer the actor: "two" buys two wrong products in one step; "hostile" makes the
search result, the purchase arguments and the critic's justification carry HTML and script;
"unreachable" makes the critic model fail (the guard then asks a human, saying why); "retry"
buys the product the task names after a rejection (the critic approves it); "many" gives the
purchase many arguments; "slow" makes the purchase itself take 1.5 s (a run that is still going
when a second decision arrives; the tool runs in a worker thread, so the server is not blocked).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from inferact_langgraph import InferActCritic, critical, with_inferact
from inferact_langgraph.testing import ScriptedChatModel

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
INFERRED = ["buy a cheap pan", "buy a red mug", "compare mug prices"]
LONG_LISTING = "\n".join(
    f"B0{i}: mug, colour {c}, ${9 + i}.99, ceramic, 350 ml, dishwasher safe"
    for i, c in enumerate(["red", "blue", "green", "white", "black", "grey", "pink"], start=1)
)


@tool
def search(query: str) -> str:
    """Search the shop."""
    if "hostile" in query.lower():
        return f"Results for {query}: {HOSTILE}"
    return f"Results for {query}:\n{LONG_LISTING}"


@critical(risk="high", description="Buy the product (irreversible).")
@tool
def buy_now(
    asin: str,
    note: str = "",
    quantity: int = 1,
    colour: str = "",
    gift_wrap: bool = False,
    address: str = "",
) -> str:
    """Buy a product."""
    if note == "slow":
        time.sleep(1.5)
    return f"bought {asin}"


def _log(messages: list) -> None:
    path = os.environ.get("INBOX_PROMPT_LOG")
    if not path:
        return
    task = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
    entry = {"task": task, "prompt": [[m.type, str(m.content)] for m in messages]}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call-{uuid.uuid4().hex[:10]}"}


def actor(messages: list) -> AIMessage:
    """The scripted shop agent: search, buy (the wrong product), then finish."""
    _log(messages)
    task = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
    last = messages[-1]
    if not isinstance(last, ToolMessage):
        return AIMessage("I will search first.", tool_calls=[_call("search", {"query": task})])
    if last.name == "search":
        if "hostile" in task.lower():
            calls = [_call("buy_now", {"asin": "B01", "note": HOSTILE})]
        elif "two" in task.lower():
            calls = [_call("buy_now", {"asin": "B01"}), _call("buy_now", {"asin": "B03"})]
        elif "slow" in task.lower():
            calls = [_call("buy_now", {"asin": "B01", "note": "slow"})]
        elif "many" in task.lower():
            many = {"quantity": 2, "colour": "red", "gift_wrap": True, "address": "1 Main St"}
            calls = [_call("buy_now", {"asin": "B01", "note": "for the office", **many})]
        else:
            calls = [_call("buy_now", {"asin": "B01"})]
        return AIMessage("B01 looks right to me.", tool_calls=calls)
    wanted = re.search(r"\bB0\d\b", task)
    if last.status == "error" and "retry" in task.lower() and wanted:
        bought = [c["args"].get("asin") for m in messages for c in getattr(m, "tool_calls", [])]
        if wanted.group(0) not in bought:
            return AIMessage("", tool_calls=[_call("buy_now", {"asin": wanted.group(0)})])
    if last.status == "error":
        return AIMessage(f"I did not buy it. I read: {last.content}")
    return AIMessage(f"Done: {last.content}")


def _options(prompt: str) -> list[tuple[str, str]]:
    tail = prompt.split("The candidate user’s tasks are", 1)[1]
    return re.findall(r"^([A-Z])\. (.+)$", tail, re.M)


def judge(messages: list) -> str:
    """The scripted critic model (InferAct's inference, then verification in both orders)."""
    prompt = str(messages[-1].content)
    if "unreachable" in prompt:
        raise ConnectionError("the critic model is unreachable (connection refused)")
    if "G1:" not in prompt:
        listed = " ".join(f"{label}. {t}" for label, t in zip("ABC", INFERRED, strict=True))
        return f"The 3 most likely user’s tasks are: {listed}\nThe reason is: it buys a mug."
    options = _options(prompt)
    reversed_order = options[0][1].strip() == "None of the above"
    task_label, task = next(
        (lbl, t) for lbl, t in options if t not in [*INFERRED, "None of the above"]
    )
    red_label = next(lbl for lbl, t in options if t == "buy a red mug")
    actions = re.findall(r"^Action \d+: (.+)$", prompt, re.M)
    pending = actions[-1] if actions else ""
    wanted = re.search(r"\bB0\d\b", task)
    on_track = bool(wanted) and f'"{wanted.group(0)}"' in pending
    p = (0.8 if reversed_order else 0.9) if on_track else (0.3 if reversed_order else 0.2)
    why = (
        f"The pending action is {pending}; the task asks for {wanted.group(0) if wanted else '?'}."
    )
    if "hostile" in task.lower():
        why += f" The page said {HOSTILE}"
    return f"G1: {task_label} P1: {p}\nG2: {red_label} P2: 0.6\nJustification: {why}"


def build_graph(checkpointer: Any = None) -> Any:
    """The guarded agent (the LangGraph server supplies the checkpointer when it serves it)."""
    agent = create_agent(ScriptedChatModel(responder=actor), [search, buy_now])
    critic = InferActCritic(
        model=ScriptedChatModel(responder=judge), threshold=0.5, calibration=None
    )  # the scripted scores are shown as they are
    return with_inferact(agent, critic=critic, checkpointer=checkpointer)


graph = build_graph()
