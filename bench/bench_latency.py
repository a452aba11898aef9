"""Target 1: latency of one InferAct check, as a ratio of the model delay d.

A scripted async model answers every prompt after ``d`` (``asyncio.sleep``). One InferAct check
makes two round trips (task inference, then the two verification orders concurrently), so
``check_time / d`` should be at most 2.2. Side by side, in the same run and with the same model,
the research code's design is simulated: the *same three prompts* that the check sent, sent one
after the other (3 round trips).

Usage: python bench/bench_latency.py [--delays 0.05 0.2 1.0] [--reps 15] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


async def _one(critic, model, trajectory, d: float) -> tuple[float, float, int]:
    model.reset()
    t0 = time.perf_counter()
    verdict = await critic.aevaluate(trajectory)
    t_check = time.perf_counter() - t0
    prompts = [list(p) for p in model.prompts]
    assert verdict.usage.model_calls == 3 == len(prompts), verdict.usage
    # The research design: the same three prompts, sequentially.
    t0 = time.perf_counter()
    for messages in prompts:
        await model.ainvoke(messages)
    t_seq = time.perf_counter() - t0
    return t_check, t_seq, len(prompts)


async def run(delays: list[float], reps: int, reps_long: int) -> list[dict]:
    trajectories = C.load_trajectories()
    results = []
    for d in delays:
        model = C.scripted_critic_model(delay=d)
        critic = C.make_critic("inferact", model, preset="hotpotqa")
        await critic.aevaluate(trajectories[0])  # warm-up (graph compile caches, imports)
        n = reps if d < 0.5 else reps_long
        ratios_check, ratios_seq, side = [], [], []
        for i in range(n):
            t_check, t_seq, _ = await _one(critic, model, trajectories[i % len(trajectories)], d)
            ratios_check.append(t_check / d)
            ratios_seq.append(t_seq / d)
            side.append(t_check / t_seq)
        results.append({"d": d, "n": n, "check": ratios_check, "seq": ratios_seq, "side": side})
    return results


def report(results: list[dict], write: bool = True) -> str:
    rows = []
    for r in results:
        ok = C.median(r["check"]) <= 2.2
        rows.append([
            f"{r['d'] * 1000:.0f} ms", r["n"], C.fmt_spread(r["check"]), C.fmt_spread(r["seq"]),
            C.fmt_spread(r["side"]), ("met" if ok else "**missed**") + " (<= 2.2)",
        ])
    body = C.table(["d", "reps", "InferAct check / d", "3 sequential calls / d",
                    "check / sequential", "target"], rows)
    body = (
        "One InferAct check (preset `hotpotqa`, trajectories from the shared data) with a scripted "
        "critic model answering after `d`; in the same run, the same three prompts sent "
        "sequentially (the research code's design). " + C.SPREAD_NOTE + ".\n\n" + body + "\n\n"
        "Two round trips is the floor (2.0 d): inference must finish before verification starts; "
        "the two verification orders run concurrently. The rest is the library's own overhead "
        "(prompt building, parsing, the inner LangGraph subgraphs)."
    )
    C.emit("1", "1. Latency of one check", body, write=write)
    return body


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--delays", type=float, nargs="+", default=[0.05, 0.2, 1.0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--reps-long", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    results = asyncio.run(run(args.delays, args.reps, args.reps_long))
    report(results, write=not args.no_write)
    return results


if __name__ == "__main__":
    main()
