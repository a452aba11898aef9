"""Reading every item under a namespace prefix of a LangGraph store, page by page.

A store's ``search`` returns at most ``limit`` items; feedback memory and review labels list
everything they keep under their prefix, so they read page after page until a short one.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> for i in range(3):
    ...     store.put(("inferact", "x"), f"k{i}", {"i": i})
    >>> len(search_all(store, ("inferact",), page=2))
    3
"""

from __future__ import annotations

from typing import Any

__all__ = ["PAGE", "asearch_all", "search_all"]

PAGE = 500
"""Items asked for per search call."""


def search_all(store: Any, prefix: tuple[str, ...], *, page: int = PAGE) -> list[Any]:
    """Every item under ``prefix`` (sync)."""
    items: list[Any] = []
    while True:
        found = store.search(prefix, limit=page, offset=len(items))
        items.extend(found)
        if len(found) < page:
            return items


async def asearch_all(store: Any, prefix: tuple[str, ...], *, page: int = PAGE) -> list[Any]:
    """Every item under ``prefix`` (async; never blocks the event loop)."""
    items: list[Any] = []
    while True:
        found = await store.asearch(prefix, limit=page, offset=len(items))
        items.extend(found)
        if len(found) < page:
            return items
