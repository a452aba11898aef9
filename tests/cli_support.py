"""Run the installed ``inferact`` console script as a user would: in a subprocess, with or
without a terminal, and read its output whatever the terminal's width.

Rich wraps text and draws boxes to fit the terminal, so every check reads :func:`flat` output:
ANSI codes and box-drawing characters removed and whitespace collapsed. The subprocess is also
given a narrow ``COLUMNS`` on purpose, so a check that only holds on a wide terminal fails here.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Sequence
from pathlib import Path

INFERACT = shutil.which("inferact", path=str(Path(sys.executable).parent)) or shutil.which(
    "inferact"
)
NARROW = 64  # columns: narrower than any terminal the tests may run in
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_BOX = re.compile(r"[\u2500-\u257f]")  # rich's panels, tables and rules


def flat(text: str) -> str:
    """``text`` without ANSI codes or box characters, whitespace collapsed to single spaces.

    Example:
        >>> flat("\\x1b[1m╭─ Error ─╮\\x1b[0m\\n│ no such\\n│ SQLite file │")
        'Error no such SQLite file'
    """
    return " ".join(_BOX.sub(" ", _ANSI.sub("", text)).split())


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a run: narrow, no colour, no API key, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "FORCE_COLOR")}
    env.update({"COLUMNS": str(NARROW), "NO_COLOR": "1", "TERM": "dumb", **extra})
    return env


def run_cli(
    args: Sequence[str], *, cwd: Path, timeout: float = 180, **env: str
) -> subprocess.CompletedProcess[str]:
    """``inferact *args`` in ``cwd`` with no terminal (stdin is empty), output captured."""
    assert INFERACT, "the inferact console script is not installed (pip install -e .)"
    return subprocess.run(
        [INFERACT, *args],
        cwd=cwd,
        env=cli_env(**env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_in_terminal(
    args: Sequence[str],
    *,
    cwd: Path,
    answers: Sequence[tuple[str, str]] = (),
    timeout: float = 180,
) -> tuple[int, str]:
    """``inferact *args`` on a pseudo-terminal; each ``(prompt, line)`` of ``answers`` is typed
    once ``prompt`` appears in the output since the previous answer.

    Returns the exit code and the whole output (raw: read it through :func:`flat`).
    """
    assert INFERACT, "the inferact console script is not installed (pip install -e .)"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, NARROW, 0, 0))
    proc = subprocess.Popen(
        [INFERACT, *args],
        cwd=cwd,
        env=cli_env(),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    pending = list(answers)
    raw = b""
    since = 0  # where the output after the last answer starts
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"inferact {' '.join(args)} timed out:\n{flat(raw.decode())}")
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: the process ended
                    chunk = b""
                if not chunk:
                    break
                raw += chunk
                text = raw.decode(errors="replace")
                if pending and pending[0][0] in flat(text[since:]):
                    os.write(master, (pending.pop(0)[1] + "\n").encode())
                    since = len(text)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
    code = proc.wait(timeout=30)
    assert not pending, f"never asked {pending[0][0]!r}:\n{flat(raw.decode(errors='replace'))}"
    return code, raw.decode(errors="replace")
