"""How well each critic judges real tool-agent calls with its defaults: docs/quality.md.

Replays a capable model's recorded answers (tests/data/README.md) for the tau-bench airline dev
records (``generic`` preset) and the HotPotQA trajectories (``hotpotqa`` preset), then reports
per critic: the threshold-free ranking (AUC-PR and ROC-AUC of the off-track class), the share
of mistakes and of correct calls flagged at the default ``threshold=0.5`` on the calibrated
score, and the cost per check. Calibrations are fitted on raw scores; the "cross-validated"
figures never score a call with a calibration fitted on it (stratified 5-fold, 20 repeats,
pooled), the "shipped" figures use the calibration the package ships (fitted on all of it).

It also fits the shipped calibrations (``--fit``): ``inferact_langgraph/calibrations/``. The
probes (:data:`PROBES`: tool-agent calls written apart from the prompts, never fitted on) are
scored with the shipped calibrations only, per kind of call.
Offline and deterministic; ``tests/test_quality.py`` checks that the committed page and
calibrations are what this script makes from a fresh replay.

    python bench/bench_quality.py           # rewrite docs/quality.md's tables
    python bench/bench_quality.py --fit     # refit the shipped calibrations, then the tables
    python bench/bench_quality.py --print   # only print the tables
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from inferact_langgraph.calibration import Calibration, default_calibration, fit_calibration

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DOC = ROOT / "docs" / "quality.md"
SHIPPED = ROOT / "inferact_langgraph" / "calibrations"


@dataclass(frozen=True)
class Source:
    """One measured setting: a preset's records, the recorded answers, and the rules if any."""

    preset: str
    data: Path
    answers: tuple[Path, ...]
    rules: Path | None = None
    fitted: bool = True
    """Whether the shipped calibrations are fitted on this setting (a second draw is not)."""

    @property
    def calibration_suffix(self) -> str:
        """How the shipped calibration files of this setting are named after the preset."""
        return "-rules" if self.rules else ""


TAU = DATA / "tau-airline-dev.jsonl"
TAU_ANSWERS = DATA / "tau-airline-dev-capable-model-answers.jsonl"
#: setting -> where its records and the capable model's answers to today's prompts are.
SOURCES = {
    "generic": Source("generic", TAU, (TAU_ANSWERS,)),
    "generic, with rules": Source(
        "generic",
        TAU,
        # Task Inference never sees the rules: its answers are the ones without rules.
        (TAU_ANSWERS, DATA / "tau-airline-dev-rules-capable-model-answers.jsonl"),
        rules=DATA / "tau-airline-policy.md",
    ),
    # The same requests answered again, independently: how much one draw of answers moves
    # the figures. Measured with the calibrations fitted on the first draw.
    "generic, second draw": Source(
        "generic",
        TAU,
        (DATA / "tau-airline-dev-capable-model-answers-draw2.jsonl",),
        fitted=False,
    ),
    "hotpotqa": Source(
        "hotpotqa",
        DATA / "hotpotqa-react-trial1.jsonl",
        (DATA / "hotpotqa-trial1-capable-model-answers.jsonl",),
    ),
}
#: Records no calibration or prompt was fitted to: scored with the shipped calibrations only.
PROBES = {
    "tool-agent probe": Source(
        "generic",
        DATA / "tool-agent-probe.jsonl",
        (DATA / "tool-agent-probe-capable-model-answers.jsonl",),
    ),
}
CRITICS = ("inferact", "standard", "inferact+standard")
#: The share of mistakes the goal asks a critic to flag (with at most 20% of correct calls).
TARGET_MISTAKES = 0.8
#: The critics of the "either one doubts" rule: the ``inferact-or-standard`` critic.
EITHER = ("inferact", "standard")
EITHER_CRITIC = "inferact-or-standard"
METHOD = "platt-logit"  # two parameters: the least a small sample can overfit
FOLDS = 5
REPEATS = 20
BEGIN = "<!-- quality:begin (bench/bench_quality.py writes this block) -->"
END = "<!-- quality:end -->"


