"""The tau-bench airline conversations replayed through a guarded agent: which request each
critical call is judged against.

Each of the 100 real conversations (tests/data/README.md) is replayed turn by turn through
``create_agent`` guarded by ``with_inferact`` (``bench/bench_request_boundaries.py``): the
agent's model replays what gpt-4o said, every tool returns what it returned then, and a
scripted critic that passes everything records the task and the action chain it was given.
Only the six state-changing tools are critical. The rule alone is replayed, then the
request-boundary judge with a capable model's recorded answers, and each check is compared
with the maintainers' reading of where each request begins
(tests/data/tau-airline-dev-request-starts.json).
"""

from __future__ import annotations

import sys
from collections import Counter

import pytest
from conftest import ROOT

from inferact_langgraph.replay import ReplayChatModel, Transcript

sys.path.insert(0, str(ROOT / "bench"))
import bench_request_boundaries as tau  # the replay lives with its benchmark

CHECKS = 123


@pytest.fixture(scope="module")
def ruled() -> list[tau.Replayed]:
    """The 100 conversations replayed with the deterministic rule alone."""
    return [tau.replay(i, c, boundaries="rules") for i, c in enumerate(tau.conversations())]


@pytest.fixture(scope="module")
def judged(ruled) -> list[tuple[str, str, list[str], list[str], int]]:
    """Every critical call of the 100 conversations, with the rule alone: tool, task, chain,
    the customer's messages before the call, and how many tool calls the agent had made."""
    return [(c.tool, c.task, c.chain, c.said, c.made) for r in ruled for c in r.checks]


@pytest.fixture(scope="module")
def with_judge() -> tuple[list[tau.Replayed], Transcript, ReplayChatModel]:
    """The 100 conversations replayed with the judge answering from the recorded transcript."""
    if not tau.ANSWERS.exists():
        pytest.skip(
            f"{tau.ANSWERS.relative_to(ROOT)} is not committed yet: the judge's recorded answers "
            "(bench/bench_request_boundaries.py --base-url ... collects them)"
        )
    transcript = Transcript.load(tau.ANSWERS)
    model = ReplayChatModel(transcript=transcript, temperature=0)
    replayed = [
        tau.replay(i, c, boundaries=model, timeout=None) for i, c in enumerate(tau.conversations())
    ]
    return replayed, transcript, model


def test_every_critical_call_of_the_conversations_is_checked(judged):
    assert len(judged) == 123
    assert Counter(tool for tool, *_ in judged)["book_reservation"] > 0


def test_the_task_is_the_customers_request_not_their_newest_message(judged):
    """A request spans turns: the ask, the ids, the choices, "yes, go ahead". Each call is
    judged against the customer's messages of the current request, which always end with the
    newest one; 95% or more of the calls against more than that newest message (the rest
    follow a finished action: "could you also add 2 checked bags?" is a request of its own)."""
    lone = 0
    for _tool, task, _chain, said, _made in judged:
        assert task.endswith(said[-1])  # the newest message is always part of it
        assert "\n".join(said).endswith(task)  # the customer's own messages, in order, a suffix
        lone += task == said[-1] and len(said) > 1
    assert lone / len(judged) <= 0.05, lone


def test_a_request_that_began_after_a_finished_action_leaves_the_finished_one_out(judged):
    """After a cancellation ran and the agent closed ("feel free to ask!"), "I also want to
    upgrade one of my reservations" is judged on its own, on the actions taken since."""
    split_off = [c for c in judged if not "\n".join(c[3]).startswith(c[1])]
    whole = [c for c in judged if "\n".join(c[3]).startswith(c[1])]
    assert len(whole) >= 90 and 0 < len(split_off) <= 33
    for _tool, _task, chain, _said, made in split_off:
        assert len(chain) < made + 1  # S starts at the request, not at the conversation's start
    for _tool, _task, chain, _said, made in whole:
        assert len(chain) == made + 1  # S is every action since the first message


