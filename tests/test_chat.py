"""Chat deployments: per-request scope, memory only in the actor's call, per user.

Every graph kind: ``with_inferact`` over ``create_agent``, ``create_react_agent`` and a custom
``StateGraph`` with a ``ToolNode``, and ``InferActMiddleware`` in both review modes; sync and
async. A thread first asks for an e-mail, then for a transfer: the transfer is judged against
the transfer request, on the transfer's actions only.
"""

from __future__ import annotations

from typing import Any

import chat_support
import pytest
from chat_support import KINDS, cfg
from guard_helpers import call as _call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from inferact_langgraph import InferActMiddleware, critical, with_inferact
from inferact_langgraph.memory import FEEDBACK_MARKER, FeedbackMemory
from inferact_langgraph.resume import CheckpointerRequiredError
from inferact_langgraph.scope import TaskLocator, is_request
from inferact_langgraph.testing import ScriptedChatModel, ScriptedCritic

EMAIL = "e-mail the Q3 numbers to our CFO"
TRANSFER = "now transfer 500 dollars to Bob"
SIDE_EFFECTS: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture(autouse=True)
def _clear():
    SIDE_EFFECTS.clear()
    yield
    SIDE_EFFECTS.clear()


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found: {query}"


@critical
@tool
def send_email(to: str, body: str) -> str:
    """Send an e-mail (irreversible)."""
    SIDE_EFFECTS.append(("send_email", {"to": to}))
    return f"sent to {to}"


@critical
@tool
def transfer(to: str, amount: int) -> str:
    """Transfer money (irreversible)."""
    SIDE_EFFECTS.append(("transfer", {"to": to, "amount": amount}))
    return f"transferred {amount} to {to}"


TOOLS = [lookup, send_email, transfer]


def two_request_actor() -> ScriptedChatModel:
    """Request 1: look up, then e-mail; request 2: transfer."""
    return ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[_call("lookup", {"query": "Q3 numbers"}, "l-1")]),
            AIMessage("", tool_calls=[_call("send_email", {"to": "cfo", "body": "Q3"}, "e-1")]),
            "Sent the Q3 numbers.",
            AIMessage("", tool_calls=[_call("transfer", {"to": "Bob", "amount": 500}, "t-1")]),
            "Transferred.",
        ]
    )


def guarded(kind: str, actor: Any, critic: Any, **options: Any) -> Any:
    """``chat_support.guarded`` over this module's tools."""
    return chat_support.guarded(kind, actor, critic, tools=TOOLS, **options)


def _interrupt_info(out: dict) -> dict:
    (pending,) = out["__interrupt__"]
    (request,) = pending.value["action_requests"]
    return request["inferact"]


# ---------------------------------------------------------------------------- scope
@pytest.mark.parametrize("kind", KINDS)
def test_request_two_is_judged_against_itself_on_its_own_actions(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])  # the e-mail passes, the transfer is doubted
    graph = guarded(kind, two_request_actor(), critic)
    graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    assert SIDE_EFFECTS == [("send_email", {"to": "cfo"})]
    out = graph.invoke({"messages": [("user", TRANSFER)]}, cfg())

    first, second = critic.trajectories
    assert first.task == EMAIL and [s.tool_name for s in first.steps] == ["lookup", "send_email"]
    assert second.task == TRANSFER
    assert [s.tool_name for s in second.steps] == ["transfer"]  # no e-mail actions in S
    info = _interrupt_info(out)  # the payload says which task was used
    assert info["task"] == TRANSFER and info["scope"] == "request"
    assert [step["action"] for step in info["action_chain"]] == ['transfer(to="Bob", amount=500)']
    assert SIDE_EFFECTS == [("send_email", {"to": "cfo"})]  # the transfer waits

    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    audit = graph.get_state(cfg()).values["inferact_audit"]
    assert [(e["tool"], e["task"], e["scope"]) for e in audit] == [
        ("send_email", EMAIL, "request"),
        ("transfer", TRANSFER, "request"),
    ]
    assert SIDE_EFFECTS[-1] == ("transfer", {"to": "Bob", "amount": 500})


