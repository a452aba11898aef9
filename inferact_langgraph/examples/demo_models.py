"""Offline builders for the demo graphs: the scripted actor and an ORACLE-scripted critic model.

Nothing here is live judgement. :func:`oracle_critic_model` returns a
:class:`~inferact_langgraph.testing.ScriptedChatModel` that answers InferAct's two prompts
(task inference, task verification) in the paper's text formats, but decides the probabilities
by looking up the *gold* answer of the task in the environment's data: it is an oracle, for an
offline demo and for tests. Anything that shows its output must say so (see
:data:`ORACLE_LABEL`).

:func:`build_env_graph` is the shared builder behind ``graphs/webshop.py``,
``graphs/hotpotqa.py`` and ``graphs/alfworld.py`` (and ``inferact demo``), so the CLI works
after a non-editable install, where ``graphs/`` is not available.

Example:
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> env, graph = build_env_graph("webshop", checkpointer=InMemorySaver())
    >>> cfg = {"configurable": {"thread_id": "doc"}}
    >>> out = graph.invoke({"messages": [("user", env.prompt(0))]}, cfg)
    >>> request = out["__interrupt__"][0].value["action_requests"][0]
    >>> request["name"], request["inferact"]["score"] < request["inferact"]["threshold"]
    ('buy_now', True)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage

from inferact_langgraph import CriticalSpec, with_inferact
from inferact_langgraph.critics import InferActCritic
from inferact_langgraph.examples import (
    AlfWorldEnv,
    HotPotQAEnv,
    WebShopEnv,
    alfworld_actor,
    hotpotqa_actor,
    normalize_answer,
    webshop_actor,
)
from inferact_langgraph.prompts import NONE_OF_THE_ABOVE
from inferact_langgraph.testing import ScriptedChatModel, prompt_text

__all__ = [
    "ENVIRONMENTS",
    "MODEL_VARIABLES",
    "ORACLE_LABEL",
    "SYSTEM_PROMPTS",
    "build_env_graph",
    "make_env",
    "make_scripted_actor",
    "models_from_environment",
    "oracle_critic_model",
    "oracle_feedback",
]

ENVIRONMENTS: tuple[str, ...] = ("webshop", "hotpotqa", "alfworld")

#: How the scripted critic model must be described wherever its output is shown.
ORACLE_LABEL = "scripted oracle answers (offline demo) — not live judgement"

SYSTEM_PROMPTS: dict[str, str] = {
    "webshop": "You are a shopping assistant. Use search, click and buy_now to buy exactly what "
    "the user asks for. Think step by step (ReAct).",
    "hotpotqa": "You answer multi-hop questions with search(entity), lookup(keyword) and "
    "finish(answer). Think step by step (ReAct).",
    "alfworld": "You act in a household with go_to, open, take, put, heat, cool and clean to "
    "complete the user's task. Think step by step (ReAct).",
}

_DESCRIPTIONS: dict[str, str] = {
    "buy_now": "Buys a product: money is spent and the order cannot be undone.",
    "finish": "Submits the final answer: a wrong answer cannot be taken back.",
    "heat": "Heats an object: changes its physical state irreversibly.",
    "cool": "Cools an object: changes its physical state irreversibly.",
    "clean": "Cleans an object with water.",
}

_ENV_CLASSES: dict[str, Callable[[], Any]] = {
    "webshop": WebShopEnv,
    "hotpotqa": HotPotQAEnv,
    "alfworld": AlfWorldEnv,
}
_ACTORS: dict[str, Callable[..., ScriptedChatModel]] = {
    "webshop": webshop_actor,
    "hotpotqa": hotpotqa_actor,
    "alfworld": alfworld_actor,
}


def _check_name(name: str) -> str:
    if name not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {name!r}; choose one of {', '.join(ENVIRONMENTS)}")
    return name


def make_env(name: str) -> Any:
    """A fresh environment: ``webshop``, ``hotpotqa`` or ``alfworld``."""
    return _ENV_CLASSES[_check_name(name)]()


def make_scripted_actor(name: str, env: Any, task_index: int | None) -> ScriptedChatModel:
    """The environment's scripted ReAct actor (errs on trial 1, corrects after feedback).

    With ``task_index=None`` it plays the task the user's message asks for.
    """
    return _ACTORS[_check_name(name)](env, task_index)


# ---------------------------------------------------------------------------- oracle critic
_ACTION = re.compile(r"^Action \d+: (\w+)\((.*)\)\s*$", re.M)
_OPTION = re.compile(r"^([A-Z])\. (.*)$", re.M)
_ARG = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_MARKERS = (
    "The candidate user’s instructions are",
    "The candidate questions are as follows:",
    "The candidate tasks are as follows:",
)


_OPTIONS_ARG = re.compile(r"options=(\{.*?\})(?=, \w+=|$)")


Action = tuple[str, dict[str, Any]]
"""A tool call read off a prompt: ``(tool name, arguments)``."""


def _actions(chain: str) -> list[Action]:
    actions: list[Action] = []
    for m in _ACTION.finditer(chain):
        args: dict[str, Any] = dict(_ARG.findall(m.group(2)))
        options = _OPTIONS_ARG.search(m.group(2))
        if options:  # a JSON object argument (WebShop's chosen options)
            with contextlib.suppress(ValueError):  # not JSON after all: the plain arguments
                args["options"] = json.loads(options.group(1))
        actions.append((m.group(1), args))
    return actions


def _find_task(env: Any, option_text: str) -> int | None:
    low = " ".join(option_text.lower().split())
    for index, text in enumerate(env.task_texts()):
        if " ".join(text.lower().split()) in low:
            return index
    return None


def _norm(text: str) -> str:
    return " ".join(text.split()).lower().rstrip(". ")


def _users_option(
    name: str, env: Any, options: list[tuple[str, str]], actions: list[Action]
) -> tuple[str, int | None] | None:
    """``(label, task index)`` of the option holding the user's request, or None.

    The oracle wrote the inferred options itself, so the user's request is the option that is
    neither one of them nor "None of the above", whatever words the user chose. Its task is the
    known task it names exactly, else the one it asks for in other words (a fuzzy match), else
    None: a request the environment does not know.
    """
    inferred = {_norm(text) for text in _judge(name, env, 0, actions)[2]} if actions else set()
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


def _judge(
    name: str, env: Any, task_index: int, actions: list[Action]
) -> tuple[bool, str, list[str]]:
    """(is the trajectory right for the task?, why, three tasks the actions suggest)."""
    task = env.task(task_index)
    if name == "webshop":
        buys = [a for n, a in actions if n == "buy_now"]
        asin = buys[-1].get("asin", "").upper() if buys else ""
        product = env.products.get(asin)
        chosen = buys[-1].get("options") if buys else None
        chosen = {str(k).lower(): str(v).lower() for k, v in (chosen or {}).items()}
        wanted = {
            str(k).lower(): str(v).lower() for k, v in task["gold"].get("options", {}).items()
        }
        ok = asin == task["gold"]["asin"] and all(chosen.get(k) == v for k, v in wanted.items())
        title = product["title"].lower() if product else "a product"
        budget = float(product["price"]) + 10 if product else 50
        category = product["category"] if product else "item"
        inferred = [
            f"i need {title}, and price lower than {budget:.2f} dollars",
            f"i am looking for {category if product else 'an item'} that can be cut to any size",
            f"i want a cheap {category} in white",
        ]
        why = (
            f"the bought product {asin} is the requested one"
            if ok
            else f"the bought product {asin} ({title}) does not meet the explicit requirements; "
            f"the instruction asks for: {task['instruction']}"
        )
        return ok, why, inferred
    if name == "hotpotqa":
        finishes = [a for n, a in actions if n == "finish"]
        answer = finishes[-1].get("answer", "") if finishes else ""
        ok = normalize_answer(answer) == normalize_answer(task["gold_answer"])
        searched = [a.get("entity", "") for n, a in actions if n == "search"]
        topic = " and ".join(searched[:2]) or "this topic"
        inferred = [
            f"Which one is the answer {answer!s} about {topic}?",
            f"What is {answer} known for?",
            f"Where is {searched[0] if searched else answer} based?",
        ]
        why = (
            f"the trajectory's answer '{answer}' answers the question"
            if ok
            else f"the answer '{answer}' is not supported as the answer to: {task['question']}"
        )
        return ok, why, inferred
    treated = [(n, a.get("obj", "")) for n, a in actions if n in ("heat", "cool", "clean")]
    ok = bool(treated) and all(
        op == task["operation"] and obj.split(" ")[0] == task["object"] for op, obj in treated
    )
    op, obj = treated[-1] if treated else ("move", "something")
    kind = obj.split(" ")[0] if obj else "object"
    inferred = [
        f"{op} some {kind} and put it in fridge",
        f"{op} some {kind} and put it in countertop",
        f"put a {op}ed {kind} in cabinet",
    ]
    why = (
        f"the agent does '{op}' on the {kind}, as the task requires"
        if ok
        else f"the agent does '{op}' on the {kind}, but the task is: {task['instruction']}"
    )
    return ok, why, inferred


def oracle_critic_model(name: str, env: Any | None = None) -> ScriptedChatModel:
    """A critic model whose answers are ORACLE-scripted from the environment's gold data.

    It answers the Task Inference prompt with three tasks read off the actions
    ("The 3 most likely ... are: A. ... B. ... C. ...") and the Task Verification prompt with
    ``G1: <label> P1: <p>`` lines (``A: Completed P_A: <p>`` for ALFWorld) plus a
    justification. The option that holds the user's real task gets 0.9 when the trajectory's
    critical action matches the gold answer (webshop: the gold asin; hotpotqa: the gold answer;
    alfworld: the task's operation on the task's object), else 0.1. Offline demo only: it is
    not live judgement (see :data:`ORACLE_LABEL`).
    """
    name = _check_name(name)
    env = env if env is not None else make_env(name)

    def respond(messages: list[BaseMessage]) -> str:
        prompt = prompt_text(messages)
        marker = next((m for m in _MARKERS if m in prompt), None)
        if marker is None:  # Task Inference Unit
            actions = _actions(prompt)
            _, why, inferred = _judge(name, env, 0, actions) if actions else (False, "", [])
            inferred = inferred or ["do something", "do something else", "do a third thing"]
            noun = {"webshop": "user’s instructions", "hotpotqa": "questions"}.get(name, "tasks")
            return (
                f"The 3 most likely {noun} are: A. {inferred[0]} B. {inferred[1]} "
                f"C. {inferred[2]}. The reason is: these tasks match the actions taken "
                "(oracle-scripted answer)."
            )
        chain, _, tail = prompt.partition(marker)
        actions = _actions(chain)
        options = _OPTION.findall(tail)
        found = _users_option(name, env, options, actions)
        if found is None:
            return "G1: A P1: 0.5\nJustification: the real task is not among the options."
        label, task_index = found
        if task_index is None:  # the user asked for something the gold data does not know
            why = (
                "the user's request matches none of the tasks this offline environment knows, "
                "so nothing vouches for the action"
            )
            line = f"G1: {label} P1: 0.1"
            if name == "alfworld":
                line = f"{label}: Completed P_{label}: 0.1"
            return f"{line}\nJustification: {why} (oracle-scripted answer)."
        ok, why, inferred = _judge(name, env, task_index, actions)
        p_true = 0.9 if ok else 0.1
        first = " ".join(inferred[0].split()).lower()
        others = [lab for lab, text in options if lab != label and text.strip().lower() == first]
        others = others or [
            lab for lab, text in options if lab != label and text.strip() != "None of the above"
        ]
        if name == "alfworld":
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


def oracle_feedback(name: str, env: Any, task_index: int) -> str:
    """A simulated human's natural-language feedback from the gold answer (paper A.5 style)."""
    task = env.task(task_index)
    if name == "webshop":
        gold = env.products[task["gold"]["asin"]]
        options = ", ".join(f"{k}: {v}" for k, v in task["gold"]["options"].items())
        return (
            f"Rejected: that product does not match my instruction. I asked for "
            f"'{task['instruction']}'. Please buy {gold['title']} ({gold['asin']}"
            f"{', ' + options if options else ''}) instead."
        )
    if name == "hotpotqa":
        return (
            f"Rejected: that answer is wrong. Check both entities again; the correct answer "
            f"to '{task['question']}' is {task['gold_answer']}."
        )
    return (
        f"Rejected: do not {task['distractor']['operation']} the {task['object']}. "
        f"The task is to {task['instruction']}: use the right appliance to "
        f"{task['operation']} it."
    )


