"""Dollar costs of checks, from langchain-community's OpenAI price table.

``langchain_community.callbacks.openai_info`` keeps list prices per 1k prompt and completion
tokens for OpenAI's models; the evaluation report uses it to print what each critic's checks
cost. Models it does not price (other providers, local servers) get no dollar figure rather
than a guess.

Example:
    >>> price = dollar_cost("openai:gpt-4o", input_tokens=1000, output_tokens=1000)
    >>> round(price, 4)
    0.0125
    >>> dollar_cost("anthropic:claude-x", input_tokens=1000, output_tokens=0) is None
    True
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["dollar_cost", "priced_model"]

#: Hosts whose bills the table describes; any other --base-url is not OpenAI's price list.
OPENAI_HOSTS = ("api.openai.com",)


def priced_model(model: str | None, base_url: str | None = None) -> str | None:
    """The OpenAI model name to price, or ``None`` when the table does not apply.

    Example:
        >>> priced_model("openai:gpt-4o-mini"), priced_model("gpt-4o", "http://localhost:8000/v1")
        ('gpt-4o-mini', None)
    """
    if not model:
        return None
    if base_url and not any(host in base_url for host in OPENAI_HOSTS):
        return None  # a local or third-party server: its own prices, if any
    provider, _, name = model.partition(":")
    if not name:
        provider, name = "openai", provider
    return name if provider == "openai" else None


def _table() -> Any:
    with warnings.catch_warnings():  # the package warns that it is being sunset
        warnings.simplefilter("ignore")
        from langchain_community.callbacks import openai_info
    return openai_info


def dollar_cost(
    model: str | None, *, input_tokens: int, output_tokens: int, base_url: str | None = None
) -> float | None:
    """List-price cost of the tokens on ``model`` (``None`` if the table has no price)."""
    name = priced_model(model, base_url)
    if name is None:
        return None
    info = _table()
    try:
        prompt = info.get_openai_token_cost_for_model(name, input_tokens)
        completion = info.get_openai_token_cost_for_model(
            name, output_tokens, token_type=info.TokenType.COMPLETION
        )
    except (ValueError, KeyError):
        return None
    return float(prompt + completion)