@pytest.mark.parametrize("kind", KINDS)
async def test_request_scope_async(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])
    graph = guarded(kind, two_request_actor(), critic)
    await graph.ainvoke({"messages": [("user", EMAIL)]}, cfg())
    out = await graph.ainvoke({"messages": [("user", TRANSFER)]}, cfg())
    second = critic.trajectories[1]
    assert second.task == TRANSFER and [s.tool_name for s in second.steps] == ["transfer"]
    assert _interrupt_info(out)["task"] == TRANSFER
    await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg())
    state = await graph.aget_state(cfg())
    assert [e["task"] for e in state.values["inferact_audit"]] == [EMAIL, TRANSFER]


@pytest.mark.parametrize("kind", ["create_agent", "middleware"])
def test_thread_scope_lists_the_requests_in_order_and_keeps_every_action(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])
    graph = guarded(kind, two_request_actor(), critic, scope="thread")
    graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    out = graph.invoke({"messages": [("user", TRANSFER)]}, cfg())
    first, second = critic.trajectories
    assert first.task == EMAIL  # one request so far: the task is just that request
    assert second.task == (
        f"The user's requests in this conversation, in order:\n1. {EMAIL}\n2. {TRANSFER}"
    )
    assert [s.tool_name for s in second.steps] == ["lookup", "send_email", "transfer"]
    assert _interrupt_info(out)["scope"] == "thread"


@pytest.mark.parametrize("kind", ["builder", "middleware_tool_call"])
def test_task_extractor_replaces_the_text_and_the_audit_says_custom(kind):
    critic = ScriptedCritic(scores=[0.9, 0.2])
    graph = guarded(kind, two_request_actor(), critic, task_extractor=lambda s: "pay Bob 500")
    graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    out = graph.invoke({"messages": [("user", TRANSFER)]}, cfg())
    assert critic.trajectories[1].task == "pay Bob 500"
    assert [s.tool_name for s in critic.trajectories[1].steps] == ["transfer"]
    info = _interrupt_info(out)
    assert info["task"] == "pay Bob 500" and info["scope"] == "custom"


def test_a_new_message_instead_of_a_decision_is_the_new_request():
    """The user skips a review by typing: the skipped call is closed, the new one judged alone."""
    critic = ScriptedCritic(scores=[0.2, 0.9])  # the e-mail is doubted, the transfer is not
    actor = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[_call("lookup", {"query": "Q3"}, "l-1")]),
            AIMessage("", tool_calls=[_call("send_email", {"to": "cfo", "body": "Q3"}, "e-1")]),
            AIMessage("", tool_calls=[_call("transfer", {"to": "Bob", "amount": 500}, "t-1")]),
            "Transferred.",
        ]
    )
    graph = guarded("create_agent", actor, critic)
    assert "__interrupt__" in graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    graph.invoke({"messages": [("user", TRANSFER)]}, cfg())
    last = critic.trajectories[-1]
    assert last.task == TRANSFER and [s.tool_name for s in last.steps] == ["transfer"]
    assert SIDE_EFFECTS == [("transfer", {"to": "Bob", "amount": 500})]


