"""Write the answers a relay collected as a transcript (JSONL), for replay in the tests.

``../shared/tools/relay.py serve --dir D`` keeps every request it got in ``D/all-requests.jsonl``
and each answer in ``D/answers/<key>.txt``. This writes one line per answered request, in the
format of ``tests/data/*-capable-model-answers.jsonl`` (``messages``, ``temperature``, ``n``,
``answer``), which :class:`inferact_langgraph.replay.Transcript` reads.

Usage:
    python scripts/export_relay_answers.py --dir .relay --out answers.jsonl [--only KEYS_FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def export(relay_dir: Path, out: Path) -> int:
    """Write the answered requests of ``relay_dir`` to ``out``; returns how many."""
    written: dict[str, dict] = {}
    for line in (relay_dir / "all-requests.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        answer = relay_dir / "answers" / f"{entry['key']}.txt"
        if entry["key"] in written or not answer.is_file():
            continue
        request = entry["request"]
        written[entry["key"]] = {
            "messages": [
                {"role": m["role"], "content": m["content"]} for m in request["messages"]
            ],
            "temperature": request.get("temperature"),
            "n": request.get("n", 1),  # the relay keys a request without n as n=1
            "answer": answer.read_text(),
        }
    with out.open("w") as handle:
        for record in written.values():
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(written)


def main() -> None:
    """Command line: ``--dir`` the relay's folder, ``--out`` the transcript to write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(f"{export(args.dir, args.out)} answers written to {args.out}")


if __name__ == "__main__":
    main()
