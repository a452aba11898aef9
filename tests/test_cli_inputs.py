"""Bad inputs to the CLI end in one clear line and a non-zero exit, never a traceback; a bad
record is skipped like any other."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from _eval_fakes import paper_judge, records, write_jsonl
from typer.testing import CliRunner

from inferact_langgraph import _factory as factory
from inferact_langgraph.cli import app
from inferact_langgraph.eval.datasets import MAX_JSON_DEPTH, load_dataset
from inferact_langgraph.eval.report import EvalReport
from inferact_langgraph.testing import ScriptedChatModel

runner = CliRunner()
UNWRITABLE = Path("/proc/inferact-nope")  # a folder nobody (not even root) can create


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    model = ScriptedChatModel(responder=paper_judge)
    monkeypatch.setattr(factory, "build_model", lambda name, **kw: model)
    return model


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "data.jsonl", records(6))


def _eval(data: Path, tmp_path: Path, *extra: str, out: Path | None = None):
    args = ["eval", "--data", str(data), "--critic", "standard", "--model", "openai:m"]
    args += ["--no-progress", "--out", str(out or tmp_path / "out"), *extra]
    if "--cache" not in extra:
        args.append("--no-cache")
    return runner.invoke(app, args)


def _one_line_error(result, *fragments: str) -> None:
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    [line] = [x for x in result.output.splitlines() if x.strip()]
    assert line.startswith("error: ")
    for fragment in fragments:
        assert fragment in line, line


def _with_lines(path: Path, good: Path, *bad: bytes) -> Path:
    lines = good.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"".join(bad) + b"".join(lines[1:]))
    return path


# ---------------------------------------------------------------------------- --data
def test_binary_data_file(tmp_path: Path) -> None:
    binary = tmp_path / "image.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    _one_line_error(_eval(binary, tmp_path), "binary file, not JSONL")


def test_a_non_utf8_line_is_skipped_like_any_bad_record(data: Path, tmp_path: Path) -> None:
    mixed = _with_lines(tmp_path / "mixed.jsonl", data, b'{"task": "caf\xe9 \xff"}\n')
    result = _eval(mixed, tmp_path)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["meta"]["bad_records"] == [
        {"line": 2, "message": "not UTF-8 text (byte 14 of the line)"}
    ]
    assert len(report["trajectories"]) == 6  # nothing else lost


def test_json_nested_100k_deep_is_a_bad_record(data: Path, tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    nested = _with_lines(
        tmp_path / "deep.jsonl", data, deep, b'{"a": ' * 300 + b"1" + b"}" * 300 + b"\n"
    )
    result = _eval(nested, tmp_path)
    assert result.exit_code == 0, result.output
    dataset = load_dataset(nested)
    assert [(e.line, e.message) for e in dataset.errors] == [
        (2, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"),
        (3, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"),
    ]
    assert len(dataset) == 6


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    record = records(2)[0] | {"task": "[" * 1000 + ' "quoted {' * 10}
    path = write_jsonl(tmp_path / "ok.jsonl", [record])
    assert load_dataset(path).items[0].trajectory.task.startswith("[[[")


def test_bad_lines_stop_the_run_with_on_bad_record_fail(data: Path, tmp_path: Path) -> None:
    mixed = _with_lines(tmp_path / "mixed.jsonl", data, b"\xff\xfe\n")
    _one_line_error(_eval(mixed, tmp_path, "--on-bad-record", "fail"), "line 2", "not UTF-8")


# ---------------------------------------------------------------------------- --cache / --out
def test_cache_that_is_not_sqlite(data: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.sqlite"
    notes.write_text("my notes, not a database\n" * 50)
    _one_line_error(_eval(data, tmp_path, "--cache", str(notes)), "--cache", "not a SQLite")
    assert notes.read_text().startswith("my notes")  # the user's file is untouched


def test_cache_and_out_under_a_missing_directory_are_created(data: Path, tmp_path: Path) -> None:
    cache, out = tmp_path / "new" / "c.sqlite", tmp_path / "new2" / "deeper" / "out"
    result = _eval(data, tmp_path, "--cache", str(cache), out=out)
    assert result.exit_code == 0, result.output
    assert (out / "report.json").is_file()
    assert sqlite3.connect(cache).execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 6


def test_cache_and_out_where_no_directory_can_be_made(data: Path, tmp_path: Path) -> None:
    cache = UNWRITABLE / "c.sqlite"
    _one_line_error(_eval(data, tmp_path, "--cache", str(cache)), "--cache", "cannot create")
    out = UNWRITABLE / "out"
    _one_line_error(_eval(data, tmp_path, out=out), "--out", "cannot create")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    _one_line_error(_eval(data, tmp_path, "--cache", str(blocker / "c.sqlite")), "not a directory")


# ---------------------------------------------------------------------------- demo --db
def test_demo_db_that_is_not_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    db.write_text("hello\n" * 100)
    result = runner.invoke(app, ["demo", "webshop", "--db", str(db)])
    _one_line_error(result, "--db", "not a SQLite database")


@pytest.mark.parametrize("db", [UNWRITABLE / "demo.sqlite", Path("/proc/version")])
def test_demo_db_that_is_not_writable(db: Path) -> None:
    result = runner.invoke(app, ["demo", "webshop", "--db", str(db)])
    _one_line_error(result, "--db")


# ---------------------------------------------------------------------------- report.json
def test_report_json_has_no_bare_nan(tmp_path: Path) -> None:
    report = EvalReport(
        critics={},
        rows=[{"id": "a", "score": math.nan, "steps": [math.inf, 0.5]}],
        meta={"auc_pr": float("nan")},
    )
    path = report.write(tmp_path, plot=False)["json"]

    def refuse(constant: str) -> None:
        raise ValueError(f"bare {constant} in report.json")

    data = json.loads(path.read_text(), parse_constant=refuse)
    assert data["meta"]["auc_pr"] is None
    assert data["trajectories"][0]["score"] is None
    assert data["trajectories"][0]["steps"] == [None, 0.5]
