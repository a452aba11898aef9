"""Draw the reliability plot of ``docs/calibration.md`` from a deployment whose truth is known.

Runs the known-truth shop of ``tests/labels_support.py`` (the same as the end-to-end test
``tests/test_labels_calibrate.py``) for 500 threads on the raw threshold 0.5 with
``spot_check=0.2``, answers every review and spot check with the scripted reviewer, then runs
``inferact calibrate`` on the SQLite file (its report is printed) and draws the same fit, with
the curve the reviewers' truth follows beside it. Offline; about a minute.

Usage::

    python scripts/label_calibration_figure.py        # writes docs/img/calibration-labels.png
    python scripts/label_calibration_figure.py --out /tmp/plot.png --report /tmp/report.txt
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from labels_support import (  # noqa: E402
    MISS_COST,
    REVIEW_COST,
    critic_model,
    make_cases,
    run_case,
    shop_agent,
    true_p,
)
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.store.sqlite import SqliteStore  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from inferact_langgraph import with_inferact  # noqa: E402
from inferact_langgraph._label_fit import fit_deployment, plot_reliability  # noqa: E402
from inferact_langgraph.cli import app  # noqa: E402
from inferact_langgraph.labels import ReviewLabels  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs/img/calibration-labels.png"))
    parser.add_argument("--report", default=None, help="Also write the printed report here.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        db = str(Path(work) / "deploy.sqlite")
        saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
        store = SqliteStore(sqlite3.connect(db, check_same_thread=False, isolation_level=None))
        store.setup()
        guarded = with_inferact(shop_agent(), model=critic_model(), threshold=0.5,
                                spot_check=0.2, spot_check_seed=11, checkpointer=saver,
                                store=store, labels=ReviewLabels(deployment="shop"))  # fmt: skip
        cases = make_cases(500, seed=5)
        truth = {c.item: c.on_track for c in cases}
        for i, case in enumerate(cases):
            run_case(guarded, case, truth, f"t{i}")
        result = CliRunner().invoke(app, [
            "calibrate", "--db", db, "--miss-cost", str(MISS_COST), "--review-cost",
            str(REVIEW_COST), "--out", "calibration.json",
        ])  # fmt: skip
        print(result.output)
        if args.report:
            Path(args.report).write_text(result.output, encoding="utf-8")
        if result.exit_code != 0:
            raise SystemExit(result.exit_code)
        # The same fit, drawn with the truth's curve beside it.
        labels = ReviewLabels().list_labels(store, deployment="shop")
        fit = fit_deployment(labels, miss_cost=MISS_COST, review_cost=REVIEW_COST,
                             deployment="shop")  # fmt: skip
        plot_reliability(fit, args.out, reference=true_p,
                         reference_label="the reviewers' truth (hidden from the fit)")  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
