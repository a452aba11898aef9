"""The offline example environments, their tools and their scripted actors (no critic)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver

import inferact_langgraph.examples as examples
from inferact_langgraph.examples import (
    AlfWorldEnv,
    Environment,
    HotPotQAEnv,
    WebShopEnv,
    alfworld_actor,
    hotpotqa_actor,
    normalize_answer,
    webshop_actor,
)
from inferact_langgraph.examples._common import (
    FEEDBACK_PATTERN,
    feedback_index,
    scripted_actor_model,
)

DATA = Path(examples.__file__).with_name("data")
FEEDBACK = "Feedback from earlier trials: your last attempt was wrong; read the task again.\n\n"


def run(agent, messages: list[BaseMessage], thread_id: str) -> list[BaseMessage]:
    config = {"configurable": {"thread_id": thread_id}}
    return agent.invoke({"messages": messages}, config)["messages"]


def agent_for(env, actor, index: int, **kwargs):
    return create_agent(actor(env, index), tools=env.tools, checkpointer=InMemorySaver(), **kwargs)


def tool_call_names(messages: list[BaseMessage]) -> list[str]:
    return [c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


def test_public_names_are_pinned() -> None:
    assert examples.__all__ == sorted(examples.__all__)
    assert examples.__all__ == [
        "AccountEnv",
        "AlfWorldEnv",
        "Environment",
        "HotPotQAEnv",
        "Judgement",
        "WebShopEnv",
        "account_actor",
        "alfworld_actor",
        "hotpotqa_actor",
        "normalize_answer",
        "webshop_actor",
    ]


def test_data_never_contains_the_feedback_trigger_words() -> None:
    # The actors correct themselves on these words; the data must not fire them by accident
    # (the wiki may: its pages are tool observations, which never count as feedback).
    for name in (
        "webshop_catalogue.json",
        "webshop_tasks.json",
        "alfworld_household.json",
        "account_tasks.json",
    ):
        assert not FEEDBACK_PATTERN.search((DATA / name).read_text()), name
    tasks = json.loads((DATA / "hotpotqa_tasks.json").read_text())["tasks"]
    assert not any(FEEDBACK_PATTERN.search(t["question"]) for t in tasks)


def test_an_environment_without_tools_cannot_be_built() -> None:
    # Environment is abstract: a subclass must build its tools, or it fails at construction,
    # not on the first call that needs them.
    class NoTools(Environment):
        pass

    with pytest.raises(TypeError, match="_make_tools"):
        NoTools()  # type: ignore[abstract]


def test_a_scripted_actor_that_fails_stops_politely_instead_of_crashing_the_graph() -> None:
    env = WebShopEnv()

    def step(messages, attempt):
        return attempt.task["no such field"]

    actor = scripted_actor_model(env, None, "WebShop", step)
    reply = actor.invoke([HumanMessage(env.prompt(0))])
    assert reply.content == "I cannot continue (KeyError)." and not reply.tool_calls
    assert webshop_actor(env, 0).invoke([]).content == "I have no instruction to follow."


# -- WebShop -----------------------------------------------------------------------------------


def test_webshop_data_sizes_and_near_misses() -> None:
    env = WebShopEnv()
    assert len(env.products) >= 24 and len(env.tasks) >= 5
    prices = [env.price(t["gold"]["asin"]) for t in env.tasks]
    assert any(p > 60 for p in prices) and any(p < 60 for p in prices)
    fig2 = env.task(0)
    assert "66 x 66" in env.products[fig2["gold"]["asin"]]["title"]
    assert "Custom" in env.products[fig2["distractor"]["asin"]]["title"]
    for index, task in enumerate(env.tasks):
        first_page = [p["asin"] for p in env.search_results(task["query"])[:5]]
        assert task["gold"]["asin"] in first_page and task["distractor"]["asin"] in first_page
        assert env.reward(task["gold"], index) == 1.0 and env.is_success(task["gold"], index)
        assert 0.0 <= env.reward(task["distractor"], index) < 1.0
        assert not env.is_success(task["distractor"], index)
        assert env.price(task["gold"]["asin"]) <= task["budget"]


def test_webshop_tools_navigate_and_buy() -> None:
    env = WebShopEnv()
    search, click, buy_now = env.tools
    assert [t.name for t in env.tools] == ["search", "click", "buy_now"]
    assert buy_now.metadata["critical"] and not search.metadata["critical"]
    assert set(buy_now.tool_call_schema.model_json_schema()["properties"]) == {
        "asin",
        "options",
        "price",
    }
    page = search.invoke({"query": "white vanity bench"})
    assert "[B0BNCHWHT1]" in page and "Total results: 4" in page
    assert "Invalid click" in click.invoke({"target": "white"})  # no product open yet
    item = click.invoke({"target": "B0BNCHWHT1"})
    assert "Price: $89.99" in item and "color: [white] [black] [pink]" in item
    assert "Selected: color: white" in click.invoke({"target": "white"})
    assert "Invalid click" in click.invoke({"target": "purple"})
    assert "[B0BNCHWHT1]" in click.invoke({"target": "back"})
    assert click.invoke({"target": "next"}) == "You are on the last page."
    search.invoke({"query": "66 x 66 inch blackout shades"})
    assert "Page 2" in click.invoke({"target": "next"})
    assert env.ledger == []
    # wrong price or option: refused, nothing bought
    assert "listed price" in buy_now.invoke({"asin": "B0BNCHWHT1", "price": 9.99})
    assert "not an option" in buy_now.invoke({"asin": "B0BNCHWHT1", "options": {"color": "red"}})
    assert "no product" in buy_now.invoke({"asin": "B0NOPE"})
    assert env.ledger == []
    out = buy_now.invoke({"asin": "B0BNCHWHT1", "options": {"color": "white"}, "price": 89.99})
    assert out.startswith("Thank you for your purchase!")
    (purchase,) = env.ledger
    assert purchase["asin"] == "B0BNCHWHT1" and purchase["price"] == 89.99
    assert env.is_success(purchase, 1)


def test_webshop_risk_comes_from_the_arguments() -> None:
    env = WebShopEnv()
    assert env.risk("buy_now", {"asin": "B0SHD66X66"}) == "high"  # $72.99
    assert env.risk("buy_now", {"asin": "B0SHDCUSTM"}) == "low"  # $45.99
    assert env.risk("buy_now", {"asin": "unknown", "price": 61}) == "high"
    assert env.risk("search", {"query": "anything"}) == "low"


def test_webshop_ledger_can_be_a_callable() -> None:
    seen = []
    env = WebShopEnv(ledger=seen.append)
    env.tools[2].invoke({"asin": "B0KETTLE17"})
    assert [r["asin"] for r in seen] == ["B0KETTLE17"]
    with pytest.raises(ValueError):
        WebShopEnv(ledger="not a ledger")  # type: ignore[arg-type]


@pytest.mark.parametrize("index", range(6))
def test_webshop_actor_errs_then_corrects_with_feedback(index: int) -> None:
    env = WebShopEnv()
    task = env.task(index)
    first = run(agent_for(env, webshop_actor, index), [HumanMessage(env.prompt(index))], "t1")
    (bought,) = env.purchases("t1")
    assert (bought["asin"], bought["options"]) == (
        task["distractor"]["asin"],
        task["distractor"]["options"],
    )
    assert not env.is_success(bought, index)
    assert tool_call_names(first)[-1] == "buy_now" and not first[-1].tool_calls
    # the option clicks were applied to the page recomputed from the conversation
    clicks = [m for m in first if isinstance(m, ToolMessage) and m.name == "click"]
    assert "Selected: " + ", ".join(f"{k}: {v}" for k, v in bought["options"].items()) in (
        clicks[-1].content
    )
    second = run(
        agent_for(env, webshop_actor, index),
        [HumanMessage(FEEDBACK + env.prompt(index))],
        "t2",
    )
    (bought,) = env.purchases("t2")
    assert bought["asin"] == task["gold"]["asin"] and env.is_success(bought, index)
    assert second[-1].content.startswith("I bought")


def test_webshop_actor_reads_feedback_from_a_system_message_too() -> None:
    env = WebShopEnv()
    messages = [SystemMessage("Feedback from earlier trials: wrong size."), HumanMessage("go")]
    run(agent_for(env, webshop_actor, 0), messages, "t")
    assert env.is_success(env.purchases("t")[-1], 0)


# -- HotPotQA ----------------------------------------------------------------------------------


def test_hotpotqa_data_comes_from_the_real_logs() -> None:
    env = HotPotQAEnv()
    assert len(env.pages) == 150 and len(env.tasks) == 7
    assert "Reflexion" in (DATA / "ATTRIBUTION.md").read_text()
    for index, task in enumerate(env.tasks):
        assert task["id"].startswith("hotpotqa-react-base-")
        assert task["trial1"][-1]["tool"] == "finish" == task["corrected"][-1]["tool"]
        assert env.reward(task["trial1"][-1]["args"]["answer"], index) == 0.0
        assert env.reward(task["corrected"][-1]["args"]["answer"], index) == 1.0
        for step in task["trial1"] + task["corrected"]:
            if step["tool"] == "search":  # every search of a plan is answered from the data
                entity = step["args"]["entity"]
                assert env.page(entity) is not None or "Could not find" in env.search_text(entity)


def test_hotpotqa_record_against_shared_data(hotpotqa_records) -> None:
    env = HotPotQAEnv()
    by_id = {r["id"]: r for r in hotpotqa_records}
    for task in env.tasks:
        record = by_id[task["id"]]
        assert record["label"] == "incorrect" and record["task"] == task["question"]
        assert [s["action"] for s in task["trial1"]] == [s["action"] for s in record["steps"]]


def test_hotpotqa_tools() -> None:
    env = HotPotQAEnv()
    search, lookup, finish = env.tools
    assert [t.name for t in env.tools] == ["search", "lookup", "finish"]
    assert finish.metadata["critical"]
    assert lookup.invoke({"keyword": "Ellis"}).startswith("No page to look up")
    assert search.invoke({"entity": "joe  frazier"}).startswith("Joseph William Frazier")
    assert lookup.invoke({"keyword": "ellis"}).startswith("(Result 1 / 2) Frazier emerged")
    assert lookup.invoke({"keyword": "Ellis"}).startswith("(Result 2 / 2) Frazier fought on")
    assert lookup.invoke({"keyword": "Ellis"}) == "No More Results"
    assert lookup.invoke({"keyword": "zebra"}) == "No Results"
    # an explicit page wins over the last searched one
    assert "Raffaella Reggi" in lookup.invoke({"keyword": "born", "entity": "Raffaella Reggi"})
    # recorded "Could not find" answers are replayed; new ones get computed suggestions
    recorded = search.invoke({"entity": '"Wallace and Gromit"'})
    assert recorded.startswith('Could not find ["Wallace and Gromit"]. Similar: [')
    assert "'Nick Park'" in recorded
    assert "Nick Park" in search.invoke({"entity": "Park of Nick"})
    # an unknown search does not replace the last page found
    assert lookup.invoke({"keyword": "Frazier"}).startswith("(Result 1 /")
    assert env.ledger == []
    assert (
        finish.invoke({"answer": "Jimmy Ellis"}) == "Episode finished. Answer recorded: Jimmy Ellis"
    )
    assert [r["answer"] for r in env.answers()] == ["Jimmy Ellis"]
    assert env.is_success("jimmy ellis.", 1) and not env.is_success("George Foreman", 1)
    assert normalize_answer("The Clash of Triton!") == "clash of triton"
    assert env.risk("finish", {}) == "medium" and env.risk("search", {}) == "low"


@pytest.mark.parametrize("index", range(7))
def test_hotpotqa_actor_replays_the_real_mistake_then_corrects(index: int) -> None:
    env = HotPotQAEnv()
    task = env.task(index)
    first = run(agent_for(env, hotpotqa_actor, index), [HumanMessage(env.prompt(index))], "t1")
    (answer,) = env.answers("t1")
    assert answer["answer"] == task["trial1"][-1]["args"]["answer"]
    assert not env.is_success(answer["answer"], index)
    assert tool_call_names(first) == [s["tool"] for s in task["trial1"]]
    second = run(
        agent_for(env, hotpotqa_actor, index), [HumanMessage(FEEDBACK + env.prompt(index))], "t2"
    )
    (answer,) = env.answers("t2")
    assert env.is_success(answer["answer"], index)
    observations = [m.content for m in second if isinstance(m, ToolMessage)]
    if any(s["tool"] == "lookup" for s in task["corrected"]):
        assert any(o.startswith("(Result 1 /") for o in observations)


def test_hotpotqa_lookup_page_survives_a_resume_in_another_process(tmp_path: Path) -> None:
    """The page lookup reads comes from the checkpointed conversation, not process memory."""
    db = tmp_path / "checkpoints.sqlite"
    first_process = textwrap.dedent(
        f"""
        from langchain.agents import create_agent
        from langchain_core.messages import HumanMessage
        from langgraph.checkpoint.sqlite import SqliteSaver
        from inferact_langgraph.examples import HotPotQAEnv, hotpotqa_actor

        env = HotPotQAEnv()
        config = {{"configurable": {{"thread_id": "t"}}}}
        with SqliteSaver.from_conn_string({str(db)!r}) as saver:
            agent = create_agent(hotpotqa_actor(env, 1), tools=env.tools, checkpointer=saver,
                                 interrupt_before=["tools"])
            agent.invoke({{"messages": [HumanMessage("Feedback: be careful. " + env.prompt(1))]}},
                         config)
            agent.invoke(None, config)  # runs search[Joe Frazier], stops before lookup[Ellis]
            print(agent.get_state(config).values["messages"][-1].tool_calls[0]["name"])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", first_process], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "lookup"
    from langgraph.checkpoint.sqlite import SqliteSaver

    env = HotPotQAEnv()  # a fresh environment: no session, no memory of the search
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        agent = create_agent(hotpotqa_actor(env, 1), tools=env.tools, checkpointer=saver)
        messages = agent.invoke(None, config)["messages"]
    lookups = [m for m in messages if isinstance(m, ToolMessage) and m.name == "lookup"]
    assert lookups[0].content.startswith("(Result 1 / 2) Frazier emerged")
    assert [r["answer"] for r in env.answers("t")] == ["Jimmy Ellis"]


