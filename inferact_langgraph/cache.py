"""Verdict caches: never pay twice for the same check.

A cache stores *verdicts*, not model responses (a response cache would hand self-consistency
one cached sample five times). A verdict is keyed by the critic's configuration fingerprint, the
model's identity, the risk level and the content of the trajectory.

* :class:`CachedCritic` wraps any critic: an identical pending call (same task, same actions and
  observations, e.g. after a retried step) is answered from the cache with no model call.
* :class:`InMemoryVerdictCache` (LRU, one process) and :class:`VerdictCache` (a SQLite file,
  shared by processes and runs; the evaluation harness uses it).

Example:
    >>> from inferact_langgraph.testing import ScriptedCritic
    >>> from inferact_langgraph.trajectory import Step, Trajectory
    >>> inner = ScriptedCritic(scores=[0.2])
    >>> critic = CachedCritic(inner)
    >>> t = Trajectory("buy a red mug", (Step("search(q=mug)", "B01 red mug"), Step("buy(B01)")))
    >>> first, again = critic.evaluate(t), critic.evaluate(t)
    >>> inner.calls, again.score, again.usage.model_calls
    (1, 0.2, 0)
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from inferact_langgraph.critics.base import Critic, RiskLevel, Usage, Verdict
from inferact_langgraph.errors import CacheError
from inferact_langgraph.trajectory import Trajectory, trajectory_hash

__all__ = [
    "CacheError",
    "CachedCritic",
    "InMemoryVerdictCache",
    "VerdictCache",
    "VerdictStore",
    "critic_fingerprint",
    "model_identity",
]

CACHE_VERSION = 2  # 2: one trajectory hash for the guard's and the evaluation's caches
# Critic attributes that change how a check runs but not what it answers (InferAct's compiled
# graphs appear among the attributes only once they were built on first use).
_NOT_SEMANTIC = frozenset(
    {"model", "timeout", "max_retries", "inference_graph", "verification_graph", "graph"}
)
_MODEL_FIELDS = (
    "model",
    "model_name",
    "model_id",
    "deployment_name",
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "seed",
    "n",
    "openai_api_base",
    "base_url",
    "reasoning_effort",
    "logprobs",
    "top_logprobs",
    "stop",
    "frequency_penalty",
    "presence_penalty",
)


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A stable JSON form of a configuration value (no memory addresses)."""
    if depth > 6:
        return type(value).__qualname__
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in sorted(value.items(), key=str)}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v, depth + 1) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, set | frozenset) else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "__class__": type(value).__qualname__,
            **{
                f.name: _jsonable(getattr(value, f.name), depth + 1)
                for f in dataclasses.fields(value)
            },
        }
    if hasattr(value, "get_secret_value"):  # pydantic SecretStr: never in a key
        return "<secret>"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    if hasattr(value, "invoke") or hasattr(value, "ainvoke"):
        return model_identity(value)
    return type(value).__qualname__


def model_identity(model: Any) -> Any:
    """What identifies a chat model's answers: its class, model name, sampling settings, URL.

    API keys never enter the identity. Bound runnables (``model.bind(temperature=...)``)
    include their bound arguments.

    Example:
        >>> from langchain_openai import ChatOpenAI
        >>> m = ChatOpenAI(model="gpt-4o", api_key="sk-x", base_url="http://h/v1", temperature=0)
        >>> ident = model_identity(m)
        >>> ident["model_name"], ident["openai_api_base"], "sk-x" in str(ident)
        ('gpt-4o', 'http://h/v1', False)
    """
    if model is None:
        return None
    if hasattr(model, "bound") and hasattr(model, "kwargs"):
        return {"bound": model_identity(model.bound), "kwargs": _jsonable(model.kwargs, 1)}
    ident: dict[str, Any] = {"class": f"{type(model).__module__}.{type(model).__qualname__}"}
    for key in _MODEL_FIELDS:
        try:
            value = getattr(model, key, None)
        except Exception:  # noqa: BLE001 - a property may raise; it is then not identity
            value = None
        if value is not None and not callable(value):
            ident[key] = _jsonable(value, 1)
    try:
        params = model._identifying_params
    except Exception:  # noqa: BLE001
        params = None
    if isinstance(params, Mapping):
        ident["params"] = _jsonable(params, 1)
    return ident


