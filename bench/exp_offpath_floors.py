"""Attribution for target 2 (issue 13): what each part of InferActMiddleware's hook set costs.

Empty middlewares only (their hooks do nothing), run interleaved on the target-2 agent: HITL's
set (``after_model`` + ``wrap_tool_call``), InferActMiddleware's set (adds ``wrap_model_call``,
``before_agent`` and five state keys), and InferActMiddleware's set with one part removed.
Prints the median CPU ratio to the unwrapped agent and to HITL's set, per repetition. Not part
of run_all; quoted in docs/benchmarks.md (findings, issue 13 item 3).

Usage: python bench/exp_offpath_floors.py [--reps 30] [--mode sync|async]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_offpath as B


def main(argv: list[str] | None = None) -> dict[str, float]:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from inferact_langgraph import critical

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--mode", choices=["sync", "async"], default="sync")
    args = ap.parse_args(argv)

    @tool
    def lookup(key: str) -> str:
        """Look something up (not critical)."""
        return f"value of {key}"

    @critical
    @tool
    def buy_now(asin: str) -> str:
        """Buy a product (critical)."""
        return f"bought {asin}"

    hitl_floor, inferact_floor = B.floors()
    floor = type(inferact_floor)

    class NoWrapModelCall(floor):
        wrap_model_call = AgentMiddleware.wrap_model_call
        awrap_model_call = AgentMiddleware.awrap_model_call

    class NoBeforeAgent(floor):
        before_agent = AgentMiddleware.before_agent
        abefore_agent = AgentMiddleware.abefore_agent

    class NoState(floor):
        state_schema = AgentMiddleware.state_schema

    variants = {
        "unwrapped": [],
        "HITL's hooks": [hitl_floor],
        "InferActMiddleware's hooks": [inferact_floor],
        "... without wrap_model_call": [NoWrapModelCall()],
        "... without before_agent": [NoBeforeAgent()],
        "... without the state keys": [NoState()],
    }
    actors = {k: B.make_actor(args.steps) for k in variants}
    agents = {k: create_agent(actors[k], [lookup, buy_now], checkpointer=InMemorySaver(),
                              middleware=mw) for k, mw in variants.items()}
    names = list(agents)
    cpu: dict[str, list[float]] = {n: [] for n in names}
    counter = [0]

    def once(name: str) -> None:
        counter[0] += 1
        cfg = {"configurable": {"thread_id": f"{name}-{counter[0]}"}, "recursion_limit": 10_000}
        inp = {"messages": [("user", "look up the keys")]}
        actors[name].reset()
        gc.collect()
        c0 = time.process_time()
        if args.mode == "async":
            asyncio.run(agents[name].ainvoke(inp, cfg))
        else:
            agents[name].invoke(inp, cfg)
        cpu[name].append(time.process_time() - c0)

    for name in names:  # warm-up
        once(name)
        cpu[name].clear()
    for rep in range(args.reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            once(name)
    out = {}
    for name in names:
        base = statistics.median(a / b for a, b in zip(cpu[name], cpu["unwrapped"], strict=True))
        hitl = statistics.median(
            a / b for a, b in zip(cpu[name], cpu["HITL's hooks"], strict=True))
        out[name] = hitl
        print(f"{args.mode} {name:30s} x{base:.3f} of unwrapped, x{hitl:.3f} of HITL's hooks")
    return out


if __name__ == "__main__":
    main()
