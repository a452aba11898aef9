"""The example graphs (graphs/*.py, langgraph.json): interrupt, reject with feedback, next trial."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from inferact_langgraph.examples.demo_models import (
    ENVIRONMENTS,
    make_env,
    make_scripted_actor,
    oracle_feedback,
)

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
    graph = module.build_graph(actor_model=actor1, checkpointer=InMemorySaver(), store=store,
                               task_index=task, on_reject="end")
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
    graph2 = module.build_graph(actor_model=actor2, checkpointer=InMemorySaver(), store=store,
                                task_index=task, on_reject="end")
    cfg2 = {"configurable": {"thread_id": "trial-2"}}
    out2 = graph2.invoke({"messages": [("user", env.prompt(task))]}, cfg2)
    first_call = "\n".join(str(m.content) for m in actor2.prompts[0])
    assert feedback in first_call
    assert "__interrupt__" not in out2  # corrected: the oracle critic lets it through
    audit = graph2.get_state(cfg2).values["inferact_audit"]
    assert audit and audit[-1]["decision"] == "approve"


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_oracle_critic_answers_parse_and_are_labelled(name):
    from inferact_langgraph.examples.demo_models import ORACLE_LABEL, build_env_graph

    assert "not live judgement" in ORACLE_LABEL
    env, graph = build_env_graph(name, checkpointer=InMemorySaver())
    out = graph.invoke({"messages": [("user", env.prompt(0))]},
                       {"configurable": {"thread_id": "x"}})
    info = out["__interrupt__"][0].value["action_requests"][0]["inferact"]
    assert info["error"] is None
    assert "oracle-scripted" in info["justification"]
