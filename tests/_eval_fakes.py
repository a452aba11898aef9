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

    def cache_fingerprint(self):
        """Only the scores decide the answers (calls, failures and delay do not)."""
        return {"scores": self.scores, "threshold": self.threshold}

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


_INFERRED = ("alpha question", "beta question", "gamma question")


def paper_judge(messages) -> str:
    """A scripted critic model that answers every prompt of the real critics in its format.

    The probability it gives is a hash of the prompt, so answers are deterministic.
    """
    import re

    text = messages[-1].content if messages else ""
    p = float(prompt_score(messages))
    if "G1:" in text:  # InferAct verification: put p on the option that is the real task
        options = re.findall(r"^([A-E])\. (.+)$", text, re.M)
        real = [
            lab
            for lab, opt in options
            if opt.strip() not in _INFERRED and "none of the above" not in opt.lower()
        ]
        label = real[0] if real else "A"
        return f"G1: {label} P1: {p:.2f}\nJustification: scripted."
    if "most likely" in text:  # InferAct task inference
        return (
            f"The 3 most likely questions are:\nA. {_INFERRED[0]} B. {_INFERRED[1]} "
            f"C. {_INFERRED[2]}\nThe reason is: scripted."
        )
    if "Step 1: <" in text:  # multi-step evaluation: one probability per action
        n = len(re.findall(r"^Action \d+:", text, re.M)) or 1
        steps = "\n".join(f"Step {i}: {min(1.0, p + 0.05 * i):.2f}" for i in range(1, n + 1))
        return steps + "\nJustification: scripted."
    verdict = "Correct" if p >= 0.5 else "Incorrect"  # standard evaluation (and its samples)
    return f"The answer is: {verdict}\nConfidence: {max(p, 1 - p):.2f}\nJustification: scripted."


def eval_args(data, out, *extra, critic="standard", model="m") -> list[str]:
    """``inferact eval`` arguments: one critic, no cache, no progress bar, the report in ``out``."""
    return [
        "eval",
        "--data",
        str(data),
        "--critic",
        critic,
        "--model",
        model,
        "--no-cache",
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]
