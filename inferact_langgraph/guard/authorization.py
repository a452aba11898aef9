"""The mark is the lock: a critical tool runs only on an authorization for its exact call, once.

A tool marked critical (``@critical``, or named in ``critical=[...]``, whose tool objects the
guard wraps) checks, at the moment it is about to execute, that it holds an
:class:`Authorization` for exactly this call, and consumes it. Wherever the tool is reached
from (any ``ToolNode``, any messages key, a sub-agent, a plain ``.invoke``) it is the same
object with the same check, so no wiring can skip it: without an authorization it raises
:class:`~inferact_langgraph.errors.UnauthorizedCriticalCall` and does not run.

Only the guard's enforcement points (``with_inferact``'s tool node,
``InferActMiddleware.wrap_tool_call``) issue authorizations, and only from a verdict or a human
decision in the run's state that is bound to the call (:func:`~inferact_langgraph.guard.binding.
authorize`). An authorization lives in a context variable for the duration of that one tool
execution (nothing a state writer, a caller or a tool's ``Command`` can set) and names the
call by its *binding*: thread, proposing AI message id, position, tool name, arguments hash and
call id. Consuming it records the binding in a :class:`ConsumptionLedger`: in the process,
atomically, as the tool starts; and, when the run has a LangGraph store, in the store as the
tool returns (or raises). A second execution of the same call (a second ``Send``, a fork from
history, a replayed or retried step, the call sent again after its answer was removed) finds
its binding used and is refused; proposing the call again (a new AI message) is checked afresh.

Limits (docs/reliability.md): the process ledger is bounded (:data:`LEDGER_SIZE` bindings).
Across processes the store is the record, written when the tool has returned: a worker killed
*inside* the tool leaves none, so LangGraph's retry of that step in another process runs the
call again (at least once, as before: make such tools idempotent by their tool call id); and a
store's ``get`` then ``put`` is not one atomic operation, so two processes executing the same
call in the same instant can both pass (answer concurrent resumes with
:func:`~inferact_langgraph.guard.resume.resume_review` and a lock). Without a store, only the
process remembers: a fork or a resend handled by another process is not refused.

Example:
    >>> from langchain_core.tools import tool
    >>> from inferact_langgraph import allow_critical_calls, critical
    >>> from inferact_langgraph.errors import UnauthorizedCriticalCall
    >>> def delete_account(user: str) -> str:
    ...     '''Delete a user's account.'''
    ...     return f"deleted {user}"
    >>> delete_account = critical(tool(delete_account))  # marking is the same as @critical
    >>> try:
    ...     delete_account.invoke({"user": "bob"})
    ... except UnauthorizedCriticalCall as exc:
    ...     print(exc.tool, "refused:", exc.reason)
    delete_account refused: no verdict or approval authorizes this call
    >>> with allow_critical_calls():  # a test or a script, on purpose
    ...     delete_account.invoke({"user": "bob"})
    'deleted bob'
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from inferact_langgraph.errors import UnauthorizedCriticalCall
from inferact_langgraph.guard._compat import run_checkpointer
from inferact_langgraph.guard.binding import args_digest, current_thread

__all__ = [
    "LEDGER",
    "LEDGER_SIZE",
    "Authorization",
    "ConsumptionLedger",
    "allow_critical_calls",
    "current_scope",
    "current_thread",
    "is_locked",
    "issue",
    "lock_tool",
    "locked_copy",
    "permitted",
]

logger = logging.getLogger("inferact_langgraph")

LEDGER_SIZE = 100_000
"""How many used bindings the process remembers (oldest forgotten first)."""

STORE_NAMESPACE = ("inferact", "authorizations_used")
"""Where used bindings are kept in a LangGraph store (one item per binding)."""

_LOCK_ATTR = "_inferact_lock"
_NO_REASON = "no verdict or approval authorizes this call"


@dataclass(frozen=True)
class Authorization:
    """Permission for one execution of one exact call, issued from a bound verdict or decision.

    Attributes:
        thread: The run's ``thread_id`` (``None`` without one).
        ai_message_id: The AI message that proposed the call.
        index: The call's position in that message.
        tool: The tool name.
        args_sha256: :func:`~inferact_langgraph.guard.binding.args_digest` of the arguments.
        tool_call_id: The call's id.
        decided_by: Who allowed it (``"critic"``, ``"human"``, ``"policy"``).
        store: The run's LangGraph store, where the use is recorded too (``None``: the
            process only).
        single_use: ``False`` only for a call the guard's own spec does not check (its
            ``when``): such a call runs as a plain call would, and is not recorded.
        scope: Which checkpointer's threads the ``thread`` belongs to, in this process (two
            savers may both hold a thread "1"); the store, shared by one deployment's
            processes, is keyed by the binding alone.
    """

    thread: str | None
    ai_message_id: str | None
    index: int | None
    tool: str
    args_sha256: str
    tool_call_id: str | None
    decided_by: str | None = None
    store: Any = field(default=None, compare=False, repr=False)
    single_use: bool = True
    scope: str = ""

    @property
    def binding(self) -> str:
        """A SHA-256 naming the call: thread, AI message, position, tool, arguments, id."""
        parts = [
            self.thread,
            self.ai_message_id,
            self.index,
            self.tool,
            self.args_sha256,
            self.tool_call_id,
        ]
        text = json.dumps(parts, default=repr, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def matches(self, tool: str, tool_call_id: str | None, digest: str) -> bool:
        """Whether this authorization is for that execution (name, call id, arguments)."""
        return (
            self.tool == tool and self.tool_call_id == tool_call_id and self.args_sha256 == digest
        )


class ConsumptionLedger:
    """Which authorizations were used: in this process, and in the run's store when it has one.

    Args:
        size: How many bindings the process remembers.

    Example:
        >>> ledger = ConsumptionLedger()
        >>> auth = Authorization("t", "ai-1", 0, "buy_now", args_digest({}), "c1")
        >>> ledger.consume(auth), ledger.consume(auth), ledger.is_used(auth)
        (True, False, True)
    """

    def __init__(self, size: int = LEDGER_SIZE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._used: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def _reserve(self, auth: Authorization) -> bool:
        """Record ``auth`` as used in the process; False if it was already (atomic)."""
        key = f"{auth.scope}:{auth.binding}"
        with self._lock:
            if key in self._used:
                return False
            self._used[key] = {
                "thread": auth.thread,
                "ai_message_id": auth.ai_message_id,
                "index": auth.index,
                "tool": auth.tool,
                "args_sha256": auth.args_sha256,
                "tool_call_id": auth.tool_call_id,
                "decided_by": auth.decided_by,
                "time": time.time(),
            }
            while len(self._used) > self.size:
                self._used.popitem(last=False)
            return True

    def _entry(self, auth: Authorization) -> dict[str, Any]:
        with self._lock:
            return dict(self._used.get(f"{auth.scope}:{auth.binding}") or {})

    def _used_in_process(self, auth: Authorization) -> bool:
        with self._lock:
            return f"{auth.scope}:{auth.binding}" in self._used

    def is_used(self, auth: Authorization) -> bool:
        """Whether ``auth``'s binding was used (in the process or in its store).

        A store that cannot be read counts as "used": a failure never lets a call run.
        """
        if self._used_in_process(auth):
            return True
        if auth.store is None:
            return False
        try:
            return auth.store.get(STORE_NAMESPACE, auth.binding) is not None
        except Exception:  # fail closed
            logger.exception("InferAct: cannot read the used authorizations from the store")
            return True

    async def ais_used(self, auth: Authorization) -> bool:
        """Async :meth:`is_used`."""
        if self._used_in_process(auth):
            return True
        if auth.store is None:
            return False
        try:
            return await auth.store.aget(STORE_NAMESPACE, auth.binding) is not None
        except Exception:  # fail closed
            logger.exception("InferAct: cannot read the used authorizations from the store")
            return True

    def _decided_in_process(self, auth: Authorization) -> bool | None:
        """Whether ``auth`` may be used, when the process alone decides; None: ask the store.

        A reusable authorization is always usable; a single-use one is reserved atomically here
        (False when it was reserved before); without a store the reservation decides.
        """
        if not auth.single_use:
            return True
        if not self._reserve(auth):
            return False
        return True if auth.store is None else None

    def consume(self, auth: Authorization) -> bool:
        """Use ``auth`` once: True the first time, False ever after (or if the store fails).

        Atomic in the process. The store is read here and written by :meth:`settle` when the
        tool has returned (see the module's limits).
        """
        decided = self._decided_in_process(auth)
        if decided is not None:
            return decided
        try:
            return auth.store.get(STORE_NAMESPACE, auth.binding) is None
        except Exception:  # fail closed: the reservation stays
            logger.exception("InferAct: cannot read the used authorizations from the store")
            return False

    async def aconsume(self, auth: Authorization) -> bool:
        """Async :meth:`consume`."""
        decided = self._decided_in_process(auth)
        if decided is not None:
            return decided
        try:
            return await auth.store.aget(STORE_NAMESPACE, auth.binding) is None
        except Exception:  # fail closed: the reservation stays
            logger.exception("InferAct: cannot read the used authorizations from the store")
            return False

    def settle(self, auth: Authorization) -> None:
        """Record the use in the run's store, once the tool returned (or raised)."""
        if not auth.single_use or auth.store is None:
            return
        try:
            auth.store.put(STORE_NAMESPACE, auth.binding, self._entry(auth))
        except Exception:  # the tool ran: the process still remembers it
            logger.exception("InferAct: cannot record a used authorization in the store")

    async def asettle(self, auth: Authorization) -> None:
        """Async :meth:`settle`."""
        if not auth.single_use or auth.store is None:
            return
        try:
            await auth.store.aput(STORE_NAMESPACE, auth.binding, self._entry(auth))
        except Exception:  # the tool ran: the process still remembers it
            logger.exception("InferAct: cannot record a used authorization in the store")

    def entries(self) -> list[dict[str, Any]]:
        """The bindings used in this process, oldest first (for audits and tests)."""
        with self._lock:
            return [dict(e) for e in self._used.values()]


LEDGER = ConsumptionLedger()
"""The process's ledger of used authorizations."""

_PERMITS: ContextVar[tuple[Authorization, ...]] = ContextVar("inferact_permits", default=())
_UNGUARDED: ContextVar[bool] = ContextVar("inferact_unguarded", default=False)


_SCOPES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def current_scope() -> str:
    """A name for the current run's checkpointer, unique in the process ("" without one)."""
    saver = run_checkpointer()
    if saver is None:
        return ""
    try:
        scope = _SCOPES.get(saver)
        if scope is None:
            scope = _SCOPES.setdefault(saver, uuid.uuid4().hex)
    except TypeError:  # not weak-referenceable: its id (stable while it lives)
        return f"id-{id(saver)}"
    return scope


def _current_store() -> Any:
    try:
        from langgraph.config import get_store

        return get_store()
    except Exception:  # noqa: BLE001 - no store, or outside a run
        return None


def issue(record: Mapping[str, Any], *, decided_by: str | None = None) -> Authorization:
    """The authorization for the call a bound, approving ``record`` names (in this run).

    Only the guard calls this, after :func:`~inferact_langgraph.guard.binding.authorize` (or a
    review) found the record bound to the call and approving it.
    """
    return Authorization(
        thread=current_thread(),
        ai_message_id=record.get("ai_message_id"),
        index=record.get("index"),
        tool=str(record.get("tool")),
        args_sha256=str(record.get("args_sha256") or args_digest(record.get("args"))),
        tool_call_id=record.get("tool_call_id"),
        decided_by=decided_by or record.get("decided_by") or "critic",
        store=_current_store(),
        scope=current_scope(),
    )


@contextmanager
def permitted(auth: Authorization | None) -> Iterator[None]:
    """Run the block with ``auth`` available to the critical tool it names (once).

    Context variables follow the block into LangChain's executor threads and into asyncio
    tasks started inside it; nothing outside the guard can add to them.
    """
    if auth is None:
        yield
        return
    token = _PERMITS.set((*_PERMITS.get(), auth))
    try:
        yield
    finally:
        _PERMITS.reset(token)


@contextmanager
def allow_critical_calls() -> Iterator[None]:
    """Let critical tools run without a guard inside this block (tests, scripts, migrations).

    Inside the block a critical tool runs as a plain tool would: no verdict, no approval,
    nothing consumed. It is the one documented way to call a critical tool outside a guarded
    graph on purpose; each such run is logged (``inferact_langgraph`` logger, INFO).

    Example:
        >>> from langchain_core.tools import tool
        >>> from inferact_langgraph import allow_critical_calls, critical
        >>> @critical
        ... @tool
        ... def delete_file(path: str) -> str:
        ...     '''Delete a file.'''
        ...     return f"deleted {path}"
        >>> with allow_critical_calls():
        ...     delete_file.invoke({"path": "/tmp/x"})
        'deleted /tmp/x'
    """
    token = _UNGUARDED.set(True)
    try:
        yield
    finally:
        _UNGUARDED.reset(token)


def _model_args(tool: Any, tool_input: Any) -> dict[str, Any]:
    """The arguments a model proposed: the tool input without injected ones (state, ids...)."""
    if not isinstance(tool_input, Mapping):
        return {"__input__": tool_input}
    injected = getattr(tool, "_inferact_injected", None)
    if injected is None:
        injected = frozenset()
        try:
            schema_fields = set(getattr(tool.get_input_schema(), "model_fields", {}) or {})
            call_schema = tool.tool_call_schema
            if isinstance(call_schema, Mapping):
                visible = set((call_schema.get("properties") or {}).keys())
            else:
                visible = set(getattr(call_schema, "model_fields", {}) or {})
            if visible:
                injected = frozenset(schema_fields - visible)
        except Exception:  # noqa: BLE001 - no schema: every key counts
            injected = frozenset()
        object.__setattr__(tool, "_inferact_injected", injected)
    return {k: v for k, v in tool_input.items() if k not in injected}


def _admission(tool: Any, tool_input: Any, tool_call_id: str | None) -> Authorization | None:
    """The authorization this execution must consume, ``None`` if it needs none.

    Raises:
        UnauthorizedCriticalCall: No authorization for this exact call.
    """
    if _UNGUARDED.get():
        logger.info("InferAct: %s runs outside a guard (allow_critical_calls)", tool.name)
        return None
    args = _model_args(tool, tool_input)
    applies = getattr(tool, _LOCK_ATTR, None)
    if applies is not None and not applies(args):
        return None  # the spec's `when` says this call is not critical
    digest = args_digest(args)
    for auth in reversed(_PERMITS.get()):
        if auth.matches(tool.name, tool_call_id, digest):
            return auth
    raise UnauthorizedCriticalCall(tool.name, tool_call_id, _NO_REASON)


def _used(tool: Any, auth: Authorization) -> UnauthorizedCriticalCall:
    return UnauthorizedCriticalCall(
        tool.name,
        auth.tool_call_id,
        "its authorization was used already (a verdict or an approval allows one execution; "
        "propose the call again to have it checked again)",
    )


def lock_tool(tool: Any, applies: Callable[[Mapping[str, Any]], bool] | None = None) -> Any:
    """Make ``tool`` (in place) run only on a matching, unused authorization; return it.

    Every way of running a LangChain tool goes through ``run`` / ``arun`` (``invoke``,
    ``ainvoke``, a ``ToolNode``, an agent), so the lock wraps those two on the instance.
    ``applies`` is the spec's predicate: calls it says are not critical run as before.
    Locking a locked tool only updates the predicate.
    """
    if is_locked(tool):
        object.__setattr__(tool, _LOCK_ATTR, applies or _always)
        return tool
    run, arun = tool.run, tool.arun

    def locked_run(tool_input: Any, *args: Any, tool_call_id: str | None = None, **kw: Any) -> Any:
        auth = _admission(tool, tool_input, tool_call_id)
        if auth is None:
            return run(tool_input, *args, tool_call_id=tool_call_id, **kw)
        if not LEDGER.consume(auth):
            raise _used(tool, auth)
        try:
            return run(tool_input, *args, tool_call_id=tool_call_id, **kw)
        finally:
            LEDGER.settle(auth)

    async def locked_arun(
        tool_input: Any, *args: Any, tool_call_id: str | None = None, **kw: Any
    ) -> Any:
        auth = _admission(tool, tool_input, tool_call_id)
        if auth is None:
            return await arun(tool_input, *args, tool_call_id=tool_call_id, **kw)
        if not await LEDGER.aconsume(auth):
            raise _used(tool, auth)
        try:
            return await arun(tool_input, *args, tool_call_id=tool_call_id, **kw)
        finally:
            await LEDGER.asettle(auth)

    # Pydantic tools keep unknown attributes in __dict__; object.__setattr__ skips validation.
    object.__setattr__(tool, "run", locked_run)
    object.__setattr__(tool, "arun", locked_arun)
    object.__setattr__(tool, _LOCK_ATTR, applies or _always)
    return tool


def _always(_args: Mapping[str, Any]) -> bool:
    return True


def is_locked(tool: Any) -> bool:
    """Whether ``tool`` carries the lock."""
    return getattr(tool, _LOCK_ATTR, None) is not None


def locked_copy(tool: Any, applies: Callable[[Mapping[str, Any]], bool] | None = None) -> Any:
    """A locked copy of a tool the user did not mark (``critical=[...]``); theirs is unchanged.

    A tool that is locked already (``@critical``) is returned as is.
    """
    if is_locked(tool):
        return tool
    copy = tool.model_copy() if hasattr(tool, "model_copy") else tool
    return lock_tool(copy, applies)
