"""The ``description`` of a doubtful call's action request: the one text Agent Chat UI and Agent
Inbox show, so it carries the why: the task judged against, the most likely inferred task with
its probability, the critic's justification in brief, and the thread's inbox page when served.
"""

from __future__ import annotations

import json

import pytest
from inbox_support import run_shop, shop

from inferact_langgraph.review import inbox_link, review_description


@pytest.fixture(autouse=True)
def no_inbox(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("INFERACT_INBOX_URL", "LANGGRAPH_API_URL", "LANGGRAPH_HTTP"):
        monkeypatch.delenv(name, raising=False)


def _description(thread_id: str = "t1") -> list[str]:
    graph, config = run_shop("Buy the blue mug B02", thread_id=thread_id)
    [request] = graph.get_state(config).interrupts[0].value["action_requests"]
    return request["description"].splitlines()


def test_the_description_says_why_from_the_guards_record() -> None:
    lines = _description()
    assert lines == [
        "Buy the product (irreversible).",  # the tool's own description, first
        "InferAct doubts this call: p(user's task) = 0.25 < threshold 0.50.",
        'Judged against the user\'s task: "Buy the blue mug B02"',
        f'Most likely task, from the agent\'s actions (p = 0.60): "{shop.INFERRED[1]}"',
        'Critic: The pending action is buy_now(asin="B01"); the task asks for B02.',
    ]


def test_the_description_links_to_the_threads_inbox_page_when_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INFERACT_INBOX_URL", "https://agents.example.com/inferact/inbox/")
    lines = _description("thread/7")
    assert lines[-1] == (
        "Review it with every detail in the inbox: "
        "https://agents.example.com/inferact/inbox#/thread/thread%2F7"
    )


@pytest.mark.parametrize(
    ("http", "expected"),
    [
        ({"app": "inferact_langgraph.inbox:app"}, "http://127.0.0.1:2024/inferact/inbox#/thread/t"),
        ({"app": "./my_routes.py:app"}, None),  # another app: no inbox to link to
        (None, None),
    ],
)
def test_inside_a_langgraph_server_the_link_follows_its_http_app(
    monkeypatch: pytest.MonkeyPatch, http, expected
) -> None:
    monkeypatch.setenv("LANGGRAPH_API_URL", "http://127.0.0.1:2024")
    if http is not None:
        monkeypatch.setenv("LANGGRAPH_HTTP", json.dumps(http))
    assert inbox_link("t") == expected


def test_no_link_without_an_inbox_or_a_thread() -> None:
    assert not any("inbox" in line for line in _description())
    assert inbox_link(None) is None


def test_a_long_justification_is_cut_to_two_sentences() -> None:
    record = {
        "score": 0.2,
        "threshold": 0.5,
        "task": "buy a 66x66 inch shade",
        "verdict": {
            "justification": "First sentence. Second one!  Third, never shown. Fourth.",
            "inferred_tasks": ["buy a custom shade", "buy a curtain"],
        },
        "options": ["buy a custom shade", "buy a curtain", "buy a 66x66 inch shade"],
        "option_probs": {"A": 0.3, "B": 0.5, "C": 0.2},
    }
    text = review_description(record)
    assert "Critic: First sentence. Second one!" in text and "Third" not in text
    assert 'Most likely task, from the agent\'s actions (p = 0.50): "buy a curtain"' in text
    record["verdict"]["justification"] = "x" * 2000
    assert len(review_description(record).splitlines()[-1]) < 400


def test_a_failed_critic_says_so_and_still_names_the_task() -> None:
    record = {"error": "CriticTimeoutError: no answer in 30s", "task": "buy a mug", "score": None}
    assert review_description(record).splitlines() == [
        "The critic could not check this call (CriticTimeoutError: no answer in 30s); "
        "a human must decide.",
        'Judged against the user\'s task: "buy a mug"',
    ]
