"""The inbox on a LangGraph server with auth configured: every inbox call carries the viewer's
credentials, so the server's own auth decides who they are and which threads they may see and
resume (the in-process SDK client would bypass auth; the inbox must not)."""

from __future__ import annotations

import json

import httpx
import pytest
from inbox_support import INBOX_APP, chromium_context
from server_support import SERVER_MARKS, langgraph_dev

pytestmark = SERVER_MARKS
sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is not installed")
ALICE = {"Authorization": "Bearer token-alice"}
BOB = {"Authorization": "Bearer token-bob"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("inbox_auth")
    for name in ("inbox_test_graph.py", "inbox_test_auth.py"):
        (work / name).write_text((INBOX_APP / name).read_text())
    config = json.loads((INBOX_APP / "langgraph.json").read_text())
    config["auth"] = {"path": "./inbox_test_auth.py:auth"}
    with langgraph_dev(work, config) as url:
        threads = {}
        for who, headers in (("alice", ALICE), ("bob", BOB)):
            client = sdk.get_sync_client(url=url, headers=headers, api_key=None)
            thread_id = client.threads.create()["thread_id"]
            task = f"Buy the blue mug B02 for {who}"
            client.runs.wait(
                thread_id, "shop", input={"messages": [{"role": "user", "content": task}]}
            )
            threads[who] = thread_id
        yield {"url": url, "threads": threads}


def _api(server, path: str, headers: dict | None = None, **kwargs) -> httpx.Response:
    method = "POST" if "json" in kwargs else "GET"
    return httpx.request(method, f"{server['url']}/inferact/api/{path}", headers=headers, **kwargs)


def test_without_credentials_the_inbox_says_to_sign_in(server) -> None:
    response = _api(server, "reviews")
    assert response.status_code == 401
    assert "unknown or missing token" in response.json()["error"]
    assert "Sign in" in response.json()["error"]
    assert _api(server, "reviews", {"Authorization": "Bearer nobody"}).status_code == 401


def test_each_viewer_sees_only_their_threads(server) -> None:
    alice, bob = server["threads"]["alice"], server["threads"]["bob"]
    seen = [r["thread_id"] for r in _api(server, "reviews", ALICE).json()["reviews"]]
    assert seen == [alice]
    seen = [r["thread_id"] for r in _api(server, "reviews", BOB).json()["reviews"]]
    assert seen == [bob]
    assert _api(server, "reviews", ALICE).json()["auth"] is True
    assert (
        _api(server, f"reviews/{alice}", ALICE).json()["task"] == "Buy the blue mug B02 for alice"
    )
    assert _api(server, f"reviews/{bob}", ALICE).status_code == 404


def test_a_viewer_cannot_resume_another_users_thread(server) -> None:
    alice, bob = server["threads"]["alice"], server["threads"]["bob"]
    decision = {"decisions": [{"type": "approve"}]}
    refused = _api(server, f"reviews/{bob}/decisions", ALICE, json=decision)
    assert refused.status_code == 404
    bob_client = sdk.get_sync_client(url=server["url"], headers=BOB, api_key=None)
    assert bob_client.threads.get(bob)["status"] == "interrupted"

    done = _api(server, f"reviews/{alice}/decisions", ALICE, json=decision, timeout=30)
    assert done.status_code == 200 and done.json()["outcome"] == "finished"
    assert done.json()["audit"][0]["decided_by"] == "human"


def test_the_page_asks_for_credentials_and_then_shows_the_viewers_threads(server) -> None:
    with chromium_context() as browser:
        page = browser.new_page()
        page.goto(f"{server['url']}/inferact/inbox")
        panel = page.locator("#credentials")
        panel.wait_for()  # shown when the list call is refused
        assert "unknown or missing token" in page.locator("#status").inner_text()
        page.locator("#credentials-value").fill("Bearer token-bob")
        page.locator("#credentials button[type=submit]").click()
        bob = server["threads"]["bob"]
        page.locator(f'button.thread[data-thread-id="{bob}"]').wait_for()
        assert page.locator("button.thread").count() == 1
        assert page.locator("#credentials-toggle").is_visible()
