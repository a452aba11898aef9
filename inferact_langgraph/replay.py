"""Replay recorded chat-model answers by exact request: real answers, offline, in CI.

A *transcript* is a JSONL file of recorded requests and the answer a model gave to each, one
JSON object per line: ``messages`` (``role`` and ``content`` of each message, as sent),
``temperature`` and ``n`` (as sent; ``null`` when not sent) and ``answer`` (the model's text).
``tests/data/hotpotqa-trial1-capable-model-answers.jsonl`` is one (450 answers of a capable
model to the prompts of ``inferact eval --preset hotpotqa``).

* :class:`ReplayChatModel` is a LangChain chat model that answers each request with the
  recorded answer to exactly that request (same messages, byte for byte, and the same
  temperature and ``n``). Use it wherever a critic takes a model: ``make_critic``,
  ``with_inferact``, ``evaluate_critics``.
* :class:`ReplayServer` serves the same answers as an OpenAI-compatible endpoint on loopback,
  so the real ``ChatOpenAI`` client (and ``inferact eval --base-url``) runs its HTTP path.

A request that was not recorded is never answered by guesswork: it raises
:class:`ReplayMismatchError` (the server answers HTTP 400 with the same text), naming the
transcript line of the nearest recorded request and a short diff against it, so a prompt that
no longer renders as it did is found at once. :attr:`Transcript.stale` keeps every such
request for a summary.

Repeated identical requests (self-consistency's samples) get the recorded answers to that
request in the order they were recorded, then again from the first.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> transcript = Transcript.from_records([
    ...     {"messages": [{"role": "user", "content": "Is 7 prime?"}], "answer": "Yes."}])
    >>> model = ReplayChatModel(transcript=transcript)
    >>> model.invoke([HumanMessage("Is 7 prime?")]).content
    'Yes.'
    >>> try:
    ...     model.invoke([HumanMessage("Is 9 prime?")])
    ... except ReplayMismatchError as err:
    ...     print(err.nearest_line, len(transcript.stale))
    1 1
"""

from __future__ import annotations

import difflib
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from inferact_langgraph.errors import ReplayMismatchError

