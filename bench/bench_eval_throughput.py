"""Throughput of the evaluation runner on the 90 HotPotQA trajectories of tests/data.

A scripted critic model answers every prompt after a fixed delay (default 50 ms), in the
format each critic expects, so the numbers measure the harness (concurrency, bookkeeping,
parsing), not a provider. Runs InferAct at concurrency 1, 8 and 32 (repeated; median and
spread), then each critic once to record calls and tokens per trajectory, and writes
``docs/benchmarks-eval.md``.

Usage:
    python bench/bench_eval_throughput.py [--delay 0.05] [--repeats 3] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from inferact_langgraph.critics import make_critic
from inferact_langgraph.eval import EvalRunner, build_report, load_dataset
from inferact_langgraph.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hotpotqa-react-trial1.jsonl"
DOC = ROOT / "docs" / "benchmarks-eval.md"
INFERRED = ("alpha question", "beta question", "gamma question")
CRITICS = ("inferact", "multistep:product", "standard", "self_consistency")


def judge(messages) -> str:
    """Answer any critic prompt in its format; the probability is a hash of the prompt."""
    text = messages[-1].content
    p = int(hashlib.sha256(text.encode()).hexdigest()[:6], 16) % 1000 / 1000
    if "G1:" in text:
        options = re.findall(r"^([A-E])\. (.+)$", text, re.M)
        real = [
            lab
            for lab, opt in options
            if opt.strip() not in INFERRED and "none of the above" not in opt.lower()
        ]
        return f"G1: {real[0] if real else 'A'} P1: {p:.2f}\nJustification: scripted."
    if "most likely" in text:
        return (
            f"The 3 most likely questions are:\nA. {INFERRED[0]} B. {INFERRED[1]} "
            f"C. {INFERRED[2]}\nThe reason is: scripted."
        )
    if "Step 1: <" in text:
        n = len(re.findall(r"^Action \d+:", text, re.M)) or 1
        return "\n".join(f"Step {i}: {p:.2f}" for i in range(1, n + 1)) + "\nJustification: -"
    word = "Correct" if p >= 0.5 else "Incorrect"
    return f"The answer is: {word}\nConfidence: {max(p, 1 - p):.2f}\nJustification: scripted."


def run_once(items, spec: str, *, concurrency: int, delay: float):
    model = ScriptedChatModel(responder=judge, delay=delay)
    critic = make_critic(spec, model=model, preset="hotpotqa")
    runner = EvalRunner({spec: critic}, concurrency=concurrency, progress=False)
    started = time.perf_counter()
    results = asyncio.run(runner.arun(items))
    elapsed = time.perf_counter() - started
    return elapsed, runner, results, model.calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    dataset = load_dataset(DATA)
    items = dataset.items
    n = len(items)
    print(f"{n} trajectories, delay {args.delay * 1000:.0f} ms, repeats {args.repeats}")

    throughput: dict[int, list[float]] = {}
    for c in args.concurrency:
        rates = []
        for _ in range(args.repeats):
            elapsed, runner, _, calls = run_once(items, "inferact", concurrency=c, delay=args.delay)
            assert runner.stats.errors == 0, runner.results
            assert calls == 3 * n
            rates.append(n / elapsed)
        throughput[c] = rates
        print(
            f"  inferact  concurrency {c:>2}: {statistics.median(rates):7.2f} traj/s "
            f"(min {min(rates):.2f}, max {max(rates):.2f})"
        )

    cost_rows = []
    for spec in CRITICS:
        elapsed, runner, results, calls = run_once(items, spec, concurrency=32, delay=args.delay)
        report_started = time.perf_counter()
        report = build_report(dataset, results, dev_split=0.3)
        report_seconds = time.perf_counter() - report_started
        s = report.critics[spec]
        cost_rows.append(
            (
                spec,
                s.errors,
                s.per_trajectory("model_calls"),
                s.per_trajectory("input_tokens"),
                s.per_trajectory("output_tokens"),
                n / elapsed,
                report_seconds,
            )
        )
        print(
            f"  {spec:<18} calls/traj {s.per_trajectory('model_calls'):.1f}  prompt tok/traj "
            f"{s.per_trajectory('input_tokens'):.0f}  errors {s.errors}  "
            f"report {report_seconds * 1000:.0f} ms"
        )

    if args.no_write:
        return
    base = statistics.median(throughput[args.concurrency[0]])
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        cpu = platform.processor() or "unknown"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    import os

    lines = [
        "## Evaluation harness throughput",
        "",
        "How fast `inferact eval` gets through the 90 HotPotQA trajectories of "
        "`tests/data` when the critic model answers after a fixed delay. The model is "
        "`ScriptedChatModel` answering each critic's prompt in its format after "
        f"{args.delay * 1000:.0f} ms (`asyncio.sleep`), so this measures the harness: "
        "concurrency, bookkeeping and parsing, not a provider. No cache (every check is paid).",
        "",
        f"- Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}, commit `{commit}`",
        f"- Machine: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}, langchain-core {version('langchain-core')}, "
        f"langgraph {version('langgraph')}, scikit-learn {version('scikit-learn')}",
        f"- Command: `python bench/bench_eval_throughput.py --delay {args.delay} "
        f"--repeats {args.repeats}`",
        "",
        f"### Throughput (InferAct: 3 calls a trajectory, {args.repeats} runs each)",
        "",
        "InferAct makes one inference call, then the original- and reversed-order "
        "verification calls concurrently: two round trips, so the floor at concurrency 1 is "
        f"{2 * args.delay * 1000:.0f} ms a trajectory "
        f"({1 / (2 * args.delay):.1f} trajectories/s).",
        "",
        "| concurrency | trajectories/s (median) | min | max | speed-up vs 1 | ideal speed-up |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for c, rates in throughput.items():
        med = statistics.median(rates)
        lines.append(
            f"| {c} | {med:.2f} | {min(rates):.2f} | {max(rates):.2f} | "
            f"{med / base:.1f}x | {min(c, n) / args.concurrency[0]:.0f}x |"
        )
    lines += [
        "",
        "### Cost per trajectory, by critic (concurrency 32)",
        "",
        "Tokens are estimated by the critics (about four characters a token) because the "
        "scripted model reports no usage; with a real provider the report shows its counts. "
        "Prompts use the `hotpotqa` preset and the default token budget.",
        "",
        "| critic | model calls / traj | prompt tokens / traj | output tokens / traj | "
        "trajectories/s | report build |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for spec, _errors, calls, tin, tout, rate, rep in cost_rows:
        lines.append(
            f"| `{spec}` | {calls:.1f} | {tin:.0f} | {tout:.0f} | {rate:.1f} | "
            f"{rep * 1000:.0f} ms |"
        )
    lines += [
        "",
        "Self-consistency asks the same prompt five times (temperature 0.7), so it pays five "
        "prompts; InferAct's three prompts differ (inference sees no task; the two "
        "verification prompts list the options in opposite orders). Multi-step and standard "
        "evaluation make one call each.",
        "",
    ]
    from bench_replay_eval import replace_block  # one doc, one block per script

    DOC.parent.mkdir(parents=True, exist_ok=True)
    replace_block(DOC, "throughput", "\n".join(lines))
    print(f"wrote the throughput block of {DOC}")


if __name__ == "__main__":
    sys.exit(main())
