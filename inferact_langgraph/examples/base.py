"""The base class of the example environments: what an environment knows about its tasks.

An :class:`Environment` owns its tasks and everything that is decided from their gold data:
what the user asks for (:meth:`~Environment.task_text`, :meth:`~Environment.prompt`), the gold
outcome (:meth:`~Environment.gold_text`), whether a critical call is right for a task
(:meth:`~Environment.action_is_correct`, :meth:`~Environment.judge`), whether an episode
succeeded (:meth:`~Environment.succeeded`, read from the conversation) and the simulated
human's feedback (:meth:`~Environment.oracle_feedback`). The research harness
(``inferact trials``), the demo and the oracle critic models ask an environment these
questions; none of them looks at which environment it is.

Example:
    >>> from inferact_langgraph.examples import AlfWorldEnv, WebShopEnv
    >>> env = WebShopEnv()
    >>> env.name, env.task_text(0)[:30]
    ('webshop', 'i need 66 inch by 66 inch blac')
    >>> env.action_is_correct(0, "buy_now", {"asin": "B0SHDCUSTM", "options": {}})
    False
    >>> AlfWorldEnv().judge(0, [("heat", {"obj": "egg 1", "appliance": "microwave 1"})])
    Judgement(correct=True, why="the agent does 'heat' on the egg, as the task requires")
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool

from inferact_langgraph.examples._common import (
    Ledger,
    episode_calls,
    match_task,
    runtime_messages,
    runtime_thread_id,
)
from inferact_langgraph.testing import ScriptedChatModel

__all__ = ["Action", "Environment", "Judgement"]

Action = tuple[str, dict[str, Any]]
"""A tool call as ``(tool name, arguments)``."""


@dataclass(frozen=True)
class Judgement:
    """Whether a trajectory's critical actions are right for a task, judged from gold data.

    Attributes:
        correct: Every critical action is right for the task (and there is at least one).
        why: One sentence saying why, as a critic's justification would.
    """

    correct: bool
    why: str


class Environment(ABC):
    """An offline example environment: tasks with gold data, tools, a ledger and a judge.

    A subclass loads :attr:`tasks`, names the field holding a task's text in
    :attr:`task_text_field`, builds its tools in ``_make_tools`` and answers the gold-data
    questions below; its constructor ends with ``self._start(ledger)``.

    Attributes:
        name: The environment's name in the registry and the CLI (``"webshop"``).
        preset: The InferAct prompt preset written for it.
        system_prompt: The actor's system prompt.
        critical_tools: The names of the tools whose calls are critical.
        tool_descriptions: What each critical tool does, as shown to the human.
        tasks: The environment's tasks, as loaded from its data.
        ledger: Where executed critical calls are recorded: a list or a callable.
        tools: The LangChain tools an agent is given.
    """

    name: ClassVar[str]
    preset: ClassVar[str] = "generic"
    system_prompt: ClassVar[str] = "Think step by step (ReAct)."
    critical_tools: ClassVar[tuple[str, ...]] = ()
    tool_descriptions: ClassVar[Mapping[str, str]] = {}
    #: The field of a task that says what the user asks for.
    task_text_field: ClassVar[str] = "instruction"

    tasks: list[dict[str, Any]]
    ledger: Ledger
    tools: list[BaseTool]

    def _start(self, ledger: Ledger | None) -> None:
        """Check and set the ledger, then build the tools (once the data is loaded)."""
        if ledger is not None and not (isinstance(ledger, list) or callable(ledger)):
            raise ValueError("ledger must be a list or a callable")
        self.ledger = [] if ledger is None else ledger
        # Calls made outside a graph (no conversation to replay), per thread id.
        self._sessions: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.tools = self._make_tools()

    @abstractmethod
    def _make_tools(self) -> list[BaseTool]:
        """The environment's LangChain tools (called once its data is loaded)."""

    # -- tasks ---------------------------------------------------------------------------------

    def task(self, index: int) -> dict[str, Any]:
        """The task at ``index`` (its fields: see :attr:`tasks`)."""
        return self.tasks[index]

    def task_text(self, index: int) -> str:
        """What the user asks for in task ``index``, without any framing."""
        return str(self.tasks[index][self.task_text_field])

    def task_texts(self) -> list[str]:
        """What a user asks for in each task, in order."""
        return [self.task_text(index) for index in range(len(self.tasks))]

    def match_task(self, request: str) -> int | None:
        """The index of the task a user's request asks for (a fuzzy match), or None.

        See :func:`inferact_langgraph.examples._common.match_task`.
        """
        return match_task(request, self.task_texts())

    @abstractmethod
    def prompt(self, index: int) -> str:
        """The user's message that starts an episode of task ``index``."""

    @abstractmethod
    def risk(self, tool_name: str, args: dict[str, Any]) -> str:
        """The risk level of a tool call, from its arguments."""

    # -- gold data -----------------------------------------------------------------------------

    @abstractmethod
    def gold_text(self, index: int) -> str:
        """The gold outcome of task ``index`` in words (what a right trajectory achieves)."""

    @abstractmethod
    def action_is_correct(self, index: int, tool: str, args: Mapping[str, Any]) -> bool:
        """The gold label of one call: would it be right for task ``index``?

        Calls to tools that are not critical are always right.
        """

    def judge(self, index: int, actions: Sequence[Action]) -> Judgement:
        """Whether the critical actions among ``actions`` are right for task ``index``.

        They are when there is at least one and each is right (:meth:`action_is_correct`).
        """
        critical = [(tool, dict(args)) for tool, args in actions if tool in self.critical_tools]
        correct = bool(critical) and all(
            self.action_is_correct(index, tool, args) for tool, args in critical
        )
        return Judgement(correct, self.explain(index, critical, correct))

    @abstractmethod
    def explain(self, index: int, critical: Sequence[Action], correct: bool) -> str:
        """Why the critical actions are (or are not) right for task ``index``, in one line."""

    @abstractmethod
    def inferred_tasks(self, actions: Sequence[Action]) -> list[str]:
        """Three tasks the actions suggest, as a critic model reading them might infer."""

    @abstractmethod
    def succeeded(self, index: int, messages: Sequence[BaseMessage]) -> bool:
        """Whether the current episode of ``messages`` completed task ``index``.

        Read from the executed tool calls of the episode (what really ran), never from what
        the actor says it did.
        """

    @abstractmethod
    def oracle_feedback(self, index: int) -> str:
        """A simulated human's feedback on a wrong attempt, written from the gold data."""

    @abstractmethod
    def scripted_actor(self, task_index: int | None = None) -> ScriptedChatModel:
        """The environment's scripted ReAct actor (errs on trial 1, corrects after feedback).

        With ``task_index=None`` it plays the task the user's newest message asks for.
        """

    # -- ledger and sessions -------------------------------------------------------------------

    def ledger_records(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The records in the ledger (when it is a list), optionally of one thread."""
        if not isinstance(self.ledger, list):
            return []
        return [r for r in self.ledger if thread_id is None or r.get("thread_id") == thread_id]

    def reset(self, thread_id: str = "default") -> None:
        """Forget the direct tool calls of ``thread_id``.

        Inside a graph the environment's state is read from the conversation, so a new
        episode (a new user message) starts afresh without a reset.
        """
        self._sessions.pop(thread_id, None)

    def _history(self, runtime: Any) -> list[tuple[str, dict[str, Any]]]:
        """The ``(tool name, args)`` calls of the current episode (or of a direct session)."""
        messages = runtime_messages(runtime)
        if messages is not None:
            return [(c.name, c.args) for c in episode_calls(messages)]
        return list(self._sessions.get(runtime_thread_id(runtime), []))

    def _remember(self, runtime: Any, name: str, args: dict[str, Any]) -> None:
        """Keep a direct call (outside a graph) in the session of its thread."""
        if runtime_messages(runtime) is None:
            self._sessions.setdefault(runtime_thread_id(runtime), []).append((name, args))
