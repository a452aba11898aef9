"""The critics against an OpenAI-compatible endpoint, replayed from cassettes (network blocked).

The cassettes in ``cassettes/test_cassettes_critic/`` are real HTTP exchanges recorded by
``scripts/record_cassettes.py``: a local llama.cpp server running Gemma 3 270M (a tiny base
model, so its answers are poor: the tests assert what the library does with whatever it said),
and a local stub server for the failures (429, 500, malformed JSON). The time-out cannot be a
cassette (there is no response to record): it runs the stub live on 127.0.0.1.

Replay is ``record_mode="none"``: an unrecorded request fails instead of calling out, and
pytest-socket blocks every other socket (see ``test_replay_needs_no_socket``).
"""

from __future__ import annotations

import json
import re
import socket
import time
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from vcr.errors import CannotOverwriteExistingCassetteException
from vcr_support import (
    CASSETTES,
    MATCH_ROUTE,
    REDACTED,
    SECRET_REQUEST_HEADERS,
    SECRET_RESPONSE_HEADERS,
    STUB_SERVER,
    load_cassette,
    make_vcr,
    recorded_base_url,
    stub_server,
)

from inferact_langgraph import InferActCritic, Trajectory, critical, with_inferact
from inferact_langgraph.critics import StandardEvalCritic
from inferact_langgraph.errors import CriticModelError, CriticParseError, CriticTimeoutError
from inferact_langgraph.testing import ScriptedChatModel

INFERACT = "test_cassettes_critic/inferact_hotpotqa.yaml"
STANDARD = "test_cassettes_critic/standard_hotpotqa.yaml"
STUBS = {
    "429": "test_cassettes_critic/stub_http_429.yaml",
    "500": "test_cassettes_critic/stub_http_500.yaml",
    "malformed": "test_cassettes_critic/stub_malformed_json.yaml",
}
STUB_ERRORS = {"429": "429", "500": "500", "malformed": "JSONDecodeError"}
API_KEY = "sk-local-not-a-secret"

# ChatOpenAI probes a throwaway socket for TCP keep-alive options when it builds its client;
# pytest-socket blocks the probe (langchain-openai expects that and carries on), and warns.
pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning")


# --------------------------------------------------------------------------- helpers
def meta(name: str) -> dict[str, str]:
    return load_cassette(name)["metadata"]


def trajectory_of(name: str, hotpotqa_records: list[dict]) -> Trajectory:
    record_id = meta(name)["record"]
    return Trajectory.from_record(next(r for r in hotpotqa_records if r["id"] == record_id))


def chat_for(name: str, **kwargs: Any) -> ChatOpenAI:
    """The client the cassette was recorded with (same URL, model, sampling and limits)."""
    info = meta(name)
    max_tokens = info.get("max_tokens")
    options: dict[str, Any] = {"temperature": 0, "max_retries": 0}
    if max_tokens and max_tokens != "None":
        options["max_tokens"] = int(max_tokens)
    options.update(kwargs)
    return ChatOpenAI(base_url=recorded_base_url(name), api_key=API_KEY, model=info["model"],
                      **options)


def requests_of(name: str) -> list[dict]:
    return [i["request"] for i in load_cassette(name)["interactions"]]


def answers_of(name: str) -> list[str]:
    out = []
    for interaction in load_cassette(name)["interactions"]:
        body = interaction["response"]["body"]["parsed_body"]
        out.append(body["choices"][0]["message"]["content"])
    return out


def prompt_of(request: dict) -> str:
    return "\n".join(m["content"] for m in request["parsed_body"]["messages"])


def all_cassettes() -> list[str]:
    return sorted(str(p.relative_to(CASSETTES)) for p in CASSETTES.rglob("*.yaml"))


# --------------------------------------------------------------------------- hygiene
@pytest.mark.parametrize("name", all_cassettes())
def test_every_cassette_is_redacted_readable_and_says_who_recorded_it(name):
    text = (CASSETTES / name).read_text()
    data = load_cassette(name)
    for key in ("model", "server", "recorded_at", "recorded_by", "outcome"):
        assert data["metadata"].get(key), (name, key)
    assert text.startswith("# recorded_at: ") and f"# model: {data['metadata']['model']}" in text
    for secret in (API_KEY, "must-be-redacted", "Bearer"):
        assert secret not in text, (name, secret)
    assert data["interactions"], name
    for interaction in data["interactions"]:
        request, response = interaction["request"], interaction["response"]
        for key, values in request["headers"].items():
            if key.lower() in SECRET_REQUEST_HEADERS:
                assert values == [REDACTED], (name, key)
        for key, values in response["headers"].items():
            if key.lower() in SECRET_RESPONSE_HEADERS:
                assert values == [REDACTED], (name, key)
        assert "parsed_body" in request, "JSON request bodies are stored decoded"
        assert "authorization" in {k.lower() for k in request["headers"]}