def test_locator_skips_memory_and_tool_generated_human_messages():
    messages = [
        HumanMessage(EMAIL, id="h1"),
        AIMessage("", tool_calls=[_call("lookup", {"query": "chart"}, "l-1")], id="a1"),
        ToolMessage("chart attached", tool_call_id="l-1", id="t1"),
        HumanMessage([{"type": "text", "text": "(image of the chart)"}], id="h2"),  # by a tool
        HumanMessage("Feedback from earlier trials ...", name="inferact_memory", id="m"),
        HumanMessage("old memory", id="inferact-memory-store-1"),
        AIMessage("", tool_calls=[_call("send_email", {"to": "cfo", "body": ""}, "e-1")]),
    ]
    assert [is_request(messages, i) for i in range(len(messages))] == [
        True, False, False, False, False, False, False,
    ]  # fmt: skip
    locator = TaskLocator()
    assert locator.task({"messages": messages}) == EMAIL
    chain = locator.trajectory({"messages": messages}, "e-1")
    assert [s.tool_name for s in chain.steps] == ["lookup", "send_email"]
    with pytest.raises(ValueError, match="scope must be 'request' or 'thread'"):
        TaskLocator(scope="conversation")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- memory
FEEDBACK = "Bob's old account is closed: pay Robert Jones, account 42"


def transfer_actor() -> ScriptedChatModel:
    return ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[_call("transfer", {"to": "Bob", "amount": 500}, "t-1")]),
            "OK.",
        ]
    )


def _reject_transfer(kind: str, store: Any, thread: str, **configurable: Any) -> None:
    graph = guarded(kind, transfer_actor(), ScriptedCritic(scores=[0.2]), store=store)
    out = graph.invoke({"messages": [("user", TRANSFER)]}, cfg(thread, **configurable))
    assert "__interrupt__" in out
    reject = {"decisions": [{"type": "reject", "message": FEEDBACK}]}
    graph.invoke(Command(resume=reject), cfg(thread, **configurable))


def _prompt_text(actor: ScriptedChatModel) -> str:
    return "\n".join(str(m.content) for prompt in actor.prompts for m in prompt)


def _assert_not_in_thread(graph: Any, config: dict) -> None:
    messages = graph.get_state(config).values["messages"]
    assert not any(FEEDBACK in str(m.content) for m in messages if isinstance(m, HumanMessage))
    assert not any(FEEDBACK_MARKER in str(m.content) for m in messages)


@pytest.mark.parametrize("kind", KINDS)
def test_feedback_reaches_the_actor_but_never_the_thread(kind):
    store = InMemoryStore()
    _reject_transfer(kind, store, "first", user_id="alice")
    actor = transfer_actor()
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.9]), store=store)
    config = cfg("second", user_id="alice")
    graph.invoke({"messages": [("user", TRANSFER)]}, config)
    first_prompt = actor.prompts[0]
    memory = [m for m in first_prompt if FEEDBACK in str(m.content)]
    assert len(memory) == 1 and FEEDBACK_MARKER in str(memory[0].content)
    if kind in ("middleware", "middleware_tool_call"):
        assert memory[0].type == "system"  # only in the model request's system message
    else:  # a message of InferAct's, in the actor's input only, that a UI does not render
        assert memory[0].name == "inferact_memory"
        assert memory[0].id.startswith("do-not-render-")
    _assert_not_in_thread(graph, config)
    values = graph.get_state(config).values
    assert values["inferact_memory"]["task"] == TRANSFER
    assert [m.content for m in values["messages"] if isinstance(m, HumanMessage)] == [TRANSFER]


@pytest.mark.parametrize("kind", KINDS)
async def test_feedback_reaches_the_actor_but_never_the_thread_async(kind):
    store = InMemoryStore()
    graph = guarded(kind, transfer_actor(), ScriptedCritic(scores=[0.2]), store=store)
    config = cfg("first", user_id="alice")
    await graph.ainvoke({"messages": [("user", TRANSFER)]}, config)
    reject = {"decisions": [{"type": "reject", "message": FEEDBACK}]}
    await graph.ainvoke(Command(resume=reject), config)
    actor = transfer_actor()
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.9]), store=store)
    config = cfg("second", user_id="alice")
    await graph.ainvoke({"messages": [("user", TRANSFER)]}, config)
    assert FEEDBACK in _prompt_text(actor)
    state = await graph.aget_state(config)
    assert not any(FEEDBACK in str(m.content) for m in state.values["messages"])


