"""The inbox's HTTP app: the page, its assets, and a small JSON API over the server's threads.

Served by the LangGraph server itself (``langgraph.json``:
``"http": {"app": "inferact_langgraph.inbox:app"}``), so it needs no database of its own: every
read and every resume goes through the server's thread and run API, in process.

Routes (under ``prefix``, ``/inferact`` by default):

* ``GET /inferact/inbox``: the page (static HTML, CSS and JavaScript shipped in the package);
  ``GET /inferact`` redirects to it.
* ``GET /inferact/api/reviews``: the threads waiting on an InferAct review, newest first.
* ``GET /inferact/api/reviews/{thread_id}``: one thread's reviews (see :mod:`.view`).
* ``GET /inferact/api/figures``: the reviewers' running figures per deployment, from the review
  labels in the server's store (see :mod:`.figures`).
* ``POST /inferact/api/reviews/{thread_id}/decisions``: ``{"interrupt_id", "decisions"}``
  (and optionally ``tool_call_ids``, the calls decided), validated with the library's
  :func:`~inferact_langgraph.guard.payloads.parse_resume`, then the thread is resumed with
  ``{"decisions": [...]}`` and the outcome returned, with every decision of the run. A review
  that someone else answered first gets 409 with ``answered`` and who decided what.

Auth: without auth configured on the server, the app talks to it through
``langgraph_sdk.get_client()`` (in process). With auth configured (``"auth"`` in
``langgraph.json``, or a LangSmith deployment), that in-process client would bypass auth, so
the app instead sends each call through the server's own authentication, carrying the viewer's
credentials (the request's ``Authorization``, ``X-Api-Key`` and ``Cookie`` headers): the
server's auth handlers decide who the viewer is and which threads they may see and resume.

Example:
    >>> app = create_app(prefix="/review")
    >>> sorted(r.path for r in app.routes)  # doctest: +NORMALIZE_WHITESPACE
    ['/review', '/review/', '/review/api/figures', '/review/api/reviews',
     '/review/api/reviews/{thread_id}',
     '/review/api/reviews/{thread_id}/decisions', '/review/inbox', '/review/inbox/',
     '/review/static/{name}']
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from inferact_langgraph.errors import ResumeError
from inferact_langgraph.guard.payloads import DECISION_TYPES, EXPECTED_SHAPE, parse_resume
from inferact_langgraph.guard.state import AUDIT
from inferact_langgraph.inbox.figures import review_figures
from inferact_langgraph.inbox.view import ThreadView, pending_interrupts, thread_view

__all__ = [
    "CREDENTIAL_HEADERS",
    "ClientFactory",
    "create_app",
    "in_process_client",
    "server_has_auth",
    "validate_decisions",
]

logger = logging.getLogger("inferact_langgraph.inbox")

ClientFactory = Callable[[Request], Any]
"""``request -> LangGraphClient``: how the app reaches the server for one viewer's request."""

CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "x-api-key", "cookie")
"""The request headers forwarded to the server when it has auth configured."""

