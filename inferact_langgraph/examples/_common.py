"""Helpers shared by the example environments and their scripted actors (private)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from inferact_langgraph.testing import ScriptedChatModel

if TYPE_CHECKING:
    from inferact_langgraph.examples.base import Environment

__all__ = [
    "FEEDBACK_PATTERN",
    "Attempt",
    "Ledger",
    "ToolCallRecord",
    "ai_tool_call",
    "episode_calls",
    "episode_start",
    "feedback_index",
    "final_answer",
    "last_result",
    "latest_request",
    "match_task",
    "requested_task",
    "runtime_messages",
    "runtime_thread_id",
    "scripted_actor_model",
    "text_of",
    "thread_results",
    "unknown_task_reply",
]

#: Words that mark human or critic feedback in the history (whole words, any case).
FEEDBACK_PATTERN = re.compile(r"\b(rejected|reject|blocked|feedback)\b", re.IGNORECASE)

Ledger = Callable[[dict[str, Any]], None] | list[dict[str, Any]]
"""Where side effects are recorded: a list (appended to) or a callable (called with a record)."""


def text_of(message: BaseMessage) -> str:
    """The text content of a message, whatever its content type."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


def record(ledger: Ledger, entry: dict[str, Any]) -> None:
    """Write one side-effect record to a ledger."""
    if isinstance(ledger, list):
        ledger.append(entry)
    else:
        ledger(entry)


def runtime_messages(runtime: Any) -> list[BaseMessage] | None:
    """The graph's messages from an injected ``ToolRuntime``, or None outside a graph."""
    state = getattr(runtime, "state", None)
    if isinstance(state, dict):
        messages = state.get("messages")
    else:
        messages = getattr(state, "messages", None)
    return list(messages) if isinstance(messages, list) else None


def runtime_thread_id(runtime: Any) -> str:
    """The ``thread_id`` of the run from an injected ``ToolRuntime`` (``"default"`` if none)."""
    config = getattr(runtime, "config", None) or {}
    thread_id = (config.get("configurable") or {}).get("thread_id")
    return str(thread_id) if thread_id is not None else "default"


def runtime_call_id(runtime: Any) -> str | None:
    """The id of the tool call being executed, if known."""
    return getattr(runtime, "tool_call_id", None)


def episode_start(messages: Sequence[BaseMessage]) -> int:
    """Index of the last ``HumanMessage``: an episode (trial) starts with the user's message."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return 0


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of the episode that was executed (it has a non-error ``ToolMessage``)."""

    name: str
    args: dict[str, Any]
    id: str
    output: str


def episode_calls(messages: Sequence[BaseMessage]) -> Iterator[ToolCallRecord]:
    """Executed tool calls of the current episode, in order.

    A call counts when a ``ToolMessage`` answers it without ``status="error"``: rejected or
    failed calls did not change the environment. Calls still running have no answer yet.
    """
    start = episode_start(messages)
    answers: dict[str, ToolMessage] = {}
    for message in messages[start:]:
        if isinstance(message, ToolMessage):
            answers[message.tool_call_id] = message
    for message in messages[start:]:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            answer = answers.get(call.get("id") or "")
            if answer is None or answer.status == "error":
                continue
            yield ToolCallRecord(
                call["name"], dict(call.get("args") or {}), call.get("id") or "", text_of(answer)
            )


def feedback_index(messages: Sequence[BaseMessage], critical_tools: Sequence[str]) -> int | None:
    """Index of the last message carrying feedback, or None.

    Feedback is a ``SystemMessage`` or ``HumanMessage`` whose text contains one of the words
    *rejected*, *reject*, *blocked* or *feedback*, or a ``ToolMessage`` containing one of them
    that either has ``status="error"`` or answers a critical tool (ordinary observations, such
    as a Wikipedia page that mentions a rejected treaty, do not count).
    """
    found = None
    for index, message in enumerate(messages):
        # Feedback comes from a person, or from a failed or critical tool call (a rejection).
        may_hold_feedback = isinstance(message, SystemMessage | HumanMessage) or (
            isinstance(message, ToolMessage)
            and (message.status == "error" or message.name in critical_tools)
        )
        if may_hold_feedback and FEEDBACK_PATTERN.search(text_of(message)):
            found = index
    return found


