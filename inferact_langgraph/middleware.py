"""``InferActMiddleware``: the InferAct guard as a ``langchain.agents.create_agent`` middleware.

The critic runs inside the model step (``wrap_model_call``): as soon as the actor proposes
critical tool calls, they are judged and the verdicts are written to state with the AI message.
The review runs in ``after_model``: it only reads the checkpointed verdicts and calls
``interrupt()`` for doubtful calls, so resuming never calls the critic again. Earlier feedback
for the same task is put in the actor's context by ``before_agent``. As a last line of defence,
``wrap_tool_call`` refuses to run a critical call that has no clean verdict or approval.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_core.tools import tool
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from inferact_langgraph import critical
    >>> from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic
    >>> @critical
    ... @tool
    ... def buy_now(asin: str) -> str:
    ...     '''Buy a product.'''
    ...     return f"bought {asin}"
    >>> actor = ScriptedChatModel(replies=[
    ...     AIMessage("", tool_calls=[{"name": "buy_now", "args": {"asin": "B1"}, "id": "c1"}]),
    ...     "Done."])
    >>> agent = create_agent(actor, [buy_now], checkpointer=InMemorySaver(),
    ...     middleware=[InferActMiddleware(critic=ScriptedCritic(scores=[0.1]))])
    >>> out = agent.invoke({"messages": [("user", "buy a mug")]},
    ...                    {"configurable": {"thread_id": "m"}})
    >>> out["__interrupt__"][0].value["action_requests"][0]["inferact"]["score"]
    0.1
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from inferact_langgraph.critical import CriticalSpec, critical_spec, resolve_critical_tools
from inferact_langgraph.critics.base import Critic
from inferact_langgraph.gate import (
    InferActGuard,
    InferActStateKeys,
    OnCriticError,
    OnReject,
    is_approved,
    last_ai_message,
    trusted_record,
)
from inferact_langgraph.memory import FeedbackMemory
from inferact_langgraph.review import DECISION_TYPES
from inferact_langgraph.wrap import build_critic

__all__ = ["InferActMiddleware", "InferActState"]


class InferActState(AgentState, InferActStateKeys):
    """``create_agent`` state with the guard's keys (checks, audit, feedback, trial)."""


