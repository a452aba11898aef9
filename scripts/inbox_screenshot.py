"""Take the inbox screenshot of the docs (``docs/img/inbox.png``) from a real ``langgraph dev``.

Starts ``langgraph dev`` on loopback with this repository's ``langgraph.json`` (the example
graphs and the inbox), runs the webshop graph on its first task until InferAct doubts the
purchase, opens ``/inferact/inbox`` in the system Chromium (Playwright), opens that review and
saves a screenshot. Offline: the webshop actor is scripted and its critic model is the ORACLE-
scripted one of ``inferact_langgraph.examples`` (no live judgement).

Usage::

    python scripts/inbox_screenshot.py                      # writes docs/img/inbox.png
    python scripts/inbox_screenshot.py --out /tmp/inbox.png --width 420   # a narrow window
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "inbox.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument(
        "--chromium", default=os.environ.get("INFERACT_CHROMIUM") or shutil.which("chromium")
    )
    args = parser.parse_args()
    if not args.chromium:
        sys.exit("Chromium not found: apt-get install -y chromium, or pass --chromium PATH")
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which(
        "langgraph"
    )
    if cli is None:
        sys.exit("langgraph dev not found: pip install -e '.[server]'")

    from langgraph_sdk import get_sync_client
    from playwright.sync_api import sync_playwright

    from inferact_langgraph.examples import WebShopEnv

    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {
        name: str((ROOT / path.split(":")[0]).resolve()) + ":" + path.split(":")[1]
        for name, path in config["graphs"].items()
    }
    with tempfile.TemporaryDirectory(prefix="inbox-shot-") as work:
        (Path(work) / "langgraph.json").write_text(json.dumps(config))
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        }
        with open(Path(work) / "server.log", "w") as log:
            server = subprocess.Popen(
                [
                    cli,
                    "dev",
                    "--no-browser",
                    "--no-reload",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ],
                cwd=work,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
            try:
                deadline = time.time() + 60
                while time.time() < deadline:
                    try:
                        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                            break
                    except OSError:
                        if server.poll() is not None:
                            sys.exit((Path(work) / "server.log").read_text()[-3000:])
                        time.sleep(0.3)
                client = get_sync_client(url=url)
                thread_id = client.threads.create()["thread_id"]
                task = WebShopEnv().prompt(0)
                client.runs.wait(
                    thread_id, "webshop", input={"messages": [{"role": "user", "content": task}]}
                )
                if client.threads.get(thread_id)["status"] != "interrupted":
                    sys.exit("the webshop graph finished without a review: nothing to show")
                with (
                    tempfile.TemporaryDirectory(prefix="inbox-chromium-") as profile,
                    sync_playwright() as p,
                ):
                    browser = p.chromium.launch_persistent_context(
                        profile,
                        executable_path=args.chromium,
                        headless=True,
                        args=CHROMIUM_ARGS,
                        viewport={"width": args.width, "height": args.height},
                    )
                    page = browser.new_page()
                    page.goto(f"{url}/inferact/inbox")
                    page.locator(f'button.thread[data-thread-id="{thread_id}"]').click()
                    page.locator("#detail article.action").wait_for()
                    card = page.locator("#detail article.action").first
                    card.get_by_label("Reject").check()
                    card.locator('textarea[data-input="reject"]').fill(
                        "Wrong size: I need 66 by 66 inch shades."
                    )
                    page.locator("#detail-title").focus()
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(args.out), full_page=True)
                    browser.close()
            finally:
                server.terminate()
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.kill()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
