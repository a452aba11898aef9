"""Labelled trajectory files: JSONL records in, labelled trajectories (and bad lines) out.

A record is one JSON object per line in the format of ``shared/data/README.md``: ``task``,
``steps`` (or ``messages``, a LangGraph message list), ``label`` and optionally ``id``,
``price`` and ``risk``. The label says whether the agent was off track; off track is the
*positive* class (1), the class a critic should flag.

Example:
    >>> records = [
    ...     {"id": "a", "task": "t", "steps": [{"action": "Finish[x]"}], "label": "incorrect"},
    ...     {"id": "b", "task": "t", "steps": [{"action": "Finish[y]"}], "label": "correct"},
    ...     {"id": "c", "task": "t", "steps": "oops", "label": "correct"},
    ... ]
    >>> data = load_dataset(records)
    >>> [(item.id, item.label) for item in data.items]
    [('a', 1), ('b', 0)]
    >>> data.errors[0].line, data.errors[0].message
    (3, "field 'steps' must be a list")
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from inferact_langgraph.errors import DatasetError, InferActError
from inferact_langgraph.guard.marks import RiskLevel
from inferact_langgraph.trajectory import THOUGHT_TOOLS, Trajectory, trajectory_hash

__all__ = [
    "BadRecord",
    "Dataset",
    "LabelledTrajectory",
    "OnError",
    "load_dataset",
    "parse_label",
    "trajectory_hash",
]

OnError = Literal["skip", "raise"]

OFF_TRACK_LABELS = frozenset(
    {"incorrect", "off_track", "off-track", "off track", "wrong", "fail", "failure", "unsafe"}
)
ON_TRACK_LABELS = frozenset(
    {"correct", "on_track", "on-track", "on track", "right", "success", "safe"}
)
_RISKS = ("low", "medium", "high")


def parse_label(value: Any) -> int:
    """Map a record's label to the class a critic should detect: 1 = off track, 0 = on track.

    Strings only (case-insensitive): ``incorrect``/``off_track``/``wrong``/``fail``... give 1,
    ``correct``/``on_track``/``success``... give 0. Numbers and booleans are refused, because
    whether ``1`` or ``true`` means "correct" or "flag it" differs between datasets.

    Example:
        >>> parse_label("incorrect"), parse_label("Correct")
        (1, 0)

    Raises:
        DatasetError: The label is missing or not one of the known words.
    """
    if isinstance(value, str):
        word = value.strip().lower()
        if word in OFF_TRACK_LABELS:
            return 1
        if word in ON_TRACK_LABELS:
            return 0
    raise DatasetError(
        f"field 'label' must be 'incorrect' (off track, to be flagged) or 'correct', got {value!r}"
    )


@dataclass(frozen=True)
class LabelledTrajectory:
    """One trajectory with its gold label.

    Attributes:
        id: The record's ``id``, else ``"line-<n>"`` (or ``"record-<n>"`` for in-memory records).
        trajectory: What the critic judges.
        label: 1 when the agent was off track (the positive class, to be flagged), else 0.
        price: The record's ``price`` (for the cost metric), if any.
        risk: The record's ``risk`` (``low``/``medium``/``high``), passed to the critic.
        line: The 1-based line number in the file (or index + 1 for in-memory records).
    """

    id: str
    trajectory: Trajectory
    label: int
    price: float | None = None
    risk: RiskLevel | None = None
    line: int | None = None

    @cached_property
    def content_hash(self) -> str:
        """:func:`trajectory_hash` of the trajectory (the cache key's content part)."""
        return trajectory_hash(self.trajectory)


@dataclass(frozen=True)
class BadRecord:
    """A record that could not be used, and why.

    Attributes:
        line: Its 1-based line number.
        message: What is wrong with it.
    """

    line: int
    message: str


@dataclass
class Dataset:
    """The usable records of a file, and the bad ones (never dropped silently).

    Attributes:
        items: The labelled trajectories, in file order.
        errors: The records that were skipped, with their line numbers.
        source: Where the records came from (a path, or ``"<records>"``).
    """

    items: list[LabelledTrajectory] = field(default_factory=list)
    errors: list[BadRecord] = field(default_factory=list)
    source: str = "<records>"

    def __len__(self) -> int:
        return len(self.items)

    @property
    def labels(self) -> list[int]:
        """The labels of :attr:`items`, in order."""
        return [item.label for item in self.items]


def _record_to_item(
    record: Any, line: int, prefix: str, thought_tools: Collection[str]
) -> LabelledTrajectory:
    trajectory = Trajectory.from_record(record, line=line, thought_tools=thought_tools)
    if not trajectory.steps:
        raise DatasetError("the trajectory has no steps: there is no action to judge", line=line)
    try:
        label = parse_label(record.get("label"))
    except DatasetError as exc:
        raise DatasetError(str(exc), line=line) from None
    price = record.get("price")
    if price is not None:
        if isinstance(price, bool) or not isinstance(price, int | float):
            try:
                price = float(str(price).replace("$", "").replace(",", "").strip())
            except ValueError:
                raise DatasetError(
                    f"field 'price' must be a number, got {price!r}", line=line
                ) from None
        price = float(price)
    risk = record.get("risk")
    if risk is not None and risk not in _RISKS:
        raise DatasetError(f"field 'risk' must be one of {_RISKS}, got {risk!r}", line=line)
    raw_id = record.get("id")
    item_id = str(raw_id) if raw_id not in (None, "") else f"{prefix}-{line}"
    return LabelledTrajectory(
        id=item_id, trajectory=trajectory, label=label, price=price, risk=risk, line=line
    )


def load_dataset(
    source: str | Path | Iterable[Mapping[str, Any]] | Dataset,
    *,
    on_error: OnError = "skip",
    thought_tools: Collection[str] = THOUGHT_TOOLS,
) -> Dataset:
    """Read labelled trajectories from a JSONL file or from in-memory records.

    Args:
        source: A path to a JSONL file (blank lines are ignored), an iterable of record
            dicts, or an already loaded :class:`Dataset` (returned as is).
        on_error: ``"skip"`` keeps going and lists every bad record in
            :attr:`Dataset.errors`; ``"raise"`` stops at the first one.
        thought_tools: Tools whose calls are the agent's thoughts: their steps (before the
            last) are left out, as the guard leaves them out (default ``("think",)``).

    Returns:
        The dataset. Duplicate ids are bad records too (the second one is reported).

    Raises:
        DatasetError: A bad record with ``on_error="raise"`` (its ``line`` is set), or a
            file that does not exist or holds no usable record.
        ValueError: ``on_error`` is not ``"skip"`` or ``"raise"``.

    Example:
        >>> data = load_dataset([{"task": "t", "steps": [{"action": "a"}], "label": "x"}])
        >>> len(data), data.errors
        (0, [BadRecord(line=1, message="field 'label' must be 'incorrect' (off track, to be flagged) or 'correct', got 'x'")])
    """  # noqa: E501
    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    if isinstance(source, Dataset):
        return source
    dataset = Dataset()
    rows: Iterable[tuple[int, Any]]
    prefix = "record"
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise DatasetError(f"no such trajectory file: {path}")
        dataset.source = str(path)
        prefix = "line"
        rows = _read_jsonl(path)
    else:
        rows = ((i, rec) for i, rec in enumerate(source, start=1))
    seen: set[str] = set()
    for line, record in rows:
        try:
            if isinstance(record, DatasetError):
                raise record
            item = _record_to_item(record, line, prefix, thought_tools)
            if item.id in seen:
                raise DatasetError(f"duplicate id {item.id!r}", line=line)
        except (DatasetError, InferActError) as exc:
            if on_error == "raise":
                if isinstance(exc, DatasetError) and exc.line is not None:
                    raise
                raise DatasetError(str(exc), line=line) from exc
            message = str(exc)
            if message.startswith(f"line {line}: "):
                message = message[len(f"line {line}: ") :]
            dataset.errors.append(BadRecord(line=line, message=message))
            continue
        seen.add(item.id)
        dataset.items.append(item)
    if not dataset.items and isinstance(source, str | Path):
        detail = f" ({len(dataset.errors)} bad records)" if dataset.errors else ""
        raise DatasetError(f"{source}: no usable record{detail}")
    return dataset


# JSON deeper than this is refused before parsing: json.loads recurses once per level and a
# crafted line ("[" * 100_000) would otherwise raise RecursionError mid-run.
MAX_JSON_DEPTH = 200


def _too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` (a linear scan)."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the common case, at C speed
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _read_jsonl(path: Path) -> Iterable[tuple[int, Any]]:
    """Each non-blank line parsed.

    A line that cannot be (not UTF-8, not JSON, nested too deeply) is yielded as a
    :class:`DatasetError` for the caller to skip or raise.
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        head = handle.read(8192)
        if b"\x00" in head:
            raise DatasetError(
                f"{path} is a binary file, not JSONL (one JSON object per line, UTF-8 text)"
            )
        handle.seek(0)
        for line_no, data in enumerate(handle, start=1):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (
                    line_no,
                    DatasetError(
                        f"not UTF-8 text (byte {exc.start + 1} of the line)", line=line_no
                    ),
                )
                continue
            if not text.strip():
                continue
            if _too_deep(text):
                yield (
                    line_no,
                    DatasetError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", line=line_no),
                )
                continue
            try:
                yield line_no, json.loads(text)
            except json.JSONDecodeError as exc:
                yield line_no, DatasetError(f"invalid JSON: {exc.msg}", line=line_no)
            except RecursionError:  # a depth the scan did not see (should not happen)
                yield line_no, DatasetError("JSON nested too deeply", line=line_no)