def test_stub_cassettes_redacted_every_kind_of_credential_header():
    for name in STUBS.values():
        request = requests_of(name)[0]
        headers = {k.lower(): v for k, v in request["headers"].items()}
        for key in ("authorization", "api-key", "cookie", "openai-organization", "openai-project"):
            assert headers[key] == [REDACTED], (name, key)
        response = load_cassette(name)["interactions"][0]["response"]
        rheaders = {k.lower(): v for k, v in response["headers"].items()}
        assert rheaders["set-cookie"] == [REDACTED]
        assert rheaders["openai-organization"] == [REDACTED]
        assert meta(name)["server"] == STUB_SERVER


def test_replay_needs_no_socket():
    """pytest-socket is active here: opening an internet socket fails, so replays cannot."""
    with pytest.raises(RuntimeError, match="tried to use socket"):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def test_an_unrecorded_request_fails_instead_of_calling_out(hotpotqa_records):
    critic = InferActCritic(model=chat_for(INFERACT), preset="hotpotqa")
    other = Trajectory.from_record(hotpotqa_records[1])  # not the recorded trajectory
    with make_vcr("none").use_cassette(INFERACT), pytest.raises(CriticModelError) as info:
        critic.evaluate(other)
    chain, exc = [], info.value
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert any(isinstance(e, CannotOverwriteExistingCassetteException) for e in chain), chain


# --------------------------------------------------------------------------- real model: InferAct
def check_inferact_outcome(verdict_or_error: Any, name: str) -> None:
    """The replay reproduces what the library did with the real answers when they were recorded."""
    recorded = meta(name)["outcome"]
    answers = answers_of(name)
    if recorded.startswith("Verdict"):
        verdict = verdict_or_error
        assert not isinstance(verdict, Exception), verdict
        assert 0.0 <= verdict.score <= 1.0
        assert verdict.flagged == (verdict.score < verdict.threshold)
        assert f"score={verdict.score:.4f}" in recorded
        assert verdict.usage.model_calls == len(answers) == 3
        assert sorted(verdict.raw.values()) == sorted(answers)
    else:
        error = verdict_or_error
        assert isinstance(error, CriticParseError), error
        assert recorded.startswith("CriticParseError") and f"stage={error.stage}" in recorded
        assert error.raw in answers, "the error carries the model's raw output"


def run(call: Any) -> Any:
    try:
        return call()
    except CriticParseError as exc:
        return exc


def test_inferact_check_replayed_sync(hotpotqa_records):
    critic = InferActCritic(model=chat_for(INFERACT), preset="hotpotqa")
    trajectory = trajectory_of(INFERACT, hotpotqa_records)
    with make_vcr("none").use_cassette(INFERACT) as cassette:
        outcome = run(lambda: critic.evaluate(trajectory))
        assert cassette.all_played
    check_inferact_outcome(outcome, INFERACT)


async def test_inferact_check_replayed_async(hotpotqa_records):
    critic = InferActCritic(model=chat_for(INFERACT), preset="hotpotqa")
    trajectory = trajectory_of(INFERACT, hotpotqa_records)
    with make_vcr("none").use_cassette(INFERACT) as cassette:
        try:
            outcome: Any = await critic.aevaluate(trajectory)
        except CriticParseError as exc:
            outcome = exc
        assert cassette.all_played
    check_inferact_outcome(outcome, INFERACT)


def test_inferact_prompts_hide_the_task_then_verify_it(hotpotqa_records):
    trajectory = trajectory_of(INFERACT, hotpotqa_records)
    requests = requests_of(INFERACT)
    inference, *verification = requests
    assert "infer the 3 most likely" in prompt_of(inference)
    assert trajectory.task not in prompt_of(inference), "inference must not see the real task"
    for step in trajectory.steps:
        assert step.action in prompt_of(inference)
    if "stage=inference" in meta(INFERACT)["outcome"]:
        # The recorded model's inference answer did not parse: the check stopped there.
        assert verification == []
        return
    assert len(verification) == 2, "original and reversed option order"
    prompts = [prompt_of(r) for r in verification]
    for prompt in prompts:
        assert trajectory.task in prompt and "None of the above" in prompt
    # The same options, in the two orders: the real task is option D in one and B in the other.
    labels = [re.search(rf"^([A-E])\. {re.escape(trajectory.task)}", p, re.M) for p in prompts]
    assert sorted(m.group(1) for m in labels if m) == ["B", "D"]
    for request in requests:
        body = request["parsed_body"]
        assert body["temperature"] == 0 and body["model"] == meta(INFERACT)["model"]


# --------------------------------------------------------------------------- real model: standard
def test_standard_check_replayed(hotpotqa_records):
    critic = StandardEvalCritic(model=chat_for(STANDARD), preset="hotpotqa")
    trajectory = trajectory_of(STANDARD, hotpotqa_records)
    recorded = meta(STANDARD)["outcome"]
    [answer] = answers_of(STANDARD)
    with make_vcr("none").use_cassette(STANDARD) as cassette:
        outcome = run(lambda: critic.evaluate(trajectory))
        assert cassette.all_played
    if recorded.startswith("Verdict"):
        assert 0.0 <= outcome.score <= 1.0 and f"score={outcome.score:.4f}" in recorded
        assert outcome.usage.model_calls == 1
    else:
        assert isinstance(outcome, CriticParseError) and outcome.raw == answer
    [request] = requests_of(STANDARD)
    assert trajectory.task in prompt_of(request), "the standard evaluation is told the task"


