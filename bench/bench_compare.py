"""Target 6: what each critic costs per check, on the 90 shared HotPotQA trajectories.

InferAct, standard evaluation, self-consistency (5 samples) and multi-step evaluation run on every
trajectory with a scripted model that answers each prompt in the format it asks for. Reported per
check: model calls, prompt (input) tokens and output tokens as the critic's ``Usage`` counts them,
and, on a subset with a model delay d, the latency in units of d (sequential round trips).

Usage: python bench/bench_compare.py [--limit 90] [--latency-n 10] [--delay 0.1] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

LABELS = {
    "inferact": "InferAct (N=3, 2 orders)",
    "standard": "standard evaluation",
    "self-consistency": "self-consistency (5 samples)",
    "multistep": "multi-step evaluation",
}


async def run(limit: int | None, latency_n: int, d: float, preset: str) -> dict:
    trajectories = C.load_trajectories(limit)
    out = {}
    for kind in C.CRITIC_KINDS:
        model = C.scripted_critic_model(seed=0)
        critic = C.make_critic(kind, model, preset=preset)
        verdicts = await asyncio.gather(*(critic.aevaluate(t) for t in trajectories))
        slow = C.scripted_critic_model(delay=d, seed=0)
        slow_critic = C.make_critic(kind, slow, preset=preset)
        lat = []
        for t in trajectories[:latency_n]:
            t0 = time.perf_counter()
            await slow_critic.aevaluate(t)
            lat.append((time.perf_counter() - t0) / d)
        out[kind] = {
            "calls": [v.usage.model_calls for v in verdicts],
            "input": [v.usage.input_tokens for v in verdicts],
            "output": [v.usage.output_tokens for v in verdicts],
            "latency": lat,
            "n": len(verdicts),
        }
    return out


def report(r: dict, preset: str, d: float, write: bool = True) -> str:
    base = C.median(r["standard"]["input"])

    def ratio(kind: str) -> float:
        return C.median(r[kind]["input"]) / base

    rows = []
    for kind, x in r.items():
        rows.append([
            LABELS[kind], f"{C.median(x['calls']):.0f}",
            C.fmt_spread(x["input"], 0), f"{sum(x['input']) / x['n']:.0f}",
            f"{C.median(x['input']) / base:.2f}",
            C.fmt_spread(x["output"], 0), C.fmt_spread(x["latency"], 2),
        ])
    n = next(iter(r.values()))["n"]
    body = (
        f"{n} trajectories from `hotpotqa-react-trial1.jsonl`, preset `{preset}`, default "
        "`TokenBudget`. Tokens are the critics' own `Usage` counts (`approx_tokens`, ~4 characters "
        "a token, since the scripted model reports none); output tokens are those of the scripted "
        "answers (short, well-formed), so they are a lower bound: a real model writes its "
        "justification and reason too. Latency: with a model delay "
        f"d = {d * 1000:.0f} ms, on the first {len(next(iter(r.values()))['latency'])} "
        "trajectories; concurrent calls count once. Median [p10, p90] over the trajectories.\n\n"
        + C.table(["critic", "model calls / check", "prompt tokens / check",
                   "mean prompt tokens / check", "prompt tokens vs standard",
                   "output tokens / check (scripted)", "latency / d"], rows)
        + "\n\nHow to choose (price side only; detection quality needs a capable model, see the "
        "paper): standard evaluation is the cheapest (one call, one round trip); multi-step costs "
        f"one call with a {ratio('multistep'):.2f}x prompt; self-consistency pays "
        f"{ratio('self-consistency'):.1f}x the prompt tokens in one round trip; InferAct pays "
        f"3 calls, {ratio('inferact'):.1f}x the prompt tokens of standard (inference sees the "
        "chain once, each verification order sees the chain plus the 5 options), and two "
        "round trips."
    )
    C.emit("6", "6. Compared with the alternatives", body, write=write)
    return body


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--latency-n", type=int, default=10)
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--preset", default="hotpotqa")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    r = asyncio.run(run(args.limit, args.latency_n, args.delay, args.preset))
    report(r, args.preset, args.delay, write=not args.no_write)
    return r


if __name__ == "__main__":
    main()