def critic_fingerprint(critic: Critic) -> dict[str, Any]:
    """The configuration of a critic that determines its verdicts, as JSON-able data.

    It holds the critic's class and name, every public attribute but time-outs and retries
    (threshold, preset, risk-awareness, token budget, sample counts, aggregation ...) and the
    :func:`model_identity` of its model. A critic may instead define a ``cache_fingerprint()``
    method returning JSON-able data (advisable when it keeps mutable public state, such as
    counters, that does not change its answers).

    Example:
        >>> from inferact_langgraph.critics import Critic
        >>> class C(Critic):
        ...     name = "c"
        ...     async def _aevaluate(self, trajectory, *, risk=None): ...
        >>> critic_fingerprint(C(model=None, preset="hotpotqa"))["preset"]
        'hotpotqa'
        >>> critic_fingerprint(C(model=None)) == critic_fingerprint(C(model=None, timeout=5))
        True
    """
    fingerprint: dict[str, Any] = {
        "class": f"{type(critic).__module__}.{type(critic).__qualname__}",
        "name": critic.name,
    }
    custom = getattr(critic, "cache_fingerprint", None)
    if callable(custom):
        fingerprint["custom"] = _jsonable(custom(), 1)
        fingerprint["model"] = model_identity(getattr(critic, "model", None))
        return fingerprint
    for key, value in sorted(vars(critic).items()):
        if key.startswith("_") or key in _NOT_SEMANTIC:
            continue
        fingerprint[key] = _jsonable(value, 1)
    fingerprint["model"] = model_identity(getattr(critic, "model", None))
    return fingerprint


class VerdictCache:
    """Verdicts in a SQLite file, written as soon as each check finishes.

    Every write is committed at once, so a crash or Ctrl-C loses at most the checks that were
    in flight. The async methods run the (short) SQLite calls on a worker thread.

    Args:
        path: The SQLite file (created with its parent directory if missing).

    Raises:
        CacheError: The file is not a SQLite database, or cannot be created or written.

    Example:
        >>> import tempfile, os
        >>> from inferact_langgraph.critics import Verdict
        >>> cache = VerdictCache(os.path.join(tempfile.mkdtemp(), "c.sqlite"))
        >>> cache.put("k", Verdict(critic="x", score=0.25, threshold=0.5))
        >>> cache.get("k").score, cache.get("other"), len(cache)
        (0.25, None, 1)
        >>> cache.close()
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise CacheError(f"{self.path} is a directory; give a file path for the cache")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"cannot create the folder {self.path.parent} for the verdict cache: "
                f"{exc.strerror or exc}"
            ) from None
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False)
        except sqlite3.Error as exc:
            raise CacheError(f"cannot open the verdict cache {self.path}: {exc}") from None
        try:
            with self._lock:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS verdicts ("
                    " key TEXT PRIMARY KEY, critic TEXT NOT NULL, verdict TEXT NOT NULL,"
                    " created REAL NOT NULL)"
                )
                self._conn.commit()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            reason = str(exc)
            if "not a database" in reason or "malformed" in reason:
                raise CacheError(
                    f"{self.path} is not a SQLite verdict cache ({reason}); give another "
                    "path or remove the file"
                ) from None
            raise CacheError(f"cannot use the verdict cache {self.path}: {reason}") from None

    def get(self, key: str) -> Verdict | None:
        """The cached verdict for ``key``, or ``None``."""
        with self._lock:
            row = self._conn.execute(
                "SELECT verdict FROM verdicts WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        try:
            return Verdict.model_validate_json(row[0])
        except ValueError:  # an entry from an incompatible version: treat as a miss
            return None

    def put(self, key: str, verdict: Verdict) -> None:
        """Store (or replace) the verdict for ``key`` and commit."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO verdicts (key, critic, verdict, created) "
                "VALUES (?, ?, ?, ?)",
                (key, verdict.critic, verdict.model_dump_json(), time.time()),
            )
            self._conn.commit()

    async def aget(self, key: str) -> Verdict | None:
        """:meth:`get` without blocking the event loop."""
        return await asyncio.to_thread(self.get, key)

    async def aput(self, key: str, verdict: Verdict) -> None:
        """:meth:`put` without blocking the event loop."""
        await asyncio.to_thread(self.put, key, verdict)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()


