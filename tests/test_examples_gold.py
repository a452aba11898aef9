"""Each example environment answers the gold-data questions itself, one way for every caller.

The research harness, the demo and the oracle critic models ask an
:class:`~inferact_langgraph.examples.Environment` what a task asks, its gold outcome, whether a
call is right, whether an episode succeeded and what a simulated human says; here each
environment's answers are checked against runs of its own scripted actor, and the callers are
checked not to decide any of it by the environment's name or from its private helpers.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage

from inferact_langgraph.examples import (
    AccountEnv,
    AlfWorldEnv,
    Environment,
    HotPotQAEnv,
    Judgement,
    WebShopEnv,
    account_actor,
)
from inferact_langgraph.examples._common import FEEDBACK_PATTERN, episode_calls
from inferact_langgraph.examples.oracle import actions_in, baseline_oracle_model
from inferact_langgraph.examples.registry import ENVIRONMENTS, make_env

ROOT = Path(__file__).resolve().parents[1]
ENV_CLASSES: list[type[Environment]] = [WebShopEnv, HotPotQAEnv, AlfWorldEnv, AccountEnv]
CASES = [(cls, index) for cls in ENV_CLASSES for index in range(len(cls().tasks))]


def run(env: Environment, index: int, *, feedback: bool) -> list[BaseMessage]:
    """One unguarded episode of the scripted actor: its first try, or after feedback."""
    if isinstance(env, AccountEnv):
        actor = account_actor(env, index, off_track=True)
    else:
        actor = env.scripted_actor(index)
    agent = create_agent(actor, env.tools)
    messages: list[BaseMessage] = [HumanMessage(env.prompt(index))]
    if feedback:
        messages.append(HumanMessage(env.oracle_feedback(index)))
    return list(agent.invoke({"messages": messages})["messages"])


def critical_calls(env: Environment, messages: list[BaseMessage]) -> list[tuple[str, dict]]:
    return [(c.name, c.args) for c in episode_calls(messages) if c.name in env.critical_tools]


@pytest.mark.parametrize(("cls", "index"), CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_the_first_try_fails_and_every_answer_about_it_agrees(cls, index) -> None:
    env = cls()
    messages = run(env, index, feedback=False)
    calls = critical_calls(env, messages)
    assert calls, "the scripted actor's first try makes a critical call"
    assert env.succeeded(index, messages) is False
    verdict = env.judge(index, calls)
    assert isinstance(verdict, Judgement) and verdict.correct is False and verdict.why
    assert not all(env.action_is_correct(index, tool, args) for tool, args in calls)


@pytest.mark.parametrize(("cls", "index"), CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_after_the_oracle_feedback_the_task_succeeds_and_every_answer_agrees(cls, index) -> None:
    env = cls()
    feedback = env.oracle_feedback(index)
    assert FEEDBACK_PATTERN.search(feedback), "the actor must recognise it as feedback"
    messages = run(env, index, feedback=True)
    calls = critical_calls(env, messages)
    assert env.succeeded(index, messages) is True
    assert env.judge(index, calls).correct is True
    assert all(env.action_is_correct(index, tool, args) for tool, args in calls)


@pytest.mark.parametrize("cls", ENV_CLASSES, ids=lambda c: c.name)
def test_task_text_gold_text_and_the_prompt_describe_each_task(cls) -> None:
    env = cls()
    for index in range(len(env.tasks)):
        assert env.task_text(index) and env.task_text(index) in env.prompt(index)
        assert env.gold_text(index)
        assert env.match_task(env.task_text(index)) == index
    assert len(env.inferred_tasks([])) == 3


def test_calls_to_tools_that_are_not_critical_are_always_right() -> None:
    assert WebShopEnv().action_is_correct(0, "search", {"query": "anything"})
    assert AlfWorldEnv().action_is_correct(0, "go_to", {"location": "fridge 1"})


def test_alfworld_success_is_the_household_state_not_the_actors_words() -> None:
    env = AlfWorldEnv()
    messages = run(env, 0, feedback=True)
    assert env.succeeded(0, messages)
    # The same episode with the final put removed: the egg is hot but not in its target.
    puts = [m for m in messages if getattr(m, "name", None) == "put"]
    assert puts
    cut = messages[: messages.index(puts[-1])]
    assert not env.succeeded(0, cut)


def test_a_webshop_purchase_the_shop_refused_is_no_success() -> None:
    env = WebShopEnv()
    messages = run(env, 0, feedback=True)
    (receipt,) = [m for m in messages if getattr(m, "name", None) == "buy_now"]
    receipt.content = "Error: the listed price of B0SHD66X66 is $72.99."
    assert not env.succeeded(0, messages)


def test_the_baseline_oracle_judges_with_the_environment() -> None:
    env = HotPotQAEnv()
    right = f'Action 1: finish(answer="{env.task(0)["gold_answer"]}")'
    wrong = 'Action 1: finish(answer="Pizza Hut")'
    model = baseline_oracle_model(env, 0, "standard")
    assert model.invoke(right).content.startswith("The answer is: Correct")
    assert model.invoke(wrong).content.startswith("The answer is: Incorrect")
    assert actions_in(right) == [("finish", {"answer": env.task(0)["gold_answer"]})]


def test_the_registry_names_each_environment_by_its_own_name() -> None:
    for name in ENVIRONMENTS:
        env = make_env(name)
        assert env.name == name and isinstance(env, Environment)
    with pytest.raises(ValueError, match="choose one of webshop, hotpotqa, alfworld"):
        make_env("kitchen")


# -- the callers ask the environment ------------------------------------------------------------

#: Modules outside ``examples/`` that work with any example environment.
CALLERS = ["inferact_langgraph/eval", "inferact_langgraph/_demo.py", "inferact_langgraph/cli.py"]
_NAME_BRANCH = re.compile(r"""==\s*["'](webshop|hotpotqa|alfworld|account)["']""")


def _caller_files() -> list[Path]:
    files: list[Path] = []
    for entry in CALLERS:
        path = ROOT / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def name_branches(paths: list[Path]) -> list[str]:
    """Lines that choose behaviour by comparing with an example environment's name."""
    return [
        f"{path.name}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if _NAME_BRANCH.search(line)
    ]


def private_imports(paths: list[Path]) -> list[str]:
    """Imports of a private module or a private name of ``inferact_langgraph.examples``."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            if not module.startswith("inferact_langgraph.examples"):
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            if private or any(part.startswith("_") for part in module.split(".")):
                found.append(f"{path.name}:{node.lineno}: {module} {private}")
    return found


def test_no_caller_chooses_behaviour_by_the_environments_name() -> None:
    found = name_branches(_caller_files())
    assert not found, "ask the Environment instead:\n" + "\n".join(found)


def test_no_caller_imports_a_private_name_of_the_examples() -> None:
    found = private_imports(_caller_files())
    assert not found, "use the examples' public names:\n" + "\n".join(found)


def test_the_checks_of_the_callers_find_what_they_look_for(tmp_path) -> None:
    bad = tmp_path / "harness.py"
    bad.write_text(
        "from inferact_langgraph.examples.registry import _judge\n"
        "from inferact_langgraph.examples._common import text_of\n"
        "from inferact_langgraph.examples.registry import make_env\n"
        "def success(name):\n"
        '    if name == "alfworld":\n'
        "        return True\n"
    )
    assert [line.split(":")[1] for line in private_imports([bad])] == ["1", "2"]
    assert [line.split(":")[1] for line in name_branches([bad])] == ["5"]
    assert len(_caller_files()) > 5  # the scan reaches the harness, the demo and the CLI
