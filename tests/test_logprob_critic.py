"""LogprobCritic (InferAct's 2025 version) with scripted critic models (offline)."""

from __future__ import annotations

import asyncio
import math

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from inferact_langgraph.critics import LogprobCritic, make_critic
from inferact_langgraph.critics.logprob import parse_entailment, score_from_logprobs
from inferact_langgraph.errors import CriticModelError, CriticParseError, CriticTimeoutError
from inferact_langgraph.testing import ScriptedChatModel, prompt_text
from inferact_langgraph.trajectory import Step, Trajectory

TASK = "buy a red ceramic mug under 20 dollars"
INFERRED = "buy a blue mug"
THOUGHT = "SECRET-THOUGHT the user wants a red ceramic mug"


def is_inference(prompt: str) -> bool:
    return "Theory-of-Mind" in prompt


def entry(token: str, p: float, top: list[tuple[str, float]] | None = None) -> dict:
    return {
        "token": token,
        "logprob": math.log(p),
        "bytes": list(token.encode()),
        "top_logprobs": [
            {"token": t, "logprob": math.log(q), "bytes": list(t.encode())} for t, q in (top or [])
        ],
    }


def logprob_message(content: list[dict], text: str = "A") -> AIMessage:
    return AIMessage(text, response_metadata={"logprobs": {"content": content, "refusal": None}})


def judge(reply, *, inferred: str = INFERRED):
    """A fake critic model: infers ``inferred``, answers the entailment question with ``reply``."""

    def respond(messages):
        if is_inference(prompt_text(messages)):
            return f"The 1 most likely user’s tasks are: A. {inferred}\nThe reason is: it searched."
        return reply

    return respond


def trajectory() -> Trajectory:
    return Trajectory(
        TASK, (Step("search(q=mug)", "B01 blue mug $12; B02 red mug $15"), Step("buy(B01)"))
    )


# ---------------------------------------------------------------------------- prompts
def test_task_is_absent_from_inference_prompt_and_present_in_entailment_prompt():
    model = ScriptedChatModel(responder=judge(logprob_message([entry("A", 0.9)])))
    LogprobCritic(model=model).evaluate(trajectory())
    inference, entailment = (prompt_text(p) for p in model.prompts)
    assert is_inference(inference) and TASK not in inference
    assert "1 most likely" in inference  # one task, the preset's own inference prompt
    assert "buy(B01)" in inference
    assert TASK in entailment and INFERRED in entailment
    assert "A. True" in entailment and "B. False" in entailment
    assert "single letter" in entailment


def test_webshop_preset_masks_search_queries_in_inference():
    model = ScriptedChatModel(responder=judge("Answer: A\nConfidence: 0.8"))
    traj = Trajectory(TASK, (Step("search[red ceramic mug]", "results"), Step("click[Buy Now]")))
    LogprobCritic(model=model, preset="webshop").evaluate(traj)
    inference = prompt_text(model.prompts[0])
    assert "red ceramic mug" not in inference and "click[Buy Now]" in inference


def test_thoughts_never_reach_the_critic():
    messages = [
        HumanMessage(TASK),
        AIMessage(
            THOUGHT,
            additional_kwargs={"reasoning_content": THOUGHT},
            tool_calls=[{"name": "search", "args": {"q": "mug"}, "id": "c1"}],
        ),
        ToolMessage("B01 blue mug", tool_call_id="c1"),
        AIMessage(THOUGHT, tool_calls=[{"name": "buy", "args": {"asin": "B01"}, "id": "c2"}]),
    ]
    model = ScriptedChatModel(responder=judge("Answer: B\nConfidence: 0.9"))
    verdict = LogprobCritic(model=model).evaluate(Trajectory.from_messages(messages))
    for prompt in model.prompts:
        assert "SECRET-THOUGHT" not in prompt_text(prompt)
    assert TASK not in prompt_text(model.prompts[0])
    assert verdict.score == pytest.approx(0.1) and verdict.flagged


def test_risk_aware_adds_the_presets_risk_sentence():
    model = ScriptedChatModel(responder=judge("Answer: A"))
    critic = LogprobCritic(model=model)
    critic.evaluate(trajectory(), risk="high")
    assert critic.preset_config.risk in prompt_text(model.prompts[1])
    assert critic.preset_config.risk not in prompt_text(model.prompts[0])