def ai_tool_call(
    messages: Sequence[BaseMessage], prefix: str, thought: str, name: str, args: dict[str, Any]
) -> AIMessage:
    """An ``AIMessage`` with a thought and one tool call, with ids unique in the thread.

    The message id and the tool call id derive from the length of the history, so a new model
    instance (another process resuming the thread) never reuses an id: ``add_messages`` would
    otherwise replace an earlier message that has the same id.
    """
    count = sum(isinstance(m, AIMessage) for m in messages)
    call_id = f"{prefix}-{count}-{len(messages)}"
    return AIMessage(
        id=f"{prefix}-msg-{len(messages)}",
        content=f"Thought: {thought}",
        tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}],
    )


def final_answer(
    text: str, messages: Sequence[BaseMessage] = (), prefix: str = "final"
) -> AIMessage:
    """A final ``AIMessage`` without tool calls (ends a run); its id is unique in the thread."""
    return AIMessage(id=f"{prefix}-msg-{len(messages)}", content=text)


def tool_calls_since(messages: Sequence[BaseMessage], start: int) -> int:
    """How many AI messages with tool calls follow ``messages[start]``."""
    return sum(isinstance(m, AIMessage) and bool(m.tool_calls) for m in messages[start + 1 :])


def last_result(
    messages: Sequence[BaseMessage], tool_names: Sequence[str]
) -> tuple[dict[str, Any], ToolMessage | None] | None:
    """The episode's last call to one of ``tool_names`` and the ``ToolMessage`` answering it.

    The call is read from the AI message as it stands in the history, so after a human edited
    it (the guard rewrites the call's arguments) these are the arguments that ran. Returns None
    when the episode made no such call; the answer is None while the call has no result yet.
    An actor must report this result (executed, failed, rejected), never what it planned.
    """
    start = episode_start(messages)
    answers = {m.tool_call_id: m for m in messages[start:] if isinstance(m, ToolMessage)}
    for message in reversed(messages[start:]):
        if isinstance(message, AIMessage):
            for call in reversed(message.tool_calls):
                if call["name"] in tool_names:
                    return dict(call), answers.get(call.get("id") or "")
    return None


def thread_results(messages: Sequence[BaseMessage], tool_name: str) -> list[str]:
    """Texts of every successful result of ``tool_name`` in the whole thread, in order."""
    return [
        text_of(m)
        for m in messages
        if isinstance(m, ToolMessage) and m.name == tool_name and m.status != "error"
    ]


# -- what the user asked for ----------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
# Words that say nothing about which task is meant (they occur in every request).
_FILLER = frozenset(
    """a an the i im i'm me my we our you your it its is are was be am can could would like
    please need want wants looking look find get buy order and or to of in on at for with by
    from some any than lower price dollars put which who what whose when where how do does did
    task your is to question""".split()  # noqa: SIM905 - a word list reads best as text
)
#: How the ALFWorld prompt introduces the task after its long description of the room.
_TASK_MARKER = "your task is to:"


def _content_words(text: str) -> set[str]:
    low = text.lower()
    if _TASK_MARKER in low:
        low = low.rsplit(_TASK_MARKER, 1)[1]
    return {
        w
        for w in _WORD.findall(low.replace("’", "'"))
        if w not in _FILLER and (len(w) > 1 or w.isdigit())
    }


def match_task(text: str, task_texts: Sequence[str]) -> int | None:
    """The index of the known task that ``text`` asks for, or None (a fuzzy match).

    A task matches when the request shares at least two content words with it (filler such as
    "i need", "please", "price lower than" does not count) and those shared words are half of
    the request's or two fifths of the task's; the best match wins, the first on a tie.

    Example:
        >>> tasks = ["i need 66 inch by 66 inch blackout shades, white", "a white vanity bench"]
        >>> match_task("Blackout shades, 66 x 66 inch please", tasks)
        0
        >>> match_task("buy me a toaster", tasks) is None
        True
    """
    words = _content_words(text)
    best: tuple[float, int] | None = None
    for index, task in enumerate(task_texts):
        wanted = _content_words(task)
        shared = len(words & wanted)
        if shared < 2 or not wanted:
            continue
        if shared / max(1, len(words)) < 0.5 and shared / len(wanted) < 0.4:
            continue
        score = shared / len(wanted) + shared / max(1, len(words))
        if best is None or score > best[0]:
            best = (score, index)
    return None if best is None else best[1]


def _is_users(message: BaseMessage) -> bool:
    """A human message the user wrote (not one InferAct injected, such as remembered feedback)."""
    if not isinstance(message, HumanMessage):
        return False
    marks = (str(message.id or ""), str(message.name or ""))
    return not any(mark.startswith("inferact") for mark in marks)