__all__ = [
    "RecordedRequest",
    "ReplayChatModel",
    "ReplayMismatchError",
    "ReplayServer",
    "Transcript",
    "message_dicts",
]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def message_dicts(messages: Sequence[BaseMessage | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the OpenAI chat API sends them: ``{"role", "content"}``.

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> message_dicts([SystemMessage("be brief"), HumanMessage("hi")])
        [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'hi'}]
    """
    out = []
    for message in messages:
        if isinstance(message, Mapping):
            out.append({"role": message.get("role"), "content": message.get("content")})
        else:
            out.append({"role": _ROLES.get(message.type, message.type), "content": message.content})
    return out


def _key(messages: Sequence[Mapping[str, Any]], temperature: Any, n: Any) -> str:
    return json.dumps(
        {
            "messages": [{"role": m.get("role"), "content": m.get("content")} for m in messages],
            "temperature": None if temperature is None else float(temperature),
            "n": 1 if n is None else int(n),
        },
        sort_keys=True,
        ensure_ascii=False,
    )


def _text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(f"[{m.get('role')}]\n{m.get('content')}" for m in messages)


@dataclass(frozen=True)
class RecordedRequest:
    """One transcript entry.

    Attributes:
        line: 1-based line in the transcript file (or index + 1 for in-memory records).
        messages: The request's messages (``role``, ``content``).
        temperature: The temperature sent, or ``None``.
        n: The number of choices asked for.
        answer: The model's answer.
    """

    line: int
    messages: tuple[Mapping[str, Any], ...]
    temperature: float | None
    n: int
    answer: str

    @property
    def kind(self) -> str:
        """The first line of the first message: which prompt this is."""
        first = str(self.messages[0].get("content", "")) if self.messages else ""
        return first.split("\n", 1)[0][:100]


@dataclass
class Transcript:
    """Recorded requests and answers, looked up by exact request.

    Thread-safe: a replay model and a replay server can be called concurrently.

    Attributes:
        entries: The recorded requests, in file order.
        source: Where they were read from.
        stale: Every request that found no recorded match, as :class:`ReplayMismatchError`.
        served: How many requests were answered.
    """

    entries: list[RecordedRequest]
    source: str = "<records>"
    stale: list[ReplayMismatchError] = field(default_factory=list)
    served: int = 0

    def __post_init__(self) -> None:
        self._by_key: dict[str, list[RecordedRequest]] = {}
        for entry in self.entries:
            key = _key(entry.messages, entry.temperature, entry.n)
            self._by_key.setdefault(key, []).append(entry)
        self._next: dict[str, int] = {}
        self._used: set[int] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping[str, Any]], *, source: str = "<records>"
    ) -> Transcript:
        """Build a transcript from dicts with ``messages``, ``answer`` (and ``temperature``, ``n``).

        Raises:
            ValueError: A record without a list of messages or without a string answer.
        """
        entries = []
        for index, record in enumerate(records, start=1):
            messages = record.get("messages") if isinstance(record, Mapping) else None
            answer = record.get("answer") if isinstance(record, Mapping) else None
            if not isinstance(messages, list) or not messages or not isinstance(answer, str):
                raise ValueError(
                    f"{source}: record {index}: expected an object with 'messages' (a non-empty "
                    "list of {role, content}) and 'answer' (a string)"
                )
            entries.append(
                RecordedRequest(
                    line=index,
                    messages=tuple(
                        {"role": m.get("role"), "content": m.get("content")} for m in messages
                    ),
                    temperature=record.get("temperature"),
                    n=int(record.get("n") or 1),
                    answer=answer,
                )
            )
        return cls(entries=entries, source=source)

    @classmethod
    def load(cls, path: str | Path) -> Transcript:
        """Read a transcript JSONL file (blank lines are skipped).

        Raises:
            FileNotFoundError: No such file.
            ValueError: A line is not JSON or not a transcript record (the line is named).
        """
        path = Path(path)
        records: list[dict[str, Any]] = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number}: invalid JSON ({exc.msg})") from None
        return cls.from_records(records, source=str(path))

    def __len__(self) -> int:
        return len(self.entries)

    def answer(
        self,
        messages: Sequence[BaseMessage | Mapping[str, Any]],
        *,
        temperature: float | None = None,
        n: int | None = None,
    ) -> str:
        """The recorded answer to exactly this request.

        Raises:
            ReplayMismatchError: No recorded request is identical (it is also appended to
                :attr:`stale`).
        """
        wanted = message_dicts(messages)
        key = _key(wanted, temperature, n)
        with self._lock:
            candidates = self._by_key.get(key)
            if candidates:
                index = self._next.get(key, 0)
                self._next[key] = index + 1
                entry = candidates[index % len(candidates)]
                self._used.add(entry.line)
                self.served += 1
                return entry.answer
        error = self._mismatch(wanted, temperature, n)
        with self._lock:
            self.stale.append(error)
        raise error

    def unused(self) -> list[RecordedRequest]:
        """Recorded requests that no call has asked for (yet)."""
        with self._lock:
            return [e for e in self.entries if e.line not in self._used]

    def _mismatch(
        self, wanted: list[dict[str, Any]], temperature: float | None, n: int | None
    ) -> ReplayMismatchError:
        text = _text(wanted)
        kind = str(wanted[0].get("content", "")).split("\n", 1)[0][:100] if wanted else ""
        nearest = self._nearest(text, kind)
        if nearest is None:
            return ReplayMismatchError(
                f"request not in the transcript {self.source} (it is empty): {kind!r}",
                nearest_line=None,
                diff="",
                kind=kind,
            )
        recorded = _text(nearest.messages)
        if recorded == text:
            what = (
                f"the messages match line {nearest.line}, but it was recorded with temperature="
                f"{nearest.temperature}, n={nearest.n}; this request has temperature="
                f"{temperature}, n={1 if n is None else n}"
            )
            diff = ""
        else:
            diff = _short_diff(recorded, text)
            what = f"nearest recorded request: line {nearest.line}; diff (recorded -> now):\n{diff}"
        return ReplayMismatchError(
            f"stale request: no recorded request in {self.source} is identical to this "
            f"{kind[:60]!r}... prompt (a prompt no longer renders as it did when recorded); "
            + what,
            nearest_line=nearest.line,
            diff=diff,
            kind=kind,
        )

    def _nearest(self, text: str, kind: str) -> RecordedRequest | None:
        if not self.entries:
            return None
        same_kind = [e for e in self.entries if e.kind == kind] or self.entries

        def shared(entry: RecordedRequest) -> int:
            # Common prefix + common suffix: cheap, and right for "one sentence changed".
            other = _text(entry.messages)
            prefix = 0
            for a, b in zip(text, other, strict=False):
                if a != b:
                    break
                prefix += 1
            suffix = 0
            for a, b in zip(reversed(text), reversed(other), strict=False):
                if a != b or suffix >= min(len(text), len(other)) - prefix:
                    break
                suffix += 1
            return prefix + suffix

        return max(same_kind, key=shared)


def _short_diff(recorded: str, now: str, *, max_lines: int = 12, width: int = 160) -> str:
    lines = list(
        difflib.unified_diff(
            recorded.splitlines(), now.splitlines(), "recorded", "now", n=0, lineterm=""
        )
    )[2:]
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"... {len(lines) - max_lines} more diff lines")
    return "\n".join(shown) if shown else "(whitespace only)"


class ReplayChatModel(BaseChatModel):
    r"""A chat model answering from a transcript, by exact request.

    Args:
        transcript: A :class:`Transcript`, or the path of a transcript JSONL file.
        temperature: The temperature this model "sends" unless a call binds another one
            (``None``: none, as a client that leaves it unset).

    Attributes:
        calls: Requests received (answered or not).

    Raises:
        ReplayMismatchError: On a call whose request was not recorded.

    Example:
        >>> import json, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "t.jsonl")
        >>> with open(path, "w") as f:
        ...     _ = f.write(json.dumps({"messages": [{"role": "user", "content": "hi"}],
        ...                             "temperature": None, "n": 1, "answer": "hello"}) + "\n")
        >>> ReplayChatModel(transcript=path).invoke("hi").content
        'hello'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    transcript: Any
    temperature: float | None = None
    calls: int = 0

    def model_post_init(self, context: Any) -> None:
        """Load a transcript given by its path; anything else but a Transcript is an error."""
        if isinstance(self.transcript, str | Path):
            self.transcript = Transcript.load(self.transcript)
        if not isinstance(self.transcript, Transcript):
            raise TypeError(
                "transcript must be a Transcript or the path of a transcript JSONL file, got "
                f"{type(self.transcript).__name__}"
            )

    @property
    def _llm_type(self) -> str:
        return "replay"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"transcript": self.transcript.source, "temperature": self.temperature}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ReplayChatModel:
        """Accept tools and ignore them: answers are text from the transcript."""
        return self

    def _reply(self, messages: list[BaseMessage], kwargs: Mapping[str, Any]) -> ChatResult:
        self.calls += 1
        temperature = kwargs.get("temperature", self.temperature)
        text = self.transcript.answer(messages, temperature=temperature, n=kwargs.get("n"))
        message = AIMessage(content=text, id=f"replay-{uuid.uuid4().hex[:12]}")
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply(messages, kwargs)


