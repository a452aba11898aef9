"""Review labels through the LangGraph server: kept in its store, read with ``--db <URL>``.

``langgraph dev`` serves the known-truth shop (``tests/labels_app/app.py``: raw threshold 0.5,
35% of the passed calls spot-checked, seeded by thread id). Threads are driven with
``langgraph_sdk``: each request, then each review or spot check answered by the scripted
reviewer. ``inferact calibrate --db <server URL>`` reads the labels from the server's store;
the rule it recovers is deployed on fresh threads (in process) and its false-alarm and miss
rates are within 0.08 of the truth's best rule on the same 300 fresh threads (300 served
threads: fewer labels than the SQLite scenario, so a wider margin). The inbox shows the running
figures; deleting threads on the server loses no label; ``inferact labels clear`` deletes them.
Loopback only.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from labels_support import (
    BEST_THRESHOLD,
    best_rule,
    calibrate,
    decide,
    deploy_and_measure,
    make_cases,
    rates,
)
from server_support import ROOT, SERVER_MARKS, langgraph_dev
from typer.testing import CliRunner

from inferact_langgraph.cli import app

pytestmark = SERVER_MARKS
sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is not installed")

MARGIN = 0.08
TRAIN = 300
DEPLOYMENT = "shop-server"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("labels_server")
    config = {
        "graphs": {"shop": str(ROOT / "tests/labels_app/app.py:graph")},
        "http": {"app": "inferact_langgraph.inbox:app"},
    }
    with langgraph_dev(work, config) as url:
        yield url


async def _one_thread(client, case, truth) -> tuple[str, bool, bool]:
    # A thread id fixed by the case: the seeded spot-check draws are the same on every run.
    thread = str(uuid.uuid5(uuid.NAMESPACE_URL, f"inferact-labels/{case.item}"))
    await client.threads.create(thread_id=thread)
    message = {"role": "user", "content": f"buy item {case.item}"}
    await client.runs.wait(thread, "shop", input={"messages": [message]})
    state = await client.threads.get_state(thread)
    reviewed = spot = False
    while state["interrupts"]:
        [pending] = state["interrupts"]
        actions = pending["value"]["action_requests"]
        reviewed = True
        spot = spot or any(a["inferact"].get("spot_check") for a in actions)
        decisions = [decide(a, truth) for a in actions]
        await client.runs.wait(thread, "shop", command={"resume": {"decisions": decisions}})
        state = await client.threads.get_state(thread)
    return thread, reviewed, spot


@pytest.fixture(scope="module")
def served(server):
    cases = make_cases(TRAIN, seed=13)
    truth = {c.item: c.on_track for c in cases}

    async def run_all():
        client = sdk.get_client(url=server)
        gate = asyncio.Semaphore(6)

        async def one(case):
            async with gate:
                return await _one_thread(client, case, truth)

        return await asyncio.gather(*(one(c) for c in cases))

    runs = asyncio.run(run_all())
    return {"url": server, "runs": runs, "cases": cases}


def _labels(url: str) -> list[dict]:
    from inferact_langgraph._memory_cli import open_store
    from inferact_langgraph.labels import ReviewLabels

    with open_store(url) as store:
        return ReviewLabels().list_labels(store, deployment=DEPLOYMENT)


def test_calibrate_reads_the_servers_store_and_recovers_the_threshold(served, tmp_path):
    labels = _labels(served["url"])
    assert len(labels) == sum(r for _, r, _ in served["runs"])
    assert sum(x["spot_check"] for x in labels) == sum(s for _, _, s in served["runs"]) > 15
    assert {x["deployment"] for x in labels} == {DEPLOYMENT}
    fit = calibrate(served["url"], tmp_path / "calibration.json", "--deployment", DEPLOYMENT)
    assert fit["labels"] == len(labels) and fit["threshold"] == pytest.approx(BEST_THRESHOLD)
    flagged = deploy_and_measure(tmp_path / "calibration.json", fit["threshold"])
    fresh = make_cases(300, seed=99)
    measured, best = rates(fresh, lambda c: c in flagged), rates(fresh, best_rule)
    assert abs(measured[0] - best[0]) <= MARGIN, (measured, best)
    assert abs(measured[1] - best[1]) <= MARGIN, (measured, best)


def test_deleting_threads_on_the_server_loses_no_label(served):
    before = _labels(served["url"])
    reviewed = [t for t, r, _ in served["runs"] if r][:20]

    async def delete():
        client = sdk.get_client(url=served["url"])
        for thread in reviewed:
            await client.threads.delete(thread)
        left = await client.threads.search(limit=1000)
        return {t["thread_id"] for t in left}

    assert not set(reviewed) & asyncio.run(delete())
    after = _labels(served["url"])
    assert [(x["key"], x["decision"]) for x in after] == [(x["key"], x["decision"]) for x in before]
    assert set(reviewed) <= {x["thread_id"] for x in after}


def test_the_inbox_shows_the_running_figures(served):
    import httpx

    labels = _labels(served["url"])
    answer = httpx.get(f"{served['url']}/inferact/api/figures", timeout=30)
    assert answer.status_code == 200, answer.text
    (figures,) = answer.json()["deployments"]
    flagged = [x for x in labels if not x["spot_check"]]
    spots = [x for x in labels if x["spot_check"]]
    assert figures["deployment"] == DEPLOYMENT
    assert figures["reviews_this_week"] == figures["labels"] == len(labels)
    assert figures["flagged_reviewed"] == len(flagged)
    assert figures["false_alarms"] == sum(x["decision"] == "approve" for x in flagged) > 0
    assert figures["spot_checks"] == len(spots)
    assert figures["spot_check_misses"] == sum(x["decision"] == "reject" for x in spots) > 0
    assert figures["threshold"] == 0.5
    assert figures["command"].startswith(
        f"inferact calibrate --db {served['url']} --deployment {DEPLOYMENT}"
    )
    page = httpx.get(f"{served['url']}/inferact/inbox", timeout=30).text
    assert 'id="figures"' in page and "static/figures.js" in page
    script = httpx.get(f"{served['url']}/inferact/static/figures.js", timeout=30)
    assert script.status_code == 200 and "api/figures" in script.text


def test_labels_clear_deletes_the_deployments_labels_on_the_server(served):
    url = served["url"]
    count = len(_labels(url))
    result = CliRunner().invoke(
        app, ["labels", "clear", "--db", url, "--deployment", DEPLOYMENT, "--yes"]
    )
    assert result.exit_code == 0 and f"deleted {count} labels" in result.output
    assert _labels(url) == []
