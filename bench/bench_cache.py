"""Target 7: cheap when sure: the cache hit path of an identical pending call.

``inferact_langgraph.cache.CachedCritic`` wraps any critic; its key is the critic's fingerprint,
the risk level and the action chain (tool call ids excluded), so an identical pending call under
a new id (a retried step, the same request run again) is a hit. Measured side by side with a
model delay d:

1. at the critic: a re-check without cache (the plain critic) against a ``CachedCritic`` hit, with
   the in-memory store and with the SQLite ``VerdictCache``;
2. in a graph: a ``with_inferact`` agent run twice (two threads) with the same task and the same
   action chain, plain critic vs ``CachedCritic``: model calls and run time of the second run.

Usage: python bench/bench_cache.py [--delay 0.05] [--reps 9] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


async def critic_level(d: float, reps: int, lengths: list[int]) -> list[dict]:
    from inferact_langgraph.cache import CachedCritic, InMemoryVerdictCache, VerdictCache

    model = C.scripted_critic_model(delay=d)
    critic = C.make_critic("inferact", model, preset="hotpotqa")
    memory = CachedCritic(critic, InMemoryVerdictCache())
    sqlite = CachedCritic(critic, VerdictCache(Path(tempfile.mkdtemp(prefix="inferact-bench-"))
                                               / "verdicts.sqlite"))
    real = C.load_trajectories()
    rows = []
    for n in lengths:
        traj = real[0] if n == 0 else C.synthetic_trajectory(n, seed=1)
        first = await memory.aevaluate(traj)  # misses fill the caches
        await sqlite.aevaluate(traj)
        recheck, hit_mem, hit_sql, calls, tokens, hit_calls = [], [], [], [], [], []
        for _ in range(reps):
            model.reset()
            t0 = time.perf_counter()
            v = await critic.aevaluate(traj)
            recheck.append(time.perf_counter() - t0)
            calls.append(model.calls)
            tokens.append(v.usage.input_tokens)
            model.reset()
            t0 = time.perf_counter()
            hit = await memory.aevaluate(traj)
            hit_mem.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            hit2 = await sqlite.aevaluate(traj)
            hit_sql.append(time.perf_counter() - t0)
            hit_calls.append(model.calls + hit.usage.model_calls + hit2.usage.model_calls)
            assert hit.score == first.score == hit2.score
        rows.append({"steps": len(traj.steps), "recheck": recheck, "mem": hit_mem,
                     "sqlite": hit_sql, "calls": calls, "tokens": tokens, "hit_calls": hit_calls})
    sqlite.cache.close()
    return rows


def graph_level(d: float) -> dict:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from inferact_langgraph import critical
    from inferact_langgraph.cache import CachedCritic
    from inferact_langgraph.guard.graph import with_inferact
    from inferact_langgraph.testing import ScriptedChatModel

    @tool
    def search(entity: str) -> str:
        """Search Wikipedia."""
        return f"{entity} is a Canadian-American singer."

    @critical
    @tool
    def finish(answer: str) -> str:
        """Give the final answer (critical)."""
        return "ok"

    def responder(messages):
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done == 0:
            return AIMessage("", tool_calls=[{"name": "search", "args": {"entity": "Jonny Craig"},
                                              "id": f"s{len(messages)}"}])
        if done == 1:
            return AIMessage("", tool_calls=[{"name": "finish", "args": {"answer": "Jonny Craig"},
                                              "id": f"f{len(messages)}"}])
        return "Done."

    out = {}
    for label in ("plain", "cached"):
        judge = C.scripted_critic_model(delay=d)
        critic = C.make_critic("inferact", judge)
        if label == "cached":
            critic = CachedCritic(critic)
        agent = with_inferact(
            create_agent(ScriptedChatModel(responder=responder), [search, finish]),
            critic=critic, checkpointer=InMemorySaver())
        for run in ("first", "second"):
            judge.reset()
            cfg = {"configurable": {"thread_id": f"cache-{label}-{run}"}}
            t0 = time.perf_counter()
            agent.invoke({"messages": [("user", "Which of Jonny Craig and Pete Doherty has been "
                                        "a member of more bands?")]}, cfg)
            out[(label, run)] = {"time": time.perf_counter() - t0, "calls": judge.calls}
    return {f"{k[0]}/{k[1]}": v for k, v in out.items()}


def report(rows: list[dict], graph: dict, d: float, write: bool = True) -> str:
    table_rows = []
    for r in rows:
        rc = C.median(r["recheck"])
        table_rows.append([
            r["steps"], f"{C.median(r['calls']):.0f}", f"{C.median(r['tokens']):.0f}",
            C.fmt_spread([x / d for x in r["recheck"]], 2),
            max(r["hit_calls"]),
            C.fmt_spread([x * 1e6 for x in r["mem"]], 0),
            C.fmt_spread([x * 1e6 for x in r["sqlite"]], 0),
            f"{C.median(r['mem']) / rc:.1e}", f"{C.median(r['sqlite']) / rc:.1e}",
        ])
    g = graph
    ok = all(max(r["hit_calls"]) == 0 for r in rows) and g["cached/second"]["calls"] == 0
    body = (
        "`inferact_langgraph.cache.CachedCritic` (landed during this benchmark work) wraps any "
        "critic; its key is the critic fingerprint, the risk and the action chain (tool call ids "
        f"excluded). Scripted model delay d = {d * 1000:.0f} ms. " + C.SPREAD_NOTE + ".\n\n"
        "In a graph (`with_inferact`, InferAct critic), two runs (two threads) with the same task "
        "and the identical action chain:\n\n"
        + C.table(["critic", "model calls, 1st run", "model calls, 2nd run",
                   "2nd run time / 1st run time"],
                  [[label, g[f"{label}/first"]["calls"], g[f"{label}/second"]["calls"],
                    f"{g[f'{label}/second']['time'] / g[f'{label}/first']['time']:.3f}"]
                   for label in ("plain", "cached")])
        + "\n\nAt the critic: a re-check without cache against a `CachedCritic` hit "
        "(`InMemoryVerdictCache`, or the SQLite `VerdictCache`), interleaved:\n\n"
        + C.table(["steps", "model calls / re-check", "prompt tokens / re-check",
                   "re-check time / d", "model calls on hits", "hit, in-memory (µs)",
                   "hit, SQLite (µs)", "hit / re-check (in-memory)", "hit / re-check (SQLite)"],
                  table_rows)
        + "\n\n" + ("Target met: a hit makes 0 model calls and costs a small fraction of a "
                    "re-check; it is dominated by the key (hashing the action chain)."
                    if ok else "**Target missed**: hits still made model calls.")
    )
    C.emit("7", "7. Cheap when sure (verdict cache)", body, write=write)
    return body


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--lengths", type=int, nargs="+", default=[0, 100, 500],
                    help="0 = a real trajectory from the shared data")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    rows = asyncio.run(critic_level(args.delay, args.reps, args.lengths))
    graph = graph_level(args.delay)
    report(rows, graph, args.delay, write=not args.no_write)
    return {"rows": rows, "graph": graph}


if __name__ == "__main__":
    main()
