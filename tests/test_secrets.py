"""Secrets never reach error text, the review payload, the audit, the log or report.json.
A loopback stub server plays an OpenAI-compatible endpoint that echoes the
API key in its 401 body, as some servers do."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from critic_support import buying_agent
from langgraph.types import Command
from typer.testing import CliRunner

from inferact_langgraph._factory import build_model
from inferact_langgraph.cli import app
from inferact_langgraph.critics import InferActCritic
from inferact_langgraph.errors import CriticModelError
from inferact_langgraph.trajectory import Step, Trajectory

pytestmark = [
    pytest.mark.allow_hosts(["127.0.0.1"]),
    # ChatOpenAI probes a throwaway socket for keep-alive options when it builds its client.
    pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning"),
]

KEY = "sk-test-0123456789abcdefSECRET"
PASSWORD = "hunter2-pw-SECRET"
TRAJ = Trajectory("buy a red mug", (Step("search(q=mug)", "B01 red mug"), Step("buy(B01)")))


class _EchoKey(BaseHTTPRequestHandler):
    """Answers every request with a 401 whose body repeats the credentials it was sent."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        body = json.dumps(
            {
                "error": {
                    "message": f"Incorrect API key provided: {auth.removeprefix('Bearer ')}. "
                    f"You sent: Authorization: {auth}",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EchoKey)  # port 0: a free port
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def _model(host: str, *, password: bool = False):
    userinfo = f"inferact:{PASSWORD}@" if password else ""
    return build_model(
        "openai:critic", base_url=f"http://{userinfo}{host}/v1", api_key=KEY, max_retries=0
    )


def test_the_stub_really_echoes_the_key(server: str) -> None:
    import httpx

    response = httpx.post(
        f"http://{server}/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"}
    )
    assert response.status_code == 401 and KEY in response.text


@pytest.mark.parametrize("password", [False, True])
def test_a_401_that_echoes_the_key_leaves_no_secret_in_the_error(server, password) -> None:
    critic = InferActCritic(model=_model(server, password=password))
    with pytest.raises(CriticModelError) as info:
        critic.evaluate(TRAJ)
    text = str(info.value)
    assert "AuthenticationError" in text and "401" in text and "***" in text
    assert KEY not in text and PASSWORD not in text


def test_the_review_payload_audit_and_log_hold_no_secret(server, caplog) -> None:
    graph, bought = buying_agent(InferActCritic(model=_model(server, password=True)))
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    # our log (httpx's own INFO line names the URL as given: not ours to rewrite)
    with caplog.at_level(logging.DEBUG, logger="inferact_langgraph"):
        out = graph.invoke({"messages": [("user", "buy a red mug")]}, config)
        assert bought == [] and "__interrupt__" in out
        graph.invoke(Command(resume={"decisions": [{"type": "reject"}]}), config)
    state = graph.get_state(config).values
    everything = json.dumps(
        [out["__interrupt__"][0].value, state.get("inferact_audit"), state.get("inferact_checks")],
        default=str,
    )
    assert "CriticModelError" in everything and "***" in everything
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("inferact"))
    assert "CriticModelError" in ours or "critic model call failed" in ours
    for text in (everything, ours):
        assert KEY not in text and PASSWORD not in text


def test_cli_report_and_output_hold_no_secret(server, tmp_path) -> None:
    data = tmp_path / "data.jsonl"
    record = {"id": "a", "task": "t", "steps": [{"action": "Finish[x]"}], "label": "correct"}
    data.write_text(json.dumps(record) + "\n" + json.dumps({**record, "id": "b"}) + "\n")
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app,
        [
            "eval", "--data", str(data), "--critic", "standard", "--model", "openai:critic",
            "--base-url", f"http://inferact:{PASSWORD}@{server}/v1", "--api-key", KEY,
            "--no-cache", "--no-progress", "--max-retries", "0", "--out", str(out),
        ],
    )  # fmt: skip
    report = (out / "report.json").read_text()
    assert '"base_url": "http://***@127.0.0.1' in report
    assert "CriticModelError" in report  # the failures are reported, redacted
    for text in (report, result.output):
        assert KEY not in text and PASSWORD not in text
