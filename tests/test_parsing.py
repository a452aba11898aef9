"""Tolerant parsers: the formats critic models really produce, and arbitrary text."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferact_langgraph._parsing import (
    extract_justification,
    parse_alfworld,
    parse_inferred_tasks,
    parse_multistep,
    parse_probability,
    parse_standard,
    parse_topk,
)
from inferact_langgraph.errors import CriticParseError

LABELS = "ABCDE"


# ---------------------------------------------------------------- inferred tasks
@pytest.mark.parametrize(
    "text",
    [
        "The 3 most likely user’s instructions are:\n<A. buy a mug B. buy a cup C. buy a pan>. "
        "The reason is: <kitchen>.",
        "The 3 most likely tasks are: A. buy a mug\nB. buy a cup\nC. buy a pan\n"
        "The reason is: kitchen",
        "1. buy a mug\n2. buy a cup\n3. buy a pan",
        'A. "buy a mug"\nB. “buy a cup”\nC. \'buy a pan\'',
        "Sure! Here they are.\nA) buy a mug\nB) buy a cup\nC) buy a pan\n\nHope this helps.",
    ],
)
def test_inferred_tasks_variants(text):
    result = parse_inferred_tasks(text)
    assert result.tasks == ("buy a mug", "buy a cup", "buy a pan")


def test_inferred_tasks_reason_and_fewer_and_more():
    r = parse_inferred_tasks("The 3 most likely questions are: A. Who is X?\nThe reason is: X.")
    assert r.tasks == ("Who is X?",) and r.reason == "X."
    r = parse_inferred_tasks("A. a1 B. b1 C. c1 D. d1", num_tasks=3)
    assert r.tasks == ("a1", "b1", "c1")


def test_inferred_tasks_keep_internal_letters():
    r = parse_inferred_tasks("A. buy vitamin C tablets B. buy a mug C. buy a pan")
    assert r.tasks == ("buy vitamin C tablets", "buy a mug", "buy a pan")


def test_inferred_tasks_lines_after_header():
    r = parse_inferred_tasks("The 2 most likely tasks are:\n- heat a mug\n- cool a mug")
    assert r.tasks == ("heat a mug", "cool a mug")


@pytest.mark.parametrize("text", ["", "   ", "I cannot tell.", "The reason is: nothing"])
def test_inferred_tasks_nothing_raises_with_raw(text):
    with pytest.raises(CriticParseError) as info:
        parse_inferred_tasks(text)
    assert info.value.raw == text and info.value.stage == "inference"


# ---------------------------------------------------------------- top-k
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("G1: D P1: 0.8", {"D": 0.8}),
        ("G1: D P1: 1", {"D": 1.0}),
        ("G1: D P1: 80%", {"D": 0.8}),
        ("G1: (D) P1: 0.8", {"D": 0.8}),
        ("G1: D. P1: 0.8", {"D": 0.8}),
        ("G1: D\nP1: 0.8\nG2: A\nP2: 0.1", {"D": 0.8, "A": 0.1}),
        ("G_1: D P_1: 0.8 G_2: B P_2: .25", {"D": 0.8, "B": 0.25}),
        ("g1: d p1: 0.8", {"D": 0.8}),
        ("Sure. My guesses:\nG1: **D** P1: 0.7 because it fits.\nJustification: x", {"D": 0.7}),
        ("G1: Option D P1: 0.6", {"D": 0.6}),
        ("G1: D P1: 80", {"D": 0.8}),
        # a label given twice keeps its maximum; labels outside the options are ignored
        ("G1: D P1: 0.3 G2: D P2: 0.6 G3: Z P3: 0.9", {"D": 0.6}),
        # pairs given as G1 G2 then P1 P2 are matched by index
        ("G1: D G2: A\nP1: 0.9 P2: 0.05", {"D": 0.9, "A": 0.05}),
        # label-keyed fallback
        ("P_D: 0.7, P_A: 0.2", {"D": 0.7, "A": 0.2}),
    ],
)
def test_topk_variants(text, expected):
    assert parse_topk(text, LABELS).probs == pytest.approx(expected)


@pytest.mark.parametrize(
    "text", ["G1: D P1: 1.7", "G1: D P1: 7.5", "G1: D P1: -0.3", "G1: D P1: 120%"]
)
def test_out_of_range_probabilities_are_errors_not_clamped(text):
    # Clamping 7.5 to 1.0 would approve a critical call on a nonsense answer.
    with pytest.raises(CriticParseError, match="out of range"):
        parse_topk(text, LABELS)


def test_topk_ignores_numbers_in_the_justification():
    text = "G1: A P1: 0.4\nJustification: had it been G1: D P1: 1.0 I would say so."
    assert parse_topk(text, LABELS).probs == {"A": 0.4}
    assert parse_topk(text, LABELS).justification.startswith("had it been")


@pytest.mark.parametrize("text", ["G1: D P1: nan", "G1: D P1: inf", "G1: D P1: -Infinity"])
def test_topk_non_finite_raises(text):
    with pytest.raises(CriticParseError) as info:
        parse_topk(text, LABELS)
    assert info.value.raw == text


@pytest.mark.parametrize("text", ["", "I think D is right.", "G1: Z P1: 0.9", "P1: 0.4"])
def test_topk_nothing_raises(text):
    with pytest.raises(CriticParseError) as info:
        parse_topk(text, LABELS)
    assert info.value.raw == text


# ---------------------------------------------------------------- ALFWorld
def test_alfworld_format():
    text = (
        "A: Completed P_A: 0.85\nB: Not Completed P_B: .3\n(C) Completed P_C = 1\n"
        "D: Not Completed P_D: 40%\nJustification: heated the mug."
    )
    answer = parse_alfworld(text, "ABCD")
    assert answer.probs == pytest.approx({"A": 0.85, "B": 0.3, "C": 1.0, "D": 0.4})
    assert answer.completed == {"A": True, "B": False, "C": True, "D": False}
    assert answer.justification == "heated the mug."


def test_alfworld_falls_back_to_topk_and_raises_on_nothing():
    assert parse_alfworld("G1: B P1: 0.5", "ABCD").probs == {"B": 0.5}
    with pytest.raises(CriticParseError):
        parse_alfworld("A: Completed", "ABCD")


# ---------------------------------------------------------------- standard
@pytest.mark.parametrize(
    ("text", "correct", "score"),
    [
        ("The answer is: Correct\nConfidence: 0.8\nJustification: ok", True, 0.8),
        ("The answer is: Incorrect\nConfidence: 0.9", False, 0.1),
        ("The answer is: Incorrect\nConfidence: 0.2", False, 0.2),
        ("The answer is: Correct\nConfidence: 0.3", True, 0.7),
        ("**The answer is:** <Correct>\n**Confidence:** 95%", True, 0.95),
        ("Completion: Completed\nCorrectness: Incorrect\nConfidence: 0.7", False, 0.3),
        ("The answer is: Correct", True, 1.0),
        ("The answer is: Not correct. Confidence: 1", False, 0.0),
    ],
)
def test_standard_variants(text, correct, score):
    answer = parse_standard(text)
    assert answer.correct is correct
    assert answer.score == pytest.approx(score)


def test_standard_completion_and_errors():
    assert parse_standard("Completion: Not Completed\nCorrectness: Correct").completed is False
    with pytest.raises(CriticParseError):
        parse_standard("Confidence: 0.9")
    with pytest.raises(CriticParseError):
        parse_standard("The answer is: Correct\nConfidence: nan")


# ---------------------------------------------------------------- multi-step
def test_multistep_variants():
    text = "Step 1: 0.9\nStep 2:0.4\n**Step 3**: 75%\nStep 3: 0.1\nStep 4 - 1\nJustification: x"
    answer = parse_multistep(text)
    assert answer.scores == pytest.approx((0.9, 0.4, 0.75, 1.0))
    assert answer.justification == "x"
    with pytest.raises(CriticParseError):
        parse_multistep("all steps look fine")


def test_justification_and_probability_helpers():
    assert extract_justification("x\nJustification:<because>") == "because"
    assert extract_justification("nothing here") == ""
    assert parse_probability("0.5") == 0.5
    with pytest.raises(CriticParseError):
        parse_probability("abc")


# ---------------------------------------------------------------- properties
format_bits = st.sampled_from(
    [
        "G1:", "P1:", "G_2:", "P_2:", "P_A:", "A:", "Completed", "Not Completed", "Step 1:",
        "Step 2:", "Justification:", "The answer is:", "Correct", "Incorrect", "Confidence:",
        "The reason is:", "most likely tasks are:", "A.", "B.", "1.", " D ", "(D)", "0.8", "1",
        "80%", "nan", "inf", "-3", "1e309", ".", "\n", " ", "<", ">", "**", "%", "e5",
    ]
)
answer_text = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(format_bits, st.text(max_size=5)), max_size=40).map("".join),
)


def _check_probs(values):
    for v in values:
        assert 0.0 <= v <= 1.0 and not math.isnan(v)


@settings(max_examples=300, deadline=None)
@given(answer_text)
def test_parsers_never_crash_and_stay_in_range(text):
    for parse in (
        lambda t: parse_topk(t, LABELS).probs.values(),
        lambda t: parse_alfworld(t, "ABCD").probs.values(),
        lambda t: [parse_standard(t).score],
        lambda t: parse_multistep(t).scores,
    ):
        try:
            values = parse(text)
        except CriticParseError as exc:
            assert exc.raw is not None
            continue
        _check_probs(values)


@settings(max_examples=300, deadline=None)
@given(answer_text)
def test_inferred_tasks_never_crash(text):
    try:
        result = parse_inferred_tasks(text, num_tasks=3)
    except CriticParseError as exc:
        assert exc.raw == text
        return
    assert 1 <= len(result.tasks) <= 3
    assert all(task.strip() for task in result.tasks)
