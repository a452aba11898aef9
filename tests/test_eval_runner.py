"""The runner: concurrency bound, per-trajectory errors, the verdict cache, cancellation."""

from __future__ import annotations

import asyncio
import time

import pytest
from _eval_fakes import AskCritic, TableCritic, records, scripted_model

from inferact_langgraph.eval import build_report, load_dataset
from inferact_langgraph.eval.runner import (
    EvalRunner,
    VerdictCache,
    cache_key,
    critic_fingerprint,
    model_identity,
)


def _scores(n):
    return {f"q{i}": (0.2 if i % 2 == 0 else 0.8) for i in range(n)}


async def test_concurrency_is_bounded_and_used():
    data = load_dataset(records(24))
    critic = TableCritic(scores=_scores(24), delay=0.02)
    runner = EvalRunner({"t": critic}, concurrency=4, progress=False)
    started = time.perf_counter()
    await runner.arun(data.items)
    elapsed = time.perf_counter() - started
    assert critic.max_in_flight == 4
    assert elapsed < 24 * 0.02 * 0.6  # far from sequential (0.48 s)
    assert runner.stats.done == runner.stats.total == 24


async def test_errors_are_recorded_per_trajectory_not_fatal(tmp_path):
    data = load_dataset(records(6))
    critic = TableCritic(scores=_scores(6), fail={"q1", "q4"})
    cache = VerdictCache(tmp_path / "c.sqlite")
    runner = EvalRunner({"t": critic}, cache=cache, progress=False)
    results = await runner.arun(data.items)
    errors = {k: o.error for k, o in results["t"].items() if o.error}
    assert set(errors) == {"r1", "r4"}
    assert errors["r1"].startswith("CriticParseError: no probability found")
    assert runner.stats.errors == 2 and len(cache) == 4  # failures are not cached
    report = build_report(data, results)
    assert (report.critics["t"].scored, report.critics["t"].errors) == (4, 2)
    assert report.rows[1]["critics"]["t"]["error"].startswith("CriticParseError")
    # a re-run (a fresh critic, as in a new process) retries the failures only
    again = TableCritic(scores=_scores(6), fail={"q1", "q4"})
    again.fail = set()
    runner2 = EvalRunner({"t": again}, cache=cache, progress=False)
    await runner2.arun(data.items)
    assert again.calls == 2 and runner2.stats.cached == 4


async def test_second_run_makes_zero_model_calls(tmp_path):
    data = load_dataset(records(10))
    path = tmp_path / "cache.sqlite"
    model = scripted_model()
    critics = {
        "inferact-like": AskCritic(model=model, calls=3),
        "sc-like": AskCritic(model=model, calls=5),
    }
    first = EvalRunner(critics, cache=path, progress=False)
    r1 = await first.arun(data.items)
    assert model.calls == 10 * 3 + 10 * 5 == first.stats.model_calls
    # fresh objects, as in a new process
    model2 = scripted_model()
    critics2 = {
        "inferact-like": AskCritic(model=model2, calls=3),
        "sc-like": AskCritic(model=model2, calls=5),
    }
    second = EvalRunner(critics2, cache=path, progress=False)
    r2 = await second.arun(data.items)
    assert model2.calls == 0
    assert second.stats.model_calls == 0 and second.stats.cached == 20
    assert second.stats.saved_calls == 80
    for name in critics:
        assert {k: o.verdict.score for k, o in r1[name].items()} == {
            k: o.verdict.score for k, o in r2[name].items()
        }
        assert all(o.cached for o in r2[name].values())


async def test_cache_key_tracks_config_model_risk_and_content_not_labels(tmp_path):
    item = load_dataset(records(1)).items[0]
    base = AskCritic(model=scripted_model(), calls=3)
    key = cache_key(base, item)
    assert key == cache_key(AskCritic(model=scripted_model(), calls=3), item)
    assert key == cache_key(AskCritic(model=scripted_model(), calls=3, timeout=9), item)
    assert key != cache_key(AskCritic(model=scripted_model(), calls=5), item)
    assert key != cache_key(AskCritic(model=scripted_model(), calls=3, preset="hotpotqa"), item)
    assert key != cache_key(AskCritic(model=scripted_model(), calls=3, risk_aware=True), item)
    relabelled = load_dataset([{**records(1)[0], "label": "correct"}]).items[0]
    assert key == cache_key(base, relabelled)
    risky = load_dataset([{**records(1)[0], "risk": "high"}]).items[0]
    assert key != cache_key(base, risky)


def test_model_identity_separates_models_and_hides_keys():
    from langchain_openai import ChatOpenAI

    a = ChatOpenAI(model="gpt-4o", api_key="sk-secret-1", base_url="http://a/v1")
    b = ChatOpenAI(model="gpt-4o", api_key="sk-secret-2", base_url="http://a/v1")
    c = ChatOpenAI(model="gpt-4o-mini", api_key="sk-secret-1", base_url="http://a/v1")
    d = ChatOpenAI(model="gpt-4o", api_key="sk-secret-1", base_url="http://b/v1")
    assert model_identity(a) == model_identity(b)
    assert len({str(model_identity(m)) for m in (a, c, d)}) == 3
    assert "sk-secret" not in str(critic_fingerprint(AskCritic(model=a)))
    bound = model_identity(a.bind(temperature=0.7))
    assert bound["kwargs"] == {"temperature": 0.7}