@pytest.mark.parametrize("kind", KINDS)
def test_memory_is_loaded_for_each_request_of_a_thread(kind):
    """Feedback on the transfer reaches request 2 of a thread that began with the e-mail."""
    store = InMemoryStore()
    _reject_transfer(kind, store, "earlier", user_id="alice")
    actor = two_request_actor()
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.9, 0.9]), store=store)
    config = cfg("chat", user_id="alice")
    graph.invoke({"messages": [("user", EMAIL)]}, config)
    calls_for_email = len(actor.prompts)
    assert FEEDBACK not in _prompt_text(actor)  # request 1 is another task
    graph.invoke({"messages": [("user", TRANSFER)]}, config)
    later = actor.prompts[calls_for_email:]
    assert later and all(any(FEEDBACK in str(m.content) for m in p) for p in later)
    _assert_not_in_thread(graph, config)


class _CountingStore(InMemoryStore):
    """An ``InMemoryStore`` that counts its searches (the memory's only read)."""

    def __init__(self) -> None:
        super().__init__()
        self.searches = 0

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return super().search(*args, **kwargs)

    async def asearch(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return await super().asearch(*args, **kwargs)


@pytest.mark.parametrize("kind", KINDS)
def test_the_store_is_read_once_per_request_never_per_model_call(kind):
    """docs/chat.md: memory is read at the start of a request, not on each of its model calls."""
    store = _CountingStore()
    actor = two_request_actor()  # request 1: three model calls; request 2: two
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.9, 0.9]), store=store)
    for request in (EMAIL, TRANSFER):
        graph.invoke({"messages": [("user", request)]}, cfg("reads", user_id="alice"))
    assert len(actor.prompts) == 5 and store.searches == 2


@pytest.mark.parametrize("kind", KINDS)
async def test_the_store_is_read_once_per_request_never_per_model_call_async(kind):
    store = _CountingStore()
    actor = two_request_actor()
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.9, 0.9]), store=store)
    for request in (EMAIL, TRANSFER):
        await graph.ainvoke({"messages": [("user", request)]}, cfg("reads", user_id="alice"))
    assert len(actor.prompts) == 5 and store.searches == 2


@pytest.mark.parametrize("kind", KINDS)
def test_two_users_with_the_same_task_never_see_each_others_feedback(kind):
    store = InMemoryStore()
    _reject_transfer(kind, store, "alice-1", user_id="alice")
    for who, sees in (({"user_id": "bob"}, False), ({}, False), ({"user_id": "alice"}, True)):
        actor = transfer_actor()
        graph = guarded(kind, actor, ScriptedCritic(scores=[0.9]), store=store)
        graph.invoke({"messages": [("user", TRANSFER)]}, cfg(f"t-{who}", **who))
        assert (FEEDBACK in _prompt_text(actor)) is sees, who


@pytest.mark.parametrize("kind", KINDS)
def test_feedback_goes_to_the_threads_user_whoever_answers_the_review(kind):
    """A resume that names no user (or another one: a reviewer) keeps it in the user's memory."""
    store = InMemoryStore()
    graph = guarded(kind, transfer_actor(), ScriptedCritic(scores=[0.2]), store=store)
    graph.invoke({"messages": [("user", TRANSFER)]}, cfg("t", user_id="alice"))
    reject = {"decisions": [{"type": "reject", "message": FEEDBACK}]}
    graph.invoke(Command(resume=reject), cfg("t", user_id="reviewer-7"))
    assert [e["owner"] for e in FeedbackMemory().list_entries(store)] == [("user", "alice")]


