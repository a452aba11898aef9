"""Fake critics shared by the tests of the evaluation harness (tests/test_eval_*.py)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

from inferact_langgraph.critics import Critic, Usage
from inferact_langgraph.testing import ScriptedChatModel, prompt_text


def prompt_score(messages) -> str:
    """A deterministic 'probability' from the prompt, as a scripted model's answer."""
    text = prompt_text(messages)
    digest = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return f"{(digest % 1000) / 1000:.3f}"


def scripted_model(delay: float = 0.0) -> ScriptedChatModel:
    return ScriptedChatModel(responder=prompt_score, delay=delay)


class AskCritic(Critic):
    """Asks the model ``calls`` times (concurrently) and averages the answers as the score."""

    name = "ask"

    def __init__(self, *, calls: int = 1, steps: bool = False, **kw) -> None:
        super().__init__(**kw)
        self.calls = calls
        self.steps = steps

    async def _aevaluate(self, trajectory, *, risk=None):
        prompt = f"Task: {trajectory.task}\n{trajectory.render()}\nrisk={risk}"
        answers = await self.acall_many([prompt] * self.calls, stage="check")
        usage = sum((u for _, u in answers), Usage())
        score = sum(float(t) for t, _ in answers) / len(answers)
        step_scores = (
            [min(1.0, score + 0.1 * i) for i in range(len(trajectory.steps))] if self.steps else []
        )
        return self.verdict(score=score, usage=usage, step_scores=step_scores)


class TableCritic(Critic):
    """Scores from a table keyed by task (no model); optional failures and delay."""

    name = "table"

    def __init__(self, *, scores: dict, fail: set = frozenset(), delay: float = 0.0, **kw):
        super().__init__(model=None, **kw)
        self.scores = scores
        self.fail = set(fail)
        self.delay = delay
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def _aevaluate(self, trajectory, *, risk=None):
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if trajectory.task in self.fail:
                from inferact_langgraph.errors import CriticParseError

                raise CriticParseError("no probability found", raw="hmm")
            return self.verdict(score=self.scores[trajectory.task], usage=Usage(model_calls=1))
        finally:
            self.in_flight -= 1


def records(n: int = 12, *, prices: bool = False) -> list[dict]:
    """Small labelled records: task 'q<i>', label alternating incorrect/correct."""
    out = []
    for i in range(n):
        rec = {
            "id": f"r{i}",
            "task": f"q{i}",
            "steps": [
                {"thought": "look", "action": f"Search[x{i}]", "observation": f"x{i} is y"},
                {"thought": "done", "action": f"Finish[y{i}]", "observation": None},
            ],
            "label": "incorrect" if i % 2 == 0 else "correct",
        }
        if prices:
            rec["price"] = 10.0 * (i + 1)
        out.append(rec)
    return out


def write_jsonl(path: Path, recs: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in recs) + "\n")
    return path