class VerdictStore(Protocol):
    """What a verdict cache offers (both caches here implement it)."""

    def get(self, key: str) -> Verdict | None:
        """The verdict stored under ``key``, or ``None``."""
        ...

    def put(self, key: str, verdict: Verdict) -> None:
        """Store ``verdict`` under ``key``."""
        ...

    async def aget(self, key: str) -> Verdict | None:
        """The async :meth:`get`."""
        ...

    async def aput(self, key: str, verdict: Verdict) -> None:
        """The async :meth:`put`."""
        ...


class InMemoryVerdictCache:
    """A bounded, thread-safe LRU cache of verdicts for one process.

    Args:
        maxsize: Entries kept; the least recently used is dropped first.

    Example:
        >>> cache = InMemoryVerdictCache(maxsize=1)
        >>> cache.put("a", Verdict(critic="x", score=0.1, threshold=0.5))
        >>> cache.put("b", Verdict(critic="x", score=0.9, threshold=0.5))
        >>> cache.get("a"), cache.get("b").score
        (None, 0.9)
    """

    def __init__(self, maxsize: int = 1024) -> None:
        if maxsize <= 0:
            raise ValueError(f"maxsize must be > 0, got {maxsize}")
        self.maxsize = maxsize
        self._items: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Verdict | None:
        """The cached verdict, or ``None``."""
        with self._lock:
            verdict = self._items.get(key)
            if verdict is not None:
                self._items.move_to_end(key)
            return verdict

    def put(self, key: str, verdict: Verdict) -> None:
        """Store a verdict."""
        with self._lock:
            self._items[key] = verdict
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    async def aget(self, key: str) -> Verdict | None:
        """:meth:`get` (in memory: no I/O to offload)."""
        return self.get(key)

    async def aput(self, key: str, verdict: Verdict) -> None:
        """:meth:`put`."""
        self.put(key, verdict)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


chain_key = trajectory_hash
"""Alias of :func:`inferact_langgraph.trajectory.trajectory_hash` (the one trajectory hash)."""


class CachedCritic(Critic):
    """Any critic, with its verdicts cached by configuration, risk and action chain.

    A hit returns the stored verdict with zero usage (no model call was made). Failed checks
    are not cached.

    Args:
        critic: The critic to wrap.
        cache: Where verdicts live (default: a new :class:`InMemoryVerdictCache`).
    """

    def __init__(self, critic: Critic, cache: VerdictStore | None = None) -> None:
        if not isinstance(critic, Critic):
            raise TypeError(f"CachedCritic wraps a Critic, got {type(critic).__name__}")
        # Share the inner critic's settings so the guard and the harness read them as usual.
        super().__init__(
            model=critic.model,
            threshold=critic.threshold,
            preset=critic.preset,
            risk_aware=critic.risk_aware,
            budget=critic.budget,
            timeout=critic.timeout,
            max_retries=critic.max_retries,
            rules=critic.rules,
        )
        self.critic = critic
        self.name = critic.name  # type: ignore[misc]
        self.cache: VerdictStore = cache if cache is not None else InMemoryVerdictCache()
        self._fingerprint = json.dumps(critic_fingerprint(critic), sort_keys=True, default=str)

    def cache_fingerprint(self) -> Any:
        """The wrapped critic's fingerprint (the cache itself does not change answers)."""
        return json.loads(self._fingerprint)

    def key(self, trajectory: Trajectory, risk: RiskLevel | None) -> str:
        """The cache key of one check."""
        text = json.dumps(
            {
                "v": CACHE_VERSION,
                "critic": self._fingerprint,
                "risk": risk,
                "chain": chain_key(trajectory),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @staticmethod
    def _hit(verdict: Verdict) -> Verdict:
        return verdict.model_copy(update={"usage": Usage()})

    def _evaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        key = self.key(trajectory, risk)
        cached = self.cache.get(key)
        if cached is not None:
            return self._hit(cached)
        verdict = self.critic.evaluate(trajectory, risk=risk)
        self.cache.put(key, verdict)
        return verdict

    async def _aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        key = self.key(trajectory, risk)
        cached = await self.cache.aget(key)
        if cached is not None:
            return self._hit(cached)
        verdict = await self.critic.aevaluate(trajectory, risk=risk)
        await self.cache.aput(key, verdict)
        return verdict