# -- ALFWorld ----------------------------------------------------------------------------------


def test_alfworld_tools_and_success() -> None:
    env = AlfWorldEnv()
    go_to, open_, take, put, heat, cool, clean = env.tools
    assert [t.name for t in env.tools] == [
        "go_to",
        "open",
        "take",
        "put",
        "heat",
        "cool",
        "clean",
    ]
    assert [t.metadata["risk"] for t in env.tools[4:]] == ["high", "high", "medium"]
    assert go_to.invoke({"location": "garage 9"}) == "Nothing happens."
    assert go_to.invoke({"location": "countertop 1"}).startswith("You arrive at countertop 1. On")
    assert take.invoke({"obj": "egg 1", "source": "countertop 1"}) == "Nothing happens."
    assert take.invoke({"obj": "knife 1", "source": "countertop 1"}).startswith("You pick up")
    assert take.invoke({"obj": "cup 1", "source": "countertop 1"}) == "Nothing happens."  # full
    assert heat.invoke({"obj": "knife 1", "appliance": "microwave 1"}) == "Nothing happens."
    go_to.invoke({"location": "microwave 1"})
    assert clean.invoke({"obj": "knife 1", "appliance": "microwave 1"}) == "Nothing happens."
    assert env.ledger == []
    go_to.invoke({"location": "sinkbasin 1"})
    assert clean.invoke({"obj": "knife 1", "appliance": "sinkbasin 1"}).startswith("You clean")
    go_to.invoke({"location": "drawer 1"})
    assert put.invoke({"obj": "knife 1", "target": "drawer 1"}) == "Nothing happens."  # closed
    assert open_.invoke({"receptacle": "drawer 1"}).startswith("You open the drawer 1.")
    assert put.invoke({"obj": "knife 1", "target": "drawer 1"}).startswith("You put")
    assert env.is_success(env.state(), 2) and not env.is_success(env.state(), 0)
    assert [(r["action"], r["object"], r["risk"]) for r in env.operations()] == [
        ("clean", "knife 1", "medium")
    ]
    env.reset()
    assert env.state()["contents"]["countertop 1"] == ["cup 1", "bread 1", "knife 1"]
    # cooling undoes nothing: heat then cool leaves the object cool, not hot
    go_to.invoke({"location": "fridge 1"})
    open_.invoke({"receptacle": "fridge 1"})
    take.invoke({"obj": "egg 1", "source": "fridge 1"})
    assert (
        cool.invoke({"obj": "egg 1", "appliance": "fridge 1"})
        == "You cool the egg 1 using the fridge 1."
    )
    assert env.state()["status"]["egg 1"] == ["cool"]


