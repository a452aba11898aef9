"""The prompts of ``inferact eval --preset hotpotqa`` still render byte for byte as recorded.

450 answers of a capable model were recorded against the prompts of the critics ``inferact``,
``standard`` and ``multistep:product`` on the 90 HotPotQA trajectories (shared/data/README.md)
and are replayed by exact request. This test renders every prompt as ``inferact eval`` does
(the same factory, preset and options) and answers it from the recording only; an unknown
request fails. It then checks that every recorded answer still parses to the verdict recorded
in ``tests/snapshots/hotpotqa_trial1_scores.json``, which was produced by the parsers of
commit 8421349 (before the injection hardening) from the same answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferact_langgraph import _factory as factory
from inferact_langgraph.eval.datasets import load_dataset
from inferact_langgraph.testing import ScriptedChatModel, prompt_text

HERE = Path(__file__).parent
ANSWERS = "hotpotqa-trial1-capable-model-answers.jsonl"
TRAJECTORIES = "hotpotqa-react-trial1.jsonl"
SNAPSHOT = HERE / "snapshots" / "hotpotqa_trial1_scores.json"
SPECS = ["inferact", "standard", "multistep:product"]


def _data(name: str) -> Path:
    """tests/data/ (the copy shipped with the tests) first, then the shared data folder."""
    for folder in (HERE / "data", HERE.parents[1] / "shared" / "data", Path("/work/shared/data")):
        if (folder / name).is_file():
            return folder / name
    pytest.skip(f"{name} is in neither tests/data/ nor shared/data/ (the recorded HotPotQA run)")


@pytest.fixture(scope="module")
def replay() -> tuple[dict, set, dict]:
    recorded: dict[str, str] = {}
    for line in _data(ANSWERS).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        [message] = row["messages"]
        recorded[message["content"]] = row["answer"]
    used: set[str] = set()

    def respond(messages) -> str:
        prompt = prompt_text(messages)
        if prompt not in recorded:
            raise AssertionError(f"a prompt no longer matches its recorded request:\n{prompt}")
        used.add(prompt)
        return recorded[prompt]

    # exactly the critics `inferact eval --preset hotpotqa` builds (cli.eval_command)
    critics = factory.build_critics(
        SPECS,
        model=ScriptedChatModel(responder=respond),
        preset="hotpotqa",
        risk_aware=False,
        timeout=None,
        max_retries=0,
    )
    data = load_dataset(_data(TRAJECTORIES))
    verdicts = {
        spec: {item.id: critic.evaluate(item.trajectory, risk=item.risk) for item in data.items}
        for spec, critic in critics.items()
    }
    return recorded, used, verdicts


def test_every_recorded_request_still_matches_byte_for_byte(replay) -> None:
    recorded, used, verdicts = replay
    assert len(recorded) == 450
    assert {spec: len(v) for spec, v in verdicts.items()} == dict.fromkeys(SPECS, 90)
    assert used == set(recorded)  # every request was sent again, and only those


def test_every_recorded_answer_still_parses_to_the_same_verdict(replay) -> None:
    _, _, verdicts = replay
    expected = json.loads(SNAPSHOT.read_text())
    for spec in SPECS:
        for item_id, verdict in verdicts[spec].items():
            want = expected[spec][item_id]
            got = {
                "score": verdict.score,
                "option_probs": verdict.option_probs,
                "step_scores": verdict.step_scores,
            }
            assert got == want, (spec, item_id)
