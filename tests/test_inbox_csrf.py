"""The inbox refuses decisions a page of another site could send (no cookie-carrying CSRF)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from test_inbox_app import FakeServer, _interrupt_id, waiting  # noqa: F401 - the fixture

from inferact_langgraph.inbox import create_app


def _post(server: FakeServer, headers: dict[str, str]) -> httpx.Response:
    app = create_app(client_factory=lambda request: server)
    body = json.dumps({"interrupt_id": _interrupt_id(server), "decisions": [{"type": "approve"}]})

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://inbox:8123") as client:
            url = f"/inferact/api/reviews/{server.thread['thread_id']}/decisions"
            return await client.post(url, content=body, headers=headers)

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        # A cross-site "simple" POST: no CORS preflight, so a form or fetch can send it.
        ({"content-type": "text/plain; charset=application/json"}, 415),
        ({"content-type": "text/plain;application/json"}, 415),
        ({"content-type": "application/x-www-form-urlencoded; a=application/json"}, 415),
        ({"content-type": "application/json", "origin": "https://evil.example"}, 403),
        ({"content-type": "application/json", "origin": "null"}, 403),
        ({"content-type": "application/json", "sec-fetch-site": "cross-site"}, 403),
        ({"content-type": "application/json", "sec-fetch-site": "same-site"}, 403),
    ],
)
def test_a_decision_another_site_could_send_resumes_nothing(waiting, headers, status):  # noqa: F811
    response = _post(waiting, headers)
    assert response.status_code == status and "error" in response.json()
    assert waiting.created == []  # nothing resumed


@pytest.mark.parametrize(
    "headers",
    [
        {"content-type": "application/json"},  # a script or curl: no Origin
        {"content-type": "Application/JSON; charset=utf-8", "origin": "http://inbox:8123"},
        {"content-type": "application/json", "sec-fetch-site": "same-origin"},
    ],
)
def test_the_inbox_page_and_scripts_still_send_decisions(waiting, headers):  # noqa: F811
    assert _post(waiting, headers).status_code == 200
    assert len(waiting.created) == 1
