"""Run critics over labelled trajectories: bounded concurrency, progress, a verdict cache.

The cache stores *verdicts*, not model responses: a response cache would hand
self-consistency one cached sample five times. A verdict is keyed by the critic's
configuration fingerprint, the model's identity, the risk level and the hash of what the
critic sees (:func:`~inferact_langgraph.eval.datasets.trajectory_hash`), so an interrupted run
resumes where it stopped and a re-run that only changes the metrics makes no model call.
Critic errors are recorded per trajectory (and not cached, so a re-run retries them).

Example:
    >>> import asyncio
    >>> from inferact_langgraph.critics import Critic, Usage
    >>> from inferact_langgraph.eval.datasets import load_dataset
    >>> class Half(Critic):
    ...     name = "half"
    ...     async def _aevaluate(self, trajectory, *, risk=None):
    ...         return self.verdict(score=0.5, usage=Usage(model_calls=1))
    >>> data = load_dataset([{"task": "t", "steps": [{"action": "a"}], "label": "correct"}])
    >>> runner = EvalRunner({"half": Half(model=None)}, progress=False)
    >>> results = asyncio.run(runner.arun(data.items))
    >>> results["half"]["record-1"].verdict.score, runner.stats.model_calls
    (0.5, 1)
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferact_langgraph.critics.base import Critic, Verdict
from inferact_langgraph.eval.datasets import LabelledTrajectory

__all__ = [
    "EvalRunner",
    "Outcome",
    "RunStats",
    "VerdictCache",
    "cache_key",
    "critic_fingerprint",
    "model_identity",
]

CACHE_VERSION = 1
# Critic attributes that change how a check runs but not what it answers.
_NOT_SEMANTIC = frozenset({"model", "timeout", "max_retries"})
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


def cache_key(
    critic: Critic, item: LabelledTrajectory, *, fingerprint: Mapping[str, Any] | None = None
) -> str:
    """The cache key of one check: critic fingerprint, model, risk and trajectory content.

    Args:
        critic: The critic.
        item: The trajectory.
        fingerprint: A precomputed :func:`critic_fingerprint` (the runner takes it once, at
            the start of a run, so counters a critic keeps cannot change keys mid-run).
    """
    payload = {
        "v": CACHE_VERSION,
        "critic": fingerprint if fingerprint is not None else critic_fingerprint(critic),
        "risk": item.risk,
        "trajectory": item.content_hash,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VerdictCache:
    """Verdicts in a SQLite file, written as soon as each check finishes.

    Every write is committed at once, so a crash or Ctrl-C loses at most the checks that were
    in flight. The async methods run the (short) SQLite calls on a worker thread.

    Args:
        path: The SQLite file (created with its parent directory if missing).

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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS verdicts ("
                " key TEXT PRIMARY KEY, critic TEXT NOT NULL, verdict TEXT NOT NULL,"
                " created REAL NOT NULL)"
            )
            self._conn.commit()

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


@dataclass
class Outcome:
    """The result of one critic on one trajectory.

    Attributes:
        critic: The critic's name in the run.
        item_id: The trajectory's id.
        verdict: The verdict, or ``None`` when the critic failed.
        error: ``"<ErrorType>: <message>"`` when the critic failed.
        cached: The verdict came from the cache (no model call was made).
        seconds: Wall time of the check (0 for cached verdicts).
    """

    critic: str
    item_id: str
    verdict: Verdict | None = None
    error: str | None = None
    cached: bool = False
    seconds: float = 0.0


@dataclass
class RunStats:
    """Running totals of a run (what the progress bar shows).

    Attributes:
        total: Checks to do (critics x trajectories).
        done: Checks finished (verdict or error).
        cached: Checks answered from the cache.
        errors: Checks that failed.
        model_calls: Model calls spent in this run (cached verdicts excluded).
        input_tokens: Prompt tokens spent in this run.
        output_tokens: Completion tokens spent in this run.
        saved_calls: Model calls the cache saved.
        seconds: Wall time of the run.
    """

    total: int = 0
    done: int = 0
    cached: int = 0
    errors: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    saved_calls: int = 0
    seconds: float = 0.0

    def postfix(self) -> dict[str, Any]:
        """The short form shown next to the progress bar."""
        return {
            "calls": self.model_calls,
            "tok_in": self.input_tokens,
            "tok_out": self.output_tokens,
            "cached": self.cached,
            "errors": self.errors,
        }


