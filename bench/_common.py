"""Shared helpers for the benchmarks: machine info, statistics, the scripted critic model,
trajectories from the shared data, critic construction, and writing docs/benchmarks.md.

Every benchmark reports ratios measured side by side in one run (never a lone absolute time).
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
IMG = ROOT / "docs" / "img"
# The 90 real HotPotQA trajectories ship with the tests (tests/data/README.md).
DATA = Path(
    os.environ.get("INFERACT_BENCH_DATA", ROOT / "tests" / "data" / "hotpotqa-react-trial1.jsonl")
)

PACKAGES = ("inferact-langgraph", "langgraph", "langgraph-prebuilt", "langgraph-checkpoint",
            "langchain", "langchain-core")


# ---------------------------------------------------------------------------- machine
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                                "inferact_langgraph"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() + (" (+ uncommitted library changes)" if dirty.stdout.strip() else "")
    except Exception:  # noqa: BLE001
        return "unknown"


def machine_info() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "-"
    return {
        "cores (nproc)": str(os.cpu_count()),
        "CPU": cpu_model(),
        "OS": platform.platform(),
        "Python": platform.python_version(),
        "versions": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "commit": git_commit(),
        "date (UTC)": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }


def command_line() -> str:
    rel = os.path.relpath(sys.argv[0], ROOT) if sys.argv and sys.argv[0] else "?"
    return "python " + " ".join([rel, *map(shlex.quote, sys.argv[1:])])


# ---------------------------------------------------------------------------- statistics
def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def spread(xs: Sequence[float]) -> tuple[float, float]:
    """(p10, p90) of ``xs`` (min and max when there are fewer than 10 values)."""
    s = sorted(xs)
    if len(s) < 10:
        return s[0], s[-1]
    q = statistics.quantiles(s, n=10)
    return q[0], q[-1]


def fmt_spread(xs: Sequence[float], digits: int = 3, scale: float = 1.0) -> str:
    lo, hi = spread(xs)
    return f"{median(xs) * scale:.{digits}f} [{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"


SPREAD_NOTE = ("median [spread]: the spread is p10-p90 over the repetitions (min-max when "
               "there are fewer than 10)")


# ---------------------------------------------------------------------------- tables / doc
def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


HEADER = """# Benchmarks

How much the InferAct guard costs, measured by the scripts in `bench/`. Every figure is
a **ratio measured side by side in one run** (baseline and candidate interleaved in the same
process), with the median and spread over repetitions; absolute times are only given for context.
Critic models are scripted (`inferact_langgraph.testing.ScriptedChatModel`) and answer after a
fixed `asyncio.sleep(d)`, so the numbers measure the library, not a provider.

