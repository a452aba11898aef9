"""``inferact eval --base-url ...`` on real trajectories, replayed from a cassette (no network).

``cassettes/test_cassettes_eval/eval_hotpotqa.yaml`` holds the HTTP exchanges of one run of the
CLI against an OpenAI-compatible endpoint, recorded by ``scripts/record_cassettes.py`` on the
trajectories in ``trajectories.jsonl`` next to it (three real HotPotQA ReAct trajectories from
``shared/data``: one on track, two off track). The cassette's header names its server: the
committed one is the local stub's canned answer (``--eval-source stub``), because
Gemma 3 270M on this machine's llama.cpp build took ~3 minutes per capped answer and the
eval CLI has no ``--max-tokens``; ``--eval-source model`` re-records it from a real model with
no test change. The replay runs the same command through typer's CliRunner
with ``record_mode="none"``.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from vcr_support import CASSETTES, load_cassette, make_vcr, recorded_base_url

from inferact_langgraph.cli import app

CASSETTE = "test_cassettes_eval/eval_hotpotqa.yaml"
DATA = CASSETTES / "test_cassettes_eval" / "trajectories.jsonl"
API_KEY = "sk-local-not-a-secret"

# ChatOpenAI probes a throwaway socket for TCP keep-alive options when it builds its client;
# pytest-socket blocks the probe (langchain-openai expects that and carries on), and warns.
pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning")


def eval_args(out) -> list[str]:
    """The arguments the cassette was recorded with (see ``scripts/record_cassettes.py``)."""
    meta = load_cassette(CASSETTE)["metadata"]
    args = ["eval", "--data", str(DATA), "--model", f"openai:{meta['model']}",
            "--base-url", recorded_base_url(CASSETTE), "--api-key", API_KEY,
            "--preset", "hotpotqa", "--concurrency", "1", "--max-retries", "0", "--no-cache",
            "--no-progress", "--out", str(out)]
    for spec in meta["critics"].split(","):
        args += ["--critic", spec]
    return args


def test_eval_cli_replayed_from_a_real_endpoint(tmp_path):
    meta = load_cassette(CASSETTE)["metadata"]
    critics = meta["critics"].split(",")
    records = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    assert 2 <= len(records) <= 3
    with make_vcr("none").use_cassette(CASSETTE) as cassette:
        result = CliRunner().invoke(app, eval_args(tmp_path / "report"))
        assert result.exit_code == 0, result.output
        assert cassette.all_played, "every recorded exchange was used"
        played = cassette.play_count
    report_text = (tmp_path / "report" / "report.json").read_text()
    assert API_KEY not in report_text, "the key is never written to the report"
    report = json.loads(report_text)
    assert report["meta"]["base_url"] == recorded_base_url(CASSETTE)
    assert [row["id"] for row in report["trajectories"]] == [r["id"] for r in records]
    assert [row["label_name"] for row in report["trajectories"]] == [r["label"] for r in records]
    calls = 0
    for name in critics:
        assert name in report["critics"]
        for row in report["trajectories"]:
            entry = row["critics"][name]
            # A real (poor) model: each check is a score in [0, 1] or a recorded critic error.
            if "error" in entry:
                assert entry["error"].startswith(("CriticParseError", "CriticError"))
            else:
                assert 0.0 <= entry["score"] <= 1.0 and not entry["cached"]
                calls += entry["usage"]["model_calls"]
    assert calls <= played
    assert "report:" in result.output


def test_eval_replay_is_deterministic(tmp_path):
    """Two replays of the same cassette give the same per-trajectory scores."""
    scores = []
    for run in ("a", "b"):
        with make_vcr("none").use_cassette(CASSETTE):
            result = CliRunner().invoke(app, eval_args(tmp_path / run))
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / run / "report.json").read_text())
        scores.append([{k: v.get("score", v.get("error")) for k, v in row["critics"].items()}
                       for row in report["trajectories"]])
    assert scores[0] == scores[1]