# ---------------------------------------------------------------------------- graphs
def build_env_graph(
    name: str,
    *,
    actor_model: Any = None,
    critic_model: Any = None,
    critic: Any = None,
    checkpointer: Any = None,
    store: Any = None,
    task_index: int | None = None,
    env: Any = None,
    threshold: float = 0.5,
    **options: Any,
) -> tuple[Any, Any]:
    """``(env, graph)``: the environment's ReAct agent guarded by InferAct.

    Defaults are offline: the scripted actor and InferAct on :func:`oracle_critic_model`.
    The scripted actor plays task ``task_index``, or with ``None`` (the default) the task the
    user's message asks for, in their own words; it answers plainly, without tools, when the
    message asks for nothing the environment knows. ``options`` go to
    :func:`~inferact_langgraph.with_inferact`.
    """
    name = _check_name(name)
    env = env if env is not None else make_env(name)
    actor = actor_model if actor_model is not None else make_scripted_actor(name, env, task_index)
    if critic is None:
        model = critic_model if critic_model is not None else oracle_critic_model(name, env)
        critic = InferActCritic(model=model, preset=name, threshold=threshold)

    def risk_of(tool: str) -> Callable[[Mapping[str, Any]], Any]:
        return lambda args: env.risk(tool, dict(args))

    specs = {
        tool: CriticalSpec(
            risk=risk_of(tool),
            description=_DESCRIPTIONS.get(tool, f"{tool} is critical."),
        )
        for tool in env.critical_tools
    }
    agent = create_agent(actor, env.tools, system_prompt=SYSTEM_PROMPTS[name])
    graph = with_inferact(
        agent,
        critic=critic,
        critical=specs,
        checkpointer=checkpointer,
        store=store,
        name=f"inferact_{name}",
        **options,
    )
    return env, graph