# Served as written: no template, no data in any script. The CSP forbids inline script, inline
# event handlers and every other origin, so even a rendering mistake could not run data as code.
_ASSETS = {
    "inbox.js": "text/javascript; charset=utf-8",
    "figures.js": "text/javascript; charset=utf-8",
    "inbox.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _asset(name: str) -> bytes:
    return resources.files("inferact_langgraph.inbox").joinpath("static", name).read_bytes()


def server_has_auth() -> bool:
    """Whether the LangGraph server running this app authenticates its API calls.

    Example:
        >>> server_has_auth()  # outside a LangGraph server (or with no auth configured)
        False
    """
    try:
        from langgraph_api import config
    except Exception:  # noqa: BLE001 - not inside a LangGraph server: nothing to authenticate
        return False
    return bool(getattr(config, "LANGGRAPH_AUTH", None)) or getattr(
        config, "LANGGRAPH_AUTH_TYPE", "noop"
    ) not in ("noop", None, "")


_unauthenticated_client: Any = None


def in_process_client(request: Request) -> Any:
    """The default :data:`ClientFactory`: the server this app runs in, as this viewer.

    Without auth, one shared ``langgraph_sdk.get_client()`` (in process, no URL). With auth, a
    client over the server's ASGI app that goes through its authentication with the viewer's
    credential headers (``get_client()`` in process skips authentication altogether).
    """
    global _unauthenticated_client
    from langgraph_sdk import get_client

    if not server_has_auth():
        if _unauthenticated_client is None:
            _unauthenticated_client = get_client()
        return _unauthenticated_client
    from langgraph_api import config
    from langgraph_api.server import app as server_app
    from langgraph_sdk.client import LangGraphClient

    try:
        from langgraph_api.asgi_transport import ASGITransport as Transport
    except ImportError:  # older servers
        Transport = httpx.ASGITransport  # noqa: N806
    headers = {k: v for k, v in request.headers.items() if k.lower() in CREDENTIAL_HEADERS}
    prefix = getattr(config, "MOUNT_PREFIX", None) or ""
    http = httpx.AsyncClient(
        base_url=f"http://api{prefix}",
        transport=Transport(app=server_app),
        headers=headers,
        timeout=httpx.Timeout(connect=5, read=300, write=300, pool=5),
    )
    return LangGraphClient(http)


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def _server_error(exc: httpx.HTTPStatusError, doing: str) -> JSONResponse:
    """Relay the server's refusal (401, 403, 404, 409, 422 ...) with its own words."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None) or 502
    try:
        body = response.json()  # type: ignore[union-attr]
        detail = body.get("detail") or body.get("message") or body.get("error") or body
    except (ValueError, AttributeError):
        detail = getattr(response, "text", None) or str(exc)
    if not isinstance(detail, str):
        detail = json.dumps(detail)
    detail = detail.strip().rstrip(".")  # the sentence ends once, below
    hint = {
        401: " Sign in: give your credentials (the Credentials button).",
        403: " You may not see or change this thread.",
        404: " The thread does not exist or you may not see it.",
        409: " The thread is busy (a run is in progress); try again when it has stopped.",
    }.get(status, "")
    return _error(status if 400 <= status < 600 else 502, f"{doing}: {detail}.{hint}".strip())


def _interrupt_count(thread: Mapping[str, Any]) -> int:
    """All pending interrupts of a thread, InferAct's or not."""
    raw = thread.get("interrupts") or {}
    groups = raw.values() if isinstance(raw, Mapping) else [raw]
    return sum(len(g) if isinstance(g, list) else 1 for g in groups)


def _summary(view: ThreadView) -> dict[str, Any]:
    actions = [a for r in view["reviews"] for a in r["actions"]]
    scores = [a["score"] for a in actions if a["score"] is not None]
    return {
        "thread_id": view["thread_id"],
        "graph_id": view["graph_id"],
        "updated_at": view["updated_at"],
        "created_at": view["created_at"],
        "task": view["task"],
        "tools": [a["tool"] for a in actions],
        "actions": len(actions),
        "min_score": min(scores) if scores else None,
        "threshold": next((a["threshold"] for a in actions if a["threshold"] is not None), None),
        "critic_failed": any(a["error"] for a in actions),
        "spot_check": bool(actions) and all(a.get("spot_check") for a in actions),
        "risk": next((a["risk"] for a in actions if a["risk"] == "high"), None)
        or next((a["risk"] for a in actions if a["risk"]), None),
    }


def validate_decisions(
    body: Any, request_value: Mapping[str, Any]
) -> tuple[dict[str, Any], None] | tuple[None, str]:
    """Check a page's decisions against the pending request, with the library's parser.

    Returns ``(resume_value, None)`` or ``(None, error message)``.

    Example:
        >>> request = {"action_requests": [{"name": "buy"}],
        ...            "review_configs": [{"action_name": "buy", "allowed_decisions": ["reject"]}]}
        >>> validate_decisions({"decisions": [{"type": "reject", "message": "no"}]}, request)
        ({'decisions': [{'type': 'reject', 'message': 'no'}]}, None)
        >>> validate_decisions({"decisions": [{"type": "approve"}]}, request)[1]
        "decisions[0]: 'approve' is not allowed for buy; allowed decisions are ['reject']"
    """
    decisions = body.get("decisions") if isinstance(body, Mapping) else None
    count = len(request_value.get("action_requests") or [])
    configs = request_value.get("review_configs") or []
    allowed_each = [
        list(c.get("allowed_decisions") or DECISION_TYPES) if isinstance(c, Mapping) else []
        for c in configs
    ] + [list(DECISION_TYPES)] * max(0, count - len(configs))
    value = {"decisions": decisions}
    try:
        # The shape first; then each decision against its own action's allowed decisions.
        parsed = parse_resume(value, count=count, allowed=DECISION_TYPES)
    except ResumeError as exc:
        return None, str(exc).split("\nExpected:")[0]
    for i, decision in enumerate(parsed):
        if decision.type not in allowed_each[i]:
            name = (request_value["action_requests"][i] or {}).get("name")
            return None, (
                f"decisions[{i}]: {decision.type!r} is not allowed for {name}; "
                f"allowed decisions are {allowed_each[i]}"
            )
    clean = []
    for decision in parsed:
        item: dict[str, Any] = {"type": decision.type}
        if decision.message is not None:
            item["message"] = decision.message
        if decision.edited_action is not None:
            item["edited_action"] = decision.edited_action
        clean.append(item)
    return {"decisions": clean}, None


def _audit_of(thread: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The thread's audit entries (every decided critical call, oldest first)."""
    raw_values = thread.get("values")
    values: Mapping[str, Any] = raw_values if isinstance(raw_values, Mapping) else {}
    return [e for e in values.get(AUDIT) or [] if isinstance(e, Mapping)]


def _audit_rows(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Audit entries as the page lists them."""
    return [
        {
            k: e.get(k)
            for k in ("tool", "args", "decision", "decided_by", "score", "threshold")
            if k in e
        }
        | ({"feedback": e["feedback"]} if "feedback" in e else {})
        for e in entries
    ]


def _outcome(
    thread: Mapping[str, Any], joined: Any, audited_before: int, status: str | None
) -> dict[str, Any]:
    """What the run did after the decision: finished, a new review, another interrupt, error.

    Its ``audit`` lists every decision of the run: the human's, and those that followed (the
    critic approving the agent's next call, a policy's, the guard's refusals).
    """
    raw_values = thread.get("values")
    values: Mapping[str, Any] = raw_values if isinstance(raw_values, Mapping) else {}
    audit = _audit_of(thread)[audited_before:]
    last_text = None
    for message in reversed(values.get("messages") or []):
        if isinstance(message, Mapping) and message.get("type") == "ai":
            content = message.get("content")
            last_text = content if isinstance(content, str) else json.dumps(content)
            break
    error = joined.get("__error__") if isinstance(joined, Mapping) else None
    view = thread_view(thread)
    if status == "error" or error or thread.get("status") == "error":
        outcome = "error"
    elif view is not None:
        outcome = "review"
    elif thread.get("status") == "interrupted":
        outcome = "interrupted"
    elif thread.get("status") == "busy" or status in ("pending", "running"):
        outcome = "running"
    else:
        outcome = "finished"
    return {
        "outcome": outcome,
        "run_status": status,
        "thread_status": thread.get("status"),
        "error": json.dumps(error) if error is not None and not isinstance(error, str) else error,
        "last_message": last_text,
        "audit": _audit_rows(audit),
        "review": view,
    }


def _cross_site(request: Request) -> Response | None:
    """A refusal for a POST a page of another site could have sent, else ``None``.

    A cross-site form or ``fetch`` without a CORS preflight can only send a "simple" content
    type (``text/plain; charset=application/json`` included), so the media type must be
    exactly ``application/json``; and a browser names the page's origin, which must be this
    host's.
    """
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        return _error(415, "send the decisions as JSON (Content-Type: application/json)")
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        return _error(403, f"a page of another origin ({origin}) cannot send decisions here")
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return _error(403, "a page of another site cannot send decisions here")
    return None


def _answered_elsewhere(
    thread: Mapping[str, Any], call_ids: Sequence[Any], thread_status: Any
) -> JSONResponse:
    """409: the review was answered by someone else; who decided what, from the audit."""
    wanted = {c for c in call_ids if c}
    answers = [e for e in _audit_of(thread) if e.get("tool_call_id") in wanted]
    rows = _audit_rows(answers)
    said = "; ".join(f"{r.get('tool')}: {r.get('decision')} by {r.get('decided_by')}" for r in rows)
    message = (
        f"This review was already answered ({said}). Your decision was not sent."
        if said
        else "This review was already answered elsewhere, or the run moved on. Your decision "
        "was not sent."
    )
    return _error(409, message, answered=True, answers=rows, thread_status=thread_status)


def create_app(
    *,
    prefix: str = "/inferact",
    client_factory: ClientFactory | None = None,
    limit: int = 50,
    run_timeout: float = 60.0,
) -> Starlette:
    """Build the inbox app.

    Args:
        prefix: Path prefix of every route (must start with ``/`` and not end with one).
        client_factory: ``request -> LangGraphClient``; by default :func:`in_process_client`.
        limit: At most this many waiting threads are listed.
        run_timeout: Seconds to wait for the resumed run before answering "still running".

    Raises:
        ValueError: A bad prefix, limit or timeout.
    """
    if not prefix.startswith("/") or prefix.endswith("/"):
        raise ValueError(f"prefix must start with '/' and not end with '/', got {prefix!r}")
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if run_timeout <= 0:
        raise ValueError(f"run_timeout must be > 0, got {run_timeout}")
    factory = client_factory or in_process_client

    def with_client(
        handler: Callable[[Request, Any], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            client = factory(request)
            try:
                return await handler(request, client)
            except httpx.HTTPStatusError as exc:
                return _server_error(exc, "The server refused the request")
            except httpx.HTTPError as exc:
                # The server's API did not answer (a transport error): say so, as JSON.
                return _error(502, f"The LangGraph server's API did not answer: {exc}")
            finally:
                if client is not _unauthenticated_client and hasattr(client, "aclose"):
                    await client.aclose()

        return endpoint

    async def page(request: Request) -> Response:
        return Response(
            _asset("inbox.html"), media_type="text/html; charset=utf-8", headers=_SECURITY_HEADERS
        )

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return _error(404, f"no such asset: {name}")
        return Response(_asset(name), media_type=_ASSETS[name], headers=_SECURITY_HEADERS)

    async def list_reviews(request: Request, client: Any) -> Response:
        try:
            threads = await client.threads.search(
                status="interrupted", sort_by="updated_at", sort_order="desc", limit=limit
            )
        except httpx.HTTPStatusError as exc:
            return _server_error(exc, "Cannot list threads")
        views = [v for v in (thread_view(t) for t in threads) if v is not None]
        return JSONResponse({"reviews": [_summary(v) for v in views], "auth": server_has_auth()})

    async def get_review(request: Request, client: Any) -> Response:
        thread_id = request.path_params["thread_id"]
        try:
            thread = await client.threads.get(thread_id)
        except httpx.HTTPStatusError as exc:
            return _server_error(exc, "Cannot read the thread")
        view = thread_view(thread)
        if view is None:
            return _error(
                404,
                "This thread is not waiting on an InferAct review (any more).",
                thread_status=thread.get("status"),
            )
        return JSONResponse(view)

    async def decide(request: Request, client: Any) -> Response:
        thread_id = request.path_params["thread_id"]
        if refused := _cross_site(request):
            return refused
        try:
            body = await request.json()
        except ValueError:
            return _error(
                400,
                f"the body is not JSON; expected {{'interrupt_id', 'decisions'}}: {EXPECTED_SHAPE}",
            )
        try:
            thread = await client.threads.get(thread_id)
        except httpx.HTTPStatusError as exc:
            return _server_error(exc, "Cannot read the thread")
        pending = pending_interrupts(thread)
        wanted = body.get("interrupt_id") if isinstance(body, Mapping) else None
        target = next((p for p in pending if p["id"] == wanted), None)
        if target is None and wanted is None and len(pending) == 1:
            target = pending[0]
        if target is None:
            # The page names the calls it decided (``tool_call_ids``): say who answered them.
            named = body.get("tool_call_ids") if isinstance(body, Mapping) else None
            thread = await _settled(client, thread_id, thread)
            return _answered_elsewhere(
                thread, named if isinstance(named, list) else [], thread.get("status")
            )
        resume, problem = validate_decisions(body, target["value"])
        if problem is not None:
            return _error(422, problem)
        # Several interrupts pending at once (e.g. one per tool call with the middleware's
        # review_in="tool_call"): a bare resume is refused by LangGraph; answer this one by id.
        several = _interrupt_count(thread) > 1
        command = {"resume": {target["id"]: resume} if several else resume}
        metadata = thread.get("metadata") or {}
        assistant = metadata.get("assistant_id") or metadata.get("graph_id")
        if not assistant:
            return _error(409, "The thread has no assistant to resume it with (no graph_id).")
        decided = [
            (a.get("inferact") or {}).get("tool_call_id")
            for a in target["value"].get("action_requests") or []
            if isinstance(a, Mapping)
        ]
        audited_before = len(_audit_of(thread))
        try:
            run = await client.runs.create(
                thread_id, assistant, command=command, multitask_strategy="reject"
            )
        except httpx.HTTPStatusError as exc:
            if getattr(exc.response, "status_code", None) != 409:
                return _server_error(exc, "The server refused the decision")
            # Another decision is resuming this review right now (another tab or reviewer):
            # wait for that run, then say who answered.
            thread = await _settled(client, thread_id, thread)
            return _answered_elsewhere(thread, decided, thread.get("status"))
        joined: Any = None
        try:
            joined = await asyncio.wait_for(
                client.runs.join(thread_id, run["run_id"]), timeout=run_timeout
            )
        except TimeoutError:
            pass
        except httpx.HTTPStatusError as exc:
            return _server_error(exc, "The decision was sent, but the run failed")
        try:
            run = await client.runs.get(thread_id, run["run_id"])
            thread = await client.threads.get(thread_id)
        except httpx.HTTPStatusError as exc:
            return _server_error(exc, "The decision was sent, but the thread cannot be read")
        outcome = _outcome(thread, joined, audited_before, run.get("status"))
        return JSONResponse({"run_id": run.get("run_id"), **outcome})

    async def _settled(client: Any, thread_id: str, thread: Any) -> Any:
        """The thread once the runs in flight on it have stopped (at most ``run_timeout``)."""
        try:
            runs = await client.runs.list(thread_id, limit=5)
            active = [r for r in runs if r.get("status") in ("pending", "running")]
            for active_run in active:
                await asyncio.wait_for(
                    client.runs.join(thread_id, active_run["run_id"]), timeout=run_timeout
                )
            return await client.threads.get(thread_id)
        except (TimeoutError, httpx.HTTPError):
            return thread  # say what is known; the page refreshes anyway

    async def redirect(request: Request) -> Response:
        return RedirectResponse(f"{request.scope.get('root_path', '')}{prefix}/inbox")

    return Starlette(
        routes=[
            Route(f"{prefix}/inbox", page, methods=["GET"]),
            Route(f"{prefix}/inbox/", redirect, methods=["GET"]),
            Route(prefix, redirect, methods=["GET"]),  # the app's root is its inbox
            Route(f"{prefix}/", redirect, methods=["GET"]),
            Route(f"{prefix}/static/{{name}}", asset, methods=["GET"]),
            Route(f"{prefix}/api/reviews", with_client(list_reviews), methods=["GET"]),
            Route(f"{prefix}/api/figures", with_client(review_figures), methods=["GET"]),
            Route(f"{prefix}/api/reviews/{{thread_id}}", with_client(get_review), methods=["GET"]),
            Route(
                f"{prefix}/api/reviews/{{thread_id}}/decisions",
                with_client(decide),
                methods=["POST"],
            ),
        ]
    )
