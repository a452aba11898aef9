"""``langgraph dev`` for the server tests: on loopback, on a free port, in a temporary folder.

A test module marks itself with ``pytestmark = SERVER_MARKS`` (skipped without the CLI) and
starts its server in a module-scoped fixture::

    @pytest.fixture(scope="module")
    def server(tmp_path_factory):
        work = tmp_path_factory.mktemp("my_server")
        with langgraph_dev(work, {"graphs": {"g": str(ROOT / "graphs/g.py:graph")}}) as url:
            yield url
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The ``langgraph`` CLI of this interpreter's environment (the [server] extra), else on PATH.
CLI = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")

#: A server test module's ``pytestmark``: slow, skipped without the CLI, loopback only.
SERVER_MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CLI is None, reason="langgraph-cli[inmem] is not installed (the [server] extra)"
    ),
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

#: How long the server may take to accept connections (the machine may be busy).
START_TIMEOUT = 90


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def langgraph_dev(
    work: Path,
    config: dict,
    *,
    env: dict[str, str] | None = None,
    unset: Iterable[str] = (),
) -> Iterator[str]:
    """Run ``langgraph dev`` in ``work`` with ``config`` as its langgraph.json; yield its URL.

    The repository is the config's only dependency. The server gets this process's environment
    without the variables named in ``unset`` (e.g. model keys, to keep it offline), plus ``env``.
    It writes its output to ``work/server.log``, whose tail is shown if it does not start; it is
    stopped when the block ends.
    """
    config = {**config, "dependencies": [str(ROOT)]}
    (work / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    dropped = set(unset)
    environ = {k: v for k, v in os.environ.items() if k not in dropped}
    log_path = work / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 - the server writes to it until it is stopped
    proc = subprocess.Popen(
        [CLI, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **environ,
            "PYTHONPATH": str(ROOT),
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            **(env or {}),
        },
    )
    try:
        deadline = time.time() + START_TIMEOUT
        ready = False
        while time.time() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    ready = True
                    break
            except OSError:
                time.sleep(0.2)
        if not ready:
            pytest.fail(f"langgraph dev did not start:\n{log_path.read_text()[-3000:]}")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
