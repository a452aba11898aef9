"""One exception hierarchy for the whole library.

Every error a user can meet derives from :class:`InferActError`, and each one carries the data
needed to act on it (the raw model output, the tool call, the expected shape of a resume).

Example:
    >>> from inferact_langgraph.errors import CriticParseError, InferActError
    >>> err = CriticParseError("no probabilities found", raw="I think D.")
    >>> isinstance(err, InferActError), err.raw
    (True, 'I think D.')
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CriticError",
    "CriticModelError",
    "CriticParseError",
    "CriticTimeoutError",
    "DatasetError",
    "InferActError",
    "ResumeError",
    "UnauthorizedCriticalCall",
    "UnsupportedGraphError",
]


class InferActError(Exception):
    """Root of every error raised by inferact-langgraph."""


class CriticError(InferActError):
    """The critic could not produce a verdict.

    The graph layer treats every ``CriticError`` the same way: the critical action is not
    executed without a human decision (fail closed), unless the user opted into another policy.

    Attributes:
        raw: The raw model output that caused the error, if there was one.
        stage: The step of the check that failed (``"inference"``, ``"verification"`` ...).
    """

    def __init__(self, message: str, *, raw: str | None = None, stage: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw
        self.stage = stage


class CriticParseError(CriticError, ValueError):
    """The critic model answered, but nothing usable could be parsed from its answer."""


class CriticModelError(CriticError):
    """The critic model call itself failed (HTTP error, rate limit, connection error)."""


class CriticTimeoutError(CriticModelError, TimeoutError):
    """The critic model did not answer within the configured time-out."""


class ResumeError(InferActError, ValueError):
    """A resume value does not match what the pending review expects.

    Attributes:
        expected: A human-readable description of the expected resume shape.
        received: The value that was received.
    """

    def __init__(self, message: str, *, expected: str, received: Any = None) -> None:
        super().__init__(f"{message}\nExpected: {expected}\nReceived: {received!r}")
        self.expected = expected
        self.received = received


class UnauthorizedCriticalCall(InferActError, PermissionError):  # noqa: N818 - a refusal
    """A critical tool was about to run without an authorization for that exact call.

    Raised by the critical tool itself (see :mod:`inferact_langgraph._authorization`): no
    verdict or approval was bound to this call, or the one that was has been used already.
    The tool did not run. To call a critical tool outside a guard on purpose (a test, a
    script), wrap the call in :func:`~inferact_langgraph.allow_critical_calls`.

    Attributes:
        tool: The tool's name.
        tool_call_id: The call's id (``None`` for a plain ``.invoke(args)``).
        reason: Why the call was not authorized.
    """

    def __init__(self, tool: str, tool_call_id: str | None, reason: str) -> None:
        super().__init__(
            f"the critical tool {tool!r} did not run (call {tool_call_id!r}): {reason}. "
            "A critical tool runs only inside a guarded graph (with_inferact or "
            "InferActMiddleware) with a verdict or approval for that exact call, once; to call "
            "it on purpose outside a guard, use `with inferact_langgraph.allow_critical_calls():`"
        )
        self.tool = tool
        self.tool_call_id = tool_call_id
        self.reason = reason


class UnsupportedGraphError(InferActError, TypeError):
    """``with_inferact`` was given something it cannot wrap."""


class DatasetError(InferActError, ValueError):
    """A record of a trajectory file is malformed.

    Attributes:
        line: The 1-based line number of the bad record, when read from a file.
    """

    def __init__(self, message: str, *, line: int | None = None) -> None:
        prefix = f"line {line}: " if line is not None else ""
        super().__init__(prefix + message)
        self.line = line
