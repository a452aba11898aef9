"""The reviewers' running figures for the inbox, read from the review labels in the server's store.

``GET /inferact/api/figures`` answers, per deployment whose labels the server's store holds
(:mod:`inferact_langgraph.labels`): reviews this week, flagged calls a human approved (false
alarms) and rejected or edited (caught), spot checks and the mistakes they found, the threshold
of the newest label, and the ``inferact calibrate`` command that fits this deployment's
threshold from these labels. The page shows them above the list (``static/figures.js``).

Example:
    >>> class Item:
    ...     namespace, key = ("inferact", "labels", "shop", "shared"), "t1:c1"
    ...     value = {"decision": "approve", "flagged": True, "time": 0.0, "threshold": 0.5}
    >>> [s["false_alarms"] for s in figures_of([Item()], db="http://127.0.0.1:2024", now=1.0)]
    [1]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from inferact_langgraph.labels import LABELS_NAMESPACE, LabelSummary, ReviewLabels, label_summary

__all__ = ["figures_of", "review_figures"]

_PAGE = 500
_MAX_ITEMS = 20_000  # a page load never reads more labels than this


@dataclass
class _Item:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]


def figures_of(items: Sequence[Any], *, db: str, now: float | None = None) -> list[LabelSummary]:
    """The running figures per deployment, from store items (``namespace``, ``key``, ``value``)."""
    labels = ReviewLabels().read(items)
    names = sorted({str(x["deployment"]) for x in labels})
    return [
        label_summary(
            [x for x in labels if x["deployment"] == name], deployment=name, now=now, db=db
        )
        for name in names
    ]


async def review_figures(request: Request, client: Any) -> Response:
    """``GET api/figures``: ``{"deployments": [LabelSummary, ...]}`` from the server's store."""
    items: list[_Item] = []
    try:
        while len(items) < _MAX_ITEMS:
            page = await client.store.search_items(
                list(LABELS_NAMESPACE), limit=_PAGE, offset=len(items)
            )
            found = page.get("items") or []
            items.extend(
                _Item(tuple(i["namespace"]), str(i["key"]), dict(i["value"])) for i in found
            )
            if len(found) < _PAGE:
                break
    except httpx.HTTPStatusError as exc:
        status = getattr(exc.response, "status_code", 502)
        return JSONResponse(
            {"error": f"Cannot read the review labels from the server's store ({status})."},
            status_code=status if 400 <= status < 600 else 502,
        )
    root = request.scope.get("root_path", "") or ""
    db = f"{str(request.base_url).rstrip('/')}{root}".rstrip("/") or "<server URL>"
    return JSONResponse({"deployments": figures_of(items, db=db)})