@dataclass
class EvalRunner:
    """Runs several critics over the same trajectories, concurrently and resumably.

    ``results`` fills in as checks finish, so after a cancellation (or Ctrl-C) it holds every
    completed check and :attr:`interrupted` is True.

    Args:
        critics: Name in the report -> critic.
        concurrency: Checks in flight at once (one check may make several model calls:
            InferAct 3, self-consistency 5). Must be >= 1.
        cache: A :class:`VerdictCache`, a path to one, or ``None`` for no cache.
        progress: Show a tqdm progress bar with running calls and tokens on stderr.

    Raises:
        ValueError: No critic, or ``concurrency`` < 1.
    """

    critics: Mapping[str, Critic]
    concurrency: int = 8
    cache: VerdictCache | str | Path | None = None
    progress: bool = True
    results: dict[str, dict[str, Outcome]] = field(default_factory=dict, init=False)
    stats: RunStats = field(default_factory=RunStats, init=False)
    interrupted: bool = field(default=False, init=False)
    _fingerprints: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.critics:
            raise ValueError("give at least one critic")
        if isinstance(self.concurrency, bool) or int(self.concurrency) < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency!r}")
        for name, critic in self.critics.items():
            if not isinstance(critic, Critic):
                raise TypeError(f"critic {name!r} is not a Critic: {type(critic).__name__}")
        if isinstance(self.cache, str | Path):
            self.cache = VerdictCache(self.cache)
        self.results = {name: {} for name in self.critics}

    async def arun(self, items: Iterable[LabelledTrajectory]) -> dict[str, dict[str, Outcome]]:
        """Check every trajectory with every critic; return ``{critic: {item id: Outcome}}``.

        Raises:
            asyncio.CancelledError: The run was cancelled; :attr:`results` keeps what finished.
        """
        items = list(items)
        self.stats = RunStats(total=len(items) * len(self.critics))
        self.interrupted = False
        semaphore = asyncio.Semaphore(int(self.concurrency))
        self._fingerprints = {name: critic_fingerprint(c) for name, c in self.critics.items()}
        bar = self._bar()
        started = time.perf_counter()
        tasks = [
            asyncio.create_task(self._check(name, critic, item, semaphore, bar))
            for item in items
            for name, critic in self.critics.items()
        ]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            self.interrupted = True
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            self.stats.seconds = time.perf_counter() - started
            if bar is not None:
                bar.close()
        return self.results

    def _bar(self) -> Any:
        if not self.progress:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=self.stats.total, desc="eval", unit="check", file=sys.stderr, leave=True)

    async def _check(
        self,
        name: str,
        critic: Critic,
        item: LabelledTrajectory,
        semaphore: asyncio.Semaphore,
        bar: Any,
    ) -> None:
        cache = self.cache if isinstance(self.cache, VerdictCache) else None
        key = (
            cache_key(critic, item, fingerprint=self._fingerprints[name])
            if cache is not None
            else None
        )
        outcome: Outcome | None = None
        if cache is not None and key is not None:
            hit = await cache.aget(key)
            if hit is not None:
                outcome = Outcome(name, item.id, verdict=hit, cached=True)
                self.stats.cached += 1
                self.stats.saved_calls += hit.usage.model_calls
        if outcome is None:
            async with semaphore:
                started = time.perf_counter()
                try:
                    verdict = await critic.aevaluate(item.trajectory, risk=item.risk)
                except Exception as exc:  # noqa: BLE001 - recorded per trajectory, not fatal
                    outcome = Outcome(
                        name,
                        item.id,
                        error=f"{type(exc).__name__}: {exc}",
                        seconds=time.perf_counter() - started,
                    )
                    self.stats.errors += 1
                else:
                    outcome = Outcome(
                        name, item.id, verdict=verdict, seconds=time.perf_counter() - started
                    )
                    self.stats.model_calls += verdict.usage.model_calls
                    self.stats.input_tokens += verdict.usage.input_tokens
                    self.stats.output_tokens += verdict.usage.output_tokens
                    if cache is not None and key is not None:
                        await cache.aput(key, verdict)
        self.results[name][item.id] = outcome
        self.stats.done += 1
        if bar is not None:
            bar.set_postfix(self.stats.postfix(), refresh=False)
            bar.update(1)
