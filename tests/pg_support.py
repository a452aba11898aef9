"""Shared by the PostgreSQL scenarios: the server's DSN, the marks that skip them without it,
and the environment of their worker processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The test database (``.ci/setup-postgres.sh`` prints the line that sets it).
DSN = os.environ.get("INFERACT_TEST_PG_DSN")
ROOT = Path(__file__).resolve().parents[1]

#: A Postgres test module's ``pytestmark``: slow, skipped without a DSN, loopback only.
PG_MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not DSN,
        reason="INFERACT_TEST_PG_DSN is not set: run .ci/setup-postgres.sh and export the line "
        "it prints to run the Postgres scenarios",
    ),
    pytest.mark.allow_hosts(["127.0.0.1", "::1"]),
]


def worker_env() -> dict[str, str]:
    """The environment of a worker process: this one, the repository importable, the DSN."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "INFERACT_TEST_PG_DSN": DSN or ""}