@dataclass(frozen=True)
class Scored:
    """One critic's raw scores on one data set, with labels (1 = on track) and cost."""

    ids: list[str]
    scores: list[float]
    on_track: list[int]
    calls: float
    prompt_tokens: float
    output_tokens: float


def replay(setting: str) -> dict[str, Scored]:
    """Every critic's raw scores in one setting of :data:`SOURCES`, from the recorded answers.

    Raises:
        RuntimeError: A request was not recorded (a prompt changed: collect fresh answers).
    """
    from inferact_langgraph.critics import make_critic
    from inferact_langgraph.eval import evaluate_critics
    from inferact_langgraph.replay import ReplayChatModel, Transcript

    source = SOURCES.get(setting) or PROBES[setting]
    records = [
        json.loads(line)
        for path in source.answers
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    transcript = Transcript.from_records(records, source=", ".join(p.name for p in source.answers))
    model = ReplayChatModel(transcript=transcript)
    rules = source.rules.read_text(encoding="utf-8") if source.rules else None
    critics = {
        name: make_critic(
            name, model=model, preset=source.preset, rules=rules, calibration=None
        )
        for name in CRITICS
    }
    data = source.data
    report = evaluate_critics(data, critics, calibrate=False, concurrency=8)
    failed = [
        f"{row['id']} ({name}): {str(row['critics'].get(name, {}).get('error'))[:300]}"
        for row in report.rows
        for name in CRITICS
        if "score" not in row["critics"].get(name, {})
    ]
    if failed:
        raise RuntimeError(
            f"{setting!r}: {len(transcript.stale)} requests were not recorded (a prompt "
            f"changed: collect answers, docs/quality.md) and {len(failed)} checks failed:\n"
            + "\n".join(failed)
        )
    scored: dict[str, Scored] = {}
    for name in CRITICS:
        rows = report.rows
        usage = [row["critics"][name]["usage"] for row in rows]
        scored[name] = Scored(
            ids=[row["id"] for row in rows],
            scores=[row["critics"][name]["score"] for row in rows],
            on_track=[1 - row["label"] for row in rows],
            calls=statistics.fmean(u["model_calls"] for u in usage),
            prompt_tokens=statistics.fmean(u["input_tokens"] for u in usage),
            output_tokens=statistics.fmean(u["output_tokens"] for u in usage),
        )
    return scored


def fit(scored: Scored, *, info: dict | None = None) -> Calibration:
    """The calibration of raw scores to P(on track), by :data:`METHOD`."""
    return fit_calibration(scored.scores, scored.on_track, method=METHOD, info=info)


def _flag_rates(on_track: list[int], flagged: list[bool]) -> tuple[int, int]:
    """How many mistakes and how many correct calls were flagged."""
    missed_flagged = sum(f for f, y in zip(flagged, on_track, strict=True) if y == 0)
    correct_flagged = sum(f for f, y in zip(flagged, on_track, strict=True) if y == 1)
    return missed_flagged, correct_flagged


def folds(on_track: list[int]) -> Iterator[tuple[list[int], list[int]]]:
    """``(held_out, kept)`` positions of every fold: stratified, :data:`FOLDS` folds,
    :data:`REPEATS` seeded repeats (the folds of every cross-validated figure)."""
    for repeat in range(REPEATS):
        rng = random.Random(repeat)
        parts: list[list[int]] = [[] for _ in range(FOLDS)]
        for label in (0, 1):
            members = [i for i, y in enumerate(on_track) if y == label]
            rng.shuffle(members)
            for position, i in enumerate(members):
                parts[position % FOLDS].append(i)
        for held_out in parts:
            left_out = set(held_out)
            yield held_out, [i for i in range(len(on_track)) if i not in left_out]


def cross_validated(*critics: Scored) -> tuple[float, float]:
    """Shares of mistakes and of correct calls flagged at 0.5, each call scored by a
    calibration fitted without it (stratified folds, repeated, pooled).

    With several critics (scored on the same calls), a call is flagged when any of them,
    each with its own calibration, doubts it.
    """
    on_track = critics[0].on_track
    mistakes = flagged_mistakes = corrects = flagged_corrects = 0
    for held_out, kept in folds(on_track):
        maps = [
            (
                s,
                fit_calibration(
                    [s.scores[i] for i in kept], [on_track[i] for i in kept], method=METHOD
                ),
            )
            for s in critics
        ]
        for i in held_out:
            flagged = any(calibration(s.scores[i]) < 0.5 for s, calibration in maps)
            if on_track[i]:
                corrects += 1
                flagged_corrects += flagged
            else:
                mistakes += 1
                flagged_mistakes += flagged
    return flagged_mistakes / mistakes, flagged_corrects / corrects


def ranking(scored: Scored) -> tuple[float, float]:
    """AUC-PR (average precision) and ROC-AUC of the off-track class (risk = 1 - score)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    off = [1 - y for y in scored.on_track]
    risk = [1 - s for s in scored.scores]
    return average_precision_score(off, risk), roc_auc_score(off, risk)


def correct_flagged_at_target(scored: Scored, target: float = TARGET_MISTAKES) -> float:
    """In-sample: the share of correct calls flagged at the highest threshold on the raw score
    that flags at least ``target`` of the mistakes (the first such point of the ROC curve)."""
    from sklearn.metrics import roc_curve

    off = [1 - y for y in scored.on_track]
    false_alarms, caught, _ = roc_curve(off, [1 - s for s in scored.scores])
    return float(next(f for f, c in zip(false_alarms, caught, strict=True) if c >= target))


def either_scored(scored: dict[str, Scored], preset: str, *, with_rules: bool) -> Scored:
    """``inferact-or-standard``'s scores: the lower of the two critics' shipped-calibrated
    probabilities (what the critic returns; it makes no model call of its own)."""
    parts = [scored[name] for name in EITHER]
    maps = [default_calibration(name, preset, with_rules=with_rules) for name in EITHER]
    if any(m is None for m in maps):
        raise RuntimeError(f"no shipped calibration for {EITHER} ({preset}): run --fit")
    return Scored(
        ids=parts[0].ids,
        scores=[
            min(m(x) for m, x in zip(maps, row, strict=True))  # type: ignore[misc]
            for row in zip(*(p.scores for p in parts), strict=True)
        ],
        on_track=parts[0].on_track,
        calls=sum(p.calls for p in parts),
        prompt_tokens=sum(p.prompt_tokens for p in parts),
        output_tokens=sum(p.output_tokens for p in parts),
    )


def render(results: dict[str, dict[str, Scored]]) -> str:
    """The tables of docs/quality.md, one per preset."""
    lines: list[str] = []
    for setting, scored in results.items():
        source = SOURCES[setting]
        any_critic = next(iter(scored.values()))
        n_off = any_critic.on_track.count(0)
        n_on = any_critic.on_track.count(1)
        lines += [
            f"**{setting}** ({source.data.name}"
            + (f", rules: {source.rules.name}" if source.rules else "")
            + ("" if source.fitted else f", answers: {source.answers[0].name}")
            + f": {len(any_critic.ids)} calls, "
            f"{n_off} off track, {n_on} on track)",
            "",
            "| critic | AUC-PR | ROC-AUC | mistakes flagged (CV) | correct flagged (CV) "
            "| mistakes flagged (shipped) | correct flagged (shipped) | calls | prompt tok "
            "| output tok |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        with_rules = source.rules is not None
        either = either_scored(scored, source.preset, with_rules=with_rules)
        for name, s in [*scored.items(), (EITHER_CRITIC, either)]:
            auc_pr, roc = ranking(s)
            if name == EITHER_CRITIC:
                # Each part calibrated without the held-out calls; the lower one decides.
                cv_off, cv_on = cross_validated(*(scored[part] for part in EITHER))
                flagged = [x < 0.5 for x in s.scores]
            else:
                cv_off, cv_on = cross_validated(s)
                calibration = default_calibration(name, source.preset, with_rules=with_rules)
                if calibration is None:
                    raise RuntimeError(f"no shipped calibration for {name} in {setting!r}: --fit")
                flagged = [calibration(x) < 0.5 for x in s.scores]
            off, on = _flag_rates(s.on_track, flagged)
            lines.append(
                f"| {name} | {100 * auc_pr:.1f} | {100 * roc:.1f} | {100 * cv_off:.0f}% "
                f"| {100 * cv_on:.0f}% | {off} / {n_off} | {on} / {n_on} | {s.calls:.0f} "
                f"| {s.prompt_tokens:.0f} | {s.output_tokens:.0f} |"
            )
        lines += [
            "",
            f"In-sample, the first point of each critic's ROC curve that flags at least "
            f"{100 * TARGET_MISTAKES:.0f}% of mistakes flags this share of correct calls: "
            + ", ".join(
                f"{name} {100 * correct_flagged_at_target(s):.0f}%"
                for name, s in [*scored.items(), (EITHER_CRITIC, either)]
            )
            + ".",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def render_probes(results: dict[str, dict[str, Scored]]) -> str:
    """The probe tables: each critic with its shipped calibration, per kind of call."""
    lines: list[str] = []
    for setting, scored in results.items():
        source = PROBES[setting]
        records = [
            json.loads(line)
            for line in source.data.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        kind_of = {r["id"]: r["kind"] for r in records}
        kinds = list(dict.fromkeys(r["kind"] for r in records))
        lines += [
            f"**{setting}** ({source.data.name}: {len(records)} calls; flagged at the default "
            "threshold with the shipped `generic` calibration)",
            "",
            "| critic | AUC-PR | ROC-AUC | " + " | ".join(f"{k} flagged" for k in kinds) + " |",
            "| --- | --- | --- | " + " | ".join("---" for _ in kinds) + " |",
        ]
        either = either_scored(scored, source.preset, with_rules=False)
        for name, s in [*scored.items(), (EITHER_CRITIC, either)]:
            auc_pr, roc = ranking(s)
            calibration = (
                (lambda x: x) if name == EITHER_CRITIC else default_calibration(name, source.preset)
            )
            if calibration is None:
                raise RuntimeError(f"no shipped calibration for {name}: run --fit")
            cells = []
            for kind in kinds:
                members = [i for i, call in enumerate(s.ids) if kind_of[call] == kind]
                flagged = sum(calibration(s.scores[i]) < 0.5 for i in members)
                cells.append(f"{flagged} / {len(members)}")
            lines.append(
                f"| {name} | {100 * auc_pr:.1f} | {100 * roc:.1f} | " + " | ".join(cells) + " |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def page(results: dict[str, dict[str, Scored]], probes: dict[str, dict[str, Scored]]) -> str:
    """Everything between the markers of docs/quality.md: the measured settings, then probes."""
    return render(results) + "\n" + render_probes(probes)


def write_shipped(results: dict[str, dict[str, Scored]]) -> None:
    """Fit and write ``inferact_langgraph/calibrations/<critic>-<preset>[-rules].json``."""
    for setting, scored in results.items():
        source = SOURCES[setting]
        if not source.fitted:
            continue
        for name in CRITICS:
            info = {
                "critic": name,
                "preset": source.preset,
                "data": source.data.name,
                "answers": source.answers[-1].name,
            }
            if source.rules:
                info["rules"] = source.rules.name
            path = SHIPPED / f"{name}-{source.preset}{source.calibration_suffix}.json"
            fit(scored[name], info=info).save(path)


def block(text: str) -> str:
    """The text between the markers of docs/quality.md."""
    match = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    if match is None:
        raise ValueError(f"{DOC} has no block between {BEGIN!r} and {END!r}")
    return match.group(1)


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit the shipped calibrations")
    parser.add_argument("--print", action="store_true", help="print the tables only")
    args = parser.parse_args()
    results = {setting: replay(setting) for setting in SOURCES}
    if args.fit:
        write_shipped(results)
        default_calibration.cache_clear()  # the tables use the files just written
    tables = page(results, {setting: replay(setting) for setting in PROBES})
    if args.print:
        print(tables)
        return
    text = DOC.read_text()
    block(text)  # the markers must be there
    start = text.index(BEGIN) + len(BEGIN) + 1
    DOC.write_text(text[:start] + tables + text[text.index(END) :])
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