def test_the_quality_page_states_the_replayed_counts(judged):
    """docs/quality.md's table of which request the calls were judged against is this replay."""
    lone = sum(task == said[-1] and len(said) > 1 for _t, task, _c, said, _m in judged)
    whole = sum("\n".join(said).startswith(task) for _t, task, _c, said, _m in judged)
    page = " ".join((ROOT / "docs" / "quality.md").read_text().split())
    assert f"| judged against the newest message alone | 115 / 123 | {lone} / 123 |" in page
    assert f"| judged against every customer message so far | 8 / 123 | {whole} / 123 |" in page
    assert f"since a finished action | — | {len(judged) - whole} / 123 |" in page


# ---------------------------------------------------------------------------- against a reader
def _right(replayed: list[tau.Replayed]) -> int:
    return sum(len(r.checks) for r in replayed) - len(tau.wrong_checks(replayed, tau.labels()))


def test_the_readers_labels_are_the_candidate_starts_a_check_follows(ruled):
    """Every message where the rule begins a request (after the first) and a check follows
    before the next such message has the maintainers' reading, and nothing else has one."""
    followed = set()
    for r in ruled:
        for check in r.checks:
            before = [c for c in r.candidates if c <= len(check.said) - 1]
            if before:
                followed.add((r.conversation, before[-1]))
    assert followed == set(tau.labels())
    assert len(followed) == 17


def test_with_the_rule_alone_the_checks_after_four_revising_messages_miss_the_original_ask(ruled):
    """ "Could you please adjust the payment method?", "I prefer to use a gift card for the
    payment instead", "Let's get back to booking that flight ..." look new to the rule."""
    wrong = tau.wrong_checks(ruled, tau.labels())
    assert len(wrong) == 11 and _right(ruled) == CHECKS - 11
    assert {(c.conversation, c.start) for c in wrong} == {(75, 5), (75, 6), (77, 4), (98, 5)}


def test_with_the_judge_95_percent_of_the_checks_are_judged_against_the_readers_request(
    with_judge,
):
    replayed, transcript, model = with_judge
    assert not transcript.stale, transcript.stale[0]
    checks = [c for r in replayed for c in r.checks]
    assert len(checks) == CHECKS
    for check in checks:  # still the customer's own words, in order, ending with the newest
        assert check.task.endswith(check.said[-1])
        assert "\n".join(check.said).endswith(check.task)
    decisions = [d for r in replayed for d in r.decisions.values()]
    assert model.calls == len(decisions) == 17  # one call per questioned message, never per check
    assert all(d["decided_by"] == "model" for d in decisions)
    assert _right(replayed) / CHECKS >= 0.95


def _page() -> str:
    return " ".join((ROOT / "docs" / "quality.md").read_text().split())


def test_the_quality_page_states_how_many_checks_the_rule_draws_as_a_reader_would(ruled):
    right = _right(ruled)
    assert f"With the rule alone, {right} / 123 calls ({100 * right / CHECKS:.0f}%)" in _page()


def test_the_quality_page_states_the_judges_counts(with_judge):
    replayed, _, model = with_judge
    checks = [c for r in replayed for c in r.checks]
    lone = sum(c.task == c.said[-1] and len(c.said) > 1 for c in checks)
    whole = sum("\n".join(c.said).startswith(c.task) for c in checks)
    page = _page()
    assert f"alone | 115 / 123 | 5 / 123 | {lone} / 123 |" in page
    assert f"so far | 8 / 123 | 93 / 123 | {whole} / 123 |" in page
    assert f"finished action | — | 30 / 123 | {len(checks) - whole} / 123 |" in page
    right = _right(replayed)
    assert f"with the judge on, {right} / 123 ({100 * right / CHECKS:.0f}%) are" in page
    assert f"{model.calls} model calls for 123 checks" in page


def test_the_benchmark_prints_each_questioned_message_and_the_counts(capsys):
    counts = tau.main(["--rules"])
    out = capsys.readouterr().out
    assert counts == {"checks": CHECKS, "right": CHECKS - 11, "wrong": 11, "asked": 0, "agreed": 0}
    assert "75/5  read continues  judged rule (not asked)" in out
    assert f"{CHECKS - 11} / {CHECKS} checks judged against the request as a reader draws it" in out
    with pytest.raises(SystemExit):  # one source of answers, and only one
        tau.main(["--rules", "--transcript", "answers.jsonl"])