# --------------------------------------------------------------------------- failures
@pytest.mark.parametrize("mode", sorted(STUBS))
def test_endpoint_failures_are_critic_model_errors_sync(mode, hotpotqa_records):
    name = STUBS[mode]
    critic = InferActCritic(model=chat_for(name), preset="hotpotqa")
    with make_vcr("none", match_on=MATCH_ROUTE).use_cassette(name) as cassette:
        with pytest.raises(CriticModelError) as info:
            critic.evaluate(trajectory_of(name, hotpotqa_records))
        assert cassette.play_count == 1, "max_retries=0: one request, no retry"
    assert not isinstance(info.value, CriticParseError | CriticTimeoutError)
    assert info.value.stage == "inference" and STUB_ERRORS[mode] in str(info.value)


@pytest.mark.parametrize("mode", sorted(STUBS))
async def test_endpoint_failures_are_critic_model_errors_async(mode, hotpotqa_records):
    name = STUBS[mode]
    critic = InferActCritic(model=chat_for(name), preset="hotpotqa")
    with (
        make_vcr("none", match_on=MATCH_ROUTE).use_cassette(name),
        pytest.raises(CriticModelError, match=STUB_ERRORS[mode]),
    ):
        await critic.aevaluate(trajectory_of(name, hotpotqa_records))


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_time_out_live_on_loopback(hotpotqa_records):
    """No cassette can hold a time-out (no response exists): the stub answers after 5 s, live."""
    trajectory = trajectory_of(STUBS["500"], hotpotqa_records)
    with stub_server("slow", delay=5.0) as stub:
        chat = ChatOpenAI(base_url=stub.base_url, api_key=API_KEY, model="stub-model",
                          max_retries=0)
        # The critic's own time-out: a CriticTimeoutError.
        started = time.monotonic()
        with pytest.raises(CriticTimeoutError, match=r"did not answer within 0\.5s"):
            InferActCritic(model=chat, preset="hotpotqa", timeout=0.5).evaluate(trajectory)
        assert time.monotonic() - started < 3
        # The HTTP client's time-out: still a CriticModelError (fails closed the same way).
        started = time.monotonic()
        with pytest.raises(CriticModelError, match=r"(?i)time"):
            InferActCritic(model=ChatOpenAI(base_url=stub.base_url, api_key=API_KEY,
                                            model="stub-model", max_retries=0, timeout=0.5),
                           preset="hotpotqa").evaluate(trajectory)
        assert time.monotonic() - started < 3


# --------------------------------------------------------------------------- the guard
EXECUTED: list[str] = []


@tool
def search(entity: str) -> str:
    """Search Wikipedia for an entity."""
    return f"{entity} is a German music television channel."


@critical
@tool
def finish(answer: str) -> str:
    """Give the final answer (irreversible)."""
    EXECUTED.append(answer)
    return f"Answered {answer}"


def scripted_actor() -> ScriptedChatModel:
    return ScriptedChatModel(replies=[
        AIMessage("", tool_calls=[{"name": "search", "args": {"entity": "VIVA Plus"},
                                   "id": "s-1", "type": "tool_call"}]),
        AIMessage("", tool_calls=[{"name": "finish", "args": {"answer": "Viacom"},
                                   "id": "f-1", "type": "tool_call"}]),
        "Done.",
    ])


@pytest.mark.parametrize("mode", sorted(STUBS))
async def test_guard_fails_closed_on_the_replayed_failing_endpoint(mode):
    EXECUTED.clear()
    name = STUBS[mode]
    critic = InferActCritic(model=chat_for(name), preset="hotpotqa")
    graph = with_inferact(create_agent(scripted_actor(), [search, finish]), critic=critic,
                          checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"cassette-{mode}"}}
    task = "VIVA Media AG changed its name in 2004. What does their new acronym stand for?"
    with make_vcr("none", match_on=MATCH_ROUTE).use_cassette(name, allow_playback_repeats=True):
        out = await graph.ainvoke({"messages": [("user", task)]}, config)
    assert EXECUTED == [], "the critical tool must not run when the critic failed"
    [interrupt] = out["__interrupt__"]
    [request] = interrupt.value["action_requests"]
    assert request["name"] == "finish"
    section = request["inferact"]
    assert section["error"] and STUB_ERRORS[mode] in section["error"]
    assert section["score"] is None
    state = await graph.aget_state(config)
    assert state.next, "the thread waits for a human decision"
    json.dumps(interrupt.value)  # the interrupt payload is JSON-serialisable