class InferActMiddleware(AgentMiddleware):
    """Check critical tool calls with InferAct before they run; ask a human when in doubt.

    Args:
        model: The critic's chat model (instance or ``init_chat_model`` string) for InferAct.
        critic: Any critic instead of InferAct on ``model``.
        threshold: InferAct's threshold when built from ``model`` (default 0.5).
        preset: InferAct's prompt preset when built from ``model``.
        cache: ``True`` (in memory) or a verdict store: identical pending calls are not
            checked twice.
        critical: Names of tools to treat as critical, or names mapped to specs; tools marked
            with ``@critical`` are found by themselves.
        on_critic_error: ``"interrupt"`` (default: fail closed), ``"block"`` or ``"allow"``.
        on_reject: ``"continue"`` (default), ``"retry"`` or ``"end"``.
        max_trials: Trials allowed with ``on_reject="retry"``.
        task_extractor: ``state -> str`` giving the user's real task.
        memory: Feedback memory settings; used when the agent has a store.
        allowed_decisions: Decisions offered to the human.
        review_in: ``"after_model"`` (default): one HumanInTheLoopMiddleware-style request per
            AI message, after the model step. ``"tool_call"``: each doubtful call interrupts
            from its own tool task; no node is added to the agent (cheaper on every step),
            several doubtful calls of one message are separate interrupts (resume with
            ``{interrupt_id: decision}``), and an edit is applied to the executed call and
            audited without rewriting the AI message. Only with ``on_reject="continue"``.
    """

    state_schema = InferActState

    def __init__(
        self,
        *,
        model: Any = None,
        critic: Critic | None = None,
        threshold: float | None = None,
        preset: str = "generic",
        cache: Any = None,
        critical: Iterable[str] | Mapping[str, CriticalSpec] | None = None,
        on_critic_error: OnCriticError = "interrupt",
        on_reject: OnReject = "continue",
        max_trials: int = 3,
        task_extractor: Callable[[Mapping[str, Any]], str] | None = None,
        memory: FeedbackMemory | None = None,
        allowed_decisions: Sequence[str] = DECISION_TYPES,
        review_in: Literal["after_model", "tool_call"] = "after_model",
    ) -> None:
        super().__init__()
        if review_in not in ("after_model", "tool_call"):
            raise ValueError(f"review_in must be 'after_model' or 'tool_call', got {review_in!r}")
        if review_in == "tool_call":
            if on_reject != "continue":
                raise ValueError(
                    "review_in='tool_call' supports on_reject='continue' only (a tool call cannot "
                    "end or restart the run); use review_in='after_model' for 'retry' or 'end'"
                )
            # No after_model hook on this class, so create_agent adds no node per model call.
            self.__class__ = _ToolCallReview
        self.review_in = review_in
        if critical is not None and not isinstance(critical, (Mapping, str)):
            critical = list(critical)
        self._named = resolve_critical_tools((), critical)
        self._seen_tools: tuple[Any, ...] | None = None
        self.guard = InferActGuard(
            critic=build_critic(
                model=model, critic=critic, threshold=threshold, preset=preset, cache=cache
            ),
            specs=self._named,
            on_critic_error=on_critic_error,
            on_reject=on_reject,
            max_trials=max_trials,
            task_extractor=task_extractor,
            memory=memory,
            allowed_decisions=allowed_decisions,
        )

    @property
    def name(self) -> str:  # noqa: D102 - one node name stem, like LangChain's middleware
        return "InferActMiddleware"

    # ------------------------------------------------------------------ memory
    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Put earlier feedback for this task in the actor's context (once per thread)."""
        return self.guard.memory_update(state, getattr(runtime, "store", None)) or None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`before_agent`."""
        return await self.guard.amemory_update(state, getattr(runtime, "store", None)) or None

    # ------------------------------------------------------------------ the critic
    def _learn_tools(self, request: ModelRequest) -> None:
        tools = request.tools or []
        key = tuple(getattr(t, "name", None) for t in tools)
        if key == self._seen_tools:  # the same tool set as last time: nothing new to learn
            return
        for tool in tools:
            spec = critical_spec(tool)
            name = getattr(tool, "name", None)
            if spec is not None and name and name not in self.guard.specs:
                self.guard.specs[name] = spec
        self._seen_tools = key

    def _state_to_check(self, request: ModelRequest, response: Any) -> dict[str, Any] | None:
        """The state with the actor's answer, if that answer has a critical call to check."""
        messages = response.result if isinstance(response, ModelResponse) else [response]
        ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        # Cheap test first: most model calls propose no critical call and copy nothing.
        if ai is None or not any(c["name"] in self.guard.specs for c in ai.tool_calls):
            return None
        if ai.id is None:  # verdicts are bound to the message id: give it one before the check
            ai.id = f"inferact-{uuid.uuid4()}"
        state = dict(request.state)
        state["messages"] = [*list(request.state.get("messages") or []), *messages]
        return state if self.guard.needs_check(state) else None

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Call the actor, then judge its critical tool calls and store the verdicts."""
        self._learn_tools(request)
        response = handler(request)
        state = self._state_to_check(request, response)
        if state is None:
            return response
        return _extend(response, self.guard.check(state))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        """Async :meth:`wrap_model_call`; several critical calls are judged concurrently."""
        self._learn_tools(request)
        response = await handler(request)
        state = self._state_to_check(request, response)
        if state is None:
            return response
        return _extend(response, await self.guard.acheck(state))

    # ------------------------------------------------------------------ the gate
    def _finish(self, update: dict[str, Any]) -> dict[str, Any] | None:
        route = update.pop("inferact_route", None)
        if route == "end":
            update["jump_to"] = "end"
        elif route == "retry":
            update["jump_to"] = "model"
        return update or None

    @hook_config(can_jump_to=["model", "end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Ask a human about doubtful critical calls; apply the decisions."""
        update = self.guard.review(state)
        return self._finish(self.guard.save_feedback(update, getattr(runtime, "store", None)))

    @hook_config(can_jump_to=["model", "end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        update = await self.guard.areview(state)
        return self._finish(
            await self.guard.asave_feedback(update, getattr(runtime, "store", None))
        )

    # ------------------------------------------------------------------ last line of defence
    def _refusal(self, request: Any) -> ToolMessage | None:
        call = request.tool_call
        spec = self.guard.specs.get(call["name"]) or critical_spec(getattr(request, "tool", None))
        if spec is None or not spec.applies(call.get("args") or {}):
            return None
        state = request.state or {}
        ai = last_ai_message(state)
        if ai is not None and is_approved(trusted_record(state, ai, call)):
            return None
        return ToolMessage(
            content=f"The call to {call['name']} was not executed: it has no approval from the "
            "critic or a human.",
            tool_call_id=call["id"],
            name=call["name"],
            status="error",
        )

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the tool unless it is a critical call without a clean verdict or approval."""
        return self._refusal(request) or handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async :meth:`wrap_tool_call`."""
        return self._refusal(request) or await handler(request)


class _ToolCallReview(InferActMiddleware):
    """``InferActMiddleware(review_in="tool_call")``: the review runs in the tool task."""

    # Restore the base hooks: create_agent then adds no after_model node.
    after_model = AgentMiddleware.after_model  # type: ignore[assignment]
    aafter_model = AgentMiddleware.aafter_model  # type: ignore[assignment]

    def _one_call_state(self, request: Any) -> dict[str, Any] | None:
        """The state as seen by a review of this call alone, or None if it needs none."""
        call = request.tool_call
        state = request.state or {}
        ai = last_ai_message(state)
        if ai is None or call["name"] not in self.guard.specs:
            return None
        record = trusted_record(state, ai, call)
        if record is None or not record.get("flagged") or record.get("decision"):
            return None
        only = ai.model_copy(
            update={"tool_calls": [c for c in ai.tool_calls if c["id"] == call["id"]]}
        )
        return {**state, "messages": [only if m is ai else m for m in state.get("messages", [])]}

    def _outcome(self, request: Any, update: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """(the call to run, or the answer that replaces it; the state update to keep)."""
        update.pop("inferact_route", None)
        messages = update.pop("messages", [])
        call_id = request.tool_call["id"]
        answer = next(
            (m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id), None
        )
        if answer is not None:
            return answer, update
        edited = next((m for m in messages if isinstance(m, AIMessage)), None)
        if edited is not None:  # an approved edit: run the edited call
            call = next(c for c in edited.tool_calls if c["id"] == call_id)
            return request.override(tool_call=call), update
        return request, update

    @staticmethod
    def _command(result: Any, update: dict[str, Any]) -> Any:
        if isinstance(result, ToolMessage):
            return Command(update={**update, "messages": [result]})
        if isinstance(result, Command) and isinstance(result.update, dict):
            return Command(graph=result.graph, goto=result.goto, update={**update, **result.update})
        return result  # an unusual result: returned as is (the decision is in the checks)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Ask the human about this call if the critic doubted it; then run or answer it."""
        state = self._one_call_state(request)
        if state is None:
            return self._refusal(request) or handler(request)
        update = self.guard.save_feedback(
            self.guard.review(state), getattr(request.runtime, "store", None)
        )
        target, update = self._outcome(request, update)
        if isinstance(target, ToolMessage):
            return self._command(target, update)
        return self._command(handler(target), update)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async :meth:`wrap_tool_call`."""
        state = self._one_call_state(request)
        if state is None:
            return self._refusal(request) or await handler(request)
        update = await self.guard.asave_feedback(
            await self.guard.areview(state), getattr(request.runtime, "store", None)
        )
        target, update = self._outcome(request, update)
        if isinstance(target, ToolMessage):
            return self._command(target, update)
        return self._command(await handler(target), update)


def _extend(response: Any, update: dict[str, Any]) -> Any:
    if not update:
        return response
    if isinstance(response, AIMessage):
        response = ModelResponse(result=[response])
    return ExtendedModelResponse(model_response=response, command=Command(update=update))