# ---------------------------------------------------------------------------- logprob scoring
def test_logprob_scoring_a_08_b_02():
    msg = logprob_message([entry("A", 0.8, [("A", 0.8), ("B", 0.2)])])
    verdict = LogprobCritic(model=ScriptedChatModel(responder=judge(msg))).evaluate(trajectory())
    assert verdict.score == pytest.approx(0.8)
    assert verdict.raw["scoring"] == "logprobs"
    assert verdict.inferred_tasks == [INFERRED]
    assert verdict.option_probs == pytest.approx({"A": 0.8, "B": 0.2})
    assert verdict.usage.model_calls == 2
    assert not verdict.flagged


def test_logprob_scoring_normalises_over_answer_letters_only():
    # mass on other tokens is ignored: 0.3 / (0.3 + 0.1) = 0.75
    msg = logprob_message([entry("A", 0.3, [("A", 0.3), ("C", 0.6), ("B", 0.1)])])
    verdict = LogprobCritic(model=ScriptedChatModel(responder=judge(msg))).evaluate(trajectory())
    assert verdict.score == pytest.approx(0.75)


def test_leading_space_and_prefix_tokens():
    content = [
        entry("Answer", 0.99, [("Answer", 0.99)]),
        entry(":", 0.99, [(":", 0.99)]),
        entry(" B", 0.6, [(" B", 0.6), (" A", 0.4)]),
        entry("\n", 0.9),
        entry("Confidence", 0.9),
    ]
    msg = logprob_message(content, text="Answer: B\nConfidence: 0.6")
    verdict = LogprobCritic(model=ScriptedChatModel(responder=judge(msg))).evaluate(trajectory())
    assert verdict.score == pytest.approx(0.4)
    assert verdict.raw["scoring"] == "logprobs" and verdict.flagged


def test_true_false_words_and_case_and_punctuation():
    top = [("True", 0.5), (" true", 0.2), ("FALSE.", 0.2), ("(b)", 0.1)]
    p, entries = score_from_logprobs([entry("True", 0.5, top)])
    assert p == pytest.approx(0.7)
    assert len(entries) == 4


def test_repeated_tokens_accumulate_not_overwrite():
    # "A" and " A" (and a second "A") normalise alike: all of them count
    top = [("A", 0.3), (" A", 0.2), ("A", 0.1), ("B", 0.3), (" b", 0.1)]
    msg = logprob_message([entry("A", 0.3, top)])
    verdict = LogprobCritic(model=ScriptedChatModel(responder=judge(msg))).evaluate(trajectory())
    assert verdict.score == pytest.approx(0.6)


def test_chosen_token_counts_when_top_logprobs_omits_it():
    p, _ = score_from_logprobs([entry("A", 0.2, [("B", 0.6), ("C", 0.2)])])
    assert p == pytest.approx(0.25)
    p, _ = score_from_logprobs([entry(" A", 0.9)])  # no top_logprobs at all
    assert p == pytest.approx(1.0)


def test_letters_absent_from_top_logprobs_fall_back_to_verbalized():
    # the answer token's own logprob is unusable and no alternative is a letter
    content = [{"token": "A", "logprob": None, "top_logprobs": [{"token": "C", "logprob": -0.1}]}]
    msg = logprob_message(content, text="Answer: A\nConfidence: 0.7")
    verdict = LogprobCritic(model=ScriptedChatModel(responder=judge(msg))).evaluate(trajectory())
    assert verdict.raw["scoring"] == "verbalized"
    assert verdict.score == pytest.approx(0.7)


def test_no_answer_token_and_no_verbalized_answer_is_a_parse_error():
    msg = logprob_message([entry("Maybe", 0.9, [("Maybe", 0.9), ("Perhaps", 0.1)])], text="Maybe")
    critic = LogprobCritic(model=ScriptedChatModel(responder=judge(msg)))
    with pytest.raises(CriticParseError) as info:
        critic.evaluate(trajectory())
    assert info.value.raw == "Maybe" and info.value.stage == "entailment"


def test_logprobs_false_ignores_returned_logprobs():
    msg = logprob_message([entry("A", 0.8, [("A", 0.8), ("B", 0.2)])], text="A\nConfidence: 0.6")
    critic = LogprobCritic(model=ScriptedChatModel(responder=judge(msg)), logprobs=False)
    verdict = critic.evaluate(trajectory())
    assert verdict.raw["scoring"] == "verbalized" and verdict.score == pytest.approx(0.6)


# ---------------------------------------------------------------------------- verbalized
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Answer: A\nConfidence: 0.8", 0.8),
        ("Answer: B\nConfidence: 0.8", 0.2),
        ("**Answer:** (A)\n**Confidence:** 90%", 0.9),
        ("Answer: True\nConfidence: .75", 0.75),
        ("B", 0.0),
        ("A. True", 1.0),
        ("answer: b\nconfidence: 0.3", 0.3),  # B with a low confidence reads as P(True) 0.3
    ],
)
def test_verbalized_fallback(answer, expected):
    verdict = LogprobCritic(model=ScriptedChatModel(responder=judge(answer))).evaluate(trajectory())
    assert verdict.raw["scoring"] == "verbalized"
    assert verdict.score == pytest.approx(expected)
    assert verdict.raw["entailment"] == answer