class ReplayServer:
    """An OpenAI-compatible chat-completions endpoint on 127.0.0.1 answering from a transcript.

    Drives the real ``ChatOpenAI`` client (and ``inferact eval --base-url``) over HTTP with
    recorded answers. A request that was not recorded gets HTTP 400 whose error message is the
    :class:`ReplayMismatchError` text (the OpenAI client raises ``BadRequestError`` with it,
    and does not retry it). Use it as a context manager; it binds a free port.

    Args:
        transcript: A :class:`Transcript` or the path of a transcript JSONL file.
        host: The loopback address to bind.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
        requests: Requests received.

    Example:
        >>> server = ReplayServer(Transcript.from_records([]))  # then: with server: ...
        >>> server.requests, len(server.transcript)
        (0, 0)
    """

    def __init__(self, transcript: Transcript | str | Path, *, host: str = "127.0.0.1") -> None:
        self.transcript = (
            transcript if isinstance(transcript, Transcript) else Transcript.load(transcript)
        )
        self.host = host
        self.requests = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The endpoint to give ``ChatOpenAI(base_url=...)`` or ``--base-url``."""
        if self._httpd is None:
            raise RuntimeError("the replay server is not running (use it as a context manager)")
        return f"http://{self.host}:{self._httpd.server_address[1]}/v1"

    def start(self) -> ReplayServer:
        """Bind a free port and serve on a daemon thread."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

            def _send(self, status: int, payload: Mapping[str, Any]) -> None:
                body = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "bad"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                server.requests += 1
                try:
                    text = server.transcript.answer(
                        request.get("messages") or [],
                        temperature=request.get("temperature"),
                        n=request.get("n"),
                    )
                except ReplayMismatchError as exc:
                    self._send(400, {"error": {"message": str(exc), "type": "replay_mismatch"}})
                    return
                self._send(200, _completion(request.get("model") or "replay", text))

        self._httpd = _Server((self.host, 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="replay-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    # Room for every connection a concurrent client opens at once (the default backlog is 5).
    request_queue_size = 128


def _completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-replay-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        # No usage block: the transcript did not record token counts (critics then estimate).
    }
