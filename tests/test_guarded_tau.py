"""The tau-bench conversations through the default guard, with a capable model's answers.

``bench/bench_guarded_tau.py`` replays the 100 conversations through ``create_agent`` guarded
by ``with_inferact`` with default settings (InferAct, its shipped calibration, the request
scope and the request-boundary judge), the critic in shadow so that every conversation goes
on as recorded, and matches each check with its labelled record. This replays the recorded
answers offline (two independent draws) and checks what docs/quality.md says of them.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from conftest import ROOT

from inferact_langgraph.replay import ReplayChatModel, Transcript

sys.path.insert(0, str(ROOT / "bench"))
import bench_guarded_tau as guarded

DATA = ROOT / "tests" / "data"
JUDGE = DATA / "tau-airline-dev-request-boundary-answers.jsonl"
#: Two independent draws of the critic's answers: the records' answers plus the guard's own
#: prompts, and every prompt of the guard answered again.
DRAWS = {
    "first": [
        DATA / "tau-airline-dev-capable-model-answers.jsonl",
        DATA / "tau-airline-dev-guarded-answers.jsonl",
    ],
    "second": [DATA / "tau-airline-dev-guarded-answers-draw2.jsonl"],
}


@pytest.fixture(scope="module", params=sorted(DRAWS))
def checks(request) -> list[guarded.GuardedCheck]:
    paths = [JUDGE, *DRAWS[request.param]]
    transcript = Transcript.from_records(
        [json.loads(line) for path in paths for line in path.open() if line.strip()]
    )
    critic_model = ReplayChatModel(transcript=transcript)
    judge = ReplayChatModel(transcript=transcript, temperature=0)  # as it was recorded
    done = asyncio.run(guarded.run_all(critic_model, judge))
    assert not transcript.stale, f"{len(transcript.stale)} requests were not recorded"
    return done


def test_every_critical_call_is_judged_and_every_labelled_call_is_found(checks):
    assert len(checks) == 123 and all(c.error is None for c in checks)
    labelled = [c for c in checks if c.label is not None]
    assert len(labelled) == 106 and len({c.record for c in labelled}) == 106


def test_the_default_guard_flags_most_mistakes_and_few_correct_calls(checks):
    counts = guarded.summary(checks)
    mistakes, correct = guarded.cross_validated(checks)
    assert counts["mistakes_flagged"] / counts["mistakes"] >= 0.8 and mistakes >= 0.8
    assert counts["correct_flagged"] / counts["correct"] <= 0.2 and correct <= 0.2


def test_the_quality_page_states_the_guards_figures(checks):
    page = " ".join((ROOT / "docs" / "quality.md").read_text().split())
    stated = guarded.sentence(guarded.summary(checks), guarded.cross_validated(checks))
    assert stated in page
