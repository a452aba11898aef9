"""The inbox's HTTP API in process (ASGI, no server): decisions are checked before anything is
sent, the server's refusals are relayed, and the app is what ``langgraph.json`` serves."""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_support import run_shop, shop, thread_dict, to_json
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from starlette.applications import Starlette

from inferact_langgraph import InferActCritic, InferActMiddleware
from inferact_langgraph.inbox import create_app, thread_view
from inferact_langgraph.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]


class FakeServer:
    """Stands in for the LangGraph SDK client: one thread, and a record of what was sent."""

    def __init__(self, thread: dict[str, Any], refuse: int | None = None) -> None:
        self.thread = thread
        self.refuse = refuse
        self.created: list[tuple] = []
        self.threads = self
        self.runs = _Runs(self)

    async def search(self, **kwargs: Any) -> list[dict]:
        return [self.thread]

    async def get(self, thread_id: str) -> dict:
        if thread_id != self.thread["thread_id"]:
            request = httpx.Request("GET", f"http://api/threads/{thread_id}")
            response = httpx.Response(404, json={"detail": "Thread not found"}, request=request)
            raise httpx.HTTPStatusError("404", request=request, response=response)
        return self.thread


class _Runs:
    def __init__(self, server: FakeServer) -> None:
        self.server = server

    async def create(self, thread_id: str, assistant: str, **kwargs: Any) -> dict:
        if self.server.refuse:
            request = httpx.Request("POST", "http://api/runs")
            response = httpx.Response(
                self.server.refuse,
                json={"detail": getattr(self.server, "refuse_detail", "Thread is busy")},
                request=request,
            )
            raise httpx.HTTPStatusError("refused", request=request, response=response)
        self.server.created.append((thread_id, assistant, kwargs))
        self.server.thread = {**self.server.thread, "status": "idle", "interrupts": {}}
        return {"run_id": "r1"}

    async def join(self, thread_id: str, run_id: str) -> dict:
        return {}

    async def list(self, thread_id: str, **kwargs: Any) -> list[dict]:
        return []  # no run in flight

    async def get(self, thread_id: str, run_id: str) -> dict:
        return {"run_id": run_id, "status": "success"}


def _post(server: FakeServer, body: Any, content_type: str = "application/json") -> httpx.Response:
    app = create_app(client_factory=lambda request: server)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://inbox") as client:
            data = body if isinstance(body, str) else json.dumps(body)
            return await client.post(
                f"/inferact/api/reviews/{server.thread['thread_id']}/decisions",
                content=data,
                headers={"content-type": content_type},
            )

    return asyncio.run(go())


@pytest.fixture
def waiting() -> FakeServer:
    graph, config = run_shop("Buy the blue mug B02")
    return FakeServer(thread_dict(graph, config, "t1"))


def _interrupt_id(server: FakeServer) -> str:
    return server.thread["interrupts"]["task-1"][0]["id"]


def test_a_valid_decision_resumes_with_the_librarys_format(waiting: FakeServer) -> None:
    body = {
        "interrupt_id": _interrupt_id(waiting),
        "decisions": [{"type": "reject", "message": "no"}],
    }
    response = _post(waiting, body)
    assert response.status_code == 200 and response.json()["outcome"] == "finished"
    [(thread_id, assistant, kwargs)] = waiting.created
    assert (thread_id, assistant) == ("t1", "a-1")
    assert kwargs["command"] == {"resume": {"decisions": [{"type": "reject", "message": "no"}]}}
    assert kwargs["multitask_strategy"] == "reject"


def test_several_pending_interrupts_are_answered_by_id(waiting: FakeServer) -> None:
    first = waiting.thread["interrupts"]["task-1"][0]
    waiting.thread["interrupts"]["task-2"] = [{**first, "id": "other-interrupt"}]
    body = {"interrupt_id": "other-interrupt", "decisions": [{"type": "approve"}]}
    assert _post(waiting, body).status_code == 200
    [(_, _, kwargs)] = waiting.created
    assert kwargs["command"] == {
        "resume": {"other-interrupt": {"decisions": [{"type": "approve"}]}}
    }


@pytest.mark.parametrize(
    ("body", "content_type", "status", "says"),
    [
        (
            {"decisions": [{"type": "edit", "edited_action": {"name": "buy_now", "args": "B03"}}]},
            "application/json",
            422,
            "a dict 'args'",
        ),
        ({"decisions": []}, "application/json", 422, "expected 1 decision(s), got 0"),
        (
            {"interrupt_id": "gone", "decisions": [{"type": "approve"}]},
            "application/json",
            409,
            "This review was already answered elsewhere",
        ),
        ("decisions=approve", "application/x-www-form-urlencoded", 415, "as JSON"),
        ("{not json", "application/json", 400, "not JSON"),
    ],
)
def test_bad_or_stale_decisions_are_refused_and_nothing_is_sent(
    waiting: FakeServer, body: Any, content_type: str, status: int, says: str
) -> None:
    response = _post(waiting, body, content_type)
    assert response.status_code == status and says in response.json()["error"]
    assert waiting.created == []


