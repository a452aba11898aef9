"""Offline, deterministic environments for the paper's three tasks, with scripted actors.

A fourth, :class:`AccountEnv`, holds requests of several parts whose first critical call is
only step 1 (for the ``generic`` presets). Each is an :class:`Environment`: it answers what a
task asks, its gold outcome, whether a call is right for it, whether an episode succeeded and
what a simulated human would say (``registry`` builds their guarded graphs, ``oracle`` their
gold-data critic models).

Each environment ships its data, LangChain tools (one of them critical), a ledger of side
effects, success checks and a :func:`scripted_actor` that plays a ReAct policy: it makes a
plausible mistake on a first trial and corrects itself once the history holds feedback.

Example:
    >>> from langchain.agents import create_agent
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> env = WebShopEnv()
    >>> agent = create_agent(webshop_actor(env, 0), tools=env.tools, checkpointer=InMemorySaver())
    >>> _ = agent.invoke({"messages": [("user", env.prompt(0))]},
    ...                  {"configurable": {"thread_id": "trial-1"}})
    >>> env.ledger[-1]["asin"], env.reward(env.ledger[-1], 0)
    ('B0SHDCUSTM', 0.75)
"""

from inferact_langgraph.examples.account import AccountEnv
from inferact_langgraph.examples.account import scripted_actor as account_actor
from inferact_langgraph.examples.alfworld import AlfWorldEnv
from inferact_langgraph.examples.alfworld import scripted_actor as alfworld_actor
from inferact_langgraph.examples.base import Environment, Judgement
from inferact_langgraph.examples.hotpotqa import HotPotQAEnv, normalize_answer
from inferact_langgraph.examples.hotpotqa import scripted_actor as hotpotqa_actor
from inferact_langgraph.examples.webshop import WebShopEnv
from inferact_langgraph.examples.webshop import scripted_actor as webshop_actor

__all__ = [
    "AccountEnv",
    "AlfWorldEnv",
    "Environment",
    "HotPotQAEnv",
    "Judgement",
    "WebShopEnv",
    "account_actor",
    "alfworld_actor",
    "hotpotqa_actor",
    "normalize_answer",
    "webshop_actor",
]
