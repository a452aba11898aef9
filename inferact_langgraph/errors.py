"""One exception hierarchy for the whole library: every error it raises is defined here.

Every error a user can meet derives from :class:`InferActError`, and each one carries the data
needed to act on it (the raw model output, the tool call, the expected shape of a resume).
Each also derives from the built-in error a caller would catch for it without knowing the
library (``ValueError`` for bad input, ``TimeoutError``, ``LookupError``, ``RuntimeError``)::

    InferActError
    ├── CriticError                       the critic could not produce a verdict
    │   ├── CriticParseError (ValueError)     nothing usable in the model's answer
    │   └── CriticModelError                  the model call failed
    │       └── CriticTimeoutError (TimeoutError)
    ├── ResumeError (ValueError)          a resume value the pending review does not accept
    │   └── ToolTaskResumeError               the same, raised past retrying tool wrappers
    ├── UnauthorizedCriticalCall (PermissionError)   a critical tool without an authorization
    ├── AlreadyResumedError               the review was answered already
    ├── CheckpointerRequiredError (RuntimeError)   a review that could never be resumed
    ├── UnsupportedGraphError (TypeError) with_inferact cannot wrap this graph
    ├── TrajectoryError (ValueError)      a trajectory cannot be built
    ├── DatasetError (ValueError)         a malformed record of a trajectory file
    ├── CalibrationError (ValueError)     an unusable calibration file or fit input
    ├── CacheError (ValueError)           an unusable verdict cache file
    ├── ReplayMismatchError (LookupError) a request a recorded transcript does not hold
    ├── ModelSetupError (ValueError)      a model or critic cannot be built from the options
    ├── TrialsError (ValueError)          bad options for a trials run
    └── DemoError                         a demo that cannot run

Example:
    >>> from inferact_langgraph.errors import CriticParseError, InferActError
    >>> err = CriticParseError("no probabilities found", raw="I think D.")
    >>> isinstance(err, InferActError), err.raw
    (True, 'I think D.')
"""

from __future__ import annotations

from typing import Any

from langgraph.errors import GraphBubbleUp

__all__ = [
    "AlreadyResumedError",
    "CacheError",
    "CalibrationError",
    "CheckpointerRequiredError",
    "CriticError",
    "CriticModelError",
    "CriticParseError",
    "CriticTimeoutError",
    "DatasetError",
    "DemoError",
    "InferActError",
    "ModelSetupError",
    "ReplayMismatchError",
    "ResumeError",
    "ToolTaskResumeError",
    "TrajectoryError",
    "TrialsError",
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


class ToolTaskResumeError(ResumeError, GraphBubbleUp):
    """A malformed resume of a review held in a tool task, raised past tool-call wrappers.

    A retrying wrapper (``ToolRetryMiddleware``) around the review would catch a plain
    ``ResumeError``, call the review again and open a fresh interrupt; every such wrapper lets
    LangGraph's control-flow signals (``GraphBubbleUp``) pass, so the caller gets the
    ``ResumeError`` and the review stays pending. Catch :class:`ResumeError` to handle both.

    Example:
        >>> issubclass(ToolTaskResumeError, ResumeError)
        True
    """


class UnauthorizedCriticalCall(InferActError, PermissionError):  # noqa: N818 - a refusal
    """A critical tool was about to run without an authorization for that exact call.

    Raised by the critical tool itself (see :mod:`inferact_langgraph.guard.authorization`): no
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


class ReplayMismatchError(InferActError, LookupError):
    """A request that the transcript does not hold (a prompt changed since it was recorded).

    Attributes:
        nearest_line: 1-based transcript line of the most similar recorded request (``None``
            for an empty transcript).
        diff: A short unified diff, recorded request -> this request.
        kind: The first line of the request's first message (which prompt it is).
    """

    def __init__(self, message: str, *, nearest_line: int | None, diff: str, kind: str) -> None:
        super().__init__(message)
        self.nearest_line = nearest_line
        self.diff = diff
        self.kind = kind


class CalibrationError(InferActError, ValueError):
    """A calibration file or fit input is not usable; the message says what was expected."""


class DemoError(InferActError):
    """A demo that cannot run (bad options, no terminal); the message says why."""


class TrajectoryError(InferActError, ValueError):
    """A trajectory cannot be built from the given input."""


class ModelSetupError(InferActError, ValueError):
    """The critic model or a critic cannot be built from the given options."""


class TrialsError(InferActError, ValueError):
    """Bad options for a trials run; the message says which and why."""


class CacheError(InferActError, ValueError):
    """A verdict cache file cannot be used: not SQLite, not writable, or its folder is missing.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
        >>> _ = open(path, "w").write("not a database" * 100)
        >>> from inferact_langgraph.cache import VerdictCache
        >>> VerdictCache(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        inferact_langgraph.errors.CacheError: ...notes.txt is not a SQLite verdict cache ...
    """


class AlreadyResumedError(InferActError):
    """The review was answered already (by another worker), or there is none to answer."""


class CheckpointerRequiredError(InferActError, RuntimeError):
    """A critical call needs a human review, but the run has no checkpointer to resume it from.

    Raised before the review is opened, so the call never runs and the run does not end on an
    interrupt that nothing can answer.
    """
