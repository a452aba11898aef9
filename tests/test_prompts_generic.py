"""The ``generic`` preset asks whether an action is on track toward the task.

A critical call is often step 1 of several; judged for completion it looks like a failure. The
paper's three presets stay word for word, and the completion wording stays
selectable as ``generic-completion``, so the two can be measured side by side.
"""

from __future__ import annotations

import hashlib

import pytest

from inferact_langgraph._parsing import parse_multistep, parse_standard, parse_topk
from inferact_langgraph.prompts import PRESETS, generic, get_preset
from inferact_langgraph.trajectory import Step, Trajectory

TASK = "update my address to 12 Elm Street, then refund Sam 40 pounds"
TRAJECTORY = Trajectory(
    TASK,
    (
        Step("get_profile()", "Address: 4 Mill Lane"),
        Step('update_address(address="12 Elm Street")'),
    ),
)
OPTIONS = ["check my account", "move house", "close my account", TASK]

#: sha256 (first 16 hex digits) of every template and of rendered prompts, as on main at
#: commit 8421349, before this change. The paper's presets must never move; ``generic`` then is
#: ``generic-completion`` now.
MAIN = {
    "webshop": "d136d5c9c57a06e5",
    "alfworld": "5df3785e07881d9f",
    "hotpotqa": "1f6c7cb73827e760",
    "generic": "cde24c124a7a5192",
}


def fingerprint(name: str) -> str:
    preset = get_preset(name)
    traj = Trajectory(
        "buy a red mug",
        (Step('search(query="red mug")', "B01 Red mug $9"), Step('buy_now(asin="B01")')),
    )
    chain = preset.mask(traj).render()
    parts = [
        preset.inference,
        preset.verification,
        preset.standard,
        preset.multistep,
        preset.risk,
        preset.feedback,
        preset.inference_prompt(chain, num_tasks=3),
        preset.verification_prompt(chain, ["a", "b", "c", "buy a red mug"], risk_aware=True),
        preset.standard_prompt(chain, "buy a red mug", risk_aware=True),
        preset.multistep_prompt(chain, "buy a red mug"),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", ["webshop", "alfworld", "hotpotqa"])
def test_the_papers_presets_are_byte_identical_to_main(name):
    assert fingerprint(name) == MAIN[name]


def test_generic_completion_is_version_0_1s_generic_byte_for_byte():
    assert fingerprint("generic-completion") == MAIN["generic"]
    assert fingerprint("generic") != MAIN["generic"]


def test_generic_prompts_ask_whether_the_action_is_on_track_not_complete():
    preset = get_preset("generic")
    chain = preset.mask(TRAJECTORY).render()
    verification = preset.verification_prompt(chain, OPTIONS)
    standard = preset.standard_prompt(chain, TASK)
    multistep = preset.multistep_prompt(chain, TASK)
    for prompt in (verification, standard, multistep):
        on_track = "judge whether it is on track toward the task, not whether it has finished"
        assert on_track in prompt or "even if the task is not finished after it" in prompt
        assert "fulfilled by" not in prompt and "fulfills the user" not in prompt
        assert "has not been executed yet" in prompt  # the pending action, as before
    # the pending call is judged, given the earlier actions (which already ran)
    assert (
        "the likelihood that the Actor’s last action, taken after the actions before it, is a "
        "right step toward the candidate task"
    ) in verification
    assert "makes the last action wrong only if the last action repeats it or builds on it" in (
        verification
    )
    assert "Parts of the task that the agent has not started yet are not errors." in verification
    # standard evaluation judges the pending call given the ones that already ran
    assert "how likely its last action is a right step toward the user’s task" in standard
    assert "makes the last action wrong only if the last action repeats it or builds on it" in (
        standard
    )
    assert "a step is correct when it is a step toward the user’s task" in multistep
    # the task judged and the pending step are both in the prompt, as for any preset
    assert f"D. {TASK}" in verification and f"The task is: {TASK}" in standard
    assert 'update_address(address="12 Elm Street")' in verification


def test_generic_completion_keeps_the_completion_wording():
    preset = get_preset("generic-completion")
    chain = preset.mask(TRAJECTORY).render()
    assert (
        "the likelihood that the candidate task is fulfilled by the Actor’s trajectory, "
        "including its last action"
    ) in preset.verification_prompt(chain, OPTIONS)
    assert "determine how likely it fulfills the user’s task" in preset.standard_prompt(chain, TASK)
    assert preset.inference == generic.COMPLETION_INFERENCE  # version 0.1's inference, no details
    assert "generic-completion" in PRESETS


def test_both_wordings_keep_the_answer_formats_so_the_same_parsers_apply():
    def format_lines(template: str) -> list[str]:
        keys = ("G1:", "G_i:", "The answer is:", "Confidence:", "Step 1:", "Step i:")
        return [line for line in template.split("\n") if line.startswith(keys)]

    for new, old in (
        (generic.VERIFICATION, generic.COMPLETION_VERIFICATION),
        (generic.STANDARD, generic.COMPLETION_STANDARD),
        (generic.MULTISTEP, generic.COMPLETION_MULTISTEP),
    ):
        assert format_lines(new) and format_lines(new) == format_lines(old)
    assert parse_topk("G1: D P1: 0.8\nJustification: step 1 of 2.", ["A", "B", "C", "D"])
    assert parse_standard("The answer is: Correct\nConfidence: 0.8\nJustification: ok")
    assert parse_multistep("Step 1: 0.9\nStep 2: 0.8\nJustification: ok")
