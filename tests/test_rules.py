"""The agent's rules: the critics that judge an action see them, Task Inference never does."""

from __future__ import annotations

import ast

import pytest
from conftest import says
from guard_helpers import buy_now
from langchain.agents import create_agent
from typer.testing import CliRunner

from inferact_langgraph import InferActMiddleware, with_inferact
from inferact_langgraph.cli import app
from inferact_langgraph.critics import make_critic
from inferact_langgraph.eval.render import paste_line
from inferact_langgraph.guard._compat import guard_of
from inferact_langgraph.prompts.rules import RULES_NOTE
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic, answer_critic_prompt
from inferact_langgraph.trajectory import Step, Trajectory

POLICY = "A basic economy ticket cannot be cancelled unless it was booked in the last 24 hours {x}."
TRAJECTORY = Trajectory(
    "cancel my reservation ZFA04Y",
    (
        Step('get_reservation_details(reservation_id="ZFA04Y")', '{"cabin": "basic_economy"}'),
        Step('cancel_reservation(reservation_id="ZFA04Y")'),
    ),
)


def _prompts_sent(spec: str, rules: str | None) -> list[str]:
    prompts: list[str] = []

    def respond(messages):
        prompts.append(messages[-1].content)
        return answer_critic_prompt(messages[-1].content, p_task=0.9)

    critic = make_critic(spec, model=ScriptedChatModel(responder=respond), rules=rules)
    critic.evaluate(TRAJECTORY)
    return prompts


@pytest.mark.parametrize("spec", ["inferact", "standard", "multistep", "self_consistency"])
def test_every_prompt_that_judges_the_action_shows_the_rules_verbatim(spec):
    prompts = _prompts_sent(spec, POLICY)
    judging = [p for p in prompts if "most likely user’s tasks" not in p]
    assert judging
    for prompt in judging:
        assert RULES_NOTE in prompt
        assert f"<rules>\n{POLICY}\n</rules>" in prompt  # braces kept: the text is not a template


def test_task_inference_never_sees_the_rules():
    """Inference guesses what the actions are for from the actions alone; the rules would hint
    at what a user of this agent usually asks."""
    inference = [p for p in _prompts_sent("inferact", POLICY) if "most likely user’s tasks" in p]
    assert len(inference) == 1
    assert "basic economy ticket cannot" not in inference[0] and RULES_NOTE not in inference[0]


def test_without_rules_the_prompts_are_unchanged():
    assert not any("<rules>" in p for p in _prompts_sent("inferact", None))


@pytest.mark.parametrize("bad", ["", "   ", 3, ["no refunds"]])
def test_rules_that_are_not_text_are_refused_with_what_was_expected(bad):
    with pytest.raises(ValueError, match="non-empty string"):
        make_critic("standard", model=None, rules=bad)


def test_the_logprob_critic_refuses_rules_it_would_not_show():
    with pytest.raises(ValueError, match="does not use rules"):
        make_critic("logprob", model=None, rules=POLICY)


@pytest.mark.parametrize("kind", ["with_inferact", "InferActMiddleware"])
def test_both_entry_points_give_the_rules_to_the_critic_they_build(kind):
    def guard(**arguments):
        if kind == "InferActMiddleware":
            return InferActMiddleware(**arguments).guard
        agent = create_agent(ScriptedChatModel(replies=["hi"]), [buy_now])
        return guard_of(with_inferact(agent, **arguments))

    assert guard(model=ScriptedChatModel(replies=["x"]), rules=POLICY).critic.rules == POLICY
    with pytest.raises(ValueError, match="rules= goes to the critic you built"):
        guard(critic=ScriptedCritic(scores=[0.9]), rules=POLICY)


def test_eval_reads_the_rules_file_and_its_paste_line_carries_it(tmp_path):
    line = paste_line("inferact", 0.4, {"model": "openai:m", "rules": "policy.md"})
    ast.parse(line)
    assert 'rules=Path("policy.md").read_text()' in line
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    data = tmp_path / "t.jsonl"
    data.write_text("")
    result = CliRunner().invoke(
        app,
        ["eval", "--data", str(data), "--critic", "standard", "--model", "openai:m",
         "--rules", str(empty), "--no-cache", "--out", str(tmp_path / "r")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert says(result.output, "is empty: give the text of the rules"), result.output
