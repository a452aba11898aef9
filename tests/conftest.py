"""Shared fixtures. The network is blocked for every test (pytest-socket, see pyproject)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data" / "hotpotqa-react-trial1.jsonl"


@pytest.fixture(scope="session")
def hotpotqa_records() -> list[dict]:
    """The 90 real HotPotQA ReAct trajectories (shared/data), or a skip if absent."""
    if not SHARED_DATA.exists():
        pytest.skip(f"{SHARED_DATA} not present")
    return [json.loads(line) for line in SHARED_DATA.read_text().splitlines() if line.strip()]

# Worker scripts and the server app are run as programs by the tests, never imported by pytest
# (doctest collection would otherwise import them and run their top level).
collect_ignore_glob = ["workers/*.py", "server_app/*.py"]
