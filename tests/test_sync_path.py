"""Sync checks with a real HTTP chat client: repeated, and mixed with async ones.

ChatOpenAI's async HTTP client is bound to the first event loop it runs on. Sync checks run the
critic's shared code on short-lived loops, so they must use the model's sync API; this test
talks to a stub OpenAI-compatible server on loopback (no network).
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from langchain_openai import ChatOpenAI

from inferact_langgraph import Step, Trajectory
from inferact_langgraph.critics import StandardEvalCritic
from inferact_langgraph.errors import CriticTimeoutError

ANSWER = "The answer is: Incorrect\nConfidence: 0.8\nJustification: wrong product."


class _Handler(BaseHTTPRequestHandler):
    delay = 0.0

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        if self.delay:
            import time

            time.sleep(self.delay)
        body = json.dumps(
            {
                "id": "stub",
                "object": "chat.completion",
                "created": 0,
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": ANSWER},
                    }
                ],
                "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_url():
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    _Handler.delay = 0.0


TRAJECTORY = Trajectory("buy a red mug", (Step("search(q=mug)", "B01 red mug"), Step("buy(B01)")))


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_repeated_sync_checks_then_async_then_sync_again(stub_url):
    model = ChatOpenAI(base_url=stub_url, api_key="stub-key", model="stub", max_retries=0)
    critic = StandardEvalCritic(calibration=None, model=model)
    scores = [critic.evaluate(TRAJECTORY).score for _ in range(3)]
    assert scores == [pytest.approx(0.2)] * 3
    assert asyncio.run(critic.aevaluate(TRAJECTORY)).score == pytest.approx(0.2)
    verdict = critic.evaluate(TRAJECTORY)
    assert verdict.score == pytest.approx(0.2) and verdict.usage.input_tokens == 7


@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_client_time_out_is_a_critic_time_out(stub_url):
    _Handler.delay = 1.0
    model = ChatOpenAI(
        base_url=stub_url, api_key="stub-key", model="stub", max_retries=0, timeout=0.2
    )
    with pytest.raises(CriticTimeoutError):
        StandardEvalCritic(calibration=None, model=model).evaluate(TRAJECTORY)
