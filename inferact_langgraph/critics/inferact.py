r"""The InferAct critic (Fang, Zhu, Gurevych 2024): infer the task from the actions, then verify.

InferAct never asks "is this trajectory correct for the task?". Its **Task Inference Unit**
sees only the action chain S (thoughts stripped, the preset's masker applied, nothing naming the
real task t*) and infers the N most likely tasks. Its **Task Verification Unit** then asks, as a
multiple-choice question, which tasks S fulfils: the N inferred tasks, then t*, then "None of the
above" (WebShop, HotPotQA, generic). The question is asked in the original and the reversed
option order, concurrently, and the score is p(t*) averaged over the two orders. A low p(t*)
means the agent's behaviour does not reveal the user's task: the pending action is flagged.

Both units are LangGraph subgraphs (:attr:`InferActCritic.inference_graph`,
:attr:`InferActCritic.verification_graph`), composed in :attr:`InferActCritic.graph`. They are
compiled with ``checkpointer=False``: a check never writes checkpoints, not even when it runs
inside a node of a checkpointed parent graph.

Example:
    >>> import re
    >>> from inferact_langgraph.testing import ScriptedChatModel
    >>> from inferact_langgraph.trajectory import Step, Trajectory
    >>> def judge(messages):  # a fake critic model that answers by reading the prompt
    ...     prompt = messages[-1].content
    ...     if "G1:" not in prompt:
    ...         return "The 3 most likely tasks are: A. buy a blue mug B. buy a pan C. buy a cup"
    ...     label = re.search(r"^([A-E])\. buy a red mug$", prompt, re.M).group(1)
    ...     return f"G1: {label} P1: 0.9\nJustification: the red mug was bought."
    >>> critic = InferActCritic(model=ScriptedChatModel(responder=judge), calibration=None)
    >>> traj = Trajectory("buy a red mug", (Step("search(q=mug)", "B01 red mug"), Step("buy(B01)")))
    >>> v = critic.evaluate(traj)
    >>> v.options
    ['buy a blue mug', 'buy a pan', 'buy a cup', 'buy a red mug', 'None of the above']
    >>> v.score, v.usage.model_calls, v.flagged
    (0.9, 3, False)
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal, NotRequired

from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from inferact_langgraph._parsing import (
    OptionAnswer,
    parse_inferred_tasks,
    parse_probability,
    parse_verification,
)
from inferact_langgraph.critics.base import (
    Critic,
    RiskLevel,
    Usage,
    Verdict,
    _usage_of,
)
from inferact_langgraph.errors import (
    CriticError,
    CriticParseError,
)
from inferact_langgraph.prompts import one_line, option_labels
from inferact_langgraph.trajectory import Trajectory

__all__ = [
    "CompletionAnswer",
    "InferActCritic",
    "InferActCriticState",
    "InferredTasksAnswer",
    "OptionGuess",
    "OrderAnswer",
    "TaskAssessment",
    "TopKAnswer",
]

Order = Literal["original", "reversed"]
ORDERS: tuple[Order, Order] = ("original", "reversed")


# ---------------------------------------------------------------------------- structured output
class InferredTasksAnswer(BaseModel):
    """The most likely tasks the user gave the agent, inferred from its actions only."""

    tasks: list[str] = Field(description="The most likely user tasks, as diverse as possible.")
    reason: str = Field(default="", description="Why these tasks.")


class OptionGuess(BaseModel):
    """One guess: an option label and the probability that the trajectory fulfils it."""

    label: str = Field(description="The option label only, e.g. 'A'.")
    probability: float = Field(description="Probability from 0.0 to 1.0.")


class TopKAnswer(BaseModel):
    """Top guesses among the candidate tasks, each with a probability."""

    guesses: list[OptionGuess]
    justification: str = Field(default="", description="A brief justification.")


class TaskAssessment(BaseModel):
    """ALFWorld: whether a candidate task is completed, and the probability it is correct."""

    label: str = Field(description="The option label only, e.g. 'A'.")
    completed: bool = Field(description="Whether the trajectory completed this task.")
    probability: float = Field(
        description="Probability (0.0 to 1.0) that the task is correctly completed, or, if not "
        "completed, that the trajectory is correctly progressing towards it."
    )


class CompletionAnswer(BaseModel):
    """ALFWorld: an assessment of every candidate task."""

    assessments: list[TaskAssessment]
    justification: str = Field(default="", description="A brief justification.")


# ---------------------------------------------------------------------------- graph state
def _merge(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Dict union.

    Idempotent, so a subgraph handing its whole state back to a parent that shares the key
    never counts a value twice.
    """
    return {**(left or {}), **(right or {})}


