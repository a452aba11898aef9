"""Review labels on PostgreSQL: kept in its store, read by ``inferact calibrate --db <DSN>``.

The deployment of :mod:`labels_support` runs with ``PostgresSaver`` and ``PostgresStore``;
every review and spot check is answered by the scripted reviewer; ``inferact calibrate`` reads
the labels through the DSN and the rule it recovers is deployed on fresh threads. The stated
margin: its false-alarm and miss rates are within 0.07 of the truth's best rule on the same
300 fresh threads (fewer labels than the SQLite scenario, so a little wider). Deleting the
threads from the checkpointer loses no label. Needs ``INFERACT_TEST_PG_DSN``.
"""

from __future__ import annotations

import pytest
from labels_support import (
    BEST_CUTOFF,
    BEST_THRESHOLD,
    best_rule,
    calibrate,
    deploy_and_measure,
    guarded_shop,
    make_cases,
    rates,
    run_case,
)
from pg_support import DSN, PG_MARKS

from inferact_langgraph.labels import ReviewLabels

pytestmark = PG_MARKS

pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")

MARGIN = 0.07
TRAIN = 400


@pytest.fixture(scope="module")
def deployment():
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    # Fixed names, so the seeded spot-check draws (a hash of the thread and call ids) and hence
    # the labels are the same on every run; what an earlier run left is removed first.
    name = "shop-pg-labels"
    threads = [f"{name}-{i}" for i in range(TRAIN)]
    with (
        PostgresSaver.from_conn_string(DSN) as saver,
        PostgresStore.from_conn_string(DSN) as store,
    ):
        saver.setup()
        store.setup()
        ReviewLabels().clear(store, deployment=name)
        for thread in threads:
            saver.delete_thread(thread)
        guarded = guarded_shop(
            spot_check=0.25,
            spot_check_seed=21,
            checkpointer=saver,
            store=store,
            labels=ReviewLabels(deployment=name),
        )
        cases = make_cases(TRAIN, seed=8)
        truth = {c.item: c.on_track for c in cases}
        runs = [run_case(guarded, c, truth, t) for c, t in zip(cases, threads, strict=True)]
        yield {"name": name, "store": store, "saver": saver, "runs": runs, "threads": threads}
        ReviewLabels().clear(store, deployment=name)
        for thread in threads:
            saver.delete_thread(thread)


def test_calibrate_reads_the_labels_from_postgres_and_recovers_the_threshold(deployment, tmp_path):
    kept = ReviewLabels().list_labels(deployment["store"], deployment=deployment["name"])
    assert len(kept) == sum(r.reviewed for r in deployment["runs"])
    assert sum(x["spot_check"] for x in kept) == sum(r.spot_check for r in deployment["runs"]) > 20
    fit = calibrate(DSN, tmp_path / "calibration.json", "--deployment", deployment["name"])
    assert fit["enough"] and fit["labels"] == len(kept)
    assert fit["threshold"] == pytest.approx(BEST_THRESHOLD)
    assert abs(fit["raw_cutoff"] - BEST_CUTOFF) < 0.07
    flagged = deploy_and_measure(tmp_path / "calibration.json", fit["threshold"])
    fresh = make_cases(300, seed=99)
    measured, best = rates(fresh, lambda c: c in flagged), rates(fresh, best_rule)
    assert abs(measured[0] - best[0]) <= MARGIN, (measured, best)
    assert abs(measured[1] - best[1]) <= MARGIN, (measured, best)


def test_deleting_the_threads_loses_no_label(deployment):
    store, saver = deployment["store"], deployment["saver"]
    before = ReviewLabels().list_labels(store, deployment=deployment["name"])
    reviewed = sorted({x["thread_id"] for x in before})
    for thread in reviewed:
        saver.delete_thread(thread)
    assert all(saver.get_tuple({"configurable": {"thread_id": t}}) is None for t in reviewed)
    after = ReviewLabels().list_labels(store, deployment=deployment["name"])
    assert [(x["key"], x["decision"], x["raw_score"]) for x in after] == [
        (x["key"], x["decision"], x["raw_score"]) for x in before
    ]
