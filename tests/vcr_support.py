"""VCR support shared by the cassette tests and ``scripts/record_cassettes.py``.

Everything that decides what a cassette looks like lives here, so that recording and replaying
cannot drift apart:

- :func:`make_vcr` - the vcrpy configuration: ``cassettes/`` as the library directory, the
  readable YAML serializer, header redaction, and the request matchers.
- :class:`ReadableYamlSerializer` - JSON request and response bodies are stored decoded
  (``parsed_body:``), long strings as YAML block scalars, so a reviewer reads the prompts and the
  model's answers and can grep a cassette for secrets.
- :func:`redact_request` / :func:`redact_response` - every credential header (``Authorization``,
  ``api-key``, cookies, OpenAI organization/project) is replaced by ``REDACTED`` before a
  request or response is written.
- :class:`StubOpenAIServer` - a tiny stdlib HTTP server on 127.0.0.1 answering the OpenAI
  chat-completions route with a failure (429, 500, malformed JSON, or an answer delayed past
  the client's time-out). The recorder records from it; the time-out test runs it live.

Replay is ``record_mode="none"``: a request that is not in the cassette raises
``CannotOverwriteExistingCassetteException`` instead of reaching the network.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import vcr
import yaml

ROOT = Path(__file__).resolve().parents[1]
CASSETTES = ROOT / "cassettes"

REDACTED = "REDACTED"

#: Request headers that can carry a credential (compared case-insensitively).
SECRET_REQUEST_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "cookie",
        "openai-organization",
        "openai-project",
    }
)
#: Response headers that can carry a credential or identify an account.
SECRET_RESPONSE_HEADERS = frozenset(
    {"set-cookie", "openai-organization", "openai-project", "authorization"}
)

#: Match on the route and on the decoded JSON body: the replayed answer is the one the model
#: gave to exactly this prompt (and concurrent calls cannot swap answers).
MATCH_EXACT = ("method", "scheme", "host", "port", "path", "query", "json_body")
#: Match on the route only: for failure cassettes, whose answer does not depend on the prompt.
MATCH_ROUTE = ("method", "scheme", "host", "port", "path", "query")


# --------------------------------------------------------------------------- redaction
def _redact_headers(headers: Any, names: frozenset[str]) -> None:
    for key in list(headers):
        if key.lower() in names:
            value = headers[key]
            headers[key] = [REDACTED] * len(value) if isinstance(value, list) else REDACTED


def redact_request(request: Any) -> Any:
    """Replace every credential header of a vcrpy request by ``REDACTED`` (in place)."""
    _redact_headers(request.headers, SECRET_REQUEST_HEADERS)
    return request


def redact_response(response: dict[str, Any]) -> dict[str, Any]:
    """Replace every credential header of a vcrpy response dict by ``REDACTED``."""
    _redact_headers(response.get("headers", {}), SECRET_RESPONSE_HEADERS)
    return response


# --------------------------------------------------------------------------- serializer
def _json_or_none(text: Any) -> Any:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


class _Dumper(yaml.SafeDumper):
    """Block scalars for multi-line strings, so prompts read as they were sent."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> Any:
    if "\n" in data and all(ch == "\n" or ch.isprintable() for ch in data) and not any(
        line != line.rstrip() for line in data.split("\n")
    ):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_representer)


class ReadableYamlSerializer:
    """vcrpy serializer: YAML with JSON bodies decoded under ``parsed_body``.

    On save, a request body or response body that is a JSON object/array is replaced by
    ``parsed_body: <the object>``; other bodies (the malformed-JSON case) stay as strings. On
    load the JSON is re-encoded and the response's ``content-length`` is recomputed to match.
    The file starts with a comment block taken from the cassette's ``metadata``.
    """

    @staticmethod
    def serialize(cassette_dict: dict[str, Any]) -> str:
        data = json.loads(json.dumps(cassette_dict, default=str))  # plain, detached copy
        for interaction in data.get("interactions", []):
            request, response = interaction["request"], interaction["response"]
            parsed = _json_or_none(request.get("body"))
            if parsed is not None:
                del request["body"]
                request["parsed_body"] = parsed
            body = response.get("body") or {}
            parsed = _json_or_none(body.get("string"))
            if parsed is not None:
                response["body"] = {"parsed_body": parsed}
        header = ""
        meta = data.get("metadata") or {}
        if meta:
            lines = [f"{k}: {v}" for k, v in meta.items() if isinstance(v, str)]
            header = "".join(f"# {line}\n" for line in lines) + "\n"
        text = yaml.dump(
            data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100,
            default_flow_style=False,
        )
        return header + text

    @staticmethod
    def deserialize(cassette_string: str) -> dict[str, Any]:
        data = yaml.safe_load(cassette_string) or {}
        for interaction in data.get("interactions", []):
            request, response = interaction["request"], interaction["response"]
            if "parsed_body" in request:
                request["body"] = json.dumps(request.pop("parsed_body"))
            body = response.get("body") or {}
            if "parsed_body" in body:
                text = json.dumps(body["parsed_body"])
                response["body"] = {"string": text}
                headers = response.get("headers") or {}
                for key in list(headers):
                    if key.lower() == "content-length":
                        headers[key] = [str(len(text.encode("utf-8")))]
        return data


