"""The action chain S that the critic judges: steps, builders, masking and the token budget.

InferAct judges what the agent *did*, not what it *said*: a trajectory is the user's real task
t* plus the agent's actions and observations, with every thought removed. The last step is
usually the pending critical action, which has no observation yet.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> msgs = [
    ...     HumanMessage("Find a red mug"),
    ...     AIMessage("I should search.", tool_calls=[
    ...         {"name": "search", "args": {"q": "red mug"}, "id": "c1"}]),
    ...     ToolMessage("B01: red mug, $9", tool_call_id="c1"),
    ...     AIMessage("", tool_calls=[{"name": "buy", "args": {"asin": "B01"}, "id": "c2"}]),
    ... ]
    >>> traj = Trajectory.from_messages(msgs)
    >>> traj.task, [s.action for s in traj.steps], traj.pending.tool_call_id
    ('Find a red mug', ['search(q="red mug")', 'buy(asin="B01")'], 'c2')
    >>> "I should search" in traj.render()
    False
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from inferact_langgraph._untrusted import neutralise
from inferact_langgraph.errors import DatasetError, TrajectoryError

__all__ = [
    "THOUGHT_TOOLS",
    "Masker",
    "Step",
    "TokenBudget",
    "Trajectory",
    "TrajectoryError",
    "approx_tokens",
    "mask_search_queries",
    "remove_text_from_observations",
    "trajectory_hash",
]


#: Tools whose calls are the agent's thoughts written down, not actions (the ``think`` tool of
#: tau-bench and of Anthropic's tool-use guide): S leaves them out, as the paper removes
#: thoughts (and its authors drop ALFWorld's ``think:`` steps).
THOUGHT_TOOLS: frozenset[str] = frozenset({"think"})

_CALL_NAME = re.compile(r"^\s*([A-Za-z_][\w.-]*)\(")


def approx_tokens(text: str) -> int:
    """Estimate the token count of ``text`` offline (about four characters a token).

    Example:
        >>> approx_tokens("abcdefgh")
        2
    """
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class Step:
    """One action of the agent and what the environment answered.

    Attributes:
        action: The action as the critic sees it, e.g. ``Search[Nick Park]`` or
            ``buy_now(asin="B01", price=12.0)``.
        observation: The environment's answer; ``None`` for a pending (not yet executed) action.
        tool_name: The tool's name when the step came from a tool call.
        tool_args: The tool call's arguments.
        tool_call_id: The tool call id, linking the step to its LangGraph messages.
    """

    action: str
    observation: str | None = None
    tool_name: str | None = None
    tool_args: Mapping[str, Any] | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class TokenBudget:
    """Keeps a rendered trajectory bounded, so a check's cost stops growing with its length.

    Long observations are shortened to ``max_observation_tokens``; if the whole chain is still
    over ``max_tokens``, the first ``keep_first`` steps and the most recent steps that fit are
    kept, and a marker says how many steps were elided. The pending action is always kept.

    Example:
        >>> budget = TokenBudget(max_tokens=60, max_observation_tokens=10, keep_first=1)
        >>> steps = [Step(f"act{i}", "x" * 200) for i in range(20)] + [Step("buy")]
        >>> text = Trajectory(task="t", steps=tuple(steps)).render(budget=budget)
        >>> "steps elided" in text and "act0" in text and "buy" in text
        True
    """

    max_tokens: int = 3000
    max_observation_tokens: int = 400
    keep_first: int = 2
    count_tokens: Callable[[str], int] = approx_tokens

    def __post_init__(self) -> None:
        if self.max_tokens <= 0 or self.max_observation_tokens <= 0:
            raise ValueError("TokenBudget: max_tokens and max_observation_tokens must be > 0")
        if self.keep_first < 0:
            raise ValueError("TokenBudget: keep_first must be >= 0")


DEFAULT_BUDGET = TokenBudget()

# Observations are untrusted text (web pages, tool output). They are fenced with these tags and
# any tag-like text inside them is neutralised, so an observation cannot close its own fence
# and pose as the critic's instructions or as option lines.
_FENCE_OPEN, _FENCE_CLOSE = "<observation>", "</observation>"
_FENCE_TAG = re.compile(r"<\s*/?\s*observation\s*>", re.IGNORECASE)


def _fence(text: str) -> str:
    text = _FENCE_TAG.sub(lambda m: m.group(0).replace("<", "(").replace(">", ")"), text)
    return f"{_FENCE_OPEN}{text}{_FENCE_CLOSE}"


def _shorten(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    total = count(text)
    if total <= max_tokens:
        return text
    cut = max(1, int(len(text) * max_tokens / total))
    while cut > 1 and count(text[:cut]) > max_tokens:
        cut = int(cut * 0.9)
    return f"{text[:cut]} [... observation shortened, {len(text) - cut} characters elided]"


def _format_args(args: Mapping[str, Any]) -> str:
    parts = []
    for key, value in args.items():
        try:
            rendered = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            rendered = repr(value)
        parts.append(f"{key}={rendered}")
    return ", ".join(parts)


def _text_of(content: Any) -> str:
    """The plain text of a message content (a string or a list of content blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
        return "\n".join(texts)
    return "" if content is None else str(content)


def _calls_with_results(messages: Sequence[BaseMessage]) -> list[tuple[Any, str | None]]:
    """Every tool call of ``messages`` in order, with the text of the tool message answering it.

    A tool message answers the oldest call with its id that has no answer yet, so a reused id
    never gives an earlier call a later call's result. ``None``: no tool message answered it.
    """
    calls: list[list[Any]] = []
    waiting: dict[str, list[int]] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call_id := call.get("id"):
                    waiting.setdefault(call_id, []).append(len(calls))
                calls.append([call, None])
        elif isinstance(message, ToolMessage) and waiting.get(message.tool_call_id):
            calls[waiting[message.tool_call_id].pop(0)][1] = _text_of(message.content)
    return [(call, seen) for call, seen in calls]


def _step(call: Any, observation: str | None) -> Step:
    """The step of one tool call (``observation=None``: it has not run)."""
    args = dict(call.get("args") or {})
    return Step(
        action=f"{call['name']}({_format_args(args)})",
        observation=observation,
        tool_name=call["name"],
        tool_args=args,
        tool_call_id=call.get("id"),
    )


Masker = Callable[["Trajectory"], "Trajectory"]
"""A function that hides what would leak the task into inference (see the presets)."""


@dataclass(frozen=True)
class Trajectory:
    """The user's real task t* and the thought-free action chain S.

    Attributes:
        task: The user's real task t*. It is shown to verification, never to inference.
        steps: The actions and observations in order; the last one may be pending.
        metadata: Anything else a record carried (id, label, price, gold answer).
    """

    task: str
    steps: tuple[Step, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.task, str):
            raise TrajectoryError(f"task must be a string, got {type(self.task).__name__}")
        object.__setattr__(self, "steps", tuple(self.steps))
        for i, step in enumerate(self.steps):
            if not isinstance(step, Step):
                raise TrajectoryError(f"steps[{i}] must be a Step, got {type(step).__name__}")

    @property
    def pending(self) -> Step | None:
        """The last step if it has not been executed yet (no observation), else ``None``."""
        if self.steps and self.steps[-1].observation is None:
            return self.steps[-1]
        return None

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_messages(
        cls,
        messages: Sequence[BaseMessage],
        *,
        task: str | None = None,
        pending_tool_call_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        thought_tools: Collection[str] = THOUGHT_TOOLS,
    ) -> Trajectory:
        """Build S from a LangGraph message list.

        Actions are the AI messages' tool calls, observations the matching tool messages'
        contents. AI text, reasoning blocks, ``additional_kwargs``, system and user messages
        never enter S. The real task is the first human message unless ``task`` is given.

        Args:
            messages: The conversation, oldest first.
            task: The real task t*; by default the first human message's text.
            pending_tool_call_id: End the chain on this (pending) tool call. By default every
                tool call is kept, and calls without a tool message are pending.
            metadata: Stored on the trajectory as is.
            thought_tools: Tools whose calls are thoughts: left out of S
                (:data:`THOUGHT_TOOLS` by default; ``()`` keeps every call).

        Raises:
            TrajectoryError: No task can be found, or the pending call id is unknown.
        """
        if task is None:
            task = next(
                (_text_of(m.content) for m in messages if isinstance(m, HumanMessage)), None
            )
            if not task:
                raise TrajectoryError(
                    "no human message found to take the user's task from; pass task=... "
                    "(or task_extractor=... to with_inferact)"
                )
        calls = [
            (call, seen)
            for call, seen in _calls_with_results(messages)
            if call["name"] not in thought_tools or call.get("id") == pending_tool_call_id
        ]
        if pending_tool_call_id is None:
            # Calls that have no tool message yet are pending: keep them at the end.
            steps = [_step(c, seen) for c, seen in calls if seen is not None]
            steps += [_step(c, None) for c, seen in calls if seen is None]
        else:
            # A model may reuse an id (gpt-4o does): the newest call with it is the pending one.
            where = next(
                (
                    i
                    for i in range(len(calls) - 1, -1, -1)
                    if calls[i][0].get("id") == pending_tool_call_id
                ),
                None,
            )
            if where is None:
                raise TrajectoryError(f"no tool call with id {pending_tool_call_id!r} in messages")
            steps = [_step(c, seen) for c, seen in calls[:where] if seen is not None]
            steps.append(_step(calls[where][0], None))
        return cls(task=task, steps=tuple(steps), metadata=dict(metadata or {}))

    @classmethod
    def from_record(
        cls,
        record: Mapping[str, Any],
        *,
        line: int | None = None,
        thought_tools: Collection[str] = THOUGHT_TOOLS,
    ) -> Trajectory:
        """Build a trajectory from a JSONL record (the format of ``shared/data/README.md``).

        A record has ``task`` and ``steps`` (each ``{"thought", "action", "observation"}``);
        thoughts are dropped, and so are the calls of ``thought_tools`` (``think(...)``) before the
        last step. Every other field (``id``, ``label``, ``price`` ...) becomes
        metadata. A record may instead carry ``messages`` (a LangGraph message list as dicts).

        Raises:
            DatasetError: The record is not of that shape; the message names the field.
        """
        if not isinstance(record, Mapping):
            raise DatasetError(f"expected a JSON object, got {type(record).__name__}", line=line)
        task = record.get("task")
        if not isinstance(task, str) or not task.strip():
            raise DatasetError("field 'task' must be a non-empty string", line=line)
        meta = {k: v for k, v in record.items() if k not in ("task", "steps", "messages")}
        if "messages" in record and "steps" not in record:
            from langchain_core.messages import convert_to_messages

            try:
                messages = convert_to_messages(record["messages"])
            except Exception as exc:
                raise DatasetError(
                    f"field 'messages' is not a message list: {exc}", line=line
                ) from exc
            return cls.from_messages(
                messages, task=task, metadata=meta, thought_tools=thought_tools
            )
        raw_steps = record.get("steps")
        if not isinstance(raw_steps, list):
            raise DatasetError("field 'steps' must be a list", line=line)
        steps = []
        for i, raw in enumerate(raw_steps):
            if not isinstance(raw, Mapping) or not isinstance(raw.get("action"), str):
                raise DatasetError(
                    f"steps[{i}] must be an object with a string 'action'", line=line
                )
            obs = raw.get("observation")
            if obs is not None and not isinstance(obs, str):
                obs = json.dumps(obs, ensure_ascii=False)
            action = raw["action"].strip()
            name = _CALL_NAME.match(action)
            if name and name.group(1) in thought_tools and i < len(raw_steps) - 1:
                continue
            steps.append(Step(action=action, observation=obs))
        return cls(task=task, steps=tuple(steps), metadata=meta)

    @classmethod
    def from_react_text(cls, text: str, *, task: str) -> Trajectory:
        r"""Parse a ReAct log (``Thought N:`` / ``Action N:`` / ``Observation N:`` lines).

        Numbers are optional; thoughts are dropped; an action with no observation after it
        is pending. ALFWorld-style logs (``> action`` then the observation) are read too.

        Example:
            >>> log = "Thought 1: hmm\nAction 1: Search[X]\nObservation 1: X is Y.\n"
            >>> log += "Thought 2: done\nAction 2: Finish[Y]"
            >>> t = Trajectory.from_react_text(log, task="What is X?")
            >>> [(s.action, s.observation) for s in t.steps]
            [('Search[X]', 'X is Y.'), ('Finish[Y]', None)]
        """
        label = re.compile(r"^\s*(Thought|Action|Observation)(?:\s*\d+)?\s*:\s?(.*)$", re.I)
        steps: list[list[Any]] = []
        current: str | None = None
        for line in text.splitlines():
            match = label.match(line)
            if match:
                kind, rest = match.group(1).lower(), match.group(2)
            elif line.startswith(">"):
                kind, rest = "action", line[1:].strip()
            else:
                kind, rest = None, line
            if kind == "action":
                if rest.lower().startswith("think:"):
                    current = "thought"  # ALFWorld thoughts and their "OK." are not actions
                    continue
                steps.append([rest.strip(), None])
                current = "action"
            elif kind == "observation" or (kind is None and current == "action" and rest.strip()):
                if steps:
                    prev = steps[-1][1]
                    steps[-1][1] = rest if prev is None else f"{prev}\n{rest}"
                current = "observation"
            elif kind == "thought":
                current = "thought"
            elif kind is None and current == "observation" and steps:
                steps[-1][1] = f"{steps[-1][1]}\n{rest}"
        return cls(task=task, steps=tuple(Step(a, o) for a, o in steps))

    # ------------------------------------------------------------------ rendering
    def render(self, *, budget: TokenBudget | None = DEFAULT_BUDGET) -> str:
        """Render S for a prompt: numbered actions, fenced observations, no thoughts.

        Observations are fenced; in actions (a tool call's arguments are the agent's text),
        anything that looks like a critic's answer line (``G1: D P1: 1.0``) is neutralised
        (see :mod:`inferact_langgraph._untrusted`); ordinary actions render unchanged.

        Args:
            budget: Keeps the text bounded; ``None`` renders everything.
        """
        count = budget.count_tokens if budget else approx_tokens
        blocks = []
        for i, step in enumerate(self.steps, start=1):
            text = f"Action {i}: {neutralise(step.action)}"
            if step.observation is not None:
                obs = step.observation
                if budget is not None:
                    obs = _shorten(obs, budget.max_observation_tokens, count)
                text += f"\nObservation {i}: {_fence(obs)}"
            blocks.append(text)
        if budget is None or sum(count(b) for b in blocks) <= budget.max_tokens:
            return "\n".join(blocks)
        head = blocks[: budget.keep_first]
        used = sum(count(b) for b in head)
        tail: list[str] = []
        for block in reversed(blocks[budget.keep_first :]):
            if tail and used + count(block) > budget.max_tokens:
                break
            tail.insert(0, block)  # the most recent step is always kept
            used += count(block)
        elided = len(blocks) - len(head) - len(tail)
        middle = [f"[... {elided} steps elided to fit the token budget ...]"] if elided else []
        return "\n".join(head + middle + tail)

    def with_steps(self, steps: Iterable[Step]) -> Trajectory:
        """A copy with other steps (used by maskers)."""
        return replace(self, steps=tuple(steps))


def _stable(value: Any, depth: int = 0) -> Any:
    """A JSON form of a tool argument that does not depend on dict or set order."""
    if depth > 20:
        return repr(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _stable(v, depth + 1) for k, v in sorted(value.items(), key=str)}
    if isinstance(value, list | tuple):
        return [_stable(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(repr(v) for v in value)
    return repr(value)  # an object: its repr (a repr with an address only costs a cache miss)


def trajectory_hash(trajectory: Trajectory) -> str:
    """The one hash of what a critic judges.

    It covers the task and every step's action, observation, tool name and arguments. Used by
    every verdict cache (the guard's and the evaluation's).

    Left out: tool call ids (a retried step gets a new id but is the same check) and the
    metadata (labels, ids, provenance: fixing a label never invalidates a cached verdict).

    Example:
        >>> a = Trajectory("t", (Step("buy(B01)", tool_call_id="c1"),), metadata={"label": "x"})
        >>> b = Trajectory("t", (Step("buy(B01)", tool_call_id="c9"),))
        >>> trajectory_hash(a) == trajectory_hash(b) != trajectory_hash(Trajectory("u", a.steps))
        True
    """
    payload = {
        "task": trajectory.task,
        "steps": [
            [s.action, s.observation, s.tool_name, _stable(dict(s.tool_args or {}))]
            for s in trajectory.steps
        ],
    }
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mask_search_queries(tool_names: Iterable[str] = ("search",)) -> Masker:
    """Replace search actions by the bare word ``search``: a query echoes the user's task.

    Example:
        >>> t = Trajectory("buy shades", (Step("search[66x66 shades]", "..."), Step("click[Buy]")))
        >>> [s.action for s in mask_search_queries()(t).steps]
        ['search', 'click[Buy]']
    """
    names = {n.lower() for n in tool_names}
    pattern = re.compile(r"^\s*(" + "|".join(map(re.escape, names)) + r")\s*[\[(]", re.I)

    def mask(trajectory: Trajectory) -> Trajectory:
        steps = []
        for step in trajectory.steps:
            by_tool = step.tool_name is not None and step.tool_name.lower() in names
            if by_tool or pattern.match(step.action):
                step = replace(step, action=(step.tool_name or "search"), tool_args={})
            steps.append(step)
        return trajectory.with_steps(steps)

    return mask


def remove_text_from_observations(placeholder: str = "[instruction removed]") -> Masker:
    """Cut the task's own text out of every observation (WebShop pages echo the instruction).

    Example:
        >>> t = Trajectory("red mug", (Step("x", "Instruction: red mug. Results: B01"),))
        >>> remove_text_from_observations()(t).steps[0].observation
        'Instruction: [instruction removed]. Results: B01'
    """

    def mask(trajectory: Trajectory) -> Trajectory:
        task = trajectory.task.strip()
        if not task:
            return trajectory
        pattern = re.compile(re.escape(task), re.IGNORECASE)
        return trajectory.with_steps(
            replace(s, observation=pattern.sub(placeholder, s.observation)) if s.observation else s
            for s in trajectory.steps
        )

    return mask
