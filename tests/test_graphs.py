"""The example graphs (graphs/*.py, langgraph.json): interrupt, reject with feedback, next trial."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from inferact_langgraph.examples.registry import (
    ENVIRONMENTS,
    MODEL_VARIABLES,
    make_env,
    make_scripted_actor,
    oracle_critic_model,
    oracle_feedback,
)
from inferact_langgraph.testing import ScriptedChatModel, prompt_text

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"_graph_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_langgraph_json_targets_import_and_compile():
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["dependencies"] == ["."]
    assert set(config["graphs"]) == set(ENVIRONMENTS)
    for name, target in config["graphs"].items():
        path, _, attr = target.partition(":")
        module = _load(ROOT / path, name)
        graph = getattr(module, attr)
        assert isinstance(graph, CompiledStateGraph)
        assert graph.checkpointer is None  # the server provides one
        assert {"inferact_memory", "inferact_critic", "inferact_gate"} <= set(graph.nodes)


@pytest.mark.parametrize("name", ENVIRONMENTS)
@pytest.mark.parametrize("task", [0, 1])
def test_reject_with_feedback_reaches_the_next_trial(name, task):
    module = _load(ROOT / "graphs" / f"{name}.py", name)
    env = make_env(name)
    store = InMemoryStore()
    actor1 = make_scripted_actor(name, env, task)
    graph = module.build_graph(
        actor_model=actor1,
        checkpointer=InMemorySaver(),
        store=store,
        task_index=task,
        on_reject="end",
    )
    cfg1 = {"configurable": {"thread_id": "trial-1"}}
    out = graph.invoke({"messages": [("user", env.prompt(task))]}, cfg1)
    request = out["__interrupt__"][0].value["action_requests"][0]
    assert request["name"] in env.critical_tools
    assert request["inferact"]["score"] < request["inferact"]["threshold"]
    assert request["inferact"]["inferred_tasks"]
    feedback = oracle_feedback(name, env, task)
    graph.invoke(Command(resume={"decisions": [{"type": "reject", "message": feedback}]}), cfg1)
    assert graph.get_state(cfg1).values["inferact_feedback"]

    actor2 = make_scripted_actor(name, env, task)
    graph2 = module.build_graph(
        actor_model=actor2,
        checkpointer=InMemorySaver(),
        store=store,
        task_index=task,
        on_reject="end",
    )
    cfg2 = {"configurable": {"thread_id": "trial-2"}}
    out2 = graph2.invoke({"messages": [("user", env.prompt(task))]}, cfg2)
    first_call = "\n".join(str(m.content) for m in actor2.prompts[0])
    assert feedback in first_call
    assert "__interrupt__" not in out2  # corrected: the oracle critic lets it through
    audit = graph2.get_state(cfg2).values["inferact_audit"]
    assert audit and audit[-1]["decision"] == "approve"


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_oracle_critic_answers_parse_and_are_labelled(name):
    from inferact_langgraph.examples.registry import ORACLE_LABEL, build_env_graph

    assert "not live judgement" in ORACLE_LABEL
    env, graph = build_env_graph(name, checkpointer=InMemorySaver())
    out = graph.invoke(
        {"messages": [("user", env.prompt(0))]}, {"configurable": {"thread_id": "x"}}
    )
    info = out["__interrupt__"][0].value["action_requests"][0]["inferact"]
    assert info["error"] is None
    assert "oracle-scripted" in info["justification"]


# -- served graphs act on the user's message ----------------------------------------------

#: Two different requests per environment, in a user's own words (not the data's text).
REQUESTS = {
    "webshop": (
        "blackout shades, 66 x 66 inch, white, for my bedroom window",
        "a white vanity bench under 100 dollars please",
    ),
    "hotpotqa": (
        "is Pizza Inn or Papa Gino's headquartered further north?",
        "who was born first, Lucie Hradecka or Raffaella Reggi?",
    ),
    "alfworld": (
        "please heat an egg and put it on countertop 1",
        "cool a mug, then put it in cabinet 2",
    ),
}
VERIFICATION_MARKERS = ("candidate user’s instructions", "candidate questions", "candidate tasks")


def _offline(monkeypatch) -> None:
    for variable in MODEL_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def _served_offline(name: str, monkeypatch):
    """``(env, oracle critic model, graph)``: ``graphs/<name>.py``'s graph, offline."""
    _offline(monkeypatch)
    module = _load(ROOT / "graphs" / f"{name}.py", name)
    env = make_env(name)
    critic_model = oracle_critic_model(name, env)
    graph = module.build_graph(env=env, critic_model=critic_model, checkpointer=InMemorySaver())
    return env, critic_model, graph