Run everything (a few minutes on 2 cores): `python bench/run_all.py` (or one script, e.g.
`python bench/bench_latency.py`). Each script rewrites its own section below.
"""


def write_section(key: str, title: str, body: str, info: dict[str, str] | None = None) -> None:
    """Replace (or append) the section ``key`` of docs/benchmarks.md."""
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text() if DOC.exists() else HEADER
    if not text.startswith("# Benchmarks"):
        text = HEADER + "\n" + text
    info = info or machine_info()
    meta = "\n".join(f"- {k}: {v}" for k, v in info.items())
    block = (f"<!-- bench:{key}:start -->\n## {title}\n\n"
             f"Command: `{command_line()}`\n\n<details><summary>Machine and versions</summary>\n\n"
             f"{meta}\n\n</details>\n\n{body.strip()}\n<!-- bench:{key}:end -->")
    pattern = re.compile(rf"<!-- bench:{re.escape(key)}:start -->.*?<!-- bench:{re.escape(key)}:end -->",
                         re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    # keep the sections in key order
    sections = re.findall(r"<!-- bench:(\w+):start -->.*?<!-- bench:\1:end -->", text, re.S)
    blocks = {k: re.search(rf"<!-- bench:{k}:start -->.*?<!-- bench:{k}:end -->", text, re.S).group(0)
              for k in sections}
    head = pattern_head(text)
    tail = text
    for b in blocks.values():
        tail = tail.replace(b, "")
    tail = tail[len(head):].strip()
    out = head.rstrip() + "\n\n" + "\n\n".join(blocks[k] for k in sorted(blocks)) + "\n"
    if tail:
        out += "\n" + tail + "\n"
    DOC.write_text(out)


def pattern_head(text: str) -> str:
    i = text.find("<!-- bench:")
    return text if i < 0 else text[:i]


def emit(key: str, title: str, body: str, *, write: bool = True) -> None:
    print(f"\n## {title}\n\n{body}\n")
    if write:
        write_section(key, title, body)


# ---------------------------------------------------------------------------- data
def load_records(path: Path = DATA) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_trajectories(limit: int | None = None):
    from inferact_langgraph.trajectory import Trajectory

    recs = load_records()
    if limit is not None:
        recs = recs[:limit]
    return [Trajectory.from_record(r, line=i + 1) for i, r in enumerate(recs)]


def observation_pool() -> list[tuple[str, str]]:
    """Every executed (action, observation) step of the shared trajectories."""
    pool = []
    for rec in load_records():
        for step in rec["steps"]:
            if step.get("observation"):
                pool.append((step["action"].strip(), step["observation"]))
    return pool


def synthetic_trajectory(n_steps: int, seed: int = 0):
    """A trajectory of ``n_steps`` steps: ``n_steps - 1`` real observed steps sampled from the
    shared data, then a pending ``Finish[...]``; the task is a real question."""
    from inferact_langgraph.trajectory import Step, Trajectory

    rng = random.Random(seed)
    recs = load_records()
    pool = observation_pool()
    rec = rng.choice(recs)
    steps = [Step(a, o) for a, o in (rng.choice(pool) for _ in range(n_steps - 1))]
    steps.append(Step(rec["critical_action"]))
    return Trajectory(rec["task"], tuple(steps))


# ---------------------------------------------------------------------------- scripted critic model
_OPTION = re.compile(r"(?m)^\s*\(?([A-Z])[.)]\s+(.*)$")


def _strip_observations(prompt: str) -> str:
    return re.sub(r"<observation>.*?</observation>", "", prompt, flags=re.S)


def prompt_kind(prompt: str) -> str:
    """Which critic prompt this is: inference, verification, standard or multistep."""
    p = _strip_observations(prompt)
    if re.search(r"Step 1:\s*<", p):
        return "multistep"
    if "The answer is: <" in p:
        return "standard"
    if "G1:" in p or "P_A:" in p:
        return "verification"
    return "inference"


def critic_answer(prompt: str, *, rng: random.Random | None = None) -> str:
    """A well-formed answer to any critic prompt (it reads the prompt to choose the format)."""
    kind = prompt_kind(prompt)
    p = rng.random() if rng else 0.7
    if kind == "inference":
        return ("The 3 most likely questions are:\nA. Which band had more members? "
                "B. Who founded the company? C. When was the film released?\n"
                "The reason is: the searched entities.")
    if kind == "verification":
        if "P_A:" in _strip_observations(prompt) and "G1:" not in _strip_observations(prompt):
            return f"A: Completed P_A: {p:.2f}\nJustification: scripted."
        return f"G1: D P1: {p:.2f}\nG2: A P2: {1 - p:.2f}\nJustification: scripted."
    if kind == "standard":
        return f"The answer is: Correct\nConfidence: {p:.2f}\nJustification: scripted."
    n = len(re.findall(r"(?m)^Action \d+:", prompt)) or 1
    return "\n".join(f"Step {i}: {p:.2f}" for i in range(1, n + 1)) + "\nJustification: scripted."


def scripted_critic_model(delay: float = 0.0, seed: int | None = None):
    """A ScriptedChatModel that answers every critic prompt in the right format after ``delay``."""
    from inferact_langgraph.testing import ScriptedChatModel, prompt_text

    rng = random.Random(seed) if seed is not None else None
    return ScriptedChatModel(responder=lambda msgs: critic_answer(prompt_text(msgs), rng=rng),
                             delay=delay)


# ---------------------------------------------------------------------------- critics
CRITIC_KINDS = ("inferact", "standard", "self-consistency", "multistep")


def make_critic(kind: str, model: Any, **kwargs: Any):
    """Build a critic by kind through the library's factory (self-consistency: 5 samples)."""
    from inferact_langgraph.critics import make_critic as lib_make

    spec = {"self-consistency": "self_consistency"}.get(kind, kind)
    if spec == "self_consistency":
        kwargs.setdefault("samples", 5)
    kwargs.setdefault("calibration", None)  # the benchmarks time the raw critic
    return lib_make(spec, model=model, **kwargs)


def available_critics() -> dict[str, str | None]:
    """kind -> None if buildable, else the reason it is not."""
    out: dict[str, str | None] = {}
    for kind in CRITIC_KINDS:
        try:
            make_critic(kind, scripted_critic_model())
            out[kind] = None
        except Exception as exc:  # noqa: BLE001
            out[kind] = f"{type(exc).__name__}: {exc}"
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result
