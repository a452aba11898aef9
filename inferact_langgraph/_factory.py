"""Build the critic model and the critics of an evaluation from command-line style specs.

Example:
    >>> model = build_model("openai:gpt-4o", base_url="http://localhost:8000/v1", api_key="x")
    >>> type(model).__name__, model.model_name, model.openai_api_base
    ('ChatOpenAI', 'gpt-4o', 'http://localhost:8000/v1')
    >>> build_model("openai:m", base_url="http://localhost:8000/v1", timeout=30).request_timeout
    30.0
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pydantic import SecretStr

from inferact_langgraph._redact import redact, url_secrets
from inferact_langgraph.critics import Critic, make_critic

__all__ = ["ModelSetupError", "build_critics", "build_model"]


class ModelSetupError(ValueError):
    """The critic model or a critic cannot be built from the given options."""


def build_model(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    **kwargs: Any,
) -> Any:
    """A chat model from an ``init_chat_model`` string, or for an OpenAI-compatible server.

    Args:
        model: ``"provider:name"`` (``"openai:gpt-4o"``) as ``init_chat_model`` reads it.
            With ``base_url``, the part after ``openai:`` (or the whole string) is the model
            name the server knows.
        base_url: An OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama, LM Studio ...).
        api_key: Its key; defaults to ``$OPENAI_API_KEY``, else a placeholder (local servers
            usually need none).
        timeout: Seconds the model's HTTP client waits for an answer (``None``: the client's
            default). Give the critics the same ``timeout=``: theirs bounds each call
            whatever the client does; the client's closes the connection too.
        **kwargs: Passed to the model's constructor.

    Raises:
        ModelSetupError: Unknown provider, missing integration package or missing credentials.
    """
    if not model or not model.strip():
        raise ModelSetupError("--model must name a model, e.g. openai:gpt-4o")
    if timeout is not None:
        kwargs["timeout"] = timeout
    try:
        if base_url:
            from langchain_openai import ChatOpenAI

            name = model.split(":", 1)[1] if model.startswith("openai:") else model
            key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
            return ChatOpenAI(model=name, base_url=base_url, api_key=SecretStr(key), **kwargs)
        from langchain.chat_models import init_chat_model

        if api_key:
            kwargs.setdefault("api_key", api_key)
        return init_chat_model(model, **kwargs)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        known = {api_key or ""} | url_secrets(base_url or "")
        raise ModelSetupError(f"cannot build the model {model!r}: {redact(first, known)}") from exc


def build_critics(specs: Sequence[str], *, model: Any, **kwargs: Any) -> dict[str, Critic]:
    """One critic per spec (``inferact``, ``multistep:product`` ...), named by its spec.

    Args:
        specs: Critic specs as ``make_critic`` reads them; each at most once.
        model: The chat model shared by all critics.
        **kwargs: Passed to ``make_critic`` (``preset``, ``risk_aware``, ``timeout`` ...).

    Raises:
        ModelSetupError: No spec, a repeated spec, an unknown one, or bad critic options.
    """
    if not specs:
        raise ModelSetupError("give at least one --critic (e.g. --critic inferact)")
    repeated = sorted({s for s in specs if list(specs).count(s) > 1})
    if repeated:
        raise ModelSetupError(f"critic given more than once: {', '.join(repeated)}")
    # The evaluation measures raw scores (and fits its own calibrations on them), never the
    # shipped default calibration, unless a calibration is given.
    kwargs.setdefault("calibration", None)
    critics: dict[str, Critic] = {}
    for spec in specs:
        try:
            critics[spec] = make_critic(spec, model=model, **kwargs)
        except (ValueError, TypeError, KeyError) as exc:
            raise ModelSetupError(f"critic {spec!r}: {exc}") from exc
    return critics
