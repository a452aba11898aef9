"""Run critics over labelled trajectories: bounded concurrency, progress, a verdict cache.

The cache stores *verdicts*, not model responses: a response cache would hand
self-consistency one cached sample five times. It is the guard's verdict cache: a check is
keyed exactly as :class:`~inferact_langgraph.cache.CachedCritic` keys it (the critic's
configuration fingerprint, the model's identity, the risk level and the hash of what the
critic sees), so an interrupted run resumes where it stopped, a re-run that only changes the
metrics makes no model call, and one :class:`~inferact_langgraph.cache.VerdictCache` file
serves both the guard and the evaluation.
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
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferact_langgraph.cache import (
    CachedCritic,
    VerdictCache,
    critic_fingerprint,
    model_identity,
)
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


def cache_key(
    critic: Critic, item: LabelledTrajectory, *, keyer: CachedCritic | None = None
) -> str:
    """The cache key of one check: the key the guard's :class:`CachedCritic` gives it.

    Args:
        critic: The critic.
        item: The trajectory.
        keyer: A :class:`CachedCritic` around ``critic`` made once (the runner makes one per
            critic at the start of a run, so counters a critic keeps cannot change keys
            mid-run).
    """
    keyer = keyer if keyer is not None else CachedCritic(critic)
    return keyer.key(item.trajectory, item.risk)


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
    _keyers: dict[str, CachedCritic] = field(default_factory=dict, init=False, repr=False)

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
        self._keyers = {name: CachedCritic(c) for name, c in self.critics.items()}
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
        key = cache_key(critic, item, keyer=self._keyers[name]) if cache is not None else None
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
