"""The InferAct review inbox: a web page, served by the LangGraph server, to decide reviews.

Register it in ``langgraph.json`` and ``langgraph dev`` (or any LangGraph server deployment)
serves it beside the graphs, at ``/inferact/inbox``::

    {"dependencies": ["."], "graphs": {...}, "http": {"app": "inferact_langgraph.inbox:app"}}

The page lists the threads waiting on an InferAct review, newest first, and refreshes itself.
A review shows each doubtful tool call with the user's task, the tasks the critic inferred and
their probabilities (both option orders and the mean), the score against the threshold, the
critic's justification and the action chain it judged; the reviewer approves, edits the
arguments, rejects with feedback or responds, and the thread resumes through the server's run
API. Needs the ``[server]`` extra (Starlette and the LangGraph SDK).

Example:
    >>> from inferact_langgraph.inbox import app
    >>> any(r.path == "/inferact/inbox" for r in app.routes)
    True
"""

from inferact_langgraph.inbox.app import (
    CREDENTIAL_HEADERS,
    ClientFactory,
    create_app,
    in_process_client,
    server_has_auth,
    validate_decisions,
)
from inferact_langgraph.inbox.view import ThreadView, is_inferact_request, thread_view

__all__ = [
    "CREDENTIAL_HEADERS",
    "ClientFactory",
    "ThreadView",
    "app",
    "create_app",
    "in_process_client",
    "is_inferact_request",
    "server_has_auth",
    "thread_view",
    "validate_decisions",
]

app = create_app()
"""The inbox at ``/inferact``: what ``langgraph.json``'s ``http.app`` points at."""