def requested_task(messages: Sequence[BaseMessage], task_texts: Sequence[str]) -> int | None:
    """The known task the user's newest request asks for, or None.

    The newest message the user wrote decides. When it names no known task but carries
    feedback (a correction such as "rejected: the white one"), the newest earlier request that
    does name one still holds.
    """
    requests = [text_of(m) for m in messages if _is_users(m)]
    for position, text in enumerate(reversed(requests)):
        index = match_task(text, task_texts)
        if index is not None:
            return index
        if position == 0 and not FEEDBACK_PATTERN.search(text):
            return None
    return None


def unknown_task_reply(environment: str, request: str, task_texts: Sequence[str]) -> str:
    """What an example actor answers, without any tool call, to a request it cannot match.

    Example:
        >>> print(unknown_task_reply("shop", "buy me a toaster", ["a white vanity bench"]))
        I am the offline shop example and can only do the tasks in its data.
        "buy me a toaster" is not one of them, so I did nothing.
        Ask for one of these (in your own words):
        - a white vanity bench
    """
    listing = "\n".join(f"- {text}" for text in task_texts)
    shown = " ".join(request.split())
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return (
        f"I am the offline {environment} example and can only do the tasks in its data.\n"
        f'"{shown}" is not one of them, so I did nothing.\n'
        f"Ask for one of these (in your own words):\n{listing}"
    )


def latest_request(messages: Sequence[BaseMessage]) -> str:
    """The text of the newest message the user wrote ("" if none)."""
    for message in reversed(messages):
        if _is_users(message):
            return text_of(message)
    return ""


# -- the scripted actors' shared frame ------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """The task a scripted actor plays and where its current attempt starts.

    Attributes:
        index: The task's index in the environment.
        task: The task's data.
        feedback: The index of the last message carrying feedback, or None.
        anchor: The index the attempt starts after: the user's request, or the last feedback.
        prefix: The id prefix of the actor's messages for this task (``"webshop-0"``).
    """

    index: int
    task: dict[str, Any]
    feedback: int | None
    anchor: int
    prefix: str

    @property
    def corrected(self) -> bool:
        """Whether the history holds feedback: the actor then plays the task right."""
        return self.feedback is not None


def scripted_actor_model(
    env: Environment,
    task_index: int | None,
    environment: str,
    step: Callable[[list[BaseMessage], Attempt], AIMessage],
    *,
    no_messages: str | None = None,
) -> ScriptedChatModel:
    """A scripted actor: finds the task, then lets ``step`` choose the next message.

    The task is ``task_index``, or with None the one the user's newest message asks for
    (:func:`requested_task`); a request that matches no known task gets
    :func:`unknown_task_reply` and no tool call. ``step`` gets the messages and the
    :class:`Attempt`. Any error ends the run with a plain answer: an example never crashes the
    graph.

    Args:
        env: The environment whose tasks the actor plays.
        task_index: The task to play, or None for the one the user asks for.
        environment: The environment's display name (``"WebShop"``); lowercased, the id
            prefix of the actor's messages.
        step: The actor's move once the task is known.
        no_messages: The answer to an empty history (None: treat it like any other).

    Example:
        >>> from inferact_langgraph.examples import WebShopEnv
        >>> env = WebShopEnv()
        >>> def step(messages, attempt):
        ...     return final_answer(f"task {attempt.index}, corrected: {attempt.corrected}")
        >>> actor = scripted_actor_model(env, None, "WebShop", step)
        >>> actor.invoke([HumanMessage(env.prompt(1))]).content
        'task 1, corrected: False'
        >>> actor.invoke([HumanMessage("a toaster")]).content.splitlines()[1]
        '"a toaster" is not one of them, so I did nothing.'
    """
    prefix = environment.lower()

    def respond(messages: list[BaseMessage]) -> AIMessage:
        try:
            if not messages and no_messages is not None:
                return final_answer(no_messages, messages, prefix)
            texts = env.task_texts()
            index = task_index if task_index is not None else requested_task(messages, texts)
            if index is None:  # a request the example does not know: say so, call no tool
                reply = unknown_task_reply(environment, latest_request(messages), texts)
                return final_answer(reply, messages, prefix)
            feedback = feedback_index(messages, env.critical_tools)
            anchor = max(episode_start(messages), -1 if feedback is None else feedback)
            attempt = Attempt(index, env.task(index), feedback, anchor, f"{prefix}-{index}")
            return step(messages, attempt)
        except Exception as error:  # noqa: BLE001 - never crash the graph: stop politely
            return final_answer(f"I cannot continue ({type(error).__name__}).", messages)

    return ScriptedChatModel(responder=respond)
