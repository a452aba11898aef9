"""Attribution for target 2: what each part of InferActMiddleware's hook set costs.

Empty middlewares only (their hooks do nothing), run interleaved on the target-2 agent: HITL's
set (``after_model`` + ``wrap_tool_call``), InferActMiddleware's set (adds ``wrap_model_call``,
``before_agent`` and five state keys), and InferActMiddleware's set with one part removed.
Prints the median CPU ratio to the unwrapped agent and to HITL's set, per repetition. Not part
of run_all; quoted in docs/benchmarks.md (findings).

Usage: python bench/exp_offpath_floors.py [--reps 30] [--mode sync|async]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_offpath as B
import exp_design


def main(argv: list[str] | None = None) -> dict[str, float]:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--mode", choices=["sync", "async"], default="sync")
    args = ap.parse_args(argv)

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

    middlewares = {
        "unwrapped": [],
        "HITL's hooks": [hitl_floor],
        "InferActMiddleware's hooks": [inferact_floor],
        "... without wrap_model_call": [NoWrapModelCall()],
        "... without before_agent": [NoBeforeAgent()],
        "... without the state keys": [NoState()],
    }
    tools = list(B.tools())
    variants = {}
    for name, mw in middlewares.items():
        actor = B.make_actor(args.steps)
        variants[name] = (create_agent(actor, tools, checkpointer=InMemorySaver(), middleware=mw),
                          actor)
    # per repetition: CPU of each variant / CPU of the unwrapped agent, run interleaved
    vs_unwrapped = exp_design._interleave(variants, args.reps, args.mode)
    out = {}
    for name, ratios in vs_unwrapped.items():
        base = statistics.median(ratios)
        hitl = statistics.median(
            a / b for a, b in zip(ratios, vs_unwrapped["HITL's hooks"], strict=True))
        out[name] = hitl
        print(f"{args.mode} {name:30s} x{base:.3f} of unwrapped, x{hitl:.3f} of HITL's hooks")
    return out


if __name__ == "__main__":
    main()