def test_the_servers_authenticated_user_wins_over_user_id():
    store = InMemoryStore()
    _reject_transfer("create_agent", store, "a", langgraph_auth_user_id="alice", user_id="x")
    entries = FeedbackMemory().list_entries(store)
    assert [e["owner"] for e in entries] == [("user", "alice")]
    actor = transfer_actor()
    graph = guarded("create_agent", actor, ScriptedCritic(scores=[0.9]), store=store)
    graph.invoke({"messages": [("user", TRANSFER)]}, cfg("b", user_id="alice"))
    assert FEEDBACK in _prompt_text(actor)  # the same user, however the run names them


@pytest.mark.parametrize("kind", ["builder", "middleware"])
def test_memory_namespace_hook_for_tenants(kind):
    store = InMemoryStore()

    def by_org(config: dict) -> tuple[str, ...]:
        return ("org", config["configurable"]["org"])

    for org, actor, scores in (("acme", transfer_actor(), [0.2]), ("globex", None, None)):
        if actor is None:
            break
        graph = guarded(kind, actor, ScriptedCritic(scores=scores), store=store,
                        memory_namespace=by_org)  # fmt: skip
        graph.invoke({"messages": [("user", TRANSFER)]}, cfg("t1", org=org))
        reject = {"decisions": [{"type": "reject", "message": FEEDBACK}]}
        graph.invoke(Command(resume=reject), cfg("t1", org=org))
    assert [e["owner"] for e in FeedbackMemory().list_entries(store)] == [("org", "acme")]
    for org, sees in (("acme", True), ("globex", False)):
        actor = transfer_actor()
        graph = guarded(kind, actor, ScriptedCritic(scores=[0.9]), store=store,
                        memory_namespace=by_org)  # fmt: skip
        graph.invoke({"messages": [("user", TRANSFER)]}, cfg(f"t-{org}", org=org))
        assert (FEEDBACK in _prompt_text(actor)) is sees
    bad = guarded(kind, transfer_actor(), ScriptedCritic(scores=[0.2]), store=store,
                  memory_namespace=lambda config: "acme")  # fmt: skip
    with pytest.raises(ValueError, match="memory_namespace must return"):
        bad.invoke({"messages": [("user", TRANSFER)]}, cfg("bad"))


def test_memory_list_and_clear_per_user_and_task():
    store = InMemoryStore()
    memory = FeedbackMemory()
    alice, bob = ("user", "alice"), ("user", "bob.smith@example.com")  # dots are allowed
    memory.save(store, TRANSFER, {"tool": "transfer", "feedback": "a1", "task": TRANSFER},
                owner=alice)  # fmt: skip
    memory.save(store, EMAIL, {"tool": "send_email", "feedback": "a2", "task": EMAIL}, owner=alice)
    memory.save(store, TRANSFER, {"tool": "transfer", "feedback": "b1", "task": TRANSFER},
                owner=bob)  # fmt: skip
    assert [(e["owner"], e["feedback"]) for e in memory.list_entries(store)] == [
        (alice, "a1"), (alice, "a2"), (bob, "b1"),
    ]  # fmt: skip
    assert [e["feedback"] for e in memory.list_entries(store, owner=bob)] == ["b1"]
    assert [e["feedback"] for e in memory.list_entries(store, task=TRANSFER)] == ["a1", "b1"]
    assert memory.clear(store, owner=alice, task=TRANSFER) == 1
    assert [e["feedback"] for e in memory.load(store, EMAIL, owner=alice)] == ["a2"]
    assert memory.load(store, TRANSFER, owner=alice) == []
    assert memory.clear(store) == 2 and memory.list_entries(store) == []
    with pytest.raises(ValueError, match="owner must be a non-empty tuple"):
        memory.load(store, TRANSFER, owner="alice")


async def test_memory_list_and_clear_async():
    store = InMemoryStore()
    memory = FeedbackMemory()
    await memory.asave(store, TRANSFER, {"tool": "transfer", "feedback": "a1"}, owner=("u", "a"))
    await memory.asave(store, TRANSFER, {"tool": "transfer", "feedback": "b1"}, owner=("u", "b"))
    assert len(await memory.alist_entries(store)) == 2
    assert await memory.aclear(store, owner=("u", "a")) == 1
    assert [e["feedback"] for e in await memory.alist_entries(store)] == ["b1"]


