"""A tiny offline household modelled on ALFWorld (Shridhar et al., 2021), for examples and tests.

Eleven receptacles (a fridge, a microwave, a sink basin, cabinets, a drawer, ...) and a dozen
objects, written as data in ``examples/data/alfworld_household.json`` with 4 tasks such as
"heat some egg and put it in countertop 1", each with a plausible mistake (cooling instead of
heating, a cup for a mug, a butterknife for a knife, a tomato for a potato).

Tools: ``go_to(location)``, ``open(receptacle)``, ``take(obj, source)``, ``put(obj, target)``
and the critical, irreversible ``heat(obj, appliance)`` and ``cool(obj, appliance)`` (high risk)
and ``clean(obj, appliance)`` (medium risk). Each executed critical operation is written to the
ledger. Invalid actions answer ``Nothing happens.`` as in ALFWorld.

The household state is a replay: inside a graph it is recomputed from the executed tool calls
of the current episode (everything after the last user message, read through the tool's
injected ``ToolRuntime``), so a run survives an interrupt and a resume in another process.
Rejected calls (a ``ToolMessage`` with ``status="error"``) change nothing. For direct tool
calls, an in-memory session per thread id is used instead; :meth:`AlfWorldEnv.reset` clears it.

Example:
    >>> env = AlfWorldEnv()
    >>> go_to, open_, take, put, heat, cool, clean = env.tools
    >>> go_to.invoke({"location": "fridge 1"})
    'You arrive at fridge 1. The fridge 1 is closed.'
    >>> print(open_.invoke({"receptacle": "fridge 1"}))  # doctest: +ELLIPSIS
    You open the fridge 1. The fridge 1 is open. In it, you see a egg 1, a potato 1, and a...
    >>> take.invoke({"obj": "egg 1", "source": "fridge 1"})
    'You pick up the egg 1 from the fridge 1.'
    >>> heat.invoke({"obj": "egg 1", "appliance": "microwave 1"})
    'Nothing happens.'
    >>> _ = go_to.invoke({"location": "microwave 1"})
    >>> heat.invoke({"obj": "egg 1", "appliance": "microwave 1"})
    'You heat the egg 1 using the microwave 1.'
    >>> _ = go_to.invoke({"location": "countertop 1"})
    >>> put.invoke({"obj": "egg 1", "target": "countertop 1"})
    'You put the egg 1 in/on the countertop 1.'
    >>> env.is_success(env.state(), 0), [r["action"] for r in env.ledger]
    (True, ['heat'])
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from inferact_langgraph.examples._common import (
    Attempt,
    Ledger,
    ai_tool_call,
    episode_calls,
    final_answer,
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

__all__ = ["OPERATION_RISK", "AlfWorldEnv", "scripted_actor"]

DATA = Path(__file__).with_name("data")
NOTHING = "Nothing happens."
#: Risk of each critical operation (the paper treats heat and cool as high stakes).
OPERATION_RISK = {"heat": "high", "cool": "high", "clean": "medium"}
_STATUS = {"heat": "hot", "cool": "cool", "clean": "clean"}
_MAX_STEPS = 30


def object_type(name: str) -> str:
    """``"egg 1"`` -> ``"egg"``."""
    head, _, tail = name.strip().rpartition(" ")
    return head if tail.isdigit() else name.strip()


def _listing(objects: Sequence[str]) -> str:
    if not objects:
        return "nothing"
    items = [f"a {o}" for o in objects]
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f", and {items[-1]}"


class AlfWorldEnv(Environment):
    """A tiny household: layout, tasks, tools, replayed state and a ledger of operations.

    Args:
        household_path: JSON with ``locations``, ``appliances`` and ``tasks``; defaults to the
            bundled household.
        ledger: Where executed heat/cool/clean operations are recorded: a list or a callable.
            Defaults to a list.

    Attributes:
        tasks: The tasks (``instruction``, ``object``, ``operation``, ``target``,
            ``distractor``).
        ledger: ``{"env", "action", "thread_id", "tool_call_id", "object", "appliance",
            "risk"}`` records.
        tools: ``[go_to, open, take, put, heat, cool, clean]``.
        critical_tools: ``("heat", "cool", "clean")``.

    Example:
        >>> env = AlfWorldEnv()
        >>> env.task(2)["instruction"], env.risk("clean", {})
        ('clean some knife and put it in drawer 1', 'medium')
    """

    name: ClassVar[str] = "alfworld"
    preset: ClassVar[str] = "alfworld"
    system_prompt: ClassVar[str] = (
        "You act in a household with go_to, open, take, put, heat, cool and clean to "
        "complete the user's task. Think step by step (ReAct)."
    )
    critical_tools: ClassVar[tuple[str, ...]] = ("heat", "cool", "clean")
    tool_descriptions: ClassVar[Mapping[str, str]] = {
        "heat": "Heats an object: changes its physical state irreversibly.",
        "cool": "Cools an object: changes its physical state irreversibly.",
        "clean": "Cleans an object with water.",
    }

    def __init__(
        self, *, household_path: str | Path | None = None, ledger: Ledger | None = None
    ) -> None:
        data = json.loads(Path(household_path or DATA / "alfworld_household.json").read_text())
        self.intro: str = data["intro"]
        self.locations: dict[str, dict[str, Any]] = data["locations"]
        self.appliances: dict[str, list[str]] = data["appliances"]
        self.tasks: list[dict[str, Any]] = list(data["tasks"])
        for task in self.tasks:
            if task["target"] not in self.locations or task["operation"] not in _STATUS:
                raise ValueError(f"task {task['id']}: unknown target or operation")
        self._start(ledger)

    # -- tasks and scoring ---------------------------------------------------------------------

    def prompt(self, index: int) -> str:
        """The user's message that starts an episode of task ``index`` (ALFWorld style)."""
        intro = self.intro.format(locations=_listing(list(self.locations)))
        return f"{intro}\nYour task is to: {self.tasks[index]['instruction']}."

    def risk(self, tool_name: str, args: dict[str, Any]) -> str:
        """``"high"`` for heat and cool, ``"medium"`` for clean, ``"low"`` otherwise."""
        return OPERATION_RISK.get(tool_name, "low")

    def reward(self, state: dict[str, Any], task: int | dict[str, Any]) -> float:
        """1.0 when an object of the task's type, with the task's treatment, is in the target."""
        task = self.tasks[task] if isinstance(task, int) else task
        wanted = _STATUS[task["operation"]]
        for obj in state["contents"].get(task["target"], []):
            if object_type(obj) == task["object"] and wanted in state["status"].get(obj, []):
                return 1.0
        return 0.0

    def is_success(self, state: dict[str, Any], task: int | dict[str, Any]) -> bool:
        """True when the task is complete in ``state`` (see :meth:`reward`)."""
        return self.reward(state, task) == 1.0

    def operations(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """Executed critical operations in the ledger (when it is a list)."""
        return self.ledger_records(thread_id)

    # -- gold data -----------------------------------------------------------------------------

    def gold_text(self, index: int) -> str:
        """The steps of the task: find, take, treat and put the object."""
        t = self.tasks[index]
        return (
            f"find the {t['object']}, take it, {t['operation']} it with the right appliance, "
            f"then put it in {t['target']}"
        )

    def action_is_correct(self, index: int, tool: str, args: Mapping[str, Any]) -> bool:
        """An operation is right when it is the task's operation on an object of its type."""
        if tool not in self.critical_tools:
            return True
        task = self.tasks[index]
        return bool(
            tool == task["operation"] and object_type(str(args.get("obj", ""))) == task["object"]
        )

    def explain(self, index: int, critical: Sequence[Action], correct: bool) -> str:
        """Which operation the agent does on which object, against the task."""
        operation, obj = "move", "something"
        if critical:
            operation, obj = critical[-1][0], str(critical[-1][1].get("obj", ""))
        kind = object_type(obj) if obj else "object"
        if correct:
            return f"the agent does '{operation}' on the {kind}, as the task requires"
        task = self.tasks[index]["instruction"]
        return f"the agent does '{operation}' on the {kind}, but the task is: {task}"

    def inferred_tasks(self, actions: Sequence[Action]) -> list[str]:
        """Three household tasks the last operation suggests."""
        treated = [(tool, str(args.get("obj", ""))) for tool, args in actions if tool in _STATUS]
        operation, obj = treated[-1] if treated else ("move", "something")
        kind = object_type(obj) if obj else "object"
        return [
            f"{operation} some {kind} and put it in fridge",
            f"{operation} some {kind} and put it in countertop",
            f"put a {operation}ed {kind} in cabinet",
        ]

    def succeeded(self, index: int, messages: Sequence[BaseMessage]) -> bool:
        """Whether the household after the episode has the treated object in the target."""
        return self.is_success(self.state(messages), index)

    def oracle_feedback(self, index: int) -> str:
        """A rejection naming the wrong operation and the task."""
        task = self.tasks[index]
        return (
            f"Rejected: do not {task['distractor']['operation']} the {task['object']}. "
            f"The task is to {task['instruction']}: use the right appliance to "
            f"{task['operation']} it."
        )

    def scripted_actor(self, task_index: int | None = None) -> ScriptedChatModel:
        """This household's scripted agent (see :func:`scripted_actor`)."""
        return scripted_actor(self, task_index)

    # -- state ---------------------------------------------------------------------------------

    def initial_state(self) -> dict[str, Any]:
        """The household before any action."""
        return {
            "location": None,
            "holding": None,
            "opened": [],
            "contents": {loc: list(spec["contents"]) for loc, spec in self.locations.items()},
            "status": {},
        }

    def state(
        self, messages: Sequence[BaseMessage] | None = None, *, thread_id: str = "default"
    ) -> dict[str, Any]:
        """The household after the current episode of ``messages`` (or of a direct session)."""
        if messages is not None:
            history = [(c.name, c.args) for c in episode_calls(messages)]
        else:
            history = self._sessions.get(thread_id, [])
        state = self.initial_state()
        for name, args in history:
            self.step(state, name, args)
        return state

    def _closed(self, state: dict[str, Any], location: str) -> bool:
        return bool(self.locations[location]["openable"]) and location not in state["opened"]

    def step(self, state: dict[str, Any], name: str, args: dict[str, Any]) -> str:
        """Apply one action to ``state`` in place and return the observation."""
        here = state["location"]
        if name == "go_to":
            location = str(args.get("location", "")).strip()
            if location not in self.locations:
                return NOTHING
            state["location"] = location
            if self._closed(state, location):
                return f"You arrive at {location}. The {location} is closed."
            seen = _listing(state["contents"][location])
            if self.locations[location]["openable"]:
                return f"You arrive at {location}. The {location} is open. In it, you see {seen}."
            return f"You arrive at {location}. On the {location}, you see {seen}."
        if name == "open":
            receptacle = str(args.get("receptacle", "")).strip()
            if receptacle != here or not self._closed(state, receptacle):
                return NOTHING
            state["opened"] = [*state["opened"], receptacle]
            seen = _listing(state["contents"][receptacle])
            return f"You open the {receptacle}. The {receptacle} is open. In it, you see {seen}."
        obj = str(args.get("obj", "")).strip()
        if name == "take":
            source = str(args.get("source", "")).strip()
            if (
                source != here
                or state["holding"] is not None
                or self._closed(state, source)
                or obj not in state["contents"].get(source, [])
            ):
                return NOTHING
            state["contents"][source].remove(obj)
            state["holding"] = obj
            return f"You pick up the {obj} from the {source}."
        if name == "put":
            target = str(args.get("target", "")).strip()
            if target != here or state["holding"] != obj or self._closed(state, target):
                return NOTHING
            state["contents"][target].append(obj)
            state["holding"] = None
            return f"You put the {obj} in/on the {target}."
        if name in _STATUS:
            appliance = str(args.get("appliance", "")).strip()
            if (
                appliance != here
                or state["holding"] != obj
                or appliance not in self.appliances.get(name, [])
            ):
                return NOTHING
            status = set(state["status"].get(obj, []))
            if name == "heat":
                status.discard("cool")
            if name == "cool":
                status.discard("hot")
            status.add(_STATUS[name])
            state["status"] = {**state["status"], obj: sorted(status)}
            return f"You {name} the {obj} using the {appliance}."
        return NOTHING

    # -- tools ---------------------------------------------------------------------------------

    def _act(self, runtime: Any, name: str, args: dict[str, Any]) -> str:
        messages = runtime_messages(runtime)
        thread_id = runtime_thread_id(runtime)
        state = self.state(messages, thread_id=thread_id)
        observation = self.step(state, name, args)
        if observation == NOTHING:
            return observation
        self._remember(runtime, name, dict(args))
        if name in _STATUS:
            record(
                self.ledger,
                {
                    "env": "alfworld",
                    "action": name,
                    "thread_id": thread_id,
                    "tool_call_id": runtime_call_id(runtime),
                    "object": args["obj"],
                    "appliance": args["appliance"],
                    "risk": OPERATION_RISK[name],
                },
            )
        return observation

    def _make_tools(self) -> list[BaseTool]:
        env = self

        def go_to(location: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Go to a location, e.g. ``"fridge 1"``, and see what is on or in it."""
            return env._act(runtime, "go_to", {"location": location})

        def open_(receptacle: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Open a closed receptacle (fridge, cabinet, drawer, microwave) you are at."""
            return env._act(runtime, "open", {"receptacle": receptacle})

        def take(obj: str, source: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Take an object, e.g. ``"egg 1"``, from the receptacle you are at. Hands hold one."""
            return env._act(runtime, "take", {"obj": obj, "source": source})

        def put(obj: str, target: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Put the object you hold in or on the receptacle you are at."""
            return env._act(runtime, "put", {"obj": obj, "target": target})

        def heat(obj: str, appliance: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Heat the object you hold with the microwave you are at. Critical, irreversible."""
            return env._act(runtime, "heat", {"obj": obj, "appliance": appliance})

        def cool(obj: str, appliance: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Cool the object you hold with the fridge you are at. Critical, irreversible."""
            return env._act(runtime, "cool", {"obj": obj, "appliance": appliance})

        def clean(obj: str, appliance: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
            """Clean the object you hold in the sink basin you are at. Critical."""
            return env._act(runtime, "clean", {"obj": obj, "appliance": appliance})

        tools: list[BaseTool] = []
        for func, name in (
            (go_to, "go_to"),
            (open_, "open"),
            (take, "take"),
            (put, "put"),
            (heat, "heat"),
            (cool, "cool"),
            (clean, "clean"),
        ):
            tool = StructuredTool.from_function(func, name=name)
            tool.metadata = {"critical": name in _STATUS, "risk": OPERATION_RISK.get(name, "low")}
            tools.append(tool)
        return tools


# -- scripted actor ------------------------------------------------------------------------------


def _next_action(
    env: AlfWorldEnv, state: dict[str, Any], goal: dict[str, Any], why: str
) -> tuple[str, str, dict[str, Any]] | str:
    """The next (thought, tool, args) towards ``goal``, or a final text when done/stuck."""
    kind, operation, target = goal["object"], goal["operation"], goal["target"]
    here, holding = state["location"], state["holding"]
    wanted = _STATUS[operation]
    for obj in state["contents"].get(target, []):
        if object_type(obj) == kind and wanted in state["status"].get(obj, []):
            return f"Done: the {obj} is {wanted} and in the {target}."
    if holding is not None and object_type(holding) != kind:
        if here is None:
            return f"I hold {holding} but I am nowhere; I stop."
        if env._closed(state, here):
            return (
                f"The {here} is closed; I open it to put the {holding} down.",
                "open",
                {"receptacle": here},
            )
        return (
            f"I am holding {holding}, which is not a {kind}. I put it down here.",
            "put",
            {"obj": holding, "target": here},
        )
    if holding is None:
        source = next(
            (
                loc
                for loc, objs in state["contents"].items()
                if any(object_type(o) == kind for o in objs)
            ),
            None,
        )
        if source is None:
            return f"I cannot find any {kind}."
        obj = next(o for o in state["contents"][source] if object_type(o) == kind)
        if here != source:
            return (
                f"I need a {kind}. A {obj} should be in/on the {source}.",
                "go_to",
                {"location": source},
            )
        if env._closed(state, source):
            return (f"The {source} is closed; I open it.", "open", {"receptacle": source})
        return (f"I take the {obj}.", "take", {"obj": obj, "source": source})
    if wanted not in state["status"].get(holding, []):
        appliance = env.appliances[operation][0]
        if here != appliance:
            return (
                f"Now I {operation} the {holding} with the {appliance}.",
                "go_to",
                {"location": appliance},
            )
        return (
            f"{why} I {operation} the {holding} with the {appliance}.",
            operation,
            {"obj": holding, "appliance": appliance},
        )
    if here != target:
        return (
            f"The {holding} is {wanted}; I bring it to the {target}.",
            "go_to",
            {"location": target},
        )
    if env._closed(state, target):
        return (f"The {target} is closed; I open it.", "open", {"receptacle": target})
    return (f"I put the {holding} in/on the {target}.", "put", {"obj": holding, "target": target})


def scripted_actor(env: AlfWorldEnv, task_index: int | None = None) -> ScriptedChatModel:
    """A deterministic ReAct household agent for task ``task_index``.

    With ``task_index=None`` the task is the one the user's newest message asks for, in their
    own words (:meth:`~AlfWorldEnv.match_task`); a request that matches no known task gets a
    plain answer listing the tasks it knows, and no tool is called.

    It plans from the household state replayed from the conversation. On a first trial it
    pursues the task's plausible mistake (``task["distractor"]``: the wrong object or the wrong
    operation). Once the history holds feedback (a system or human message with
    *rejected*/*reject*/*blocked*/*feedback*, or such a tool message answering heat/cool/clean
    or marked as an error), it pursues the real task, first putting down a wrong object it
    holds. When the goal is reached, when an action did nothing, when a critical operation was
    not executed (rejected without feedback, or failed), after 30 actions, or on anything
    unexpected, it answers without tool calls; what it then says is read from the replayed
    household state or from the tool's result, never from its plan.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> env = AlfWorldEnv()
        >>> scripted_actor(env, 0).invoke([HumanMessage(env.prompt(0))]).tool_calls[0]["args"]
        {'location': 'fridge 1'}
    """

    def step(messages: list[BaseMessage], attempt: Attempt) -> AIMessage:
        task, last = attempt.task, messages[-1]
        if (
            isinstance(last, ToolMessage)
            and last.status == "error"
            and last.name in env.critical_tools
            and attempt.feedback != len(messages) - 1
        ):  # not executed, and no feedback to act on: say so, never retry blindly
            reply = f"I did not {last.name} anything: {text_of(last)}"
            return final_answer(reply, messages, attempt.prefix)
        if isinstance(last, ToolMessage) and text_of(last) == NOTHING:
            return final_answer(
                "My last action did nothing; I stop here.", messages, attempt.prefix
            )
        if tool_calls_since(messages, attempt.anchor) >= _MAX_STEPS:
            reply = "I have taken too many steps; I stop here."
            return final_answer(reply, messages, attempt.prefix)
        if attempt.corrected:
            goal = {"object": task["object"], "operation": task["operation"]}
            why = f"The task asks to {task['operation']} a {task['object']}."
        else:
            goal = {k: task["distractor"][k] for k in ("object", "operation")}
            why = task["distractor"].get("why", "")
        goal["target"] = task["target"]
        action = _next_action(env, env.state(messages), goal, why)
        if isinstance(action, str):
            return final_answer(action, messages, attempt.prefix)
        thought, name, args = action
        return ai_tool_call(messages, attempt.prefix, thought, name, args)

    return scripted_actor_model(env, task_index, "ALFWorld", step, no_messages="I have no task.")