@dataclass(frozen=True)
class OrderAnswer:
    """One verification answer, mapped back to the original option labels.

    Attributes:
        order: ``original`` or ``reversed``.
        probs: Probability per *original* label (labels the model did not rate are absent).
        completed: ALFWorld: completion per original label.
        justification: The model's justification (its labels are those it was shown).

    Example:
        >>> OrderAnswer(order="reversed", probs={"D": 0.7}).probs["D"]
        0.7
    """

    order: str
    probs: dict[str, float]
    completed: dict[str, bool] = field(default_factory=dict)
    justification: str = ""


class InferActCriticState(TypedDict):
    """State of InferAct's graphs. Input: ``trajectory`` (and optionally ``risk``)."""

    trajectory: Trajectory
    """The trajectory to judge (t* and the thought-free chain S)."""
    risk: NotRequired[RiskLevel | None]
    """The check's risk level; ``high`` adds the risk-aware sentence."""
    chain: NotRequired[str]
    """The rendered chain S, when the caller rendered it already (else each unit renders it)."""
    inferred_tasks: NotRequired[list[str]]
    """Task Inference Unit output."""
    inference_reason: NotRequired[str]
    """The inference answer's "The reason is:" text."""
    options: NotRequired[list[str]]
    """The MCQ in the original order."""
    answers: NotRequired[Annotated[dict[str, OrderAnswer], _merge]]
    """Verification answers by order."""
    raw: NotRequired[Annotated[dict[str, str], _merge]]
    """Raw model output by stage."""
    usage: NotRequired[Annotated[dict[str, Usage], _merge]]
    """Cost by stage."""
    option_probs: NotRequired[dict[str, float]]
    """Mean probability per original label."""
    score: NotRequired[float]
    """p(t*), the mean over both orders."""
    justification: NotRequired[str]
    """The original-order answer's justification."""


class _VerifyInput(TypedDict):
    trajectory: Trajectory
    risk: RiskLevel | None
    options: list[str]
    order: Order
    chain: NotRequired[str]


