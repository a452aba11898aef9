"""``InferActMiddleware``: the InferAct guard as a ``langchain.agents.create_agent`` middleware.

The critic runs inside the model step (``wrap_model_call``): as soon as the actor proposes
critical tool calls, they are judged and the verdicts are written to state with the AI message.
The review runs in ``after_model``: it only reads the checkpointed verdicts and calls
``interrupt()`` for doubtful calls, so resuming never calls the critic again. This user's earlier
feedback on the task is loaded once per request by ``before_agent`` into a private state key and
added to the system message of the actor's model requests (never written to the messages). As a
last line of defence,
``wrap_tool_call`` refuses to run a critical call that has no clean verdict or approval.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_core.messages import AIMessage
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from inferact_langgraph import critical
    >>> from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic
    >>> @critical  # a plain function becomes a critical tool
    ... def pay(amount: int) -> str:
    ...     '''Pay an amount.'''
    ...     return f"paid {amount}"
    >>> actor = ScriptedChatModel(replies=[
    ...     AIMessage("", tool_calls=[{"name": "pay", "args": {"amount": 5}, "id": "p1"}]), "ok"])
    >>> doubtful = InferActMiddleware(critic=ScriptedCritic(scores=[0.1]))
    >>> agent = create_agent(actor, [pay], middleware=[doubtful], checkpointer=InMemorySaver())
    >>> out = agent.invoke({"messages": [("user", "pay 5")]},
    ...                    {"configurable": {"thread_id": "m"}})
    >>> out["__interrupt__"][0].value["action_requests"][0]["inferact"]["score"]
    0.1
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, get_args

from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command
from typing_extensions import Unpack

from inferact_langgraph.errors import ResumeError, ToolTaskResumeError, UnauthorizedCriticalCall
from inferact_langgraph.guard.arguments import GuardArguments, critic_from, options_from
from inferact_langgraph.guard.authorization import issue, permitted
from inferact_langgraph.guard.binding import is_approved, with_unique_call_ids
from inferact_langgraph.guard.core import InferActGuard, run_config
from inferact_langgraph.guard.marks import resolve_critical_tools
from inferact_langgraph.guard.memory import memory_text, system_message_with
from inferact_langgraph.guard.provenance import mark_tool_output
from inferact_langgraph.guard.state import AUDIT, CHECKS, ROUTE, InferActState, StateView

__all__ = ["InferActMiddleware", "InferActState", "ReviewIn"]

ReviewIn = Literal["after_model", "tool_call"]
"""Where a doubtful call is reviewed: after the model step (batched) or in its tool task."""


class InferActMiddleware(AgentMiddleware):
    """Check critical tool calls with InferAct before they run; ask a human when in doubt.

    Args:
        review_in: ``"after_model"`` (default): one HumanInTheLoopMiddleware-style request per
            AI message, after the model step. ``"tool_call"``: each doubtful call interrupts
            from its own tool task; no node is added to the agent (cheaper on every step),
            several doubtful calls of one message are separate interrupts (resume with
            ``{interrupt_id: decision}``), and an edit is applied to the executed call and
            audited without rewriting the AI message. Only with ``on_reject="continue"``.
        **arguments: The critic (``model=`` or ``critic=``, ``threshold``, ``preset``,
            ``cache``, ``calibration``), the ``critical`` tools (tools marked ``@critical``
            are found by themselves) and the policy (``on_critic_error``, ``on_reject``,
            ``max_trials``, ``scope``, ``task_extractor``, ``thought_tools``,
            ``request_boundaries``, ``memory``, ``memory_namespace``, ``allowed_decisions``,
            ``spot_check``, ``spot_check_seed``, ``labels``, or ``options=``), as
            ``with_inferact`` takes them: see
            :class:`~inferact_langgraph.guard.arguments.GuardArguments`.

    Whatever the mode, ``wrap_tool_call`` is where the guard is enforced: a critical call runs
    only with a verdict or a decision bound to exactly that call.
    """

    state_schema = InferActState

    def __new__(cls, *args: Any, review_in: ReviewIn = "after_model", **kwargs: Any) -> Any:
        """Create the middleware of the class that implements ``review_in``."""
        # create_agent adds an after_model node for every class that defines the hook, so the
        # tool_call mode is the subclass without it (chosen here, never swapped afterwards).
        if cls is InferActMiddleware and review_in == "tool_call":
            cls = _ToolCallReview
        return super().__new__(cls)

    def __init__(
        self, *, review_in: ReviewIn = "after_model", **arguments: Unpack[GuardArguments]
    ) -> None:
        super().__init__()
        if review_in not in get_args(ReviewIn):
            raise ValueError(f"review_in must be 'after_model' or 'tool_call', got {review_in!r}")
        options = options_from(arguments, caller="InferActMiddleware")
        if review_in == "tool_call" and options.on_reject != "continue":
            raise ValueError(
                "review_in='tool_call' supports on_reject='continue' only (a tool call cannot "
                "end or restart the run); use review_in='after_model' for 'retry' or 'end'"
            )
        self.review_in = review_in
        self._seen_tools: tuple[Any, ...] | None = None
        self.guard = InferActGuard(
            critic=critic_from(arguments),
            specs=resolve_critical_tools((), arguments.get("critical")),
            options=options,
        )

    @property
    def name(self) -> str:  # noqa: D102 - one node name stem, like LangChain's middleware
        return "InferActMiddleware"

    # ------------------------------------------------------------------ memory
    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Close a review the user skipped by sending a new message; load earlier feedback.

        The memory is read from the store once per request (when the task in scope changes)
        and kept in the private key ``inferact_memory``; model calls only read that key.
        """
        return self.guard.start_run(state, getattr(runtime, "store", None), run_config()) or None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`before_agent`."""
        store = getattr(runtime, "store", None)
        return await self.guard.astart_run(state, store, run_config()) or None

    # ------------------------------------------------------------------ the critic
    def _learn_tools(self, tools: Sequence[Any] | None) -> None:
        tools = tools or []
        key = tuple(getattr(t, "name", None) for t in tools)
        if key == self._seen_tools:  # the same tool set as last time: nothing new to learn
            return
        self.guard.learn_tools(tools)
        self._seen_tools = key

    def _state_to_check(self, request: ModelRequest, response: Any) -> StateView | None:
        """The view of the state with the actor's answer, if it has a critical call to check."""
        messages = response.result if isinstance(response, ModelResponse) else [response]
        ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        # Cheap test first: most model calls propose no critical call and copy nothing.
        if ai is None or not any(c["name"] in self.guard.specs for c in ai.tool_calls):
            return None
        if ai.id is None:  # verdicts are bound to the message id: give it one before the check
            ai.id = f"inferact-{uuid.uuid4()}"
        earlier = list(request.state.get("messages") or [])
        unique = with_unique_call_ids(ai, earlier)
        if unique is not ai:  # reused / duplicate / missing ids: unique ones before any check
            ai.tool_calls = unique.tool_calls
        view = StateView.read({**request.state, "messages": [*earlier, *messages]})
        return view if self.guard.critic_step.needs_check(view) else None

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        """Call the actor (given earlier feedback), then judge its critical calls."""
        self._learn_tools(request.tools)
        response = handler(_with_memory(request))
        state = self._state_to_check(request, response)
        if state is None:
            return response
        return _extend(response, self.guard.critic_step.check(state))

    # Off-path cost: the async hooks are plain functions that return an awaitable.
    # create_agent wraps every wrap hook in langsmith's ``traceable``; for an ``async def``
    # that wrapper runs its bookkeeping in a worker thread, twice a call, even with tracing
    # off; for a plain function it runs inline.
    # Everything is awaited by the caller as before (LangChain's chains ``await`` the result).
    # With LangSmith tracing on, the hook's own span closes when it returns the awaitable;
    # the model and tool runs it wraps are still traced, under the step instead of the hook.
    def awrap_model_call(  # type: ignore[override]
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Awaitable[Any]:
        """Async :meth:`wrap_model_call`; several critical calls are judged concurrently.

        Returns the awaitable of the step (see the comment above on why it is not ``async``).
        """
        self._learn_tools(request.tools)
        return self._amodel_call(request, handler)

    async def _amodel_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        response = await handler(_with_memory(request))
        state = self._state_to_check(request, response)
        if state is None:
            return response
        return _extend(response, await self.guard.critic_step.acheck(state))

    # ------------------------------------------------------------------ the gate
    @staticmethod
    def _finish(update: dict[str, Any]) -> dict[str, Any] | None:
        route = update.pop(ROUTE, None)
        if route == "end":
            update["jump_to"] = "end"
        elif route == "retry":
            update["jump_to"] = "model"
        # route "review": the edited call is reviewed again in its tool task (a new interrupt)
        return update or None

    @staticmethod
    def _nothing_to_review(state: Any) -> bool:
        """Cheap test (no copy): the last AI message has no call with a record to review.

        Driven by the checkpointed records, not by the specs: a process that resumes the
        review may never have seen the tools.
        """
        checks = state.get(CHECKS)
        if not checks:
            return True
        for message in reversed(state.get("messages") or ()):
            if isinstance(message, AIMessage):
                return not any(c.get("id") in checks for c in message.tool_calls)
        return True

    @hook_config(can_jump_to=["model", "end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Ask a human about doubtful critical calls; apply the decisions."""
        if self._nothing_to_review(state):
            return None
        outcome = self.guard.review(state)
        store = getattr(runtime, "store", None)
        return self._finish(self.guard.finish_review(outcome, store, run_config(), state))

    @hook_config(can_jump_to=["model", "end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        if self._nothing_to_review(state):
            return None
        outcome = await self.guard.areview(state)
        store = getattr(runtime, "store", None)
        update = await self.guard.afinish_review(outcome, store, run_config(), state)
        return self._finish(update)

    # ------------------------------------------------------------------ the enforcement point
    def _decide(self, request: Any, permit: Any = None) -> tuple[str, Any, Any]:
        """What to do with a tool call: run it (with its authorization), review it, refuse it.

        Returns ``("run", request, authorization)``, ``("review", None, None)`` or
        ``("refuse", answer, None)``; ``permit`` is the guard's ``apermit`` answer, when awaited.
        """
        call = request.tool_call
        if not self.guard.critic_step.is_critical(call, request.tool):
            return "run", request, self.guard.exempt(call, request.tool)
        tools = getattr(getattr(request, "runtime", None), "tools", None)
        if tools and not self.guard.tools:  # a resuming process learns them here
            self.guard.learn_tools(tools)
        state = request.state or {}
        auth, reason = permit or self.guard.permit(state, call)
        if reason is None:
            return "run", self._locked(request), auth
        if any(self.guard.protocol.to_review(state, only=call.get("id"))):
            return "review", None, None  # bound to this call and doubted: the human decides here
        return "refuse", self.guard.protocol.refusal(call, reason), None

    def _locked(self, request: Any) -> Any:
        """The request with its tool locked, when only ``critical=[...]`` names it."""
        tool = self.guard.locked(request.tool)
        return request if tool is request.tool else request.override(tool=tool)

    def _run(self, request: Any, target: Any, auth: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the tool with its authorization; a refusal by the tool itself is answered."""
        try:
            with permitted(auth):  # the tool itself consumes it, once
                return mark_tool_output(handler(target))
        except UnauthorizedCriticalCall as exc:
            return self.guard.protocol.refusal(request.tool_call, exc.reason)

    async def _arun(
        self, request: Any, target: Any, auth: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        try:
            with permitted(auth):
                return mark_tool_output(await handler(target))
        except UnauthorizedCriticalCall as exc:
            return self.guard.protocol.refusal(request.tool_call, exc.reason)

    @staticmethod
    def _issued(outcome: Any, call_id: str) -> Any:
        """The authorization a review's approval gives the call (``None`` without one)."""
        record = outcome.checks.get(call_id)
        return issue(record) if is_approved(record) else None

    def _outcome(
        self, request: Any, outcome: Any, update: dict[str, Any]
    ) -> tuple[Any, dict[str, Any]]:
        """(the request to run, or the answer that replaces it; the state update to keep)."""
        update.pop(ROUTE, None)
        messages = update.pop("messages", [])
        call = request.tool_call
        answer = next(
            (m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call["id"]),
            None,
        )
        if answer is not None:
            return answer, update
        if outcome.route == "review":  # an edit the critic still doubts: not run, say why
            edited = outcome.edits.get(call["id"], call)
            record = outcome.checks.get(call["id"], {})
            reason = (
                f"the edited call {edited['name']}({edited['args']}) was doubted by the critic "
                f"again (score {record.get('score')}); propose it again to have it reviewed"
            )
            refusal = self.guard.protocol.refusal(edited, reason)
            return refusal.update["messages"][0], {
                **update,
                AUDIT: [
                    *update.get(AUDIT, []),
                    *refusal.update[AUDIT],
                ],
            }
        edited = outcome.edits.get(call["id"])
        if edited is not None:  # an approved edit: run the edited call, as the tool it names
            tool = self.guard.tools.get(edited["name"], request.tool)
            return request.override(tool_call=edited, tool=tool), update
        return request, update

    @staticmethod
    def _command(result: Any, update: dict[str, Any]) -> Any:
        if isinstance(result, ToolMessage):
            return Command(update={**update, "messages": [result]})
        if isinstance(result, Command) and isinstance(result.update, dict):
            return Command(graph=result.graph, goto=result.goto, update={**update, **result.update})
        return result  # an unusual result: returned as is (the decision is in the checks)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the tool only with a bound verdict or approval; review bound doubts here."""
        verdict, target, auth = self._decide(request)
        if verdict == "run":
            if auth is not None:
                return self._run(request, target, auth, handler)
            # Every tool's Command (critical or not): its human messages leave marked as the
            # tool's, so none of them is ever taken as the user's request (requests.is_request).
            return mark_tool_output(handler(target))
        if verdict == "refuse":
            return target
        try:
            outcome = self.guard.review(request.state, only=request.tool_call["id"])
        except ResumeError as exc:
            raise _past_retries(exc) from None
        store = getattr(request.runtime, "store", None)
        update = self.guard.finish_review(outcome, store, run_config(), request.state)
        target, update = self._outcome(request, outcome, update)
        if isinstance(target, ToolMessage):
            return self._command(target, update)
        auth = self._issued(outcome, request.tool_call["id"])
        return self._command(self._run(request, self._locked(target), auth, handler), update)

    def awrap_tool_call(  # type: ignore[override]
        self, request: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Awaitable[Any]:
        """Async :meth:`wrap_tool_call`; returns the awaitable (see :meth:`awrap_model_call`)."""
        if self.guard.critic_step.is_critical(request.tool_call, request.tool):
            return self._acritical_tool_call(request, handler)
        if (auth := self.guard.exempt(request.tool_call, request.tool)) is not None:
            return self._arun(request, request, auth, handler)
        # A plain coroutine around the tool's awaitable (no thread hop, see above): any
        # tool may return a Command, whatever its annotation says, so every result is
        # looked at once (an isinstance test when it is no Command).
        return _marked(handler(request))

    async def _acritical_tool_call(
        self, request: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        permit = await self.guard.apermit(request.state or {}, request.tool_call)
        verdict, target, auth = self._decide(request, permit)
        if verdict == "run":
            return await self._arun(request, target, auth, handler)
        if verdict == "refuse":
            return target
        return await self._areview_tool_call(request, handler)

    async def _areview_tool_call(
        self, request: Any, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        try:
            outcome = await self.guard.areview(request.state, only=request.tool_call["id"])
        except ResumeError as exc:
            raise _past_retries(exc) from None
        store = getattr(request.runtime, "store", None)
        update = await self.guard.afinish_review(outcome, store, run_config(), request.state)
        target, update = self._outcome(request, outcome, update)
        if isinstance(target, ToolMessage):
            return self._command(target, update)
        auth = self._issued(outcome, request.tool_call["id"])
        result = await self._arun(request, self._locked(target), auth, handler)
        return self._command(result, update)


# Off-path cost: langsmith's ``traceable``, which create_agent wraps around every wrap hook,
# computes the hook's signature on every call; a precomputed ``__signature__`` (the same
# signature) makes that a lookup.
for _name in ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call"):
    _hook = vars(InferActMiddleware)[_name]
    _hook.__signature__ = inspect.signature(_hook)


class _ToolCallReview(InferActMiddleware):
    """``InferActMiddleware(review_in="tool_call")``: the review runs in the tool task only."""

    # The base hooks: create_agent then adds no after_model node.
    after_model = AgentMiddleware.after_model
    aafter_model = AgentMiddleware.aafter_model


def _past_retries(exc: ResumeError) -> ResumeError:
    """``exc`` as a :class:`~inferact_langgraph.errors.ToolTaskResumeError`.

    That error passes retrying tool-call wrappers (``ToolRetryMiddleware``), so the caller gets
    it and the review stays pending instead of being asked again.
    """
    error = ToolTaskResumeError.__new__(ToolTaskResumeError)
    error.__dict__.update(exc.__dict__)
    error.args = exc.args
    return error


def _with_memory(request: ModelRequest) -> ModelRequest:
    """The model request with this user's earlier feedback added to its system message.

    Only the request changes: the feedback is never written to the agent's messages, so the
    thread (and a chat UI that shows it) never holds it.
    """
    text = memory_text(request.state or {})
    if text is None:
        return request
    return request.override(system_message=system_message_with(request.system_message, text))


async def _marked(result: Awaitable[Any]) -> Any:
    """The tool's result, its Commands' human messages marked as the tool's."""
    return mark_tool_output(await result)


def _extend(response: Any, update: dict[str, Any]) -> Any:
    if not update:
        return response
    update = {k: v for k, v in update.items() if k not in (ROUTE, "messages")}
    if isinstance(response, AIMessage):
        response = ModelResponse(result=[response])
    return ExtendedModelResponse(model_response=response, command=Command(update=update))