# --------------------------------------------------------------------------- matchers
def json_body_matcher(r1: Any, r2: Any) -> None:
    """Bodies are equal as JSON (key order and whitespace do not matter), else as bytes."""
    b1, b2 = _json_or_none(r1.body), _json_or_none(r2.body)
    if b1 is not None or b2 is not None:
        assert b1 == b2, "JSON bodies differ"
    else:
        assert (r1.body or b"") == (r2.body or b""), "bodies differ"


def make_vcr(record_mode: str = "none", *, match_on: tuple[str, ...] = MATCH_EXACT) -> vcr.VCR:
    """The one vcrpy configuration used to record and to replay.

    Args:
        record_mode: ``"none"`` in tests (replay only: a missing interaction fails), ``"all"``
            in the recorder.
        match_on: :data:`MATCH_EXACT` (route + JSON body) or :data:`MATCH_ROUTE`.
    """
    config = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode=record_mode,
        match_on=list(match_on),
        serializer="readable-yaml",
        path_transformer=vcr.VCR.ensure_suffix(".yaml"),
        before_record_request=redact_request,
        before_record_response=redact_response,
        decode_compressed_response=True,
    )
    config.register_serializer("readable-yaml", ReadableYamlSerializer)
    config.register_matcher("json_body", json_body_matcher)
    return config


def load_cassette(name: str) -> dict[str, Any]:
    """A cassette file as stored (``parsed_body`` kept decoded), for assertions."""
    return yaml.safe_load((CASSETTES / name).read_text())


def recorded_base_url(name: str) -> str:
    """The ``base_url`` the cassette was recorded against (everything before ``/chat/``)."""
    uri = load_cassette(name)["interactions"][0]["request"]["uri"]
    return uri.split("/chat/completions", 1)[0]


# --------------------------------------------------------------------------- stub server
STUB_MODEL = "stub-model"
STUB_SERVER = "local stub (scripts/record_cassettes.py)"
STUB_MODES = ("429", "500", "malformed", "slow", "ok")
#: What the ``"ok"`` mode answers: a well-formed standard-evaluation answer (not a model's).
STUB_OK_ANSWER = "The answer is: Incorrect\nConfidence: 0.8"


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": STUB_MODEL,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class _StubHandler(BaseHTTPRequestHandler):
    server_version = "inferact-stub/1.0"
    mode = "500"
    delay = 5.0
    release: threading.Event

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        # Credentials a real provider may send back: they must never reach a cassette.
        self.send_header("Set-Cookie", "stub_session=stub-cookie-must-be-redacted; Path=/")
        self.send_header("OpenAI-Organization", "org-stub-must-be-redacted")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if not self.path.endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        mode = self.mode
        if mode == "429":
            body = {"error": {"message": "Rate limit reached (stub)", "type": "requests",
                              "code": "rate_limit_exceeded"}}
            self._send(429, json.dumps(body).encode(), {"Retry-After": "20"})
        elif mode == "500":
            body = {"error": {"message": "Internal server error (stub)", "type": "server_error"}}
            self._send(500, json.dumps(body).encode())
        elif mode == "malformed":
            # A 200 whose body is cut off mid-object: not valid JSON.
            self._send(200, b'{"id": "chatcmpl-stub", "object": "chat.completion", "choices": [{')
        elif mode == "slow":
            self.release.wait(self.delay)
            with contextlib.suppress(OSError):  # the client gave up and closed the connection
                self._send(200, json.dumps(_completion("too late")).encode())
        else:  # "ok": a canned, well-formed answer
            self._send(200, json.dumps(_completion(STUB_OK_ANSWER)).encode())


class StubOpenAIServer:
    """A stdlib HTTP server on 127.0.0.1 that fails the OpenAI chat-completions route.

    Args:
        mode: ``"429"``, ``"500"``, ``"malformed"`` (HTTP 200, truncated JSON), ``"slow"``
            (a valid answer after ``delay`` seconds) or ``"ok"`` (:data:`STUB_OK_ANSWER` at once).
        port: 0 picks a free port.
        delay: Seconds the ``"slow"`` mode waits (cut short when the server stops).

    Example:
        >>> with StubOpenAIServer("500") as stub:  # doctest: +SKIP
        ...     stub.base_url
        'http://127.0.0.1:40123/v1'
    """

    def __init__(self, mode: str, *, port: int = 0, delay: float = 5.0) -> None:
        if mode not in STUB_MODES:
            raise ValueError(f"mode must be one of {STUB_MODES}, got {mode!r}")
        self.release = threading.Event()
        handler = type("Handler", (_StubHandler,), {"mode": mode, "delay": delay,
                                                     "release": self.release})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StubOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@contextmanager
def stub_server(mode: str, **kwargs: Any) -> Iterator[StubOpenAIServer]:
    """``with stub_server("429") as stub: ...`` - see :class:`StubOpenAIServer`."""
    with StubOpenAIServer(mode, **kwargs) as stub:
        yield stub
