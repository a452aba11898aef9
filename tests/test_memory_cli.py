"""``inferact memory list|clear``: remembered feedback per user and per task, from the CLI."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import says
from langgraph.store.sqlite import SqliteStore
from typer.testing import CliRunner

from inferact_langgraph.cli import app
from inferact_langgraph.guard.memory import FeedbackMemory

TRANSFER = "now transfer 500 dollars to Bob"
EMAIL = "e-mail the Q3 numbers to our CFO"


def _seed(path: Path) -> None:
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    memory = FeedbackMemory()
    for owner, task, words in (
        (("user", "alice"), TRANSFER, "pay Robert, not Bob"),
        (("user", "alice"), EMAIL, "the CFO is Dana"),
        (("user", "bob@example.com"), TRANSFER, "only 50 dollars"),
        (("shared",), TRANSFER, "ask first"),
        (("org", "acme"), EMAIL, "use the acme address"),
    ):
        memory.save(store, task, {"tool": "t", "feedback": words, "task": task}, owner=owner)
    conn.close()


def _list(db: Path, *args: str) -> list[dict]:
    result = CliRunner().invoke(app, ["memory", "list", "--db", str(db), "--json", *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.strip()]


def test_list_per_user_per_task_and_owner(tmp_path):
    db = tmp_path / "memory.sqlite"
    _seed(db)
    assert len(_list(db)) == 5
    assert [e["feedback"] for e in _list(db, "--user", "alice")] == [
        "pay Robert, not Bob",
        "the CFO is Dana",
    ]
    assert [e["feedback"] for e in _list(db, "--user", "bob@example.com")] == ["only 50 dollars"]
    assert [e["feedback"] for e in _list(db, "--shared")] == ["ask first"]
    assert [e["feedback"] for e in _list(db, "--owner", "org/acme")] == ["use the acme address"]
    on_transfer = _list(db, "--task", TRANSFER)
    assert sorted(e["feedback"] for e in on_transfer) == [
        "ask first",
        "only 50 dollars",
        "pay Robert, not Bob",
    ]
    text = CliRunner().invoke(app, ["memory", "list", "--db", str(db), "--user", "alice"])
    assert "user/alice" in text.output and "pay Robert, not Bob" in text.output


def test_clear_per_user_and_task(tmp_path):
    db = tmp_path / "memory.sqlite"
    _seed(db)
    runner = CliRunner()
    args = ["memory", "clear", "--db", str(db), "--user", "alice", "--task", TRANSFER, "--yes"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "deleted 1 entry" in result.output
    assert [e["feedback"] for e in _list(db, "--user", "alice")] == ["the CFO is Dana"]
    # asked, and declined: nothing deleted
    declined = runner.invoke(app, ["memory", "clear", "--db", str(db)], input="n\n")
    assert declined.exit_code == 1 and len(_list(db)) == 4
    everyone = runner.invoke(app, ["memory", "clear", "--db", str(db)], input="y\n")
    assert everyone.exit_code == 0 and "deleted 4 entries" in everyone.output
    assert _list(db) == []


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_bad_inputs_are_clear_errors_at_any_terminal_width(tmp_path, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    runner = CliRunner()
    missing = runner.invoke(app, ["memory", "list", "--db", str(tmp_path / "nope.sqlite")])
    assert missing.exit_code != 0 and says(missing.output, "no such SQLite file")
    assert says(missing.output, str(tmp_path / "nope.sqlite"))
    db = tmp_path / "memory.sqlite"
    _seed(db)
    both = runner.invoke(app, ["memory", "list", "--db", str(db), "--user", "a", "--shared"])
    assert both.exit_code != 0 and says(both.output, "at most one of --user, --shared and --owner")
    owner = runner.invoke(app, ["memory", "list", "--db", str(db), "--owner", "org//x"])
    assert owner.exit_code != 0 and says(owner.output, "labels joined by '/'")
    text = tmp_path / "text.sqlite"
    text.write_text("not a database")
    bad = runner.invoke(app, ["memory", "list", "--db", str(text)])
    assert bad.exit_code != 0 and says(bad.output, "not a SQLite database")


def test_the_demo_memory_is_listed_and_cleared(tmp_path):
    """What the demo remembers (runs naming no user) is in the shared namespace."""
    db = tmp_path / "demo.sqlite"
    result = CliRunner().invoke(app, ["demo", "webshop", "--auto-feedback", "--db", str(db)])
    assert result.exit_code == 0, result.output
    entries = _list(db, "--shared")
    assert entries and all(e["owner"] == ["shared"] for e in entries)
    assert _list(db, "--user", "anyone") == []
    cleared = CliRunner().invoke(app, ["memory", "clear", "--db", str(db), "--shared", "-y"])
    assert cleared.exit_code == 0 and _list(db) == []


@pytest.mark.skipif(
    not os.environ.get("INFERACT_TEST_PG_DSN"),
    reason="set INFERACT_TEST_PG_DSN (see .ci/setup-postgres.sh) to run against PostgreSQL",
)
def test_postgres_dsn(tmp_path):
    from langgraph.store.postgres import PostgresStore

    dsn = os.environ["INFERACT_TEST_PG_DSN"]
    owner = ("user", f"cli-{os.getpid()}")
    with PostgresStore.from_conn_string(dsn) as store:
        store.setup()
        FeedbackMemory().save(store, TRANSFER, {"tool": "t", "feedback": "pg"}, owner=owner)
    runner = CliRunner()
    listed = runner.invoke(app, ["memory", "list", "--db", dsn, "--json", "--user", owner[1]])
    assert listed.exit_code == 0 and json.loads(listed.output)["feedback"] == "pg"
    cleared = runner.invoke(app, ["memory", "clear", "--db", dsn, "--user", owner[1], "-y"])
    assert cleared.exit_code == 0 and "deleted 1 entry" in cleared.output


class _RefusingStore:
    """The store API of a server that refuses the connection (no socket is opened)."""

    def search_items(self, *args, **kwargs):
        import httpx

        raise httpx.ConnectError("[Errno 111] Connection refused")

    delete_item = search_items


@pytest.mark.parametrize("command", [["list"], ["clear", "--yes"]])
def test_an_unreachable_server_is_one_error_line_and_exit_1(command, monkeypatch):
    import langgraph_sdk

    client = type("Client", (), {"store": _RefusingStore()})()
    monkeypatch.setattr(langgraph_sdk, "get_sync_client", lambda url: client)
    result = CliRunner().invoke(app, ["memory", *command, "--db", "http://127.0.0.1:1"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        "error: --db http://127.0.0.1:1: cannot use its store ([Errno 111] Connection refused)"
    ]
