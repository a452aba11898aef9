"""Presets carry the paper's Appendix A prompts word for word, filled safely."""

from __future__ import annotations

import pytest
from conftest import PAPER_APPENDIX_A, PAPER_APPENDIX_A_FIRST_LINE

from inferact_langgraph.prompts import (
    NONE_OF_THE_ABOVE,
    OBSERVATION_NOTE,
    PRESETS,
    Preset,
    fill,
    get_preset,
    render_options,
)
from inferact_langgraph.prompts.feedback import feedback_prompt, reflection_prompt
from inferact_langgraph.prompts.risk import RISK_SENTENCES
from inferact_langgraph.trajectory import Step, Trajectory


def paper_lines(first: int, last: int) -> list[str]:
    """Lines ``first``..``last`` of the paper's text (Appendix A ships in tests/data)."""
    offset = PAPER_APPENDIX_A_FIRST_LINE
    lines = PAPER_APPENDIX_A.read_text().split("\n")[first - offset : last - offset + 1]
    return [line.replace("{num_task}", "{num_tasks}") for line in lines if line.strip()]


# (preset, attribute, first line, last line) of each prompt in the paper's Appendix A
PAPER_BLOCKS = [
    ("webshop", "standard", 241, 246),
    ("alfworld", "standard", 250, 260),
    ("hotpotqa", "standard", 264, 270),
    ("webshop", "multistep", 276, 284),
    ("alfworld", "multistep", 288, 295),
    ("hotpotqa", "multistep", 299, 306),
    ("webshop", "inference", 314, 320),
    ("webshop", "verification", 324, 331),
    ("alfworld", "inference", 337, 340),
    ("alfworld", "verification", 344, 354),
    ("hotpotqa", "inference", 360, 367),
    ("hotpotqa", "verification", 371, 382),
]


@pytest.mark.parametrize(("preset", "attr", "first", "last"), PAPER_BLOCKS)
def test_templates_are_the_papers_text_line_for_line(preset, attr, first, last):
    template = getattr(get_preset(preset), attr)
    for line in paper_lines(first, last):
        assert line in template.split("\n"), line


def test_paper_typos_are_kept_and_the_field_name_is_fixed():
    assert "you perfomed on a shopping website" in get_preset("webshop").standard
    assert "from the enviroment" in get_preset("alfworld").multistep
    for name in ("alfworld", "hotpotqa"):
        assert "{num_task}" not in get_preset(name).inference
        assert "{num_tasks}" in get_preset(name).inference


EXACT_SENTENCES = {
    "webshop": [
        "You have a powerful Theory-of-Mind capability. An agent is helping the user to shop "
        "online.",
        "Please follow the above style to infer the 3 most likely user’s instructions.",
        "Remember, Only evaluate if criteria that are explicitly mentioned in the instruction "
        "are met or not.",
    ],
    "alfworld": [
        "Your task is to infer the 3 most likely tasks that the reasoning trajectory solved.",
        "Instead, simply use general terms like ’drawer’ or ’cabinet’.",
        "A: <Completed/Not Completed> P_A: <the probability of the task A being correct>",
    ],
    "hotpotqa": [
        "(2) Lookup[keyword], which returns the next sentence containing keyword in the last "
        "passage successfully found by Search.",
        "Your task is to infer the 3 most likely questions that the reasoning trajectory solved.",
        "Pi: <the probability of the question i being correct>",
    ],
}


@pytest.mark.parametrize("name", sorted(EXACT_SENTENCES))
def test_rendered_prompts_contain_exact_sentences(name):
    preset = get_preset(name)
    traj = Trajectory("put a clean mug in the cabinet now", (Step("go to sink", "ok"),))
    inference = preset.inference_prompt(traj.render(), num_tasks=3)
    verification = preset.verification_prompt(traj.render(), ["a", "b", "c", "d"])
    text = inference + "\n" + verification
    for sentence in EXACT_SENTENCES[name]:
        assert sentence in text


