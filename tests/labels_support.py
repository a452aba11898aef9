"""A deployment whose truth is known: scripted scores, a known reliability curve, a reviewer.

Each case is one thread: the user asks to buy an item whose id carries the critic's raw score
(``S734-17``: the scripted critic model answers p(task) = 0.734 for it), and whether the purchase
was on track is drawn from :func:`true_p`, a curve the critic's raw score does not follow (raw
0.62 is only a coin flip). The scripted reviewer answers every review and spot check with that
truth: approve an on-track call, reject an off-track one.

The best rule for costs ``miss`` and ``review`` flags a call when ``true_p(score) < 1 -
review / miss``; :func:`rates` measures a rule's false-alarm rate (flagged calls that were on
track) and miss rate (passed calls that were off track) on a set of cases.
"""

from __future__ import annotations

import math
import random
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.testing import ScriptedChatModel, scripted_critic_model

SLOPE, CENTRE = 12.0, 0.62
MISS_COST, REVIEW_COST = 5.0, 1.0
BEST_THRESHOLD = 1 - REVIEW_COST / MISS_COST  # flag when P(on track) < 0.8
_ITEM = re.compile(r"S(\d{3})(?:-\d+)+")


def true_p(score: float) -> float:
    """P(on track | raw score): the truth the reviewer follows."""
    return 1.0 / (1.0 + math.exp(-SLOPE * (score - CENTRE)))


BEST_CUTOFF = CENTRE + math.log(BEST_THRESHOLD / (1 - BEST_THRESHOLD)) / SLOPE
"""The raw score below which the best rule flags (about 0.736)."""


@dataclass(frozen=True)
class Case:
    item: str
    score: float
    on_track: bool


def make_cases(n: int, seed: int) -> list[Case]:
    """``n`` threads' items: raw scores uniform on [0.01, 0.99], truth drawn from true_p."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        score = rng.randint(10, 990) / 1000
        cases.append(
            Case(f"S{round(score * 1000):03d}-{seed}-{i}", score, rng.random() < true_p(score))
        )
    return cases


def score_of(action: str) -> float:
    """The raw score the scripted critic model gives the purchase in ``action``."""
    match = _ITEM.search(action)
    return int(match.group(1)) / 1000 if match else 0.5


@critical(risk="high")
@tool
def buy_now(item: str) -> str:
    """Buy an item (irreversible)."""
    return f"bought {item}"


def _actor(messages: list[Any]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done: {last.content}", id=f"done-{uuid.uuid4().hex}")
    found = _ITEM.search(str(last.content))
    item = found.group(0) if found else "S500-0"
    # A call id fixed by the item: the seeded spot-check draws are the same on every run.
    call = {"name": "buy_now", "args": {"item": item}, "id": f"buy-{item}"}
    return AIMessage("", id=f"ai-{uuid.uuid4().hex}", tool_calls=[call])


def shop_agent() -> Any:
    """The unguarded agent: it buys the item the user names, then says so."""
    return create_agent(ScriptedChatModel(responder=_actor), [buy_now])


def critic_model() -> ScriptedChatModel:
    """InferAct's model: it gives the user's task the item's raw score."""
    return scripted_critic_model(score_of)


def guarded_shop(**arguments: Any) -> Any:
    """The shop agent guarded by InferAct on :func:`critic_model`, flagging below a raw 0.5.

    The deployment starts on the raw score (``calibration=None``), which is the test's truth;
    ``arguments`` (spot checks, checkpointer, store, labels) go to ``with_inferact``.
    """
    return with_inferact(
        shop_agent(), model=critic_model(), threshold=0.5, calibration=None, **arguments
    )


def decide(action: dict[str, Any], truth: dict[str, bool]) -> dict[str, Any]:
    """The scripted reviewer: approve an on-track call, reject an off-track one."""
    item = str(action["args"]["item"])
    if truth[item]:
        return {"type": "approve"}
    return {"type": "reject", "message": f"{item} is not what I asked for"}


@dataclass
class Run:
    item: str
    reviewed: bool
    spot_check: bool


def run_case(graph: Any, case: Case, truth: dict[str, bool], thread: str) -> Run:
    """One thread: the request, then every review answered by the scripted reviewer."""
    cfg = {"configurable": {"thread_id": thread}}
    out = graph.invoke({"messages": [("user", f"buy item {case.item}")]}, cfg)
    reviewed = spot = False
    while "__interrupt__" in out:
        value = out["__interrupt__"][0].value
        reviewed = True
        spot = spot or any(a["inferact"].get("spot_check") for a in value["action_requests"])
        decisions = [decide(a, truth) for a in value["action_requests"]]
        out = graph.invoke(Command(resume={"decisions": decisions}), cfg)
    return Run(case.item, reviewed, spot)


def rates(cases: Sequence[Case], flagged: Callable[[Case], bool]) -> tuple[float, float]:
    """(false-alarm rate, miss rate) of a rule on ``cases``.

    False alarms: the share of flagged calls that were on track. Misses: the share of passed
    calls that were off track.
    """
    flag = [c for c in cases if flagged(c)]
    passed = [c for c in cases if not flagged(c)]
    false_alarm = sum(c.on_track for c in flag) / max(1, len(flag))
    miss = sum(not c.on_track for c in passed) / max(1, len(passed))
    return false_alarm, miss


def best_rule(case: Case) -> bool:
    """The rule the truth calls best for MISS_COST and REVIEW_COST."""
    return true_p(case.score) < BEST_THRESHOLD


def calibrate(db: str, out: Any, *extra: str) -> dict[str, Any]:
    """``inferact calibrate --db db ... --out out --json`` for this deployment's costs."""
    import json

    from typer.testing import CliRunner

    from inferact_langgraph.cli import app

    args = ["calibrate", "--db", db, "--miss-cost", str(MISS_COST), "--review-cost",
            str(REVIEW_COST), "--out", str(out), "--json", *extra]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def deploy_and_measure(calibration: Any, threshold: float, n: int = 300) -> list[Case]:
    """Deploy the fitted calibration and threshold on ``n`` fresh threads; the flagged cases."""
    from langgraph.checkpoint.memory import InMemorySaver

    from inferact_langgraph import with_inferact

    guarded = with_inferact(
        shop_agent(),
        model=critic_model(),
        calibration=str(calibration),
        threshold=threshold,
        checkpointer=InMemorySaver(),
    )
    fresh = make_cases(n, seed=99)
    truth = {c.item: c.on_track for c in fresh}
    runs = [run_case(guarded, c, truth, f"fresh-{i}") for i, c in enumerate(fresh)]
    flagged = {r.item for r in runs if r.reviewed}
    return [c for c in fresh if c.item in flagged]
