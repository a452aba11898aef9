"""Real answers of a capable model, replayed: `inferact eval` and a guarded graph, offline.

``tests/data/hotpotqa-trial1-capable-model-answers.jsonl`` holds the 450 requests that
``inferact eval --preset hotpotqa --critic inferact --critic standard --critic
multistep:product`` sent for the 90 trajectories of ``tests/data/hotpotqa-react-trial1.jsonl``
(at commit c16caa8) and the answer a capable chat model gave to each (tests/data/README.md).
The replay answers by exact request, so these tests reproduce that run's figures exactly, and
a prompt that no longer renders byte for byte shows up as *stale* requests: they are counted
and named (trajectory, critic, stage, transcript line, diff), and only the figure check of the
critic they belong to is skipped, saying so.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

import pytest
from conftest import ANSWERS, ROOT, SHARED_DATA, read_jsonl
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from inferact_langgraph import critical, with_inferact
from inferact_langgraph.critics import Critic, make_critic
from inferact_langgraph.replay import ReplayChatModel, Transcript
from inferact_langgraph.testing import ScriptedChatModel
from inferact_langgraph.trajectory import Step

sys.path.insert(0, str(ROOT / "bench"))
import bench_replay_eval

pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning")

CRITICS = ("inferact", "standard", "multistep:product")
#: What the recorded run measured (tests/data/README.md): same-data best threshold, in %.
RECORDED = {
    "inferact": {"f1": 87.1, "auc_pr": 95.3, "calls": 3},
    "standard": {"f1": 88.2, "auc_pr": 96.1, "calls": 1},
    "multistep:product": {"f1": 82.8, "auc_pr": 91.7, "calls": 1},
}
#: What every stale check's error says, whether the replay answered in process (the
#: ``ReplayMismatchError`` itself) or through the loopback server, as ``inferact eval`` meets it
#: (the OpenAI client's HTTP 400 error, carrying the same text).
STALE = "stale request: no recorded request"


def stale_checks(report: dict) -> dict[str, list[str]]:
    """Critic -> "trajectory id: error" of every check that met a stale request."""
    found: dict[str, list[str]] = defaultdict(list)
    for row in report["trajectories"]:
        for name, entry in row["critics"].items():
            if STALE in (entry.get("error") or ""):
                found[name].append(f"{row['id']}: {entry['error']}")
    return found


def other_errors(report: dict) -> list[str]:
    return [
        f"{row['id']} ({name}): {entry['error']}"
        for row in report["trajectories"]
        for name, entry in row["critics"].items()
        if entry.get("error") and STALE not in entry["error"]
    ]


@pytest.fixture(scope="module")
def replayed_cli(tmp_path_factory):
    """`inferact eval` exactly as the transcript was recorded, through a loopback endpoint.

    The same run as ``bench/bench_replay_eval.py`` (which writes docs/benchmarks-eval.md).
    """
    return bench_replay_eval.run_replay(tmp_path_factory.mktemp("replay") / "report")


@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize("critic", CRITICS)
def test_eval_cli_replay_reproduces_the_recorded_figures(replayed_cli, critic):
    result, report, _transcript = replayed_cli
    assert other_errors(report) == [], "only stale requests may fail"
    stale = stale_checks(report)
    if stale:
        total = sum(len(v) for v in stale.values())
        print(f"{total} stale checks (prompts changed since the recording):")
        for name, entries in stale.items():
            for entry in entries:
                print(f"  {name}: {entry[:400]}")
    if stale.get(critic):
        pytest.skip(
            f"{len(stale[critic])} of 90 {critic} checks met stale requests (its prompt no "
            f"longer renders as recorded); skipping only {critic}'s figure check. First: "
            f"{stale[critic][0][:300]}"
        )
    summary = report["critics"][critic]
    paper = summary["metrics"]["paper"]
    assert summary["scored"] == 90 and summary["errors"] == 0
    assert round(100 * paper["f1"], 1) == RECORDED[critic]["f1"]
    assert round(100 * paper["auc_pr"], 1) == RECORDED[critic]["auc_pr"]
    assert summary["usage"]["per_trajectory"]["model_calls"] == RECORDED[critic]["calls"]
    assert f"{RECORDED[critic]['f1']:.1f}" in result.output  # printed, too


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_every_recorded_request_was_asked_for_exactly(replayed_cli):
    result, _report, transcript = replayed_cli
    if transcript.stale:
        pytest.skip(f"{len(transcript.stale)} stale requests (see the figure tests' output)")
    assert result.exit_code == 0, result.output
    assert transcript.served == 450 and transcript.unused() == []


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_the_docs_table_is_the_one_a_fresh_replay_renders(replayed_cli):
    _result, report, transcript = replayed_cli
    committed = bench_replay_eval.block_in(bench_replay_eval.DOC, "replay")
    assert committed is not None, "docs/benchmarks-eval.md lost its replay block"
    results = bench_replay_eval.calibration_results(report)
    fresh = bench_replay_eval.render(report, stale=len(transcript.stale), results=results)
    assert committed == fresh.rstrip(), "run `python bench/bench_replay_eval.py` to regenerate it"
    for spec, figures in RECORDED.items():
        assert f"| **{figures['f1']}** | **{figures['auc_pr']}** |" in committed, spec
    # docs/calibration.md states the same cross-validated figures, and whether the target is met.
    summary = bench_replay_eval.block_in(
        bench_replay_eval.CALIBRATION_DOC, bench_replay_eval.CALIBRATION_KEY
    )
    assert summary == bench_replay_eval.render_summary(results).rstrip(), (
        "run `python bench/bench_replay_eval.py` to regenerate docs/calibration.md's block"
    )
    ece = results["inferact"]["after"]["ece"]["mean"]
    verdict = "**the target is met**" if ece <= 0.05 else "**the target is not met**"
    assert verdict in committed and f"ECE is {100 * ece:.1f}%" in committed


def test_a_changed_prompt_is_named_with_its_trajectory_stage_and_diff(tmp_path):
    """Two tasks edited: their verification and standard prompts no longer match."""
    records = read_jsonl(SHARED_DATA)[:4]
    for record in records[:2]:
        record["task"] += " (edited)"
    transcript = Transcript.load(ANSWERS)
    model = ReplayChatModel(transcript=transcript)
    from inferact_langgraph.eval import evaluate_critics

    critics = {spec: make_critic(spec, model=model, preset="hotpotqa") for spec in CRITICS}
    report = evaluate_critics(records, critics).to_dict()
    stale = stale_checks(report)
    # Inference never sees the task (it matches); verification and standard do not.
    assert {name: len(v) for name, v in stale.items()} == {
        "inferact": 2,
        "standard": 2,
        "multistep:product": 2,
    }
    first = stale["inferact"][0]
    assert first.startswith(f"{records[0]['id']}: ")
    assert "verification" in first and "stale request" in first
    assert re.search(r"line \d+", first) and "(edited)" in first
    assert len(transcript.stale) == 6 + 2  # InferAct verifies in two orders
    assert other_errors(report) == []
    assert report["critics"]["inferact"]["scored"] == 2


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_changed_prompt_through_the_cli_is_counted_as_stale_not_as_another_error(tmp_path):
    """The path of the figure tests: `inferact eval` against the loopback replay server."""
    import json

    from typer.testing import CliRunner

    from inferact_langgraph.cli import app
    from inferact_langgraph.replay import ReplayServer

    records = read_jsonl(SHARED_DATA)[:4]
    for record in records[:2]:
        record["task"] += " (edited)"
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    # The recorded run's options, for InferAct alone and without the dev split (4 records).
    args = ["eval", "--data", str(data), "--model", "openai:recorded-model", "--critic"]
    args += ["inferact", "--preset", "hotpotqa", "--max-retries", "0", "--no-cache"]
    args += ["--no-progress", "--no-calibrate", "--out", str(tmp_path / "report")]
    transcript = Transcript.load(ANSWERS)
    with ReplayServer(transcript) as server:
        result = CliRunner().invoke(
            app, [*args, "--base-url", server.base_url, "--api-key", "replay"]
        )
    assert (tmp_path / "report" / "report.json").exists(), result.output
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    stale = stale_checks(report)
    assert {name: len(v) for name, v in stale.items()} == {"inferact": 2}, result.output
    assert "BadRequestError" in stale["inferact"][0] or "400" in stale["inferact"][0]
    assert other_errors(report) == []


# --------------------------------------------------------------------------- guarded graph
def react_call(action: str, call_id: str) -> dict:
    name, arg = re.fullmatch(r"(Search|Lookup|Finish)\[(.*)\]", action.strip()).groups()
    key = {"Search": "entity", "Lookup": "keyword", "Finish": "answer"}[name]
    return {"name": name.lower(), "args": {key: arg}, "id": call_id, "type": "tool_call"}


class ReActActions(Critic):
    """Shows the critic tool calls as the ReAct actions (``Search[x]``) the agent wrote.

    The transcript's prompts were rendered from ReAct text; this graph's agent calls tools,
    whose calls render as ``search(entity="x")``. Any critic can be wrapped like this.
    """

    name = "inferact"

    def __init__(self, inner: Critic) -> None:
        super().__init__(model=inner.model, threshold=inner.threshold, preset=inner.preset)
        self.inner = inner

    async def _aevaluate(self, trajectory, *, risk=None):
        steps = [
            Step(f"{s.tool_name.capitalize()}[{next(iter(s.tool_args.values()))}]", s.observation)
            for s in trajectory.steps
        ]
        return await self.inner.aevaluate(trajectory.with_steps(steps), risk=risk)


def guarded_react_graph(record: dict, model: ReplayChatModel, ran: list[str]):
    """The record's ReAct agent as a tool-calling LangGraph agent, guarded by InferAct."""
    observations = {s["action"].strip(): s["observation"] for s in record["steps"]}

    @tool
    def search(entity: str) -> str:
        """Search[entity]: the first paragraph of the Wikipedia page of entity."""
        return observations[f"Search[{entity}]"]

    @tool
    def lookup(keyword: str) -> str:
        """Lookup[keyword]: the next sentence with keyword on the current page."""
        return observations[f"Lookup[{keyword}]"]

    @critical
    @tool
    def finish(answer: str) -> str:
        """Finish[answer]: answer the question (ends the task; cannot be undone)."""
        ran.append(answer)
        return f"Answered {answer}"

    actor = ScriptedChatModel(
        replies=[
            AIMessage(s["thought"] or "", tool_calls=[react_call(s["action"], f"c{i}")])
            for i, s in enumerate(record["steps"])
        ]
        + ["Done."]
    )
    agent = create_agent(actor, [search, lookup, finish])
    critic = ReActActions(make_critic("inferact", model=model, preset="hotpotqa"))
    return with_inferact(agent, critic=critic, checkpointer=InMemorySaver())