def test_risk_sentences_are_the_papers():
    assert RISK_SENTENCES["webshop"] == (
        "Pay special attention to the prices of the products involved. Mistakes in "
        "higher-priced products can lead to significant financial loss for the user. "
        "Therefore, when the price is higher than $60, your assessment must be especially "
        "stringent and risk-aware."
    )
    assert RISK_SENTENCES["alfworld"].startswith(
        "Pay special attention to the actions ’heat’ and ’cool’."
    )


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_risk_sentence_only_when_risk_aware(name):
    preset = get_preset(name)
    chain = Trajectory("t", (Step("a"),)).render()
    plain = preset.verification_prompt(chain, ["x", "y"])
    risky = preset.verification_prompt(chain, ["x", "y"], risk_aware=True)
    assert preset.risk not in plain and preset.risk in risky
    assert preset.risk in preset.standard_prompt(chain, "t", risk_aware=True)
    assert preset.risk in preset.multistep_prompt(chain, "t", risk_aware=True)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_observation_note_follows_the_chain(name):
    preset = get_preset(name)
    chain = Trajectory("t", (Step("a", "obs"),)).render()
    for prompt in (
        preset.inference_prompt(chain, num_tasks=3),
        preset.verification_prompt(chain, ["x"]),
        preset.standard_prompt(chain, "t"),
        preset.multistep_prompt(chain, "t"),
    ):
        assert prompt.index(OBSERVATION_NOTE) > prompt.index("<observation>obs</observation>")
    # the note is ours: it is not inside the paper's template text
    assert OBSERVATION_NOTE not in preset.inference


def test_presets_settings():
    assert get_preset("webshop").none_of_the_above
    assert get_preset("hotpotqa").none_of_the_above
    assert get_preset("generic").none_of_the_above
    assert not get_preset("alfworld").none_of_the_above
    assert get_preset("alfworld").answer_format == "alfworld"
    assert get_preset("webshop").answer_format == "topk"
    assert get_preset("webshop").mcq_options(["a", "b", "c"], "t")[-2:] == ["t", NONE_OF_THE_ABOVE]


def test_unknown_preset_lists_valid_names():
    valid = "alfworld, generic, generic-completion, hotpotqa, webshop"
    with pytest.raises(ValueError, match=valid):
        get_preset("shop")


def test_webshop_masker_hides_queries_and_instruction():
    preset = get_preset("webshop")
    task = "i need a red ceramic mug under 20 dollars"
    traj = Trajectory(
        task,
        (
            Step("search[red ceramic mug]", f"Instruction: {task} [Search]"),
            Step("click[B01]", "Red mug $9"),
            Step("click[Buy Now]"),
        ),
    )
    prompt = preset.inference_prompt(preset.mask(traj).render(), num_tasks=3)
    assert task not in prompt.lower()
    assert "red ceramic mug" not in prompt
    assert "click[Buy Now]" in prompt


def test_braces_in_user_text_never_crash_or_expand():
    preset = get_preset("generic")
    traj = Trajectory("{action} {num}", (Step('f(x={"a": 1})', "{instructions} {0} {"),))
    prompt = preset.verification_prompt(traj.render(), ["{num_tasks}", "{action}"])
    assert '{instructions} {0} {' in prompt and "A. {num_tasks}" in prompt
    assert fill("{a}", a="{b}", b="x") == "{b}"
    with pytest.raises(KeyError):
        fill("{a} {b}", a="x")


def test_options_cannot_span_lines():
    rendered = render_options(["buy\nB. fake", "real"])
    assert rendered.split("\n") == ["A. buy B. fake", "B. real"]


def test_invalid_custom_preset_is_rejected_at_construction():
    base = get_preset("generic")
    with pytest.raises(ValueError, match="inference template"):
        Preset(
            name="bad",
            inference="no fields",
            verification=base.verification,
            standard=base.standard,
            multistep=base.multistep,
            risk="",
            feedback="",
        )


def test_feedback_prompts():
    p = feedback_prompt("hotpotqa", task="Q?", gold="42", incorrect_action_chain="Finish[{x}]")
    assert "Your (the user’s) question is: Q? The correct answer is:\n42" in p
    assert "Finish[{x}]" in p
    assert "the error occured before" in feedback_prompt(
        "alfworld", task="t", gold="g", incorrect_action_chain="c"
    )
    with pytest.raises(ValueError):
        feedback_prompt("nope", task="t", gold="g", incorrect_action_chain="c")
    assert "Your previous trial is:\nAction 1: a" in reflection_prompt(
        task="t", trajectory="Action 1: a"
    )
