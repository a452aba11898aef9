"""An offline HotPotQA environment with the ReAct tools ``Search``, ``Lookup`` and ``Finish``.

The "Wikipedia" is the text the ReAct actor of Reflexion (Shinn et al., 2023, MIT licence) really
saw: 150 pages keyed by the query that found them, and 52 "Could not find" answers with their
suggestions (``examples/data/hotpotqa_wiki.json``). The 7 tasks
(``examples/data/hotpotqa_tasks.json``) are real questions that this actor answered wrongly in
trial 1, each with the real wrong trajectory and a corrected one.

Tools: ``search(entity)``, ``lookup(keyword, entity=None)`` and ``finish(answer)``, the critical
action, which records the answer in the ledger. ``lookup`` reads the page named by ``entity``
or else the page of the last successful ``search`` of the episode, recomputed from the
conversation inside a graph (so it survives an interrupt and a resume in another process), or
from an in-memory session per thread for direct calls. Scoring is HotPotQA's normalised exact
match.

Example:
    >>> env = HotPotQAEnv()
    >>> search, lookup, finish = env.tools
    >>> search.invoke({"entity": "Raffaella Reggi"})[:60]
    'Raffaella Reggi (Italian pronunciation: [raffaˈɛlla ˈreddʒi]'
    >>> lookup.invoke({"keyword": "born"})[:39]
    '(Result 1 / 1) Raffaella Reggi (Italian'
    >>> search.invoke({"entity": "Gator Country guitarist"})[:50]
    'Could not find [Gator Country guitarist]. Similar:'
    >>> finish.invoke({"answer": "Raffaella Reggi"})
    'Episode finished. Answer recorded: Raffaella Reggi'
    >>> env.reward(env.ledger[-1]["answer"], 2)
    1.0
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, StructuredTool

from inferact_langgraph.examples._common import (
    Attempt,
    Ledger,
    ai_tool_call,
    episode_calls,
    final_answer,
    last_result,
    record,
    runtime_call_id,
    runtime_messages,
    runtime_thread_id,
    scripted_actor_model,
    text_of,
    tool_calls_since,
)
from inferact_langgraph.examples.base import Action, Environment
from inferact_langgraph.testing import ScriptedChatModel

__all__ = ["HotPotQAEnv", "normalize_answer", "scripted_actor"]

DATA = Path(__file__).with_name("data")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: How ``finish`` starts its answer when the answer was recorded.
_RECORDED = "Episode finished. Answer recorded:"


def normalize_answer(text: str) -> str:
    """HotPotQA's answer normalisation: lower case, no punctuation, articles or extra spaces.

    Example:
        >>> normalize_answer("The  Papa Gino's!")
        'papa ginos'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _key(entity: str) -> str:
    return " ".join(entity.lower().split())