def test_a_decision_that_meets_a_run_in_flight_is_told_the_review_was_answered(
    waiting: FakeServer,
) -> None:
    waiting.refuse = 409  # LangGraph's answer while another decision's run is going
    response = _post(waiting, {"decisions": [{"type": "approve"}]})
    body = response.json()
    assert response.status_code == 409 and body["answered"] is True
    assert body["error"].startswith("This review was already answered")
    assert "Thread is busy" not in body["error"] and "try again" not in body["error"]
    assert waiting.created == []


def test_the_servers_other_refusals_are_relayed_with_their_reason_once(
    waiting: FakeServer,
) -> None:
    waiting.refuse = 403
    waiting.refuse_detail = "Not your thread."  # a sentence that ends itself: one period
    response = _post(waiting, {"decisions": [{"type": "approve"}]})
    assert response.status_code == 403
    assert response.json()["error"] == (
        "The server refused the decision: Not your thread. You may not see or change this thread."
    )


def test_the_root_langgraph_json_serves_the_inbox() -> None:
    """What the server does with ``http.app`` (langgraph_api.api.load_custom_app)."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    module, _, name = config["http"]["app"].partition(":")
    app = getattr(importlib.import_module(module), name)
    assert isinstance(app, Starlette)
    assert "/inferact/inbox" in {r.path for r in app.routes}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"prefix": "inbox"}, "prefix"),
        ({"prefix": "/x/"}, "prefix"),
        ({"limit": 0}, "limit"),
        ({"run_timeout": 0}, "run_timeout"),
    ],
)
def test_bad_options_are_refused_when_the_app_is_built(kwargs: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        create_app(**kwargs)


class GraphServer(FakeServer):
    """A fake server backed by a real graph in process: a resume really runs it."""

    def __init__(self, graph: Any, config: dict) -> None:
        self.graph, self.config = graph, config
        super().__init__(self._thread())
        self.runs = _GraphRuns(self)

    def _thread(self) -> dict:
        state = self.graph.get_state(self.config)
        groups = {
            f"task-{i}": [{"id": x.id, "value": to_json(x.value)}]
            for i, x in enumerate(state.interrupts)
        }
        return {
            "thread_id": "t1",
            "status": "interrupted" if state.interrupts else "idle",
            "metadata": {"graph_id": "shop"},
            "values": to_json(state.values),
            "interrupts": groups,
        }


class _GraphRuns(_Runs):
    async def create(self, thread_id: str, assistant: str, **kwargs: Any) -> dict:
        self.server.created.append((thread_id, assistant, kwargs))
        await self.server.graph.ainvoke(
            Command(resume=kwargs["command"]["resume"]), self.server.config
        )
        self.server.thread = self.server._thread()
        return {"run_id": f"r{len(self.server.created)}"}


def test_reviews_pending_at_once_are_decided_one_by_one() -> None:
    """With InferActMiddleware(review_in="tool_call") each doubtful call is its own interrupt."""
    critic = InferActCritic(model=ScriptedChatModel(responder=shop.judge), threshold=0.5)
    agent = create_agent(
        ScriptedChatModel(responder=shop.actor),
        [shop.search, shop.buy_now],
        middleware=[InferActMiddleware(critic=critic, review_in="tool_call")],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [("user", "Buy two mugs: B02 and B04")]}, config)
    server = GraphServer(agent, config)
    view = thread_view(server.thread)
    assert [r["actions"][0]["args"]["asin"] for r in view["reviews"]] == ["B01", "B03"]
    _, second = (r["interrupt_id"] for r in view["reviews"])

    response = _post(
        server, {"interrupt_id": second, "decisions": [{"type": "reject", "message": "not B03"}]}
    )
    assert response.status_code == 200 and response.json()["outcome"] == "review"
    left = response.json()["review"]["reviews"]
    assert [r["actions"][0]["args"]["asin"] for r in left] == ["B01"]

    response = _post(
        server, {"interrupt_id": left[0]["interrupt_id"], "decisions": [{"type": "approve"}]}
    )
    assert response.status_code == 200 and response.json()["outcome"] == "finished"
    tools = {m["content"] for m in server.thread["values"]["messages"] if m["type"] == "tool"}
    assert "bought B01" in tools and "bought B03" not in tools


def test_an_api_that_does_not_answer_is_reported_as_json(waiting: FakeServer) -> None:
    async def unreachable(**kwargs: Any) -> list:
        raise httpx.ConnectError("connection refused")

    waiting.search = unreachable  # type: ignore[method-assign]
    app = create_app(client_factory=lambda request: waiting)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://inbox") as client:
            return await client.get("/inferact/api/reviews")

    response = asyncio.run(go())
    assert response.status_code == 502
    assert response.json()["error"] == (
        "The LangGraph server's API did not answer: connection refused"
    )
