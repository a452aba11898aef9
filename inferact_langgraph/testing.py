"""Scripted chat models for tests, benchmarks and offline demos.

:class:`ScriptedChatModel` answers from a list of replies or from a function of the prompt, can
emit tool calls, counts its calls, and can wait a fixed delay before answering (asynchronously,
so that concurrency can be measured). It supports ``bind_tools`` and
``with_structured_output``-free use, so it drives ``create_agent`` and the critics alike.

Example:
    >>> from langchain_core.messages import AIMessage
    >>> model = ScriptedChatModel(replies=["hello", AIMessage("", tool_calls=[
    ...     {"name": "buy", "args": {"asin": "B01"}, "id": "c1"}])])
    >>> model.invoke("hi").content
    'hello'
    >>> model.invoke("again").tool_calls[0]["name"], model.calls
    ('buy', 2)
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from inferact_langgraph.critics.base import Critic, Usage, Verdict
from inferact_langgraph.trajectory import Trajectory

__all__ = ["ScriptedChatModel", "ScriptedCritic", "prompt_text"]

Reply = str | AIMessage | BaseException
Responder = Callable[[list[BaseMessage]], Reply]


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    """All message contents joined, for responders that answer by inspecting the prompt."""
    parts = []
    for message in messages:
        content = message.content
        parts.append(content if isinstance(content, str) else str(content))
    return "\n".join(parts)


def _new_id(index: int) -> str:
    # Unique across processes: a message id that repeats would replace an earlier message.
    return f"scripted-{index}-{uuid.uuid4().hex[:12]}"


class ScriptedChatModel(BaseChatModel):
    """A chat model whose answers are scripted.

    Args:
        replies: Answers given in order (a string, an ``AIMessage`` with tool calls, or an
            exception to raise). When exhausted, the last one repeats if ``cycle`` is False and
            the list restarts if it is True.
        responder: Alternatively, a function from the prompt messages to a reply.
        delay: Seconds to wait before each answer (``asyncio.sleep`` on the async path).
        cycle: Restart ``replies`` when exhausted.

    Attributes:
        calls: How many times the model was called.
        prompts: The prompt messages of every call, in order.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: list[Any] = Field(default_factory=list)
    responder: Callable[[list[BaseMessage]], Any] | None = None
    delay: float = 0.0
    cycle: bool = False
    _calls: int = PrivateAttr(default=0)
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> int:
        """Number of calls so far."""
        return self._calls

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """The messages each call received."""
        return self._prompts

    def reset(self) -> None:
        """Forget the calls made so far (the script restarts)."""
        with self._lock:
            self._calls = 0
            self._prompts = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Accept tools and ignore them: the script decides which tools are called."""
        return self

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            index = self._calls
            self._calls += 1
            self._prompts.append(list(messages))
        if self.responder is not None:
            reply = self.responder(list(messages))
        elif self.replies:
            if self.cycle:
                reply = self.replies[index % len(self.replies)]
            else:
                reply = self.replies[min(index, len(self.replies) - 1)]
        else:
            raise RuntimeError("ScriptedChatModel has neither replies nor a responder")
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, AIMessage):
            return reply.model_copy(update={"id": reply.id or _new_id(index)})
        return AIMessage(content=str(reply), id=_new_id(index))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])


class ScriptedCritic(Critic):
    """A critic whose scores are scripted: for testing graphs without any model.

    Args:
        scores: Scores returned in order (the last repeats); an exception instance is raised.
        score_fn: Alternatively, ``trajectory -> score``.
        threshold: Scores below it are flagged.
        delay: Seconds to wait (asynchronously) before answering.

    Attributes:
        calls: How many checks ran.
        trajectories: The trajectories it was asked to judge.

    Example:
        >>> from inferact_langgraph.trajectory import Step, Trajectory
        >>> critic = ScriptedCritic(scores=[0.1, 0.9])
        >>> t = Trajectory("t", (Step("buy"),))
        >>> critic.evaluate(t).flagged, critic.evaluate(t).flagged, critic.calls
        (True, False, 2)
    """

    name = "scripted"

    def __init__(
        self,
        *,
        scores: list[float | BaseException] | None = None,
        score_fn: Callable[[Trajectory], float] | None = None,
        threshold: float = 0.5,
        delay: float = 0.0,
    ) -> None:
        super().__init__(model=None, threshold=threshold)
        if not scores and score_fn is None:
            raise ValueError("ScriptedCritic needs scores=[...] or score_fn=")
        self.scores = list(scores or [])
        self.score_fn = score_fn
        self.delay = delay
        self.calls = 0
        self.trajectories: list[Trajectory] = []
        self._lock = threading.Lock()

    def cache_fingerprint(self) -> Any:
        """What determines its answers (not its call counters), for verdict caches."""
        return {
            "scores": [repr(s) for s in self.scores],
            "score_fn": getattr(self.score_fn, "__qualname__", repr(self.score_fn)),
            "threshold": self.threshold,
        }

    async def _aevaluate(self, trajectory: Trajectory, *, risk: Any = None) -> Verdict:
        with self._lock:
            index = self.calls
            self.calls += 1
            self.trajectories.append(trajectory)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.score_fn is not None:
            score: Any = self.score_fn(trajectory)
        else:
            score = self.scores[min(index, len(self.scores) - 1)]
        if isinstance(score, BaseException):
            raise score
        return self.verdict(
            score=score,
            usage=Usage(),
            inferred_tasks=["(scripted)"],
            justification=f"scripted score {score}",
            risk=risk,
        )
