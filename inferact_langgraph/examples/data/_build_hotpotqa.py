"""Rebuild hotpotqa_wiki.json and hotpotqa_tasks.json from the Reflexion run logs.

Run from the repository root: ``python inferact_langgraph/examples/data/_build_hotpotqa.py
[path/to/hotpotqa-react-trial1.jsonl]``. The wiki holds every page the ReAct actor saw (keyed by
the query it searched) and every "Could not find" answer; the tasks are a few trajectories
labelled incorrect whose gold answer is on a page the actor saw, each with a corrected plan.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else HERE.parents[3] / "shared/data/hotpotqa-react-trial1.jsonl"
)

# record id -> corrected plan [(thought, action)]; thoughts written for the scripted actor.
CORRECTED = {
    "hotpotqa-react-base-050": [
        ("I need the headquarters of both chains.", "Search[Pizza Inn]"),
        ("Pizza Inn is based in The Colony, Texas. Now Papa Gino's.", "Search[Papa Gino's]"),
        (
            "Papa Gino's is based in Dedham, Massachusetts, much further north than Texas.",
            "Finish[Papa Gino's]",
        ),
    ],
    "hotpotqa-react-base-055": [
        (
            "I need Joe Frazier's page to see who Ali fought after the Fight of the Century.",
            "Search[Joe Frazier]",
        ),
        ("The page mentions Jimmy Ellis; let me look him up on this page.", "Lookup[Ellis]"),
        (
            "After losing to Frazier in 1971, Ali fought Jimmy Ellis in Houston later that year.",
            "Finish[Jimmy Ellis]",
        ),
    ],
    "hotpotqa-react-base-056": [
        ("I need both birth dates.", "Search[Lucie Hradecká]"),
        ("Lucie Hradecká was born on 21 May 1985. Now Raffaella Reggi.", "Search[Raffaella Reggi]"),
        (
            "Raffaella Reggi was born on 27 November 1965, before 1985, so she was born first.",
            "Finish[Raffaella Reggi]",
        ),
    ],
    "hotpotqa-react-base-063": [
        ("I need both air dates.", "Search[The Clash of Triton]"),
        (
            "The Clash of Triton aired on July 5, 2010.",
            "Search[To SquarePants or Not to SquarePants]",
        ),
        (
            "To SquarePants or Not to SquarePants aired on July 17, 2009, before 2010.",
            "Finish[To SquarePants or Not to SquarePants]",
        ),
    ],
    "hotpotqa-react-base-070": [
        ("Alice David voices Lara Croft in the French dub of Tomb Raider.", "Search[Alice David]"),
        ("I need the developer of the Tomb Raider game she voiced.", "Search[Tomb Raider]"),
        (
            "The recent games were developed by Crystal Dynamics, not Core Design; let me check.",
            "Lookup[Crystal Dynamics]",
        ),
        (
            "The Tomb Raider game of Alice David's era was developed by Crystal Dynamics.",
            "Finish[Crystal Dynamics]",
        ),
    ],
    "hotpotqa-react-base-078": [
        ("I need the name Juliet Hulme was later known by.", "Search[Juliet Hulme]"),
        (
            "Juliet Hulme became Anne Perry; the question asks for her full given name.",
            "Finish[Anne Perry]",
        ),
    ],
    "hotpotqa-react-base-082": [
        ("I need the band the Gator Country guitarists came from.", "Search[Gator Country]"),
        ("Gator Country was formed by ex-members of Molly Hatchet.", "Finish[Molly Hatchet]"),
    ],
}

ACTION = re.compile(r"^(Search|Lookup|Finish)\[(.*)\]$", re.DOTALL)


def step(thought: str, action: str) -> dict[str, Any]:
    match = ACTION.match(action)
    assert match is not None, action
    kind, arg = match.groups()
    name = kind.lower()
    key = {"search": "entity", "lookup": "keyword", "finish": "answer"}[name]
    return {"thought": thought, "tool": name, "args": {key: arg}, "action": action}


def main() -> None:
    rows = [json.loads(line) for line in SOURCE.read_text().splitlines() if line.strip()]
    pages: dict[str, str] = {}
    not_found: dict[str, list[str]] = {}
    for row in rows:
        for s in row["steps"]:
            match = ACTION.match(s["action"])
            if not match or match.group(1) != "Search" or s["observation"] is None:
                continue
            query, obs = match.group(2), s["observation"]
            if obs.startswith("Could not find"):
                similar = obs.split("Similar: ", 1)[1]
                not_found[query] = list(ast.literal_eval(similar))
            else:
                pages.setdefault(query, obs)
    wiki = {
        "source": "Reflexion run logs (Shinn et al., 2023, MIT licence), "
        "hotpotqa_runs/root/ReAct/base/100_questions_5_trials.txt, trial 1",
        "pages": pages,
        "not_found": not_found,
    }
    by_id = {r["id"]: r for r in rows}
    tasks = []
    for record_id, plan in CORRECTED.items():
        row = by_id[record_id]
        tasks.append(
            {
                "id": record_id,
                "question": row["task"],
                "gold_answer": row["gold_answer"],
                "trial1": [step(s["thought"], s["action"]) for s in row["steps"]],
                "corrected": [step(t, a) for t, a in plan],
            }
        )
    (HERE / "hotpotqa_wiki.json").write_text(json.dumps(wiki, indent=1, ensure_ascii=False) + "\n")
    (HERE / "hotpotqa_tasks.json").write_text(
        json.dumps({"source": wiki["source"], "tasks": tasks}, indent=1, ensure_ascii=False) + "\n"
    )
    print(f"{len(pages)} pages, {len(not_found)} not-found answers, {len(tasks)} tasks")


if __name__ == "__main__":
    main()