# ---------------------------------------------------------------------------- checkpointer
@pytest.mark.parametrize("kind", KINDS)
def test_no_checkpointer_is_a_clear_error_before_the_review_and_nothing_runs(kind):
    graph = guarded(kind, transfer_actor(), ScriptedCritic(scores=[0.2]), checkpointer=None)
    with pytest.raises(CheckpointerRequiredError, match="needs a checkpointer"):
        graph.invoke({"messages": [("user", TRANSFER)]})
    assert SIDE_EFFECTS == []


@pytest.mark.parametrize("kind", ["react_agent", "middleware_tool_call"])
async def test_no_checkpointer_async(kind):
    graph = guarded(kind, transfer_actor(), ScriptedCritic(scores=[0.2]), checkpointer=None)
    with pytest.raises(CheckpointerRequiredError):
        await graph.ainvoke({"messages": [("user", TRANSFER)]})
    assert SIDE_EFFECTS == []


@pytest.mark.parametrize("kind", ["builder", "middleware"])
def test_no_checkpointer_is_fine_when_nothing_needs_a_review(kind):
    graph = guarded(kind, transfer_actor(), ScriptedCritic(scores=[0.9]), checkpointer=None)
    out = graph.invoke({"messages": [("user", TRANSFER)]})
    assert out["messages"][-1].content == "OK." and SIDE_EFFECTS[-1][0] == "transfer"


@pytest.mark.parametrize("kind", ["create_agent", "builder", "middleware"])
def test_a_retry_keeps_the_earlier_turns_of_the_chat(kind):
    """on_reject="retry" clears request 2's actions only; request 1's turn stays."""
    actor = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[_call("send_email", {"to": "cfo", "body": "Q3"}, "e-1")]),
            "Sent.",
            AIMessage("", tool_calls=[_call("transfer", {"to": "Bob", "amount": 500}, "t-1")]),
            AIMessage("", tool_calls=[_call("transfer", {"to": "Robert", "amount": 500}, "t-2")]),
            "Transferred to Robert.",
        ]
    )
    graph = guarded(kind, actor, ScriptedCritic(scores=[0.9, 0.2, 0.9]), on_reject="retry")
    graph.invoke({"messages": [("user", EMAIL)]}, cfg())
    graph.invoke({"messages": [("user", TRANSFER)]}, cfg())
    out = graph.invoke(Command(resume=FEEDBACK), cfg())
    assert SIDE_EFFECTS[-1] == ("transfer", {"to": "Robert", "amount": 500})
    retry_prompt = actor.prompts[3]
    assert FEEDBACK in "\n".join(str(m.content) for m in retry_prompt)
    texts = [str(m.content) for m in out["messages"]]
    assert EMAIL in texts and "Sent." in texts and TRANSFER in texts  # request 1's turn kept
    assert not any(m.type == "tool" and m.tool_call_id == "t-1" for m in out["messages"])
    assert not any(FEEDBACK in t for t in texts if t)  # the memory is not a message
    values = graph.get_state(cfg()).values
    assert values["inferact_trial"] == 1 and values["inferact_memory"]["task"] == TRANSFER


def test_bad_scope_and_hooks_are_errors_at_construction():
    agent = create_agent(transfer_actor(), TOOLS)
    critic = ScriptedCritic(scores=[0.9])
    with pytest.raises(ValueError, match="scope must be 'request' or 'thread'"):
        with_inferact(agent, critic=critic, scope="chat")
    with pytest.raises(ValueError, match="scope must be 'request' or 'thread'"):
        InferActMiddleware(critic=critic, scope="everything")
    with pytest.raises(ValueError, match="memory_namespace must be a function"):
        InferActMiddleware(critic=critic, memory_namespace=("org", "acme"))
