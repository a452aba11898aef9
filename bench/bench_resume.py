"""Target 3: resuming an interrupted guarded graph is free.

The actor does ``--prefix`` lookups, then proposes ``buy_now``; the critic (scripted, score 0.1)
flags it and the graph interrupts. Timed: the resume with ``{"decisions": [{"type":
"approve"}]}`` until the agent's final answer. Compared side by side (interleaved) with the same
agent guarded by LangChain's ``HumanInTheLoopMiddleware(interrupt_on={"buy_now": True})``.
Counts critic calls made during the resumes (target: 0).

Usage: python bench/bench_resume.py [--prefix 5] [--reps 21] [--no-write]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C


def build(prefix: int, critic_delay: float = 0.0):
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from inferact_langgraph import critical
    from inferact_langgraph.guard.graph import with_inferact
    from inferact_langgraph.guard.middleware import InferActMiddleware
    from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic

    @tool
    def lookup(key: str) -> str:
        """Look something up (not critical)."""
        return f"value of {key}"

    def _buy(asin: str) -> str:
        """Buy a product (critical)."""
        return f"bought {asin}"

    # HITL's agent has no InferAct guard: it gets the same tool unmarked (a marked one is
    # locked and runs only with InferAct's authorization).
    buy_plain = tool("buy_now")(_buy)
    buy_now = critical(tool("buy_now")(_buy))

    def responder(messages):
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < prefix:
            return AIMessage("", tool_calls=[{"name": "lookup", "args": {"key": f"k{done}"},
                                              "id": f"call-{done}"}])
        if done == prefix:
            return AIMessage("", tool_calls=[{"name": "buy_now", "args": {"asin": "B01"},
                                              "id": "call-buy"}])
        return "Done."

    names = ("HITL", "with_inferact", "InferActMiddleware")
    actors = {k: ScriptedChatModel(responder=responder) for k in names}
    critics = {k: ScriptedCritic(scores=[0.1], delay=critic_delay)
               for k in ("with_inferact", "InferActMiddleware")}
    tools = [lookup, buy_now]
    agents = {
        "HITL": create_agent(actors["HITL"], [lookup, buy_plain], checkpointer=InMemorySaver(),
                             middleware=[HumanInTheLoopMiddleware(interrupt_on={"buy_now": True})]),
        "with_inferact": with_inferact(create_agent(actors["with_inferact"], tools),
                                       critic=critics["with_inferact"],
                                       checkpointer=InMemorySaver()),
        "InferActMiddleware": create_agent(
            actors["InferActMiddleware"], tools, checkpointer=InMemorySaver(),
            middleware=[InferActMiddleware(critic=critics["InferActMiddleware"])]),
    }
    return agents, actors, critics


def run(prefix: int, reps: int) -> dict:
    from langgraph.types import Command

    agents, actors, critics = build(prefix)
    names = list(agents)
    times = {n: [] for n in names}
    cpu = {n: [] for n in names}
    resume_critic_calls = dict.fromkeys(names, 0)
    first_critic_calls = dict.fromkeys(names, 0)
    counter = [0]

    def once(name: str, record: bool = True) -> None:
        counter[0] += 1
        cfg = {"configurable": {"thread_id": f"{name}-{counter[0]}"}, "recursion_limit": 1000}
        agent = agents[name]
        out = agent.invoke({"messages": [("user", "buy the mug")]}, cfg)
        assert out.get("__interrupt__"), f"{name} did not interrupt"
        critic = critics.get(name)
        before = critic.calls if critic else 0
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        assert not out.get("__interrupt__") and out["messages"][-1].content == "Done.", out
        assert any(getattr(m, "content", "") == "bought B01" for m in out["messages"])
        if record:
            times[name].append(dt)
            cpu[name].append(dc)
            if critic:
                first_critic_calls[name] += before
                resume_critic_calls[name] += critic.calls - before
        if critic:
            critic.calls = 0

    for name in names:
        once(name, record=False)
    for rep in range(reps):
        for name in names[rep % 3:] + names[:rep % 3]:
            once(name)
    base, cbase = times["HITL"], cpu["HITL"]
    return {
        "prefix": prefix, "reps": reps, "times": times,
        "ratio": {n: [t / b for t, b in zip(times[n], base)] for n in names},
        "cpu_ratio": {n: [t / b for t, b in zip(cpu[n], cbase)] for n in names},
        "resume_critic_calls": resume_critic_calls, "first_critic_calls": first_critic_calls,
    }


def report(r: dict, write: bool = True) -> str:
    rows = []
    for name in r["times"]:
        base = name == "HITL"
        ratio = C.median(r["cpu_ratio"][name])
        target = "-" if base else (
            "met" if ratio <= 1.05 and r["resume_critic_calls"][name] == 0 else
            f"**missed** (+{(ratio - 1) * 100:.0f}%)" if r["resume_critic_calls"][name] == 0 else
            "**missed** (critic called on resume)")
        rows.append([
            name, C.fmt_spread(r["times"][name], 2, 1000),
            "1" if base else C.fmt_spread(r["ratio"][name], 3),
            "1" if base else C.fmt_spread(r["cpu_ratio"][name], 3),
            "-" if base else r["first_critic_calls"][name],
            "-" if base else r["resume_critic_calls"][name], target,
        ])
    body = (
        f"The agent does {r['prefix']} lookups, then proposes `buy_now`; the guard's scripted "
        "critic flags it (score 0.1) and the run interrupts; LangChain's "
        "`HumanInTheLoopMiddleware(interrupt_on={\"buy_now\": True})` interrupts on the same call. "
        "Timed: resuming with `Command(resume={\"decisions\": [{\"type\": \"approve\"}]})` until "
        f"the final answer. {r['reps']} repetitions, interleaved; ratios per repetition against "
        "the HITL resume next to it (CPU time is the robust figure on this shared machine; "
        "a tolerance of 5% is used for \"no more than\"). " + C.SPREAD_NOTE + ".\n\n"
        + C.table(["guard", "resume wall ms (context)", "wall ratio vs HITL", "CPU ratio vs HITL",
                   "critic calls before the interrupt (all runs)",
                   "critic calls during resumes (all runs)", "target (0 calls, <= HITL)"], rows)
    )
    C.emit("3", "3. Resume is free", body, write=write)
    return body


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--prefix", type=int, default=5)
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    r = run(args.prefix, args.reps)
    report(r, write=not args.no_write)
    return r


if __name__ == "__main__":
    main()
