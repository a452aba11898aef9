"""The replay of recorded answers: exact-request matching, loud stale requests, HTTP path."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from inferact_langgraph.replay import (
    ReplayChatModel,
    ReplayMismatchError,
    ReplayServer,
    Transcript,
)

# ChatOpenAI probes a throwaway socket for TCP keep-alive options when it builds its client;
# pytest-socket blocks the probe (langchain-openai expects that and carries on), and warns.
pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning")

PROMPT = "You will be given the question.\nThe question is: Who wrote Hamlet?\nAnswer briefly."


def record(content: str, answer: str, *, temperature=None, n=1) -> dict:
    return {
        "messages": [{"role": "user", "content": content}],
        "temperature": temperature,
        "n": n,
        "answer": answer,
    }


def test_answers_by_exact_request_roles_included():
    transcript = Transcript.from_records(
        [
            record(PROMPT, "Shakespeare."),
            {
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": PROMPT},
                ],
                "answer": "W.S.",
            },
        ]
    )
    model = ReplayChatModel(transcript=transcript)
    assert model.invoke([HumanMessage(PROMPT)]).content == "Shakespeare."
    assert model.invoke([SystemMessage("Be brief."), HumanMessage(PROMPT)]).content == "W.S."
    assert transcript.served == 2 and transcript.unused() == []


async def test_async_path_and_repeated_requests_replay_in_recorded_order():
    transcript = Transcript.from_records(
        [
            record(PROMPT, "first", temperature=0.7),
            record(PROMPT, "second", temperature=0.7),
        ]
    )
    model = ReplayChatModel(transcript=transcript).bind(temperature=0.7)
    answers = [(await model.ainvoke([HumanMessage(PROMPT)])).content for _ in range(3)]
    assert answers == ["first", "second", "first"]


def test_a_changed_prompt_fails_loudly_naming_the_nearest_request_and_the_diff():
    transcript = Transcript.from_records(
        [record("Other prompt\nabc", "x"), record(PROMPT, "Shakespeare.")]
    )
    model = ReplayChatModel(transcript=transcript)
    changed = PROMPT.replace("Answer briefly.", "Answer in one word.")
    with pytest.raises(ReplayMismatchError) as caught:
        model.invoke([HumanMessage(changed)])
    err = caught.value
    assert err.nearest_line == 2
    assert "-Answer briefly." in err.diff and "+Answer in one word." in err.diff
    assert "stale request" in str(err) and "line 2" in str(err)
    assert err.kind == "You will be given the question."
    assert transcript.stale == [err] and transcript.served == 0


def test_same_messages_other_temperature_is_not_answered():
    transcript = Transcript.from_records([record(PROMPT, "Shakespeare.")])
    model = ReplayChatModel(transcript=transcript)
    with pytest.raises(
        ReplayMismatchError,
        match=r"temperature=None, n=1; this request has "
        r"temperature=0\.7",
    ):
        model.bind(temperature=0.7).invoke([HumanMessage(PROMPT)])


def test_bad_transcripts_are_clear_errors(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(record(PROMPT, "a")) + "\n\n{oops\n")
    with pytest.raises(ValueError, match="line 3: invalid JSON"):
        Transcript.load(path)
    with pytest.raises(ValueError, match="record 1: expected an object with 'messages'"):
        Transcript.from_records([{"messages": [], "answer": "a"}])
    with pytest.raises(TypeError, match="transcript must be a Transcript"):
        ReplayChatModel(transcript=42)


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_replay_server_drives_the_real_chatopenai_client():
    import openai
    from langchain_openai import ChatOpenAI

    transcript = Transcript.from_records([record(PROMPT, "Shakespeare.")])
    with ReplayServer(transcript) as server:
        client = ChatOpenAI(model="m", base_url=server.base_url, api_key="k", max_retries=0)
        assert client.invoke([HumanMessage(PROMPT)]).content == "Shakespeare."
        with pytest.raises(openai.BadRequestError, match="stale request"):
            client.invoke([HumanMessage(PROMPT + "!")])
        assert server.requests == 2
    assert len(transcript.stale) == 1