def test_alfworld_rejected_calls_do_not_change_the_replayed_state() -> None:
    env = AlfWorldEnv()
    call = {"name": "go_to", "args": {"location": "fridge 1"}, "id": "c1"}
    leave = {"name": "go_to", "args": {"location": "countertop 1"}, "id": "c2"}
    messages = [
        HumanMessage("task"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("You arrive at fridge 1.", tool_call_id="c1", name="go_to"),
        AIMessage("", tool_calls=[leave]),
        ToolMessage("User rejected the tool call", tool_call_id="c2", status="error"),
    ]
    state = env.state(messages)
    assert state["location"] == "fridge 1" and state["holding"] is None
    # a new user message starts a new episode from the initial household
    assert env.state([*messages, HumanMessage("again")])["location"] is None


@pytest.mark.parametrize("index", range(4))
def test_alfworld_actor_errs_then_corrects_with_feedback(index: int) -> None:
    env = AlfWorldEnv()
    task = env.task(index)
    first = run(agent_for(env, alfworld_actor, index), [HumanMessage(env.prompt(index))], "t1")
    assert not env.is_success(env.state(first), index)
    (operation,) = env.operations("t1")
    wrong = task["distractor"]
    assert operation["action"] == wrong["operation"]
    assert operation["object"].startswith(wrong["object"] + " ")
    assert first[-1].content.startswith("Done:")
    second = run(
        agent_for(env, alfworld_actor, index), [HumanMessage(FEEDBACK + env.prompt(index))], "t2"
    )
    assert env.is_success(env.state(second), index)
    (operation,) = env.operations("t2")
    assert operation["action"] == task["operation"]
    assert operation["object"].startswith(task["object"] + " ")


def test_alfworld_actor_recovers_within_the_thread_after_a_rejection() -> None:
    """Reject the wrong heat at an interrupt; a fresh env and agent resume each step."""
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t"}}

    def fresh():
        env = AlfWorldEnv()
        agent = create_agent(
            alfworld_actor(env, 3),
            tools=env.tools,
            checkpointer=saver,
            interrupt_before=["tools"],
        )
        return env, agent

    env, agent = fresh()
    agent.invoke({"messages": [HumanMessage(env.prompt(3))]}, config)
    rejected = 0
    for _ in range(40):
        snapshot = agent.get_state(config)
        if not snapshot.next:
            break
        last = [m for m in snapshot.values["messages"] if isinstance(m, AIMessage)][-1]
        (call,) = last.tool_calls
        if call["name"] == "heat" and call["args"]["obj"] == "tomato 1":
            rejected += 1
            reply = ToolMessage(
                "User rejected the tool call for `heat` with reason: that is a tomato, "
                "heat the potato",
                tool_call_id=call["id"],
                name="heat",
                status="error",
            )
            agent.update_state(config, {"messages": [reply]}, as_node="tools")
        env, agent = fresh()
        agent.invoke(None, config)
    messages = agent.get_state(config).values["messages"]
    assert rejected == 1
    final = env.state(messages)
    assert env.is_success(final, 3)
    assert "tomato 1" not in final["status"]  # the rejected heat never happened
    ids = [m.id for m in messages]
    assert len(ids) == len(set(ids))  # no message was overwritten across model instances
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert len(calls) == len(set(calls))
    assert ("put", {"obj": "tomato 1", "target": "microwave 1"}) in [
        (c["name"], c["args"]) for m in messages if isinstance(m, AIMessage) for c in m.tool_calls
    ]


# -- all actors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_class", "actor"),
    [(WebShopEnv, webshop_actor), (HotPotQAEnv, hotpotqa_actor), (AlfWorldEnv, alfworld_actor)],
)
@pytest.mark.parametrize(
    "messages",
    [
        [],
        [AIMessage("hello")],
        [HumanMessage([{"type": "text", "text": "a list content"}])],
        [HumanMessage("hi"), ToolMessage("orphan", tool_call_id="x")],
        [SystemMessage("Feedback from earlier trials: none"), AIMessage("done")],
    ],
)
def test_actors_never_crash_on_unexpected_messages(env_class, actor, messages) -> None:
    reply = actor(env_class(), 0).invoke(messages) if messages else actor(env_class(), 0)._next([])
    assert isinstance(reply, AIMessage)


def test_feedback_trigger() -> None:
    human = HumanMessage("Please buy")
    assert feedback_index([human], ["buy_now"]) is None
    assert feedback_index([SystemMessage("Feedback from earlier trials: x"), human], []) == 0
    observation = ToolMessage("the treaty was rejected", tool_call_id="1", name="search")
    assert feedback_index([human, observation], ["finish"]) is None
    blocked = ToolMessage("Blocked by the critic", tool_call_id="2", name="finish")
    assert feedback_index([human, observation, blocked], ["finish"]) == 2
    error = ToolMessage("User rejected the tool call", tool_call_id="3", status="error")
    assert feedback_index([human, error], []) == 1
    assert feedback_index([HumanMessage("building blocks")], []) is None