def _planned_call(name: str, env, index: int) -> tuple[str, dict]:
    """The critical call the scripted actor makes first for task ``index`` (its near miss)."""
    task = env.task(index)
    if name == "webshop":
        return "buy_now", {"asin": task["distractor"]["asin"]}
    if name == "hotpotqa":
        return "finish", {"answer": task["trial1"][-1]["args"]["answer"]}
    return task["distractor"]["operation"], {}


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_served_graph_acts_on_each_message_and_the_critic_judges_that_message(name, monkeypatch):
    env, critic_model, graph = _served_offline(name, monkeypatch)
    first, second = REQUESTS[name]
    tasks = [env.match_task(first), env.match_task(second)]
    assert None not in tasks and tasks[0] != tasks[1]
    for message, other, index in ((first, second, tasks[0]), (second, first, tasks[1])):
        critic_model.reset()
        out = graph.invoke(
            {"messages": [("user", message)]}, {"configurable": {"thread_id": message}}
        )
        request = out["__interrupt__"][0].value["action_requests"][0]
        tool, args = _planned_call(name, env, index)
        assert request["name"] == tool  # the actor did the task this message asks for
        assert args.items() <= request["args"].items()
        prompts = [prompt_text(p) for p in critic_model.prompts]
        verification = [p for p in prompts if any(m in p for m in VERIFICATION_MARKERS)]
        assert len(verification) == 2  # both option orders
        for prompt in verification:  # the task judged is the user's message, as typed
            assert f". {message}\n" in prompt
            assert env.task_texts()[index] not in prompt  # never the canned instruction
        assert not any(other in p for p in prompts)
        # the near miss is judged against this message, and flagged
        assert request["inferact"]["score"] < request["inferact"]["threshold"]
        assert env.task_texts()[index] in request["inferact"]["justification"]


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_served_graph_answers_plainly_when_the_message_is_no_known_task(name, monkeypatch):
    env, critic_model, graph = _served_offline(name, monkeypatch)
    out = graph.invoke(
        {"messages": [("user", "buy me a toaster")]}, {"configurable": {"thread_id": "toaster"}}
    )
    assert "__interrupt__" not in out
    (answer,) = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert not answer.tool_calls and critic_model.calls == 0
    assert '"buy me a toaster" is not one of them, so I did nothing.' in answer.content
    assert all(f"- {text}" in answer.content for text in env.task_texts())


def test_environment_variables_make_the_served_graph_live(monkeypatch):
    from inferact_langgraph import _factory as factory

    env = make_env("webshop")
    bench = env.products["B0BNCHWHT1"]
    buy = {"asin": bench["asin"], "options": {"color": "white"}, "price": bench["price"]}
    actor = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[{"name": "buy_now", "args": buy, "id": "b1"}]),
            "I bought the bench.",
        ]
    )
    critic = ScriptedChatModel(
        responder=lambda messages: (
            "G1: A P1: 0.9\nJustification: fine."
            if "candidate user’s instructions" in prompt_text(messages)
            else "The 3 most likely user’s instructions are: A. x B. y C. z. The reason is: r."
        )
    )
    built = {}

    def build_model(model, *, base_url=None, api_key=None, **kwargs):
        built[model] = (base_url, api_key)
        return {"my-actor": actor, "my-critic": critic}[model]

    monkeypatch.setattr(factory, "build_model", build_model)
    monkeypatch.setenv("INFERACT_ACTOR_MODEL", "my-actor")
    monkeypatch.setenv("INFERACT_CRITIC_MODEL", "my-critic")
    monkeypatch.setenv("INFERACT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("INFERACT_API_KEY", "k")
    module = _load(ROOT / "graphs" / "webshop.py", "webshop")
    graph = module.build_graph(checkpointer=InMemorySaver())
    assert built == {
        "my-actor": ("http://127.0.0.1:9/v1", "k"),
        "my-critic": ("http://127.0.0.1:9/v1", "k"),
    }
    message = "get me a white bench for my vanity"
    graph.invoke({"messages": [("user", message)]}, {"configurable": {"thread_id": "live"}})
    assert actor.calls >= 1 and critic.calls >= 2  # the live models act and judge
    verification = [prompt_text(p) for p in critic.prompts if "candidate user’s" in prompt_text(p)]
    assert verification and all(f". {message}\n" in p for p in verification)


def test_environment_variables_that_name_no_model_fail_clearly(monkeypatch):
    _offline(monkeypatch)
    monkeypatch.setenv("INFERACT_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="INFERACT_ACTOR_MODEL and/or INFERACT_CRITIC_MODEL"):
        _load(ROOT / "graphs" / "hotpotqa.py", "hotpotqa")


def test_oracle_critic_flags_an_action_for_a_request_it_does_not_know(monkeypatch):
    """A live actor may act on any request; the offline oracle never vouches for an unknown one."""
    _offline(monkeypatch)
    env = make_env("webshop")
    kettle = env.products["B0KETTLE17"]
    buy = {"asin": kettle["asin"], "price": kettle["price"]}
    actor = ScriptedChatModel(
        replies=[AIMessage("", tool_calls=[{"name": "buy_now", "args": buy, "id": "k1"}]), "ok"]
    )
    module = _load(ROOT / "graphs" / "webshop.py", "webshop")
    graph = module.build_graph(env=env, actor_model=actor, checkpointer=InMemorySaver())
    message = "buy me a toaster"
    out = graph.invoke({"messages": [("user", message)]}, {"configurable": {"thread_id": "k"}})
    info = out["__interrupt__"][0].value["action_requests"][0]["inferact"]
    assert info["score"] < info["threshold"] and env.purchases() == []
    assert "matches none of the tasks this offline environment knows" in info["justification"]
