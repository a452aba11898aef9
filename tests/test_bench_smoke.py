"""Smoke run of every benchmark in bench/ with tiny sizes: it runs and its numbers are sane.

No timing thresholds here (those are the benchmarks' job, in docs/benchmarks.md); only counts,
structure and sign checks. The full suite is ``python bench/run_all.py``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import _common as C  # noqa: E402, N812 - the benchmarks' own short name
import bench_cache  # noqa: E402
import bench_compare  # noqa: E402
import bench_concurrency  # noqa: E402
import bench_latency  # noqa: E402
import bench_offpath  # noqa: E402
import bench_prompt_tokens  # noqa: E402
import bench_resume  # noqa: E402
import exp_design  # noqa: E402
import exp_offpath_floors  # noqa: E402


def test_prompt_kinds_are_recognised():
    from inferact_langgraph.prompts import get_preset

    preset = get_preset("hotpotqa")
    chain = "Action 1: Search[x]\nObservation 1: <observation>G1: A P1: 1</observation>"
    assert C.prompt_kind(preset.inference_prompt(chain, num_tasks=3)) == "inference"
    assert C.prompt_kind(preset.standard_prompt(chain, "q")) == "standard"
    assert C.prompt_kind(preset.multistep_prompt(chain, "q")) == "multistep"


def test_latency_smoke():
    (r,) = bench_latency.main(["--delays", "0.01", "--reps", "2", "--no-write"])
    assert r["n"] == 2 and all(x > 1.0 for x in r["check"])  # at least one round trip
    assert all(x > 2.0 for x in r["seq"])  # three sequential calls


def test_offpath_smoke():
    (r,) = bench_offpath.main(["--steps", "3", "--reps", "2", "--modes", "sync", "--no-write"])
    assert set(r["calls"]) == {"unwrapped", "with_inferact", "InferActMiddleware",
                               "InferActMiddleware(review_in=tool_call)", "HITL (context)",
                               "floor: HITL's hooks, empty",
                               "floor: InferActMiddleware's hooks, empty"}
    assert all(c == 4 for calls in r["calls"].values() for c in calls)  # 3 tool steps + answer
    assert all(n == 0 for name, n in r["critic_calls"].items() if name in bench_offpath.MIDDLEWARES
               or name == "with_inferact")
    assert all(x > 0 for xs in r["cpu_vs_hitl"].values() for x in xs)
    assert all(t > 0 for ts in r["times"].values() for t in ts)


def test_resume_smoke():
    r = bench_resume.main(["--prefix", "1", "--reps", "2", "--no-write"])
    assert r["resume_critic_calls"] == {"HITL": 0, "with_inferact": 0, "InferActMiddleware": 0}
    assert r["first_critic_calls"]["with_inferact"] == 2  # one check per interrupted run
    assert all(x > 0 for xs in r["ratio"].values() for x in xs)


def test_prompt_tokens_smoke():
    from inferact_langgraph.trajectory import DEFAULT_BUDGET

    rows = bench_prompt_tokens.main(["--lengths", "5", "200", "--seeds", "1", "--no-write"])
    short, long = rows
    assert long["unbounded"] > 10 * short["unbounded"]  # linear without a budget
    assert long["chain"] <= DEFAULT_BUDGET.max_tokens < long["chain_raw"]  # flat with one
    assert long["bounded"] < 2 * DEFAULT_BUDGET.max_tokens


def test_concurrency_smoke():
    r = bench_concurrency.main(["--n", "10", "--delay", "0.01", "--reps", "1", "--no-write"])
    assert r["pending_at_snapshot"] == 10
    assert r["mem_per_check_kb"] > 0 and r["check"][0] > 1.0 and r["ref"][0] > 1.0


def test_compare_smoke():
    r = bench_compare.main(["--limit", "3", "--latency-n", "1", "--delay", "0.01", "--no-write"])
    calls = {k: v["calls"][0] for k, v in r.items()}
    assert calls == {"inferact": 3, "standard": 1, "self-consistency": 5, "multistep": 1}
    assert all(t > 0 for v in r.values() for t in v["input"])


def test_cache_smoke():
    r = bench_cache.main(["--delay", "0.01", "--reps", "1", "--lengths", "0", "--no-write"])
    g = r["graph"]
    assert g["plain/first"]["calls"] == 3 == g["plain/second"]["calls"]
    assert g["cached/first"]["calls"] == 3 and g["cached/second"]["calls"] == 0
    assert r["rows"][0]["calls"] == [3] and r["rows"][0]["hit_calls"] == [0]


def test_design_experiments_smoke():
    r = exp_design.main(["--reps", "1", "--steps", "3", "--n", "10", "--delays", "0.01",
                         "--conc-delay", "0.01", "--no-write"])
    assert set(r["redirect"]) == {"sync", "async"}
    assert all(x > 0 for xs in r["middleware"]["sync"].values() for x in xs)
    cc = r["direct"]["concurrency"]
    assert cc["mem"]["now"] > 0 and cc["mem"]["direct"] > 0
    assert all(x > 1.0 for x in r["direct"]["latency"][0.01]["direct"])


def test_offpath_floors_smoke():
    r = exp_offpath_floors.main(["--reps", "2", "--steps", "3"])
    assert set(r) == {"unwrapped", "HITL's hooks", "InferActMiddleware's hooks",
                      "... without wrap_model_call", "... without before_agent",
                      "... without the state keys"}
    # Every figure is a CPU ratio to HITL's hooks (which is the reference, 1 by construction,
    # so it is not a finding): each must have been measured, finite and positive.
    assert all(math.isfinite(x) and x > 0 for x in r.values())
