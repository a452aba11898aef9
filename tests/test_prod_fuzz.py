"""Property tests: hostile or random input never crashes the trajectory builder, the answer
parsers or the resume parser with anything but their documented error, and every parsed
probability is in [0, 1]."""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from inferact_langgraph._parsing import (
    parse_alfworld,
    parse_inferred_tasks,
    parse_multistep,
    parse_probability,
    parse_standard,
    parse_topk,
    parse_verification,
)
from inferact_langgraph.errors import CriticParseError, ResumeError
from inferact_langgraph.guard.payloads import parse_resume
from inferact_langgraph.trajectory import Trajectory, TrajectoryError

FUZZ = settings(
    max_examples=300, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# Text that looks like critic answers: fragments of the real formats mixed with noise.
FRAGMENTS = st.sampled_from([
    "G1:", "G2:", "P1:", "P2:", "P_A:", "G_1", " A", " D", "(D)", "d.", " 0.8", " .3", " 1",
    " 80%", " 7", " 7.5", " -0.2", " NaN", " inf", " 1e309", " 99999999999999999999", "%",
    "\n", " ", "Justification:", "The answer is:", " Correct", " Incorrect", "Confidence:",
    "Step 1:", "Step 2:", "A: Completed", "B: Not completed", "A. buy a mug", "B. ",
    "The 3 most likely user's tasks are:", "The reason is:", "**", "<", ">", "None of the above",
])
ANSWERS = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(FRAGMENTS, st.text(max_size=5)), max_size=40).map("".join),
)


def _in_unit(x: float) -> bool:
    return isinstance(x, float) and not math.isnan(x) and 0.0 <= x <= 1.0


@FUZZ
@given(ANSWERS)
def test_probability_parser(text: str) -> None:
    with contextlib.suppress(CriticParseError):
        assert _in_unit(parse_probability(text))


@FUZZ
@given(ANSWERS, st.sampled_from(["ABCDE", "ABCD", "AB", "ABCDEFGHIJ"]))
def test_option_parsers(text: str, labels: str) -> None:
    for parse in (parse_topk, parse_alfworld):
        try:
            answer = parse(text, labels)
        except CriticParseError:
            continue
        assert answer.probs and set(answer.probs) <= set(labels)
        assert all(_in_unit(p) for p in answer.probs.values())
    with contextlib.suppress(CriticParseError):
        parse_verification(text, labels, answer_format="topk")


@FUZZ
@given(ANSWERS)
def test_baseline_parsers(text: str) -> None:
    with contextlib.suppress(CriticParseError):
        assert _in_unit(parse_standard(text).score)
    with contextlib.suppress(CriticParseError):
        assert all(_in_unit(s) for s in parse_multistep(text).scores)


@FUZZ
@given(ANSWERS, st.integers(min_value=1, max_value=6))
def test_inferred_tasks_parser(text: str, n: int) -> None:
    try:
        tasks = parse_inferred_tasks(text, num_tasks=n).tasks
    except CriticParseError:
        return
    assert 1 <= len(tasks) <= n and all(isinstance(t, str) and t.strip() for t in tasks)


# ---------------------------------------------------------------------------- trajectories
IDS = st.sampled_from(["c1", "c2", "c3", "", "x" * 40])
CONTENT = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}),
        st.fixed_dictionaries({"type": st.sampled_from(["image_url", "reasoning", "weird"])}),
        st.text(max_size=10),
    ), max_size=3),
)
ARGS = st.dictionaries(st.text(max_size=8), st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
), max_size=3)
CALL = st.fixed_dictionaries({"name": st.text(min_size=1, max_size=12), "args": ARGS, "id": IDS})
MESSAGE = st.one_of(
    st.builds(HumanMessage, content=CONTENT),
    st.builds(SystemMessage, content=CONTENT),
    st.builds(AIMessage, content=CONTENT, tool_calls=st.lists(CALL, max_size=3)),
    st.builds(ToolMessage, content=CONTENT, tool_call_id=IDS,
              status=st.sampled_from(["success", "error"])),
)


@FUZZ
@given(st.lists(MESSAGE, max_size=12), st.one_of(st.none(), st.text(max_size=30)),
       st.one_of(st.none(), IDS))
def test_trajectory_from_arbitrary_messages(
    messages: list, task: str | None, pending: str | None
) -> None:
    try:
        trajectory = Trajectory.from_messages(messages, task=task, pending_tool_call_id=pending)
    except TrajectoryError:
        return
    assert isinstance(trajectory.render(), str)


# ---------------------------------------------------------------------------- resumes
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
DECISION = st.one_of(
    JSONISH,
    st.fixed_dictionaries(
        {"type": st.one_of(st.sampled_from(["approve", "edit", "reject", "respond"]), JSONISH)},
        optional={"message": JSONISH, "edited_action": JSONISH},
    ),
)
RESUMES = st.one_of(
    JSONISH, DECISION,
    st.fixed_dictionaries({"decisions": st.one_of(JSONISH, st.lists(DECISION, max_size=3))}),
)


@FUZZ
@given(RESUMES, st.integers(min_value=1, max_value=3))
def test_resume_parser(value: object, count: int) -> None:
    try:
        decisions = parse_resume(value, count=count)
    except ResumeError:
        return
    assert len(decisions) == count
    assert all(d.type in ("approve", "edit", "reject", "respond") for d in decisions)


@pytest.mark.parametrize("value", [None, {}, [], 0, "", {"decisions": {}}, {"type": None}])
def test_resume_parser_edge_values(value: object) -> None:
    with pytest.raises(ResumeError):
        parse_resume(value, count=1)
