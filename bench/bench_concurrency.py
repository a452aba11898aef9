"""Target 5: 1,000 concurrent InferAct checks on one event loop, model delay d = 200 ms.

Wall time of ``asyncio.gather`` over N checks (target: <= 3 d), and, side by side in the same
run, a reference with the same model calls and no critic machinery: per check, the inference
prompt, then the two verification prompts concurrently, sent straight to the model (the floor
that the LangChain model layer allows). Memory per pending check: ``tracemalloc``'s traced
memory while all N checks are waiting on the model, minus the baseline, divided by N (in a
separate run, since tracing slows Python down).

Usage: python bench/bench_concurrency.py [--n 1000] [--delay 0.2] [--reps 3] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


async def _reference_check(model, prompts) -> None:
    await model.ainvoke(prompts[0])
    await asyncio.gather(model.ainvoke(prompts[1]), model.ainvoke(prompts[2]))


async def _sleep_check(d: float) -> None:
    await asyncio.sleep(d)
    await asyncio.gather(asyncio.sleep(d), asyncio.sleep(d))


async def run(n: int, d: float, reps: int) -> dict:
    trajectories = C.load_trajectories()
    work = [trajectories[i % len(trajectories)] for i in range(n)]
    model = C.scripted_critic_model(delay=d)
    critic = C.make_critic("inferact", model, preset="hotpotqa")
    # Prompts of one check per trajectory, for the reference (recorded with an instant model).
    recorder = C.scripted_critic_model()
    rec_critic = C.make_critic("inferact", recorder, preset="hotpotqa")
    prompts = {}
    for t in trajectories:
        recorder.reset()
        await rec_critic.aevaluate(t)
        prompts[id(t)] = [list(p) for p in recorder.prompts]
    await critic.aevaluate(work[0])  # warm-up
    check_ratio, ref_ratio, side, cpu_per_check, loop_ratio, ref_cpu = [], [], [], [], [], []
    for rep in range(reps):
        for kind in (("check", "ref") if rep % 2 == 0 else ("ref", "check")):
            gc.collect()
            model.reset()
            c0, t0 = time.process_time(), time.perf_counter()
            if kind == "check":
                verdicts = await asyncio.gather(*(critic.aevaluate(t) for t in work))
                wall = time.perf_counter() - t0
                assert len(verdicts) == n and all(v.usage.model_calls == 3 for v in verdicts)
                check_ratio.append(wall / d)
                cpu_per_check.append((time.process_time() - c0) / n)
            else:
                await asyncio.gather(*(_reference_check(model, prompts[id(t)]) for t in work))
                wall = time.perf_counter() - t0
                ref_ratio.append(wall / d)
                ref_cpu.append((time.process_time() - c0) / n)
            assert model.calls == 3 * n, model.calls
        side.append(check_ratio[-1] / ref_ratio[-1])
        t0 = time.perf_counter()
        await asyncio.gather(*(_sleep_check(d) for _ in work))
        loop_ratio.append((time.perf_counter() - t0) / d)
    memory = await measure_memory(critic, model, work, d)
    ref_memory = await measure_memory(critic, model, work, d, prompts)
    memory["ref_mem_per_check_kb"] = ref_memory["mem_per_check_kb"]
    return {"n": n, "d": d, "reps": reps, "check": check_ratio, "ref": ref_ratio, "side": side,
            "cpu_ms": [c * 1000 for c in cpu_per_check], "ref_cpu_ms": [c * 1000 for c in ref_cpu],
            "loop": loop_ratio, **memory}


async def measure_memory(critic, model, work, d: float, prompts: dict | None = None) -> dict:
    """Traced memory while every check waits on the model (its first round trip)."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Started(BaseCallbackHandler):
        count = 0

        def on_chat_model_start(self, *args, **kwargs):
            Started.count += 1

    n = len(work)
    model.callbacks = [Started()]
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    model.delay = 3600.0  # every check waits on its first call until we have measured
    if prompts is None:
        tasks = [asyncio.ensure_future(critic.aevaluate(t)) for t in work]
    else:
        tasks = [asyncio.ensure_future(_reference_check(model, prompts[id(t)])) for t in work]
    started = time.perf_counter()
    while Started.count < n and time.perf_counter() - started < 120:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    pending_calls = Started.count
    gc.collect()
    current = tracemalloc.get_traced_memory()[0]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    model.callbacks = None
    tracemalloc.stop()
    model.delay = d
    return {"mem_per_check_kb": (current - base) / n / 1024,
            "pending_at_snapshot": pending_calls}


def report(r: dict, write: bool = True) -> str:
    ok = C.median(r["check"]) <= 3
    rows = [
        ["InferAct checks (`critic.aevaluate`)", C.fmt_spread(r["check"], 2),
         C.fmt_spread(r["cpu_ms"], 2), ("met" if ok else f"**missed** ({C.median(r['check']) / 3:.1f}x the target)")],
        ["reference: same 3 model calls per check, no critic machinery", C.fmt_spread(r["ref"], 2),
         C.fmt_spread(r["ref_cpu_ms"], 2), "-"],
        ["event loop only: 3 `asyncio.sleep(d)` per check (1 then 2 concurrent)",
         C.fmt_spread(r["loop"], 2), "-", "-"],
        ["ratio InferAct / reference (per repetition)", C.fmt_spread(r["side"], 2), "-", "-"],
    ]
    body = (
        f"{r['n']} checks started together with `asyncio.gather` on one event loop; the scripted "
        f"model answers every call after d = {r['d'] * 1000:.0f} ms (`asyncio.sleep`). "
        f"{r['reps']} repetitions, check and reference alternating. " + C.SPREAD_NOTE + ".\n\n"
        + C.table(["what", "wall time / d", "CPU ms per check", "target (<= 3 d)"], rows)
        + f"\n\nMemory per pending check (tracemalloc, {r['pending_at_snapshot']} of "
        f"{r['n']} checks waiting on their first model call, the model delay made long for the "
        f"snapshot): **{r['mem_per_check_kb']:.1f} KiB** for InferAct, against "
        f"{r['ref_mem_per_check_kb']:.1f} KiB for the reference's bare model call (the reference's prompts were built before "
        "the snapshot; InferAct builds its ~5 KB inference prompt inside the check), i.e. "
        f"{r['mem_per_check_kb'] / max(r['ref_mem_per_check_kb'], 1e-9):.1f}x."
    )
    C.emit("5", "5. Concurrency", body, write=write)
    return body


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    r = asyncio.run(run(args.n, args.delay, args.reps))
    report(r, write=not args.no_write)
    return r


if __name__ == "__main__":
    main()
