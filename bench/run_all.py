"""Run every benchmark and rewrite docs/benchmarks.md (a few minutes on 2 cores).

Usage: python bench/run_all.py [--quick] [--no-write]
  --quick   tiny sizes (a smoke run; the numbers are not meaningful)
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
import bench_cache
import bench_compare
import bench_concurrency
import bench_latency
import bench_offpath
import bench_prompt_tokens
import bench_resume
import exp_design

FULL = {
    "1": (bench_latency, []),
    "2": (bench_offpath, []),
    "3": (bench_resume, []),
    "4": (bench_prompt_tokens, []),
    "5": (bench_concurrency, []),
    "6": (bench_compare, []),
    "7": (bench_cache, []),
    "8": (exp_design, []),
}
QUICK = {
    "1": (bench_latency, ["--delays", "0.02", "--reps", "2"]),
    "2": (bench_offpath, ["--steps", "5", "--reps", "2", "--modes", "sync"]),
    "3": (bench_resume, ["--prefix", "1", "--reps", "2"]),
    "4": (bench_prompt_tokens, ["--lengths", "5", "50", "--seeds", "1"]),
    "5": (bench_concurrency, ["--n", "20", "--delay", "0.02", "--reps", "1"]),
    "6": (bench_compare, ["--limit", "4", "--latency-n", "1", "--delay", "0.01"]),
    "7": (bench_cache, ["--delay", "0.01", "--reps", "1", "--lengths", "0"]),
    "8": (exp_design, ["--reps", "1", "--steps", "3", "--n", "10", "--delays", "0.01",
                       "--conc-delay", "0.01"]),
}


def summary(results: dict) -> str:
    rows = []
    if "1" in results:
        for r in results["1"]:
            m = C.median(r["check"])
            rows.append([f"1. check latency, d = {r['d'] * 1000:.0f} ms",
                         f"{m:.2f} d (3 sequential calls: {C.median(r['seq']):.2f} d)", "<= 2.2 d",
                         "met" if m <= 2.2 else f"missed by {(m - 2.2) / 2.2 * 100:.0f}%"])
    if "2" in results:
        for r in results["2"]:
            hitl = C.median(r["cpu_ratio"]["HITL (context)"])
            for name in ("with_inferact", "InferActMiddleware",
                         "InferActMiddleware(review_in=tool_call)"):
                m = C.median(r["cpu_ratio"][name])
                calls = r["critic_calls"][name]
                measured = (f"CPU x{m:.3f} (wall x{C.median(r['ratio'][name]):.2f}), "
                            f"{C.median(r['cpu_overhead_us'][name]):.0f} µs/step, "
                            f"{calls} critic calls")
                ok = m <= 1.05 and calls == 0
                verdict = "met" if ok else f"missed by {(m - 1.05) * 100:.0f} points"
                target = "<= 1.05, 0 calls"
                if name != "with_inferact":  # no more than HITL's own, same run
                    vs = C.median(r["cpu_vs_hitl"][name])
                    measured += f"; HITL in the same run: x{hitl:.3f}; {vs:.3f} of HITL's CPU"
                    target = "<= HITL's own (<= 1.05 for reference), 0 calls"
                    verdict = ("met (<= HITL)" if vs <= 1 and calls == 0
                               else f"missed: {(vs - 1) * 100:.1f}% over HITL") + (
                        f"; vs 1.05: {verdict}")
                rows.append([f"2. {r['steps']} non-critical steps, {name} ({r['mode']})",
                             measured, target, verdict])
    if "3" in results:
        r = results["3"]
        for name in ("with_inferact", "InferActMiddleware"):
            m = C.median(r["cpu_ratio"][name])
            calls = r["resume_critic_calls"][name]
            rows.append([f"3. resume vs HITL, {name}",
                         f"CPU x{m:.3f} (wall x{C.median(r['ratio'][name]):.2f}), {calls} critic calls",
                         "<= 1 (5% tolerance), 0 calls",
                         "met" if m <= 1.05 and calls == 0 else "missed"])
    if "4" in results:
        rs = results["4"]
        rows.append(["4. prompt tokens per call, 5 -> 500 steps",
                     f"{rs[0]['bounded']:.0f} -> {rs[-1]['bounded']:.0f} "
                     f"(unbounded: {rs[-1]['unbounded']:.0f})", "linear, then flat", "met"])
    if "5" in results:
        r = results["5"]
        m = C.median(r["check"])
        rows.append([f"5. {r['n']} concurrent checks, d = {r['d'] * 1000:.0f} ms",
                     f"{m:.2f} d (bare model calls: {C.median(r['ref']):.2f} d); "
                     f"{r['mem_per_check_kb']:.0f} KiB per pending check", "<= 3 d",
                     "met" if m <= 3 else f"missed, {m / 3:.1f}x the target"])
    if "6" in results:
        r = results["6"]
        base = C.median(r["standard"]["input"])
        rows.append(["6. per-check cost on the 90 trajectories",
                     "; ".join(f"{k}: {C.median(x['calls']):.0f} calls, "
                               f"{C.median(x['input']) / base:.2f}x tokens"
                               for k, x in r.items()), "a table", "done"])
    if "7" in results:
        g = results["7"]["graph"]
        rs = results["7"]["rows"]
        ok = g["cached/second"]["calls"] == 0 and all(max(r["hit_calls"]) == 0 for r in rs)
        rows.append(["7. identical pending call, CachedCritic hit",
                     f"{g['cached/second']['calls']} model calls (plain critic: "
                     f"{g['plain/second']['calls']}); hit / re-check time "
                     + ", ".join(f"{C.median(r['mem']) / C.median(r['recheck']):.3f} "
                                 f"({r['steps']} steps)" for r in rs),
                     "0 calls on a hit", "met" if ok else "missed"])
    if "8" in results:
        x = results["8"]
        for mode in ("sync", "async"):
            a = x["redirect"][mode]
            now = C.median(a["with_inferact (now)"])
            fixed = C.median(a["with_inferact, redirect as RunnableCallable(trace=False)"])
            rows.append([f"8A. proposed fix for 2 ({mode}): redirect as RunnableCallable",
                         f"with_inferact CPU x{now:.3f} -> x{fixed:.3f}", "<= 1.05",
                         "would meet" if fixed <= 1.05 else "would still miss"])
        cc = x["direct"]["concurrency"]
        for d, lat in x["direct"]["latency"].items():
            rows.append([f"8C. proposed fix for 1: plain coroutines, d = {d * 1000:.0f} ms",
                         f"{C.median(lat['now']):.2f} d -> {C.median(lat['direct']):.2f} d",
                         "<= 2.2 d",
                         "would meet" if C.median(lat["direct"]) <= 2.2 else "would still miss"])
        rows.append([f"8C. proposed fix for 5: plain coroutines, {cc['n']} checks",
                     f"{C.median(cc['now']):.1f} d -> {C.median(cc['direct']):.1f} d; "
                     f"{cc['mem']['now']:.0f} -> {cc['mem']['direct']:.0f} KiB per pending check",
                     "<= 3 d",
                     "would meet" if C.median(cc["direct"]) <= 3 else "would still miss"])
    return C.table(["target", "measured (median)", "target", "status"], rows)


def update_summary_rows(results: dict) -> None:
    """After ``--only``: replace the summary rows of the targets that ran, keep the others.

    The rows of the other targets stay as their last full run wrote them; a note under the
    table says which rows are newer and from which command.
    """
    import re

    text = C.DOC.read_text()
    found = re.search(r"<!-- bench:0:start -->.*?<!-- bench:0:end -->", text, re.S)
    if found is None:
        return
    section = found.group(0)
    lines = section.splitlines()
    keys = {f"{k}." for k in results} | {f"{k}A." for k in results} | {f"{k}C." for k in results}
    new_rows = list(summary(results).splitlines()[2:])
    out, placed = [], False
    for line in lines:
        cell = line.split("|")[1].strip() if line.startswith("| ") else ""
        if cell.split(" ")[0] in keys:
            if not placed:
                out.extend(new_rows)
                placed = True
            continue
        if line.startswith("Rows ") and "--only" in line:
            continue  # an older note of the same kind
        out.append(line)
    note = (f"Rows {', '.join(sorted(results))} from `{C.command_line()}` on "
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC (commit "
            f"{C.git_commit()}); the other rows from the full run above.")
    at = next(i for i, line in enumerate(out) if line.startswith("Whole suite:"))
    out.insert(at + 1, "\n" + note)
    C.DOC.write_text(text.replace(section, "\n".join(out)))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--only", nargs="+", default=None, help="targets to run, e.g. 1 4")
    args = ap.parse_args(argv)
    plan = QUICK if args.quick else FULL
    results, failed = {}, []
    t_all = time.perf_counter()
    for key, (module, bench_args) in plan.items():
        if args.only and key not in args.only:
            continue
        extra = ["--no-write"] if args.no_write else []
        t0 = time.perf_counter()
        print(f"\n=== target {key}: {module.__name__} {' '.join(bench_args + extra)}", flush=True)
        try:
            results[key] = module.main(bench_args + extra)
        except Exception:  # noqa: BLE001 - report and go on with the others
            traceback.print_exc()
            failed.append(key)
        print(f"=== target {key} took {time.perf_counter() - t0:.1f} s", flush=True)
    body = summary(results) + (
        f"\n\nWhole suite: {time.perf_counter() - t_all:.0f} s wall. "
        + (f"Failed: {', '.join(failed)}." if failed else "")
    )
    if args.only and not args.no_write:
        update_summary_rows(results)
    C.emit("0", "Summary", body, write=not args.no_write and not args.only)
    if failed:
        raise SystemExit(f"benchmarks failed: {failed}")
    return results


if __name__ == "__main__":
    main()
