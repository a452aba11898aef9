"""What the tools write into a checkout is ignored by git."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What running the project's commands in a checkout leaves behind (their default paths).
WRITTEN_BY_TOOLS = {
    ".langgraph_api/.langgraph_checkpoint.1.pckl": "langgraph dev's in-memory state",
    ".inferact-demo.sqlite": "inferact demo's checkpoints (--db)",
    ".inferact-cache.sqlite": "inferact eval's verdict cache (--cache)",
    "report/report.json": "inferact eval's report (--out)",
    "trials/trials.json": "inferact trials' report (--out)",
    ".hypothesis/examples/x": "the test suite's hypothesis database",
    ".pytest_cache/README.md": "pytest's cache (the README's test command)",
}


def _ignored_by_git(path: str) -> bool:
    result = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", "-q", path],
        capture_output=True,
        text=True,
    )
    if result.returncode not in (0, 1):  # 128: not a git checkout
        raise RuntimeError(result.stderr)
    return result.returncode == 0


def _ignored_by_patterns(path: str) -> bool:
    """The .gitignore's plain patterns (no globs needed for these paths), without git."""
    patterns = [
        line.strip()
        for line in (ROOT / ".gitignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    first = path.split("/")[0]
    return any(p.rstrip("/") == first for p in patterns)


@pytest.mark.parametrize("path", sorted(WRITTEN_BY_TOOLS))
def test_files_the_tools_write_are_ignored(path):
    try:
        ignored = _ignored_by_git(path) if shutil.which("git") else _ignored_by_patterns(path)
    except RuntimeError:
        ignored = _ignored_by_patterns(path)
    assert ignored, f"{path} ({WRITTEN_BY_TOOLS[path]}) is not in .gitignore"