# ---------------------------------------------------------------------------- the critic
class InferActCritic(Critic):
    r"""InferAct: flags a pending action when the behaviour does not reveal the user's task.

    Args:
        model: A chat model instance or an ``init_chat_model`` string.
        num_tasks: N, the number of tasks to infer (paper: 3).
        output_mode: ``text`` (the paper's format, parsed tolerantly) or ``structured``
            (``model.with_structured_output`` with a pydantic schema, for both units).
        **kwargs: The :class:`~inferact_langgraph.critics.base.Critic` options (``threshold``,
            ``preset``, ``risk_aware``, ``budget``, ``timeout``, ``max_retries``).

    Raises:
        ValueError: Invalid ``num_tasks``, ``output_mode`` or preset (at construction).

    The verdict's ``score`` is p(t*), averaged over the original and the reversed option order;
    an option missing from one answer counts 0 in that order. ``option_probs`` holds the same
    mean for every original label, ``order_probs`` the two orders' probabilities behind it
    (``{"original": {...}, "reversed": {...}}``, by original label), ``raw`` the three answers
    (``inference``,
    ``verification_original``, ``verification_reversed``), ``usage`` their summed cost.

    Example:
        >>> from inferact_langgraph.testing import ScriptedChatModel
        >>> from inferact_langgraph.trajectory import Step, Trajectory
        >>> def judge(messages):
        ...     prompt = messages[-1].content
        ...     if "most likely" in prompt and "G1:" not in prompt:
        ...         return "A. heat a mug B. cool a mug C. clean a mug"
        ...     # the real task is D in the original order and A in the reversed one
        ...     return "A: Completed P_A: 0.2\nD: Completed P_D: 0.6"
        >>> critic = InferActCritic(
        ...     model=ScriptedChatModel(responder=judge), preset="alfworld", calibration=None
        ... )
        >>> v = critic.evaluate(Trajectory("heat some mug", (Step("heat mug 1 with microwave 1"),)))
        >>> round(v.score, 2), v.flagged
        (0.4, True)
    """

    name: ClassVar[str] = "inferact"

    def __init__(
        self,
        *,
        num_tasks: int = 3,
        output_mode: Literal["text", "structured"] = "text",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        valid_int = isinstance(num_tasks, int) and not isinstance(num_tasks, bool)
        if not valid_int or not 1 <= num_tasks <= 24:
            raise ValueError(f"num_tasks must be an integer from 1 to 24, got {num_tasks!r}")
        if output_mode not in ("text", "structured"):
            raise ValueError(f"output_mode must be 'text' or 'structured', got {output_mode!r}")
        if (
            output_mode == "structured"
            and self.model is not None
            and not callable(getattr(self.model, "with_structured_output", None))
        ):
            raise ValueError(
                "output_mode='structured' needs a chat model with with_structured_output"
            )
        self.num_tasks = num_tasks
        self.output_mode = output_mode

    # ------------------------------------------------------------------ graphs
    # Compiled on first use only: a check calls the units directly (see _run_units), so the
    # graphs are for composition and inspection, and most critics never need them.
    @cached_property
    def inference_graph(self) -> Any:
        """The Task Inference Unit as a compiled subgraph (built on first access)."""
        return self._build_inference_graph()

    @cached_property
    def verification_graph(self) -> Any:
        """The Task Verification Unit as a compiled subgraph (built on first access)."""
        return self._build_verification_graph()

    @cached_property
    def graph(self) -> Any:
        """Both units composed: ``task_inference`` then ``task_verification``."""
        return self._build_graph()

    def _build_inference_graph(self) -> Any:
        builder = StateGraph(InferActCriticState)
        builder.add_node("infer_tasks", self._infer_tasks)
        builder.add_edge(START, "infer_tasks")
        builder.add_edge("infer_tasks", END)
        return builder.compile(checkpointer=False, name="inferact_task_inference")

    def _build_verification_graph(self) -> Any:
        builder = StateGraph(InferActCriticState)
        builder.add_node("build_mcq", self._build_mcq)
        # A Send target: its input is the Send payload (_VerifyInput), not the graph state, which
        # langgraph's annotations of add_node cannot express.
        builder.add_node("verify", self._verify)  # type: ignore[arg-type]
        builder.add_node("aggregate", self._aggregate)
        builder.add_edge(START, "build_mcq")
        builder.add_conditional_edges("build_mcq", self._fan_out, ["verify"])
        builder.add_edge("verify", "aggregate")
        builder.add_edge("aggregate", END)
        return builder.compile(checkpointer=False, name="inferact_task_verification")

    def _build_graph(self) -> Any:
        builder = StateGraph(InferActCriticState)
        builder.add_node("task_inference", self.inference_graph)
        builder.add_node("task_verification", self.verification_graph)
        builder.add_edge(START, "task_inference")
        builder.add_edge("task_inference", "task_verification")
        builder.add_edge("task_verification", END)
        return builder.compile(checkpointer=False, name="inferact")

    # ------------------------------------------------------------------ nodes
    def _chain(self, trajectory: Trajectory) -> str:
        """S as both units see it: masked by the preset, thoughts never present, bounded."""
        return self.preset_config.mask(trajectory).render(budget=self.budget)

    async def _infer_tasks(self, state: InferActCriticState) -> dict[str, Any]:
        trajectory = state["trajectory"]
        chain = state.get("chain") or self._chain(trajectory)
        prompt = self.preset_config.inference_prompt(chain, num_tasks=self.num_tasks)
        stage = "inference"
        if self.output_mode == "structured":
            parsed, raw, usage = await self._acall_structured(prompt, InferredTasksAnswer, stage)
            tasks = [one_line(t) for t in parsed.tasks if one_line(t)][: self.num_tasks]
            if not tasks:
                raise CriticParseError("the model inferred no task", raw=raw, stage=stage)
            reason = parsed.reason
        else:
            raw, usage = await self.acall(prompt, stage=stage)
            result = parse_inferred_tasks(raw, num_tasks=self.num_tasks, stage=stage, prompt=prompt)
            tasks, reason = list(result.tasks), result.reason
        return {
            "inferred_tasks": tasks,
            "inference_reason": reason,
            "raw": {stage: raw},
            "usage": {stage: usage},
        }

    def _build_mcq(self, state: InferActCriticState) -> dict[str, Any]:
        if not state.get("inferred_tasks"):
            raise CriticError("task verification needs inferred_tasks", stage="verification")
        options = self.preset_config.mcq_options(state["inferred_tasks"], state["trajectory"].task)
        return {"options": options}

    def _fan_out(self, state: InferActCriticState) -> list[Send]:
        return [
            Send(
                "verify",
                {
                    "trajectory": state["trajectory"],
                    "risk": state.get("risk"),
                    "options": state["options"],
                    "order": order,
                },
            )
            for order in ORDERS
        ]

    async def _verify(self, payload: _VerifyInput) -> dict[str, Any]:
        order = payload["order"]
        options = list(payload["options"])
        n = len(options)
        shown = options if order == "original" else options[::-1]
        labels = option_labels(n)
        # shown label -> original label
        to_original = {labels[i]: labels[i if order == "original" else n - 1 - i] for i in range(n)}
        prompt = self.preset_config.verification_prompt(
            payload.get("chain") or self._chain(payload["trajectory"]),
            shown,
            risk_aware=self.is_risk_aware(payload.get("risk")),
            rules=self.rules,
        )
        stage = f"verification_{order}"
        if self.output_mode == "structured":
            answer, raw, usage = await self._structured_verification(prompt, labels, stage)
        else:
            raw, usage = await self.acall(prompt, stage=stage)
            answer = parse_verification(
                raw,
                labels,
                answer_format=self.preset_config.answer_format,
                stage=stage,
                prompt=prompt,
            )
        result = OrderAnswer(
            order=order,
            probs={to_original[k]: v for k, v in answer.probs.items()},
            completed={to_original[k]: v for k, v in answer.completed.items()},
            justification=answer.justification,
        )
        return {"answers": {order: result}, "raw": {stage: raw}, "usage": {stage: usage}}

    def _aggregate(self, state: InferActCriticState) -> dict[str, Any]:
        options = state["options"]
        answers = state.get("answers", {})
        labels = option_labels(len(options))
        # Symmetric: an option missing from an answer counts 0 in that order.
        option_probs = {
            label: sum(answers[o].probs.get(label, 0.0) for o in ORDERS if o in answers)
            / len(ORDERS)
            for label in labels
        }
        task_label = labels[len(state["inferred_tasks"])]
        justification = next(
            (answers[o].justification for o in ORDERS if o in answers and answers[o].justification),
            "",
        )
        return {
            "option_probs": option_probs,
            "score": option_probs[task_label],
            "justification": justification,
        }

    # ------------------------------------------------------------------ structured calls
    async def _structured_verification(
        self, prompt: str, labels: Sequence[str], stage: str
    ) -> tuple[OptionAnswer, str, Usage]:
        allowed = set(labels)
        probs: dict[str, float] = {}
        completed: dict[str, bool] = {}
        if self.preset_config.answer_format == "alfworld":
            parsed, raw, usage = await self._acall_structured(prompt, CompletionAnswer, stage)
            items: list[Any] = list(parsed.assessments)
        else:
            parsed, raw, usage = await self._acall_structured(prompt, TopKAnswer, stage)
            items = list(parsed.guesses)
        for item in items:
            label = one_line(item.label).strip("()[]. ").upper()
            if label not in allowed:
                continue
            value = parse_probability(repr(float(item.probability)), raw=raw, stage=stage)
            probs[label] = max(value, probs.get(label, 0.0))
            if isinstance(item, TaskAssessment):
                completed.setdefault(label, item.completed)
        if not probs:
            raise CriticParseError("no probability for any option label", raw=raw, stage=stage)
        return OptionAnswer(probs, completed, parsed.justification), raw, usage

    async def _acall_structured(
        self, prompt: str, schema: type[BaseModel], stage: str
    ) -> tuple[Any, str, Usage]:
        """One structured-output call, with the same time-out and error typing as ``acall``."""
        if self.model is None:
            raise CriticError(f"{self.name}: no model configured", stage=stage)
        runnable: Runnable[Any, Any] = self.with_retries(
            self.model.with_structured_output(schema, include_raw=True)
        )
        out = await self.ainvoke_typed(runnable, [HumanMessage(prompt)], stage=stage)
        message = out.get("raw") if isinstance(out, Mapping) else out
        parsed = out.get("parsed") if isinstance(out, Mapping) else out
        if isinstance(parsed, BaseModel):
            raw = parsed.model_dump_json()
        else:
            calls = getattr(message, "tool_calls", None) or []
            raw = (
                json.dumps([c.get("args") for c in calls], default=str)
                if calls
                else str(getattr(message, "content", message))
            )
        if not isinstance(parsed, schema):
            error = out.get("parsing_error") if isinstance(out, Mapping) else None
            raise CriticParseError(
                f"the critic model's structured answer does not match {schema.__name__}"
                + (f": {error}" if error else ""),
                raw=raw,
                stage=stage,
            )
        return parsed, raw, _usage_of(message, prompt)

    # ------------------------------------------------------------------ evaluate
    async def _run_units(self, trajectory: Trajectory, risk: RiskLevel | None) -> dict[str, Any]:
        """The same steps as :attr:`graph`, called directly.

        A check runs on the agent's critical path, and the graph machinery (about twenty
        internal graph steps and three thread-pool hops a check) cost more than the method
        itself in the benchmarks; the compiled graphs stay available for composition. The
        chain is rendered once and shared by both units.
        """
        state: dict[str, Any] = {
            "trajectory": trajectory,
            "risk": risk,
            "chain": self._chain(trajectory),
        }
        inferred = await self._infer_tasks(state)  # type: ignore[arg-type]
        state.update(inferred)
        state.update(self._build_mcq(state))  # type: ignore[arg-type]
        orders = await asyncio.gather(
            *(
                self._verify(
                    {
                        "trajectory": trajectory,
                        "risk": risk,
                        "options": state["options"],
                        "order": order,
                        "chain": state["chain"],
                    }
                )
                for order in ORDERS
            )
        )
        for part in orders:
            for key in ("answers", "raw", "usage"):
                state[key] = _merge(state.get(key), part[key])
        state.update(self._aggregate(state))  # type: ignore[arg-type]
        return state

    async def _aevaluate(self, trajectory: Trajectory, *, risk: RiskLevel | None) -> Verdict:
        state = await self._run_units(trajectory, risk)
        usage = sum(state.get("usage", {}).values(), Usage())
        score = state.get("score")
        if score is None or math.isnan(score):
            raise CriticError(f"{self.name}: the check produced no score", stage="verification")
        stages = ["inference", "verification_original", "verification_reversed"]
        raw = state.get("raw", {})
        labels = option_labels(len(state.get("options", [])))
        answers = state.get("answers", {})
        order_probs = {
            order: {label: answers[order].probs.get(label, 0.0) for label in labels}
            for order in ORDERS
            if order in answers
        }
        return self.verdict(
            score=score,
            usage=usage,
            inferred_tasks=list(state.get("inferred_tasks", [])),
            options=list(state.get("options", [])),
            option_probs=dict(state.get("option_probs", {})),
            order_probs=order_probs,
            justification=state.get("justification", ""),
            raw={k: raw[k] for k in stages if k in raw},
            risk=risk,
        )