class HotPotQAEnv(Environment):
    """Offline Wikipedia, HotPotQA tasks, ReAct tools and an answer ledger.

    Args:
        wiki_path: JSON ``{"pages": {query: text}, "not_found": {query: [similar]}}``;
            defaults to the bundled pages.
        tasks_path: JSON ``{"tasks": [...]}``; defaults to the bundled tasks.
        ledger: Where ``finish`` records answers: a list or a callable. Defaults to a list.

    Attributes:
        pages: Page text by the query that finds it.
        tasks: Questions with gold answers, the real wrong trajectory (``trial1``) and a
            corrected one (``corrected``).
        ledger: ``{"env", "action", "thread_id", "tool_call_id", "answer"}`` records.
        tools: ``[search, lookup, finish]``.
        critical_tools: ``("finish",)``.

    Example:
        >>> env = HotPotQAEnv()
        >>> env.task(0)["gold_answer"], env.is_success("papa ginos", 0)
        ("Papa Gino's", True)
    """

    name: ClassVar[str] = "hotpotqa"
    preset: ClassVar[str] = "hotpotqa"
    system_prompt: ClassVar[str] = (
        "You answer multi-hop questions with search(entity), lookup(keyword) and "
        "finish(answer). Think step by step (ReAct)."
    )
    critical_tools: ClassVar[tuple[str, ...]] = ("finish",)
    tool_descriptions: ClassVar[Mapping[str, str]] = {
        "finish": "Submits the final answer: a wrong answer cannot be taken back.",
    }
    task_text_field: ClassVar[str] = "question"

    def __init__(
        self,
        *,
        wiki_path: str | Path | None = None,
        tasks_path: str | Path | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        wiki = json.loads(Path(wiki_path or DATA / "hotpotqa_wiki.json").read_text())
        tasks = json.loads(Path(tasks_path or DATA / "hotpotqa_tasks.json").read_text())
        self.pages: dict[str, str] = dict(wiki["pages"])
        self._pages_by_key = {_key(q): text for q, text in self.pages.items()}
        self._not_found = {_key(q): list(s) for q, s in wiki.get("not_found", {}).items()}
        self.tasks: list[dict[str, Any]] = list(tasks["tasks"])
        self._start(ledger)

    # -- tasks and scoring ---------------------------------------------------------------------

    def prompt(self, index: int) -> str:
        """The user's message that starts an episode of task ``index``."""
        return f"Question: {self.tasks[index]['question']}"

    def reward(self, answer: str | None, task: int | dict[str, Any]) -> float:
        """1.0 when the normalised answer equals the normalised gold answer, else 0.0."""
        task = self.tasks[task] if isinstance(task, int) else task
        if answer is None:
            return 0.0
        return float(normalize_answer(answer) == normalize_answer(task["gold_answer"]))

    def is_success(self, answer: str | None, task: int | dict[str, Any]) -> bool:
        """True when the answer is an exact match (see :meth:`reward`)."""
        return self.reward(answer, task) == 1.0

    def risk(self, tool_name: str, args: dict[str, Any]) -> str:
        """``"medium"`` for ``finish`` (a wrong answer cannot be taken back), else ``"low"``."""
        return "medium" if tool_name == "finish" else "low"

    def answers(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """Answers in the ledger (when it is a list), optionally of one thread."""
        return self.ledger_records(thread_id)

    # -- gold data -----------------------------------------------------------------------------

    def gold_text(self, index: int) -> str:
        """The gold answer."""
        return str(self.tasks[index]["gold_answer"])

    def action_is_correct(self, index: int, tool: str, args: Mapping[str, Any]) -> bool:
        """An answer is right when it is the gold answer (normalised exact match)."""
        if tool != "finish":
            return True
        answer = args.get("answer")
        return self.is_success(None if answer is None else str(answer), index)

    def explain(self, index: int, critical: Sequence[Action], correct: bool) -> str:
        """Whether the submitted answer answers the question."""
        answer = critical[-1][1].get("answer", "") if critical else ""
        if correct:
            return f"the trajectory's answer '{answer}' answers the question"
        question = self.tasks[index]["question"]
        return f"the answer '{answer}' is not supported as the answer to: {question}"

    def inferred_tasks(self, actions: Sequence[Action]) -> list[str]:
        """Three questions the searched entities and the submitted answer suggest."""
        finishes = [args for tool, args in actions if tool == "finish"]
        answer = finishes[-1].get("answer", "") if finishes else ""
        searched = [args.get("entity", "") for tool, args in actions if tool == "search"]
        topic = " and ".join(searched[:2]) or "this topic"
        return [
            f"Which one is the answer {answer!s} about {topic}?",
            f"What is {answer} known for?",
            f"Where is {searched[0] if searched else answer} based?",
        ]

    def succeeded(self, index: int, messages: Sequence[BaseMessage]) -> bool:
        """Whether the episode's last recorded answer is the gold answer."""
        recorded = [
            call
            for call in episode_calls(messages)
            if call.name == "finish" and call.output.startswith(_RECORDED)
        ]
        return bool(recorded) and self.action_is_correct(index, "finish", recorded[-1].args)

    def oracle_feedback(self, index: int) -> str:
        """A rejection giving the correct answer."""
        task = self.tasks[index]
        return (
            f"Rejected: that answer is wrong. Check both entities again; the correct answer "
            f"to '{task['question']}' is {task['gold_answer']}."
        )

    def scripted_actor(self, task_index: int | None = None) -> ScriptedChatModel:
        """This environment's scripted ReAct actor (see :func:`scripted_actor`)."""
        return scripted_actor(self, task_index)

    # -- wiki ----------------------------------------------------------------------------------

    def page(self, entity: str) -> str | None:
        """The page text found by searching ``entity``, or None."""
        return self._pages_by_key.get(_key(entity))

    def search_text(self, entity: str) -> str:
        """What ``search`` answers: the page, or ``Could not find [...]. Similar: [...]``."""
        text = self.page(entity)
        if text is not None:
            return text
        similar = self._not_found.get(_key(entity))
        if similar is None:
            words = set(normalize_answer(entity).split())
            scored = sorted(
                ((-len(words & set(normalize_answer(q).split())), q) for q in self.pages),
            )
            similar = [q for score, q in scored if score < 0][:5]
        return f"Could not find [{entity}]. Similar: {similar!r}"

    def lookup_text(self, entity: str | None, keyword: str, occurrence: int = 1) -> str:
        """The ``occurrence``-th sentence of page ``entity`` containing ``keyword``."""
        if entity is None:
            return "No page to look up: search an entity first, or pass entity=..."
        text = self.page(entity)
        if text is None:
            return f"No page for [{entity}]: search it first."
        sentences = [
            s.strip()
            for paragraph in text.split("\n")
            for s in _SENTENCE.split(paragraph)
            if s.strip()
        ]
        hits = [s for s in sentences if keyword.lower() in s.lower()]
        if not hits:
            return "No Results"
        if occurrence > len(hits):
            return "No More Results"
        return f"(Result {occurrence} / {len(hits)}) {hits[occurrence - 1]}"

    @staticmethod
    def last_page(
        history: Sequence[tuple[str, dict[str, Any]]],
    ) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        """The entity of the last ``search`` that found a page, and the calls after it."""
        entity: str | None = None
        since: list[tuple[str, dict[str, Any]]] = []
        for name, args in history:
            if name == "search" and args.get("_found", True):
                entity, since = str(args.get("entity", "")), []
            else:
                since.append((name, args))
        return entity, since

    # -- tools ---------------------------------------------------------------------------------

    def _history(self, runtime: Any) -> list[tuple[str, dict[str, Any]]]:
        """The episode's calls; a ``search`` also says whether it found its page."""
        messages = runtime_messages(runtime)
        if messages is None:
            return list(self._sessions.get(runtime_thread_id(runtime), []))
        history = []
        for call in episode_calls(messages):
            args = dict(call.args)
            if call.name == "search":
                args["_found"] = not call.output.startswith("Could not find")
            history.append((call.name, args))
        return history

    def _make_tools(self) -> list[BaseTool]:
        env = self

        def search(entity: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Search[entity]: the first paragraphs of the Wikipedia page of ``entity``.

            If the page does not exist, returns similar page titles to search instead.
            """
            text = env.search_text(entity)
            found = not text.startswith("Could not find")
            env._remember(runtime, "search", {"entity": entity, "_found": found})
            return text

        def lookup(
            keyword: str,
            entity: str | None = None,
            runtime: ToolRuntime = None,  # type: ignore[assignment]
        ) -> str:
            """Lookup[keyword]: the next sentence containing ``keyword`` in the current page.

            Args:
                keyword: The word or phrase to find (case-insensitive).
                entity: The page to read; defaults to the page of the last successful search.
            """
            history = env._history(runtime)
            last, since = env.last_page(history)
            page = entity if entity is not None else last
            repeats = sum(
                1
                for name, args in since
                if name == "lookup"
                and str(args.get("keyword", "")).lower() == keyword.lower()
                and (args.get("entity") is None or args.get("entity") == page)
            )
            env._remember(runtime, "lookup", {"keyword": keyword, "entity": entity})
            return env.lookup_text(page, keyword, repeats + 1)

        def finish(answer: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Finish[answer]: give the final answer to the question. Critical: it is final."""
            record(
                env.ledger,
                {
                    "env": "hotpotqa",
                    "action": "finish",
                    "thread_id": runtime_thread_id(runtime),
                    "tool_call_id": runtime_call_id(runtime),
                    "answer": answer,
                },
            )
            return f"{_RECORDED} {answer}"

        tools: list[BaseTool] = []
        for func, critical in ((search, False), (lookup, False), (finish, True)):
            tool = StructuredTool.from_function(func)
            tool.metadata = {"critical": critical, "risk": "medium" if critical else "low"}
            tools.append(tool)
        return tools


# -- scripted actor ------------------------------------------------------------------------------


def _report(messages: Sequence[BaseMessage]) -> str:
    """The actor's last words: the answer ``finish`` really recorded, read from its result.

    After a human edited the answer, the edited one was recorded; after a rejection or a
    failure, nothing was.
    """
    last = last_result(messages, ("finish",))
    if last is None:
        return "I did not submit an answer."
    _, answer = last
    text = text_of(answer).strip() if answer is not None else ""
    if answer is not None and answer.status != "error" and text.startswith(_RECORDED):
        return f"My answer is: {text[len(_RECORDED) :].strip()}"
    return f"I did not submit an answer: {text or 'the call has no result yet.'}"


def scripted_actor(env: HotPotQAEnv, task_index: int | None = None) -> ScriptedChatModel:
    """A deterministic ReAct actor replaying a real trajectory for task ``task_index``.

    With ``task_index=None`` the task is the one the user's newest message asks for, in their
    own words (:meth:`~HotPotQAEnv.match_task`); a request that matches no known task gets a
    plain answer listing the tasks it knows, and no tool is called.

    On a first trial it replays the real wrong trajectory (``task["trial1"]``: same thoughts,
    same actions, ending with the wrong ``finish``). Once the history holds feedback (a system
    or human message with *rejected*/*reject*/*blocked*/*feedback*, or such a tool message
    answering ``finish`` or marked as an error), it follows ``task["corrected"]`` from its first
    step and finishes with the gold answer. When its plan is done, or on anything unexpected, it
    answers without tool calls; its last words give the answer ``finish`` really recorded (the
    edited one after an edit; none after a rejection or failure), never the planned one.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> env = HotPotQAEnv()
        >>> scripted_actor(env, 0).invoke([HumanMessage(env.prompt(0))]).tool_calls[0]["args"]
        {'entity': 'Pizza Inn'}
    """

    def step(messages: list[BaseMessage], attempt: Attempt) -> AIMessage:
        plan = attempt.task["corrected"] if attempt.corrected else attempt.task["trial1"]
        done = tool_calls_since(messages, attempt.anchor)
        if done >= len(plan):
            return final_answer(_report(messages), messages, attempt.prefix)
        planned = plan[done]
        return ai_tool_call(
            messages, attempt.prefix, planned["thought"], planned["tool"], dict(planned["args"])
        )

    return scripted_actor_model(
        env, task_index, "HotPotQA", step, no_messages="I have no question to answer."
    )
