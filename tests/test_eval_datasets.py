"""The dataset loader: good records, bad records with line numbers, the label mapping."""

from __future__ import annotations

import pytest
from _eval_fakes import records, write_jsonl

from inferact_langgraph.errors import DatasetError
from inferact_langgraph.eval.datasets import (
    Dataset,
    load_dataset,
    parse_label,
    trajectory_hash,
)


def test_shared_hotpotqa_file(hotpotqa_records):
    from conftest import SHARED_DATA

    data = load_dataset(SHARED_DATA)
    assert len(data) == 90 and data.errors == []
    assert sum(data.labels) == 56  # 56 incorrect = off track = positive
    first = data.items[0]
    assert first.line == 1 and first.id == hotpotqa_records[0]["id"]
    assert first.trajectory.pending is not None  # Finish[...] is pending
    assert first.trajectory.steps[-1].action.startswith("Finish[")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("incorrect", 1),
        ("INCORRECT", 1),
        ("off_track", 1),
        ("off-track", 1),
        ("correct", 0),
        (" Correct ", 0),
        ("on_track", 0),
        ("success", 0),
        ("fail", 1),
    ],
)
def test_label_mapping(value, expected):
    assert parse_label(value) == expected


@pytest.mark.parametrize("value", [None, 1, 0, True, False, "maybe", ""])
def test_ambiguous_or_unknown_labels_are_refused(value):
    with pytest.raises(DatasetError, match="'incorrect'"):
        parse_label(value)


def _bad_file(tmp_path):
    good = records(3)
    lines = [
        good[0],  # 1 ok
        "{not json",  # 2 invalid JSON
        {"steps": [{"action": "a"}], "label": "correct"},  # 3 no task
        "",  # 4 blank: ignored
        {"task": "t", "steps": [{"action": "a"}], "label": "meh"},  # 5 bad label
        {"task": "t", "steps": [], "label": "correct"},  # 6 no steps
        {**good[1], "id": good[0]["id"]},  # 7 duplicate id
        {"task": "t", "steps": [{"obs": 1}], "label": "correct"},  # 8 step without action
        {**good[2], "price": "abc"},  # 9 bad price
        {**good[2], "risk": "extreme"},  # 10 bad risk
        {"task": "t", "steps": "x", "label": "correct"},  # 11 steps not a list
        good[2],  # 12 ok
        {
            "id": "m",
            "task": "Buy a mug",
            "label": "incorrect",
            "messages": [  # 13 ok (messages)
                {"role": "user", "content": "Buy a mug"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"name": "buy", "args": {"asin": "B01"}, "id": "c1"}],
                },
            ],
        },
        "[1, 2]",  # 14 not an object
    ]
    return write_jsonl(tmp_path / "mixed.jsonl", lines)


def test_bad_records_are_skipped_and_reported_with_line_numbers(tmp_path):
    data = load_dataset(_bad_file(tmp_path), on_error="skip")
    assert [i.line for i in data.items] == [1, 12, 13]
    assert [e.line for e in data.errors] == [2, 3, 5, 6, 7, 8, 9, 10, 11, 14]
    messages = {e.line: e.message for e in data.errors}
    assert "invalid JSON" in messages[2]
    assert "task" in messages[3]
    assert "label" in messages[5] and "'meh'" in messages[5]
    assert "no steps" in messages[6]
    assert "duplicate id" in messages[7]
    assert "action" in messages[8]
    assert "price" in messages[9]
    assert "risk" in messages[10]
    assert "steps" in messages[11]
    assert not any(m.startswith("line ") for m in messages.values())  # no doubled prefix
    mug = data.items[2]
    assert mug.id == "m" and mug.label == 1 and mug.trajectory.steps[-1].tool_name == "buy"


def test_on_error_raise_stops_at_the_first_bad_line(tmp_path):
    with pytest.raises(DatasetError) as info:
        load_dataset(_bad_file(tmp_path), on_error="raise")
    assert info.value.line == 2
    assert str(info.value).startswith("line 2: ")


def test_ids_prices_and_risks(tmp_path):
    recs = records(2)
    recs[0]["price"] = "$1,299.50"
    recs[1].pop("id")
    recs[1]["risk"] = "high"
    data = load_dataset(write_jsonl(tmp_path / "p.jsonl", recs))
    assert data.items[0].price == pytest.approx(1299.5)
    assert data.items[1].id == "line-2" and data.items[1].risk == "high"
    in_memory = load_dataset([recs[1]])
    assert in_memory.items[0].id == "record-1" and in_memory.source == "<records>"


def test_unusable_files_and_options(tmp_path):
    with pytest.raises(DatasetError, match="no such trajectory file"):
        load_dataset(tmp_path / "missing.jsonl")
    bad = write_jsonl(tmp_path / "bad.jsonl", ["{", "{}"])
    with pytest.raises(DatasetError, match=r"no usable record \(2 bad records\)"):
        load_dataset(bad)
    with pytest.raises(ValueError, match="on_error"):
        load_dataset([], on_error="ignore")
    ds = Dataset()
    assert load_dataset(ds) is ds


def test_trajectory_hash_ignores_labels_and_thoughts_but_not_content():
    a, b = records(1)[0], records(1)[0]
    b["label"] = "correct"
    b["steps"][0]["thought"] = "a different thought"
    ha, hb = (load_dataset([r]).items[0].content_hash for r in (a, b))
    assert ha == hb
    c = records(1)[0]
    c["steps"][0]["observation"] = "x0 is z"
    assert load_dataset([c]).items[0].content_hash != ha
    assert trajectory_hash(load_dataset([a]).items[0].trajectory) == ha
