"""The registry of the example environments and the builder of their guarded graphs.

:data:`ENVIRONMENTS` names the environments of the paper's three tasks; :func:`make_env` makes
one, :func:`make_scripted_actor` its scripted ReAct actor and :func:`oracle_critic_model` an
ORACLE-scripted critic model that decides from the gold data (offline, never live judgement;
anything that shows its output must say so, see :data:`ORACLE_LABEL`). What an environment
knows about its tasks (task text, gold, correctness, success, feedback) it answers itself:
see :class:`~inferact_langgraph.examples.base.Environment`.

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

import os
from collections.abc import Callable, Mapping
from typing import Any

from langchain.agents import create_agent

from inferact_langgraph import CriticalSpec, with_inferact
from inferact_langgraph.critics import InferActCritic
from inferact_langgraph.examples.alfworld import AlfWorldEnv
from inferact_langgraph.examples.base import Environment
from inferact_langgraph.examples.hotpotqa import HotPotQAEnv
from inferact_langgraph.examples.oracle import ORACLE_LABEL, inferact_oracle_model
from inferact_langgraph.examples.webshop import WebShopEnv
from inferact_langgraph.testing import ScriptedChatModel

__all__ = [
    "ENVIRONMENTS",
    "MODEL_VARIABLES",
    "ORACLE_LABEL",
    "SYSTEM_PROMPTS",
    "build_env_graph",
    "graph_builder",
    "make_env",
    "make_scripted_actor",
    "models_from_environment",
    "oracle_critic_model",
    "oracle_feedback",
]

_ENV_CLASSES: dict[str, type[Environment]] = {
    cls.name: cls for cls in (WebShopEnv, HotPotQAEnv, AlfWorldEnv)
}

ENVIRONMENTS: tuple[str, ...] = tuple(_ENV_CLASSES)

#: The actor's system prompt in each environment.
SYSTEM_PROMPTS: dict[str, str] = {name: cls.system_prompt for name, cls in _ENV_CLASSES.items()}


def _check_name(name: str) -> str:
    if name not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {name!r}; choose one of {', '.join(ENVIRONMENTS)}")
    return name


def make_env(name: str) -> Environment:
    """A fresh environment: ``webshop``, ``hotpotqa`` or ``alfworld``.

    Example:
        >>> make_env("hotpotqa").critical_tools
        ('finish',)
    """
    return _ENV_CLASSES[_check_name(name)]()


def make_scripted_actor(
    name: str, env: Environment, task_index: int | None
) -> ScriptedChatModel:
    """The environment's scripted ReAct actor (errs on trial 1, corrects after feedback).

    With ``task_index=None`` it plays the task the user's message asks for.
    """
    _check_name(name)
    return env.scripted_actor(task_index)


# ---------------------------------------------------------------------------- oracle models
def oracle_critic_model(name: str, env: Environment | None = None) -> ScriptedChatModel:
    """A critic model whose answers are ORACLE-scripted from the environment's gold data.

    See :func:`~inferact_langgraph.examples.oracle.inferact_oracle_model`: the option that
    holds the user's real task gets 0.9 when the environment judges the trajectory's critical
    actions right for it (webshop: the gold product and options; hotpotqa: the gold answer;
    alfworld: the task's operation on the task's object), else 0.1. Offline demo only: it is
    not live judgement (see :data:`ORACLE_LABEL`).
    """
    _check_name(name)
    return inferact_oracle_model(env if env is not None else make_env(name))


def oracle_feedback(name: str, env: Environment, task_index: int) -> str:
    """A simulated human's natural-language feedback from the gold answer (paper A.5 style)."""
    _check_name(name)
    return env.oracle_feedback(task_index)


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
    env: Environment | None = None,
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
    actor = actor_model if actor_model is not None else env.scripted_actor(task_index)
    if critic is None:
        oracle = critic_model is None
        model = inferact_oracle_model(env) if oracle else critic_model
        # The oracle's scripted scores mean what they say: no calibration fitted on a real
        # model's answers applies to them. A live critic model keeps the preset's default.
        critic = InferActCritic(
            model=model,
            preset=env.preset,
            threshold=threshold,
            calibration=None if oracle else "default",
        )
        if oracle:  # it answers InferAct's prompts only: the rule alone draws the requests
            options.setdefault("request_boundaries", "rules")

    def risk_of(tool: str) -> Callable[[Mapping[str, Any]], Any]:
        return lambda args: env.risk(tool, dict(args))

    specs = {
        tool: CriticalSpec(
            risk=risk_of(tool),
            description=env.tool_descriptions.get(tool, f"{tool} is critical."),
        )
        for tool in env.critical_tools
    }
    agent = create_agent(actor, env.tools, system_prompt=env.system_prompt)
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
        "``inferact_langgraph.examples.registry.build_env_graph`` (actor_model, critic_model, "
        "critic, checkpointer, store, task_index, and with_inferact's options); "
        "INFERACT_ACTOR_MODEL / INFERACT_CRITIC_MODEL / INFERACT_BASE_URL / INFERACT_API_KEY "
        "make it live."
    )
    return build_graph