@pytest.mark.parametrize(
    "answer", ["A mug was bought.", "I cannot tell", "Answer: A\nConfidence: 7.5"]
)
def test_verbalized_unparseable_raises_with_raw(answer):
    with pytest.raises(CriticParseError) as info:
        parse_entailment(answer)
    assert info.value.raw == answer


def test_inference_parse_error_is_typed():
    model = ScriptedChatModel(replies=["", "Answer: A"])
    with pytest.raises(CriticParseError) as info:
        LogprobCritic(model=model).evaluate(trajectory())
    assert info.value.stage == "inference"


# ---------------------------------------------------------------------------- binding
# ChatOpenAI's constructor probes a socket (blocked here, handled by the client): no network use.
@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_chat_openai_is_bound_with_logprobs():
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    critic = LogprobCritic(model=ChatOpenAI(model="gpt-4o-mini", api_key="sk-test"))
    assert critic.uses_logprobs()
    runnable = critic.entailment_runnable()
    assert runnable.kwargs == {"logprobs": True, "top_logprobs": 5}
    payload = runnable.bound._get_request_payload([HumanMessage("hi")], **runnable.kwargs)
    assert payload["logprobs"] is True and payload["top_logprobs"] == 5


def test_scripted_model_is_not_bound_unless_asked():
    model = ScriptedChatModel(replies=["x"])
    assert not LogprobCritic(model=model).uses_logprobs()
    assert LogprobCritic(model=model).entailment_runnable() is model
    forced = LogprobCritic(model=model, logprobs=True, top_logprobs=3).entailment_runnable()
    assert forced.kwargs == {"logprobs": True, "top_logprobs": 3}


def test_forced_binding_reaches_the_model():
    seen = {}

    class Recording(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.update(kwargs)
            return super()._generate(messages, stop, run_manager, **kwargs)

    model = Recording(responder=judge("Answer: A\nConfidence: 0.9"))
    LogprobCritic(model=model, logprobs=True).evaluate(trajectory())
    assert seen == {"logprobs": True, "top_logprobs": 5}


@pytest.mark.parametrize("kwargs", [{"top_logprobs": 0}, {"top_logprobs": 21}, {"logprobs": "yes"}])
def test_invalid_options(kwargs):
    with pytest.raises(ValueError):
        LogprobCritic(model=None, **kwargs)


# ---------------------------------------------------------------------------- interface
def test_make_critic_logprob():
    msg = logprob_message([entry("A", 0.8, [("A", 0.8), ("B", 0.2)])])
    critic = make_critic("logprob", model=ScriptedChatModel(responder=judge(msg)), threshold=0.9)
    assert isinstance(critic, LogprobCritic) and critic.name == "logprob"
    verdict = critic.evaluate(trajectory())
    assert verdict.critic == "logprob" and verdict.score == pytest.approx(0.8) and verdict.flagged


def test_async_matches_sync():
    msg = logprob_message([entry(" A", 0.8, [(" A", 0.8), (" B", 0.2)])])
    critic = LogprobCritic(model=ScriptedChatModel(responder=judge(msg)))
    sync = critic.evaluate(trajectory())
    async_ = asyncio.run(critic.aevaluate(trajectory()))
    assert sync.score == pytest.approx(async_.score) == pytest.approx(0.8)
    assert sync.raw == async_.raw


def test_sync_evaluate_inside_a_running_loop():
    critic = LogprobCritic(model=ScriptedChatModel(responder=judge("Answer: A\nConfidence: 0.9")))

    async def main():
        return critic.evaluate(trajectory())

    assert asyncio.run(main()).score == pytest.approx(0.9)


def test_model_errors_are_typed():
    boom = ScriptedChatModel(responder=judge(RuntimeError("rate limited")))
    with pytest.raises(CriticModelError) as info:
        LogprobCritic(model=boom).evaluate(trajectory())
    assert info.value.stage == "entailment"
    slow = ScriptedChatModel(responder=judge("Answer: A"), delay=0.5)
    with pytest.raises(CriticTimeoutError):
        asyncio.run(LogprobCritic(model=slow, timeout=0.05).aevaluate(trajectory()))


def test_no_model_is_a_critic_error():
    from inferact_langgraph.errors import CriticError

    with pytest.raises(CriticError):
        LogprobCritic(model=None).evaluate(trajectory())
