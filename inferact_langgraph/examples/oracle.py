"""ORACLE-scripted critic models for the example environments: offline, never live judgement.

Each model answers a critic's prompt in that critic's own text format, but decides from the
*gold* data of the environment (:meth:`~inferact_langgraph.examples.base.Environment.judge`):
it reads the actions off the prompt (:func:`actions_in`) and asks the environment whether
they are right for the task. For an offline demo, the research harness and tests; anything
that shows their output must say so (see :data:`ORACLE_LABEL`).

Example:
    >>> from inferact_langgraph.examples import WebShopEnv
    >>> chain = 'Action 1: buy_now(asin="B0SHDCUSTM", options={"color": "white"})'
    >>> actions_in(chain)
    [('buy_now', {'asin': 'B0SHDCUSTM', 'options': {'color': 'white'}})]
    >>> reply = baseline_oracle_model(WebShopEnv(), 0, "standard").invoke(chain).content
    >>> reply.splitlines()[0]
    'The answer is: Incorrect'
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from inferact_langgraph.examples.base import Action, Environment
from inferact_langgraph.prompts import NONE_OF_THE_ABOVE, get_preset
from inferact_langgraph.testing import ScriptedChatModel, prompt_text

__all__ = [
    "ORACLE_LABEL",
    "actions_in",
    "baseline_oracle_model",
    "inferact_oracle_model",
    "scripted_reflection_model",
]

#: How the scripted critic model must be described wherever its output is shown.
ORACLE_LABEL = "scripted oracle answers (offline demo) — not live judgement"

_ACTION = re.compile(r"^Action \d+: (\w+)\((.*)\)\s*$", re.M)
_OPTION = re.compile(r"^([A-Z])\. (.*)$", re.M)
_ARG = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_OPTIONS_ARG = re.compile(r"options=(\{.*?\})(?=, \w+=|$)")
# How the verification prompts of the paper's presets introduce the candidate tasks.
_MARKERS = (
    "The candidate user’s instructions are",
    "The candidate questions are as follows:",
    "The candidate tasks are as follows:",
)
# What the Task Inference prompt of each preset calls the tasks it asks for.
_INFERRED_NOUN = {"webshop": "user’s instructions", "hotpotqa": "questions"}


def actions_in(chain: str) -> list[Action]:
    """The tool calls of a rendered action chain, as ``(tool name, arguments)``.

    String arguments are read as written; a JSON object ``options={...}`` (WebShop's chosen
    options) is read as JSON.
    """
    actions: list[Action] = []
    for m in _ACTION.finditer(chain):
        args: dict[str, Any] = dict(_ARG.findall(m.group(2)))
        options = _OPTIONS_ARG.search(m.group(2))
        if options:  # a JSON object argument (WebShop's chosen options)
            with contextlib.suppress(ValueError):  # not JSON after all: the plain arguments
                args["options"] = json.loads(options.group(1))
        actions.append((m.group(1), args))
    return actions


def _find_task(env: Environment, option_text: str) -> int | None:
    low = " ".join(option_text.lower().split())
    for index, text in enumerate(env.task_texts()):
        if " ".join(text.lower().split()) in low:
            return index
    return None


def _norm(text: str) -> str:
    return " ".join(text.split()).lower().rstrip(". ")


def _users_option(
    env: Environment, options: list[tuple[str, str]], actions: Sequence[Action]
) -> tuple[str, int | None] | None:
    """``(label, task index)`` of the option holding the user's request, or None.

    The oracle wrote the inferred options itself, so the user's request is the option that is
    neither one of them nor "None of the above", whatever words the user chose. Its task is the
    known task it names exactly, else the one it asks for in other words (a fuzzy match), else
    None: a request the environment does not know.
    """
    inferred = {_norm(text) for text in env.inferred_tasks(actions)} if actions else set()
    real = [(lab, text) for lab, text in options if _norm(text) != _norm(NONE_OF_THE_ABOVE)]
    candidates = [(lab, text) for lab, text in real if _norm(text) not in inferred]
    pool = candidates or real
    for label, text in pool:
        index = _find_task(env, text)
        if index is not None:
            return label, index
    for label, text in pool:
        index = env.match_task(text)
        if index is not None:
            return label, index
    if len(candidates) == 1:
        return candidates[0][0], None
    return None


def inferact_oracle_model(env: Environment) -> ScriptedChatModel:
    """A model for InferAct's two prompts whose answers are ORACLE-scripted from gold data.

    It answers the Task Inference prompt with the three tasks the environment reads off the
    actions ("The 3 most likely ... are: A. ... B. ... C. ...") and the Task Verification
    prompt in the preset's format (``G1: <label> P1: <p>`` lines, ``A: Completed P_A: <p>``
    for ALFWorld) plus a justification. The option that holds the user's real task gets 0.9
    when the environment judges the actions right for that task, else 0.1. Offline only: not
    live judgement (see :data:`ORACLE_LABEL`).
    """
    completed_format = get_preset(env.preset).answer_format == "alfworld"
    noun = _INFERRED_NOUN.get(env.preset, "tasks")

    def respond(messages: list[BaseMessage]) -> str:
        prompt = prompt_text(messages)
        marker = next((m for m in _MARKERS if m in prompt), None)
        if marker is None:  # Task Inference Unit
            actions = actions_in(prompt)
            inferred = env.inferred_tasks(actions) if actions else []
            inferred = inferred or ["do something", "do something else", "do a third thing"]
            return (
                f"The 3 most likely {noun} are: A. {inferred[0]} B. {inferred[1]} "
                f"C. {inferred[2]}. The reason is: these tasks match the actions taken "
                "(oracle-scripted answer)."
            )
        chain, _, tail = prompt.partition(marker)
        actions = actions_in(chain)
        options = _OPTION.findall(tail)
        found = _users_option(env, options, actions)
        if found is None:
            return "G1: A P1: 0.5\nJustification: the real task is not among the options."
        label, task_index = found
        if task_index is None:  # the user asked for something the gold data does not know
            why = (
                "the user's request matches none of the tasks this offline environment knows, "
                "so nothing vouches for the action"
            )
            line = f"G1: {label} P1: 0.1"
            if completed_format:
                line = f"{label}: Completed P_{label}: 0.1"
            return f"{line}\nJustification: {why} (oracle-scripted answer)."
        judgement = env.judge(task_index, actions)
        ok, why = judgement.correct, judgement.why
        p_true = 0.9 if ok else 0.1
        first = " ".join(env.inferred_tasks(actions)[0].split()).lower()
        others = [lab for lab, text in options if lab != label and text.strip().lower() == first]
        others = others or [
            lab for lab, text in options if lab != label and text.strip() != "None of the above"
        ]
        if completed_format:
            done = "Completed"
            lines = [f"{label}: {done} P_{label}: {p_true}"]
            if others:
                lines.append(f"{others[0]}: {done} P_{others[0]}: {0.2 if ok else 0.8}")
        else:
            lines = [f"G1: {label} P1: {p_true}"]
            if others:
                lines.insert(
                    0 if not ok else 1,
                    f"G{2 if ok else 1}: {others[0]} P{2 if ok else 1}: {0.2 if ok else 0.8}",
                )
                lines = sorted(lines)
        return "\n".join(lines) + f"\nJustification: {why} (oracle-scripted answer)."

    return ScriptedChatModel(responder=respond)


def baseline_oracle_model(env: Environment, task: int, spec: str) -> ScriptedChatModel:
    """An ORACLE-scripted model for the baseline critics, judging against task ``task``.

    For ``standard``, ``self_consistency`` and ``multistep...``: it reads the actions off the
    prompt and answers from the gold data, in the critic's own output format. Offline only;
    not live judgement.
    """

    def respond(messages: list[BaseMessage]) -> str:
        actions = actions_in(prompt_text(messages))
        judgement = env.judge(task, actions) if actions else None
        ok = judgement.correct if judgement else False
        why = judgement.why if judgement else "no action"
        if spec.startswith("multistep"):
            n = max(len(actions), 1)
            steps = [f"Step {i}: 0.99" for i in range(1, n)]
            steps.append(f"Step {n}: {0.9 if ok else 0.05}")
            return "\n".join(steps) + f"\nJustification: {why} (oracle-scripted answer)."
        label = "Correct" if ok else "Incorrect"
        return (
            f"The answer is: {label}\nConfidence: 0.9\n"
            f"Justification: {why} (oracle-scripted answer)."
        )

    return ScriptedChatModel(responder=respond)


def scripted_reflection_model() -> ScriptedChatModel:
    """A scripted self-reflection on the last action of a chain (offline, not a model's)."""

    def respond(messages: list[BaseMessage]) -> str:
        actions = actions_in(prompt_text(messages))
        last = actions[-1] if actions else ("the critical action", {})
        args = ", ".join(f"{k}={v!r}" for k, v in last[1].items())
        return (
            f"My previous attempt ended with {last[0]}({args}), which the user judged "
            "incorrect. I probably settled for a near-match instead of checking every "
            "requirement of the task. Plan: re-read the task, check each requirement against "
            "what I observe, and only take the final action when all of them hold."
        )

    return ScriptedChatModel(responder=respond)