def recorded_inferact_score(record: dict) -> float:
    """The score the replayed `inferact eval` gives this trajectory."""
    from inferact_langgraph.eval import evaluate_critics

    model = ReplayChatModel(transcript=Transcript.load(ANSWERS))
    report = evaluate_critics(
        [record], {"inferact": make_critic("inferact", model=model, preset="hotpotqa")}
    )
    return report.rows[0]["critics"]["inferact"]["score"]


def record_by_id(identifier: str) -> dict:
    return next(r for r in read_jsonl(SHARED_DATA) if r["id"] == identifier)


async def test_guarded_graph_stops_an_off_track_finish_on_the_models_real_answers():
    record = record_by_id("hotpotqa-react-base-034")  # Finish[Viacom]: wrong
    assert record["label"] == "incorrect"
    transcript = Transcript.load(ANSWERS)
    ran: list[str] = []
    graph = guarded_react_graph(record, ReplayChatModel(transcript=transcript), ran)
    config = {"configurable": {"thread_id": "t034"}}
    out = await graph.ainvoke({"messages": [("user", record["task"])]}, config)
    assert ran == [], "the critical Finish did not run"
    (interrupt,) = out["__interrupt__"]
    section = interrupt.value["action_requests"][0]["inferact"]
    assert transcript.stale == [], [str(e)[:300] for e in transcript.stale]
    assert transcript.served == 3  # inference + verification in both orders
    assert section["score"] == recorded_inferact_score(record) < 0.5
    assert section["error"] is None and section["inferred_tasks"]


def test_guarded_graph_lets_an_on_track_finish_run_on_the_models_real_answers():
    record = record_by_id("hotpotqa-react-base-014")  # Finish[1927]: right
    assert record["label"] == "correct"
    transcript = Transcript.load(ANSWERS)
    ran: list[str] = []
    graph = guarded_react_graph(record, ReplayChatModel(transcript=transcript), ran)
    config = {"configurable": {"thread_id": "t014"}}
    out = graph.invoke({"messages": [("user", record["task"])]}, config)
    assert transcript.stale == [], [str(e)[:300] for e in transcript.stale]
    assert "__interrupt__" not in out
    assert ran == ["1927"] and transcript.served == 3
    audit = graph.get_state(config).values["inferact_audit"]
    assert [(a["tool"], a["decision"], a["decided_by"]) for a in audit] == [
        ("finish", "approve", "critic")
    ]