async def test_cancellation_keeps_finished_checks_and_builds_a_partial_report(tmp_path):
    data = load_dataset(records(40))
    critic = TableCritic(scores=_scores(40), delay=0.01)
    cache = VerdictCache(tmp_path / "c.sqlite")
    runner = EvalRunner({"t": critic}, concurrency=2, cache=cache, progress=False)
    task = asyncio.create_task(runner.arun(data.items))
    while runner.stats.done < 10:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert runner.interrupted
    done = len(runner.results["t"])
    assert 10 <= done < 40 and len(cache) == done
    report = build_report(data, runner.results, interrupted=True, dev_split=0.5)
    assert report.interrupted and report.to_dict()["interrupted"] is True
    assert report.critics["t"].scored == done
    assert report.critics["t"].metrics["paper"].n == done
    # resume (a fresh critic, as in a new process): only the missing checks are paid for
    fresh = TableCritic(scores=_scores(40), delay=0.01)
    resumed = EvalRunner({"t": fresh}, cache=cache, progress=False)
    await resumed.arun(data.items)
    assert fresh.calls == 40 - done and resumed.stats.cached == done


_CHILD = """
import asyncio
import sys
import threading
sys.path.insert(0, {tests!r})
from _eval_fakes import paper_judge
from inferact_langgraph.cli import app
from inferact_langgraph import _factory as factory
from inferact_langgraph.testing import ScriptedChatModel

ANSWERED = []


class StallAfterTen(ScriptedChatModel):
    # Answers ten checks, then never answers again: the run cannot finish before the SIGINT,
    # however slow or fast the machine is, so the test does not depend on timing.
    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        if len(ANSWERED) >= 10:
            await asyncio.Event().wait()
        ANSWERED.append(1)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if len(ANSWERED) >= 10:
            threading.Event().wait()
        ANSWERED.append(1)
        return super()._generate(messages, stop, run_manager, **kwargs)


model = StallAfterTen(responder=paper_judge)
factory.build_model = lambda *a, **k: model
app(["eval", "--data", {data!r}, "--critic", "standard", "--model", "scripted",
     "--concurrency", "2", "--cache", {cache!r}, "--no-progress", "--out", {out!r}])
"""


def test_ctrl_c_leaves_a_usable_partial_report_and_the_rerun_resumes(tmp_path):
    """A real SIGINT to a real ``inferact eval`` process (so Ctrl-C is what is tested)."""
    import json
    import signal
    import sqlite3
    import subprocess
    import sys
    from pathlib import Path

    from _eval_fakes import write_jsonl

    data = write_jsonl(tmp_path / "t.jsonl", records(200))
    cache, out = tmp_path / "c.sqlite", tmp_path / "report"
    script = _CHILD.format(
        tests=str(Path(__file__).parent), data=str(data), cache=str(cache), out=str(out)
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # The child stalls after ten answers, so waiting for them cannot race the run's end.
        deadline = time.monotonic() + 180
        rows = 0
        while rows < 10 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.1)
            if cache.exists():
                try:
                    with sqlite3.connect(cache) as conn:
                        rows = conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
                except sqlite3.OperationalError:
                    rows = 0
        assert rows >= 10, child.communicate(timeout=30)
        child.send_signal(signal.SIGINT)
        _stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, stderr
    assert "interrupted" in stderr
    saved = json.loads((out / "report.json").read_text())
    assert saved["interrupted"] is True
    scored = saved["critics"]["standard"]["scored"]
    assert scored == 10  # exactly the checks the model answered
    assert saved["critics"]["standard"]["metrics"]["paper"]["n"] == scored
    with sqlite3.connect(cache) as conn:
        cached = conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    assert cached >= scored  # every finished check is in the cache for the resume


def test_runner_validates_its_arguments():
    with pytest.raises(ValueError, match="at least one critic"):
        EvalRunner({})
    with pytest.raises(ValueError, match="concurrency"):
        EvalRunner({"t": TableCritic(scores={})}, concurrency=0)
    with pytest.raises(TypeError, match="not a Critic"):
        EvalRunner({"t": object()})  # type: ignore[dict-item]


async def test_progress_bar_shows_running_cost(capsys):
    data = load_dataset(records(4))
    runner = EvalRunner({"a": AskCritic(model=scripted_model(), calls=3)}, progress=True)
    await runner.arun(data.items)
    err = capsys.readouterr().err
    assert "calls=12" in err and "tok_in=" in err


def test_the_guard_and_the_eval_runner_share_one_verdict_cache(tmp_path):
    from inferact_langgraph.cache import CachedCritic, VerdictCache

    path = tmp_path / "verdicts.sqlite"
    data = load_dataset(records(2))
    critic = TableCritic(scores={"q0": 0.2, "q1": 0.8})
    guard_side = CachedCritic(critic, cache=VerdictCache(path))
    guard_side.evaluate(data.items[0].trajectory)  # the guard checked this one already
    assert critic.calls == 1
    runner = EvalRunner({"t": critic}, cache=path, progress=False)
    results = asyncio.run(runner.arun(data.items))
    assert runner.stats.cached == 1 and critic.calls == 2  # only the new one was checked
    assert results["t"]["r0"].cached and results["t"]["r0"].verdict.score == 0.2
    # ... and what the evaluation stored answers the guard without a check.
    again = guard_side.evaluate(data.items[1].trajectory)
    assert critic.calls == 2 and again.score == 0.8 and again.usage.model_calls == 0
