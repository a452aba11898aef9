"""End to end: reviewers' decisions become labels, and ``inferact calibrate`` recovers the truth.

A guarded shop agent runs many threads with a scripted critic whose raw scores are known and a
scripted reviewer who follows a known truth (:mod:`labels_support`): P(on track) is a logistic
curve of the raw score centred at 0.62, so the deployed raw threshold 0.5 is wrong for it.
Every review and spot check is answered; then ``inferact calibrate`` reads the labels from the
SQLite file, and the calibration and threshold it writes are deployed on fresh threads.

The stated margin: on 300 fresh threads, the false-alarm rate (flagged calls that were on
track) and the miss rate (passed calls that were off track) of the recovered rule are within
0.06 of those of the best rule the truth gives for the same costs, on the same threads.
"""

from __future__ import annotations

import sqlite3

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
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.sqlite import SqliteStore

from inferact_langgraph.labels import ReviewLabels

MARGIN = 0.06
TRAIN, FRESH = 500, 300
SPOT_RATE = 0.2


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """500 threads on the raw threshold 0.5 with spot_check=0.2, all reviews answered."""
    work = tmp_path_factory.mktemp("labels")
    db = str(work / "deploy.sqlite")
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    store = SqliteStore(sqlite3.connect(db, check_same_thread=False, isolation_level=None))
    store.setup()
    guarded = guarded_shop(
        spot_check=SPOT_RATE,
        spot_check_seed=11,
        checkpointer=saver,
        store=store,
        labels=ReviewLabels(deployment="shop"),
    )
    cases = make_cases(TRAIN, seed=5)
    truth = {c.item: c.on_track for c in cases}
    runs = [run_case(guarded, c, truth, f"t{i}") for i, c in enumerate(cases)]
    return {"db": db, "cases": cases, "runs": runs, "store": store, "saver": saver}


def test_every_review_and_spot_check_is_one_label_with_its_check(collected):
    runs, cases = collected["runs"], collected["cases"]
    labels = ReviewLabels().list_labels(collected["store"], deployment="shop")
    assert len(labels) == sum(r.reviewed for r in runs)
    flagged = [c for c in cases if c.score < 0.5]
    spot = [r for r in runs if r.spot_check]
    assert len([x for x in labels if not x["spot_check"]]) == len(flagged)
    assert len([x for x in labels if x["spot_check"]]) == len(spot)
    # About a fifth of the passed calls were spot-checked, and none of the flagged ones.
    passed = len(cases) - len(flagged)
    assert 0.12 < len(spot) / passed < 0.28
    by_item = {c.item: c for c in cases}
    for label in labels:
        case = by_item[label["args"]["item"]]
        assert label["raw_score"] == pytest.approx(case.score)
        assert label["on_track"] is case.on_track
        assert label["decision"] == ("approve" if case.on_track else "reject")
        assert label["inclusion"] == (SPOT_RATE if label["spot_check"] else 1.0)
        assert label["flagged"] is (case.score < 0.5)
        assert label["critic"] == "inferact" and label["preset"] == "generic"
        assert label["threshold"] == 0.5 and label["tool"] == "buy_now"
        assert label["task"] == f"buy item {case.item}"
        assert label["action_chain"][-1]["action"].startswith("buy_now(")
        assert label["decided_by"] == "human" and label["time"] > 0


def test_calibrate_recovers_a_threshold_as_good_as_the_truths(collected, tmp_path):
    fit = calibrate(collected["db"], tmp_path / "calibration.json")
    assert fit["enough"] and fit["threshold"] == pytest.approx(BEST_THRESHOLD)
    # The recovered raw cutoff is near the truth's (0.736), far from the deployed 0.5.
    assert abs(fit["raw_cutoff"] - BEST_CUTOFF) < 0.06
    flagged = deploy_and_measure(tmp_path / "calibration.json", fit["threshold"], FRESH)
    fresh = make_cases(FRESH, seed=99)
    measured = rates(fresh, lambda c: c in flagged)
    best = rates(fresh, best_rule)
    assert abs(measured[0] - best[0]) <= MARGIN, (measured, best)
    assert abs(measured[1] - best[1]) <= MARGIN, (measured, best)
    # The estimated miss rate's interval covers what the fresh threads show.
    miss = fit["proposed"]["miss_rate"]
    assert miss["low"] <= measured[1] <= miss["high"], (miss, measured)
    # The old raw threshold missed more: its passed calls hold off-track ones above 0.5.
    old = rates(fresh, lambda c: c.score < 0.5)
    assert old[1] > measured[1] + 0.05


def test_calibrate_prints_the_figures_and_the_line_to_paste(collected, tmp_path):
    from typer.testing import CliRunner

    from inferact_langgraph.cli import app

    out = tmp_path / "shop.json"
    args = ["calibrate", "--db", collected["db"], "--miss-cost", "5", "--review-cost", "1",
            "--out", str(out), "--plot", str(tmp_path / "reliability.png")]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = result.output
    for expected in ("now (the threshold the labels were collected with):", "precision",
                     "recall", "false alarms", "miss rate", "(95% CI ",
                     "flag when P(on track) < 0.8, i.e. raw score < 0.7",
                     "Ready to paste", f'calibration="{out}", threshold=0.8, spot_check=0.2)',
                     f"wrote {out}"):  # fmt: skip
        assert expected in text, (expected, text)
    assert out.is_file() and (tmp_path / "reliability.png").stat().st_size > 10_000