#: The environment variables that make the served example graphs live (see
#: :func:`models_from_environment`).
MODEL_VARIABLES: tuple[str, ...] = (
    "INFERACT_ACTOR_MODEL",
    "INFERACT_CRITIC_MODEL",
    "INFERACT_BASE_URL",
    "INFERACT_API_KEY",
)


def models_from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The live actor and critic models named by environment variables (empty when offline).

    ``INFERACT_ACTOR_MODEL`` and ``INFERACT_CRITIC_MODEL`` each name a model as
    ``init_chat_model`` reads it (``"openai:gpt-4o-mini"``, ``"anthropic:claude-..."``), or,
    with ``INFERACT_BASE_URL``, the model name an OpenAI-compatible server knows (vLLM,
    llama.cpp, Ollama ...); ``INFERACT_API_KEY`` is the key for either (else the provider's
    usual variable). Each one that is unset stays offline: the scripted actor, or the oracle
    critic model.

    Returns:
        ``{"actor_model": ..., "critic_model": ...}``, with only the keys that are set.

    Raises:
        ValueError: ``INFERACT_BASE_URL`` or ``INFERACT_API_KEY`` is set without a model to
            use it, or a model cannot be built (unknown provider, missing package).

    Example:
        >>> models_from_environment({})
        {}
        >>> models_from_environment({"INFERACT_BASE_URL": "http://127.0.0.1:8000/v1"})
        Traceback (most recent call last):
        ...
        ValueError: INFERACT_BASE_URL / INFERACT_API_KEY are set but no model is named: ...
    """
    from inferact_langgraph import _factory as factory

    environ = os.environ if environ is None else environ
    read = {key: (environ.get(key) or "").strip() for key in MODEL_VARIABLES}
    base_url, api_key = read["INFERACT_BASE_URL"] or None, read["INFERACT_API_KEY"] or None
    wanted = {
        "actor_model": read["INFERACT_ACTOR_MODEL"],
        "critic_model": read["INFERACT_CRITIC_MODEL"],
    }
    if (base_url or api_key) and not any(wanted.values()):
        raise ValueError(
            "INFERACT_BASE_URL / INFERACT_API_KEY are set but no model is named: set "
            "INFERACT_ACTOR_MODEL and/or INFERACT_CRITIC_MODEL (e.g. openai:gpt-4o-mini, or "
            "the model name your OpenAI-compatible server knows)"
        )
    models: dict[str, Any] = {}
    for key, model in wanted.items():
        if not model:
            continue
        variable = f"INFERACT_{key.split('_')[0].upper()}_MODEL"
        try:
            models[key] = factory.build_model(model, base_url=base_url, api_key=api_key)
        except factory.ModelSetupError as error:
            raise ValueError(f"{variable}={model!r}: {error}") from None
    return models


def graph_builder(name: str) -> Callable[..., Any]:
    """The ``build_graph(*, actor_model=None, critic_model=None, ...)`` of one example graph.

    ``graphs/<name>.py`` exports it and ``graph = build_graph()`` for ``langgraph.json``. The
    graph takes the user's message as the task (``task_index=None``). Models named by the
    environment (:func:`models_from_environment`) are used unless passed explicitly.

    Example:
        >>> build = graph_builder("hotpotqa")
        >>> "inferact_critic" in build().get_graph().nodes
        True
    """
    name = _check_name(name)

    def build_graph(**kwargs: Any) -> Any:
        live = models_from_environment()
        if kwargs.get("critic") is not None:  # a whole critic given: no critic model to set
            live.pop("critic_model", None)
        return build_env_graph(name, **{**live, **kwargs})[1]

    build_graph.__name__ = "build_graph"
    build_graph.__doc__ = (
        f"The {name} agent guarded by InferAct; keyword arguments as for "
        "``inferact_langgraph.examples.demo_models.build_env_graph`` (actor_model, critic_model, "
        "critic, checkpointer, store, task_index, and with_inferact's options); "
        "INFERACT_ACTOR_MODEL / INFERACT_CRITIC_MODEL / INFERACT_BASE_URL / INFERACT_API_KEY "
        "make it live."
    )
    return build_graph
