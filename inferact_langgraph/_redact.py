"""Secrets never leave in error text: API keys and URL passwords are replaced by ``***``.

A provider error can carry a credential: some OpenAI-compatible servers echo the API key in
their 401 body, and an httpx error names the URL, password included
(``http://user:pw@host``). Error text travels far (the interrupt payload a reviewer sees, the
audit, the log, ``report.json``), so it is redacted where it is made: where a model error
becomes a :class:`~inferact_langgraph.errors.CriticModelError`, and in what the CLI writes.

Example:
    >>> redact("401 for http://me:hunter2@h/v1: bad key sk-live-abcdefgh12345678", {"hunter2"})
    '401 for http://***@h/v1: bad key ***'
    >>> redact_url("http://me:hunter2@localhost:8000/v1")
    'http://***@localhost:8000/v1'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["REDACTED", "redact", "redact_url", "secrets_of", "url_secrets"]

REDACTED = "***"

# user:password@ (or a bare token@) in any URL
_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.\-]*://)[^/\s@'\"<>]+@", re.IGNORECASE)
_BEARER = re.compile(r"(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=\-]{6,}", re.IGNORECASE)
# "api_key": "...", api-key=..., 'x-api-key': '...', password=..., token: ...
_FIELD = re.compile(
    r"((?:api[_\-]?key|access[_\-]?token|auth[_\-]?token|token|secret|password|passwd)"
    r"[\"']?\s*[:=]\s*[\"']?)([^\s\"',;}&]{4,})",
    re.IGNORECASE,
)
# Key-shaped tokens of common providers: sk-..., sk-proj-..., sk-ant-..., gsk_..., hf_...
_KEY_SHAPED = re.compile(r"\b(?:sk|rk|pk|gsk|hf|xai|key)[-_][A-Za-z0-9_\-*.]{12,}")
_SECRET_NAME = re.compile(r"key|token|secret|password|passwd", re.IGNORECASE)
_MIN_SECRET = 4  # shorter values would redact ordinary words


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret, URL password and key-shaped token replaced by ``***``.

    Args:
        text: Any text that may end up in an error, a log or a report.
        secrets: Values known to be secret (the model's API key, a URL's password).

    Example:
        >>> redact('{"error": "Incorrect API key: abc123xyz"}', ["abc123xyz"])
        '{"error": "Incorrect API key: ***"}'
        >>> redact("Authorization: Bearer tok_0123456789")
        'Authorization: Bearer ***'
    """
    text = str(text)
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len)[::-1]:
        text = text.replace(secret, REDACTED)
    text = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _FIELD.sub(lambda m: m.group(1) + REDACTED, text)
    return _KEY_SHAPED.sub(REDACTED, text)


def redact_url(url: str | None) -> str | None:
    """A URL without its user and password (``None`` stays ``None``).

    Example:
        >>> redact_url("https://api.example.com/v1"), redact_url(None)
        ('https://api.example.com/v1', None)
    """
    if url is None:
        return None
    return _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", str(url))


def url_secrets(url: str) -> set[str]:
    """The password (and then the user name) in a URL, as written and percent-decoded.

    Example:
        >>> sorted(url_secrets("http://me:p%40ss@h/v1")), url_secrets("http://h/v1")
        (['me', 'p%40ss', 'p@ss'], set())
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return set()
    found = set()
    for value in (parts.password, parts.username if parts.password else None):
        if value:
            found |= {value, unquote(value)}
    return found


def secrets_of(model: Any, *, _depth: int = 0) -> frozenset[str]:
    """The secret values a chat model holds.

    ``SecretStr`` fields, key-named strings and URL passwords; bound and retrying wrappers are
    looked through.

    Example:
        >>> from langchain_openai import ChatOpenAI
        >>> m = ChatOpenAI(model="m", api_key="sk-123456", base_url="http://u:pw12@h/v1")
        >>> sorted(secrets_of(m.bind(temperature=0)))
        ['pw12', 'sk-123456', 'u']
    """
    if model is None or _depth > 3 or isinstance(model, str | bytes | int | float):
        return frozenset()
    found: set[str] = set()
    try:
        fields = dict(vars(model))
    except TypeError:
        fields = {}
    for name, value in fields.items():
        if hasattr(value, "get_secret_value"):
            secret = value.get_secret_value()
            if isinstance(secret, str) and secret:
                found.add(secret)
        elif isinstance(value, str):
            if _SECRET_NAME.search(name) and value:
                found.add(value)
            if "://" in value:
                found |= url_secrets(value)
    for attr in ("bound", "runnable", "default"):
        inner = fields.get(attr)
        if inner is not None:
            found |= secrets_of(inner, _depth=_depth + 1)
    return frozenset(found)
