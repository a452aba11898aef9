"""The review inbox in a real browser (system Chromium, driven by Playwright), against
``langgraph dev`` serving a guarded test graph and the inbox on loopback.

The graph (tests/inbox_app) has a scripted actor that logs every prompt it gets, and a real
InferAct critic on a scripted critic model: a purchase of the wrong product scores 0.25 (0.2 in
the original option order, 0.3 in the reversed one) against a threshold of 0.5.
"""

from __future__ import annotations

import json
import time

import pytest
from inbox_support import INBOX_APP, chromium_context
from server_support import SERVER_MARKS, langgraph_dev

pytestmark = SERVER_MARKS
sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is not installed")
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("inbox_app")
    (work / "inbox_test_graph.py").write_text((INBOX_APP / "inbox_test_graph.py").read_text())
    config = json.loads((INBOX_APP / "langgraph.json").read_text())
    log = work / "prompts.jsonl"
    with langgraph_dev(work, config, env={"INBOX_PROMPT_LOG": str(log)}) as url:
        yield {"url": url, "prompts": log}


@pytest.fixture(scope="module")
def browser():
    with chromium_context() as context:
        yield context


@pytest.fixture
def page(browser, server):
    page = browser.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    yield page
    page.close()


def _client(server):
    return sdk.get_sync_client(url=server["url"])


def start(server, task: str) -> str:
    """Run the graph on ``task`` until it waits on a review; return the thread id."""
    client = _client(server)
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "shop", input={"messages": [{"role": "user", "content": task}]})
    assert client.threads.get(thread_id)["status"] == "interrupted"
    return thread_id


def item(page, thread_id: str):
    return page.locator(f'button.thread[data-thread-id="{thread_id}"]')


def open_review(page, server, thread_id: str) -> None:
    page.goto(f"{server['url']}/inferact/inbox")
    item(page, thread_id).click()
    page.wait_for_selector("#detail article.action")


def prompts_for(server, task: str) -> list[list[list[str]]]:
    lines = server["prompts"].read_text().splitlines()
    return [e["prompt"] for e in map(json.loads, lines) if e["task"] == task]


def test_reject_with_feedback_resumes_and_the_actor_gets_the_feedback(page, server) -> None:
    page.goto(f"{server['url']}/inferact/inbox")
    page.wait_for_selector("#status:has-text('Live')")
    assert not page.locator("#credentials-toggle").is_visible()  # no auth: nothing to sign in
    task = "Buy the blue mug B02 (reject)"
    older = start(server, "Buy the blue mug B02 (older)")
    thread_id = start(server, task)
    # It appears without a reload, newest first.
    item(page, thread_id).wait_for()
    ids = page.locator("button.thread").evaluate_all("els => els.map(e => e.dataset.threadId)")
    assert ids.index(thread_id) < ids.index(older)

    item(page, thread_id).click()
    card = page.locator("#detail article.action")
    card.wait_for()
    assert card.locator("[data-field=score]").inner_text() == "p(user's task) = 0.25"
    assert card.locator("[data-field=threshold]").inner_text() == "< threshold 0.50"
    assert card.locator("[data-field=task]").inner_text() == task
    rows = card.locator("table.options tbody tr")
    cells = rows.evaluate_all(
        "rs => rs.map(r => [r.dataset.kind, r.querySelector('.option-text').textContent,"
        " ...Array.from(r.querySelectorAll('td.num')).map(c => c.textContent)])"
    )
    assert cells == [
        ["inferred", "buy a cheap pan", "0.00", "0.00", "0.00"],
        ["inferred", "buy a red mug", "0.60", "0.60", "0.60"],
        ["inferred", "compare mug prices", "0.00", "0.00", "0.00"],
        ["task", task, "0.20", "0.30", "0.25"],
        ["none", "None of the above", "0.00", "0.00", "0.00"],
    ]
    chain = card.locator("ol.chain > li code.action").all_inner_texts()
    assert chain == [f'search(query="{task}")', 'buy_now(asin="B01")']
    assert "B01 looks right" not in page.locator("#detail").inner_text()  # no thoughts
    # The long search result is folded until opened.
    fold = card.locator("ol.chain details.observation")
    assert not fold.locator("pre").is_visible()
    fold.locator("summary").click()
    assert "B07: mug, colour pink" in fold.locator("pre").inner_text()

    card.get_by_label("Reject").check()
    card.locator('textarea[data-input="reject"]').fill(
        "Wrong colour: the user wants B02, the blue one."
    )
    page.locator("#detail button.send").click()
    outcome = page.locator("#detail .outcome[data-outcome]")
    outcome.wait_for()
    assert outcome.get_attribute("data-outcome") == "finished"
    assert "buy_now: reject by human (p=0.25) — Wrong colour" in outcome.inner_text()

    state = _client(server).threads.get_state(thread_id)
    assert state["next"] == [] and not state["interrupts"]
    last_prompt = prompts_for(server, task)[-1]
    assert last_prompt[-1][0] == "tool"
    assert "Their feedback: Wrong colour: the user wants B02, the blue one." in last_prompt[-1][1]
    assert state["values"]["messages"][-1]["content"].startswith("I did not buy it.")
    # And it leaves the list.
    item(page, thread_id).wait_for(state="detached")


def test_two_actions_in_one_review_decided_with_the_keyboard(page, server) -> None:
    thread_id = start(server, "Buy two mugs: B02 and B04")
    page.goto(f"{server['url']}/inferact/inbox")
    item(page, thread_id).focus()
    page.keyboard.press("Enter")
    cards = page.locator("#detail article.action")
    cards.nth(1).wait_for()
    assert cards.locator("pre.args").all_inner_texts() == [
        '{\n  "asin": "B01"\n}',
        '{\n  "asin": "B03"\n}',
    ]
    assert page.locator("#detail button.send").inner_text() == "Send 2 decisions"
    page.keyboard.press("a")  # approve the first action
    assert cards.nth(0).get_by_label("Approve").is_checked()
    page.keyboard.press("Tab")  # to the second action's choices
    page.keyboard.press("s")  # respond to it
    page.keyboard.type("B03 is out of stock; nothing was bought.")
    page.keyboard.press("Control+Enter")
    outcome = page.locator("#detail .outcome[data-outcome]")
    outcome.wait_for()
    assert outcome.get_attribute("data-outcome") == "finished"
    assert outcome.locator("ul.audit li").all_inner_texts() == [
        "buy_now: approve by human (p=0.25)",
        "buy_now: respond by human (p=0.25) — B03 is out of stock; nothing was bought.",
    ]
    messages = _client(server).threads.get_state(thread_id)["values"]["messages"]
    tools = {m["content"] for m in messages if m["type"] == "tool"}
    assert {"bought B01", "B03 is out of stock; nothing was bought."} <= tools
    assert "bought B03" not in tools


def test_edit_is_validated_in_place_then_the_edited_call_is_checked_again(page, server) -> None:
    thread_id = start(server, "Buy the blue mug B02 (edit)")
    open_review(page, server, thread_id)
    card = page.locator("#detail article.action")
    card.get_by_label("Edit arguments").check()
    box = card.locator('textarea[data-input="edit"]')
    box.fill('{"asin": "B03",')
    error = card.locator("[data-field=decision-error]")
    assert error.inner_text().startswith("The arguments are not valid JSON")
    assert box.get_attribute("aria-invalid") == "true"
    page.locator("#detail button.send").click()
    time.sleep(0.3)
    assert page.locator("#detail .outcome").inner_text() == ""  # nothing was sent
    assert _client(server).threads.get(thread_id)["status"] == "interrupted"
    box.fill('["B03"]')
    assert "must be a JSON object" in error.inner_text()

    box.fill('{"asin": "B03"}')
    assert error.inner_text() == ""
    page.locator("#detail button.send").click()
    outcome = page.locator("#detail .outcome[data-outcome]")
    outcome.wait_for()
    assert outcome.get_attribute("data-outcome") == "review"
    # The critic checked the edited call again and still doubts it: a new review, with it.
    again = page.locator("#detail .next-review article.action")
    assert again.locator("pre.args").inner_text() == '{\n  "asin": "B03"\n}'
    assert again.locator("[data-field=score]").inner_text() == "p(user's task) = 0.25"
    assert again.locator("ol.chain > li code.action").last.inner_text() == 'buy_now(asin="B03")'

    again.get_by_label("Edit arguments").check()
    again.locator('textarea[data-input="edit"]').fill('{"asin": "B02"}')
    page.locator("#detail .next-review button.send").click()
    final = page.locator("#detail .next-review .outcome[data-outcome]")
    final.wait_for()
    assert final.get_attribute("data-outcome") == "finished"
    assert "buy_now: approve by critic (p=0.85)" in final.inner_text()
    messages = _client(server).threads.get_state(thread_id)["values"]["messages"]
    assert [m["content"] for m in messages if m["type"] == "tool"][-1] == "bought B02"


def test_hostile_text_is_shown_literally_and_never_runs(page, server) -> None:
    thread_id = start(server, "Buy the hostile mug B02")
    open_review(page, server, thread_id)
    detail = page.locator("#detail")
    card = detail.locator("article.action")
    assert HOSTILE in card.locator("ol.chain > li").first.inner_text()  # the observation
    assert json.loads(card.locator("pre.args").inner_text())["note"] == HOSTILE  # the arguments
    pending = card.locator("ol.chain > li code.action").last.inner_text()
    assert pending == f'buy_now(asin="B01", note={json.dumps(HOSTILE)})'
    assert HOSTILE in card.locator("[data-field=justification]").inner_text()  # the critic
    assert detail.locator("img, script, iframe, object").count() == 0
    card.get_by_label("Edit arguments").check()  # and in the edit box, as plain text
    edit_box = json.loads(card.locator('textarea[data-input="edit"]').input_value())
    assert edit_box == {"asin": "B01", "note": HOSTILE}
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert page.dialogs == []


def test_a_review_answered_meanwhile_says_who_answered_and_locks_the_form(page, server) -> None:
    thread_id = start(server, "Buy the blue mug B02 (refused)")
    open_review(page, server, thread_id)
    card = page.locator("#detail article.action")
    # Someone else answers the review while this page is open.
    _client(server).runs.wait(
        thread_id, "shop", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    card.get_by_label("Reject").check()
    feedback = card.locator('textarea[data-input="reject"]')
    feedback.fill("Not this one.")
    page.locator("#detail button.send").click()
    outcome = page.locator("#detail .outcome[data-outcome=answered]")
    outcome.wait_for()
    # Who answered, from the audit; nothing to retry, so the form is locked, not resent.
    assert "Already answered elsewhere; your decision was not sent." in outcome.inner_text()
    assert outcome.locator("ul.audit li").all_inner_texts() == [
        "buy_now: approve by human (p=0.25)"
    ]
    assert page.locator("#detail button.send").is_disabled()
    assert feedback.input_value() == "Not this one." and feedback.is_disabled()
    item(page, thread_id).wait_for(state="detached")  # the list was refreshed
    state = _client(server).threads.get_state(thread_id)
    audit = state["values"]["inferact_audit"]
    assert [(e["decision"], e["decided_by"]) for e in audit] == [("approve", "human")]


def test_the_page_is_static_and_locked_down(server) -> None:
    import httpx

    page = httpx.get(f"{server['url']}/inferact/inbox")
    assert page.status_code == 200 and '<script src="static/inbox.js" defer></script>' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    script = httpx.get(f"{server['url']}/inferact/static/inbox.js").text
    assert "innerHTML" not in script.replace("never assigns innerHTML", "")
    assert httpx.get(f"{server['url']}/inferact/static/..%2Fapp.py").status_code == 404


def test_a_narrow_window_shows_one_column(browser, server) -> None:
    thread_id = start(server, "Buy the blue mug B02 (narrow)")
    page = browser.new_page()
    page.set_viewport_size({"width": 380, "height": 700})
    try:
        open_review(page, server, thread_id)
        assert not page.locator("#list-pane").is_visible()  # the review replaces the list
        assert page.evaluate("document.documentElement.scrollWidth") <= 380  # no sideways scroll
        page.keyboard.press("Escape")  # and back
        assert page.locator("#list-pane").is_visible() and not page.locator("#detail").is_visible()
        assert item(page, thread_id).evaluate("e => e === document.activeElement")
    finally:
        page.close()


def test_a_failed_critic_is_shown_and_a_person_decides(page, server) -> None:
    thread_id = start(server, "Buy the blue mug B02 (critic unreachable)")
    page.goto(f"{server['url']}/inferact/inbox")
    assert item(page, thread_id).locator(".badge.failed").inner_text() == "critic failed"
    item(page, thread_id).click()
    card = page.locator("#detail article.action")
    error = card.locator("[data-field=error]")
    assert "the critic model is unreachable (connection refused)" in error.inner_text()
    assert card.locator("[data-field=score]").count() == 0  # no score to show
    card.get_by_label("Approve").check()
    page.locator("#detail button.send").click()
    outcome = page.locator("#detail .outcome[data-outcome]")
    outcome.wait_for()
    assert outcome.get_attribute("data-outcome") == "finished"
    assert "buy_now: approve by human" in outcome.inner_text()


def test_two_tabs_deciding_at_once_the_later_one_says_who_answered(browser, server) -> None:
    task = "Buy the blue mug B02 (slow)"
    thread_id = start(server, task)
    first, second = browser.new_page(), browser.new_page()
    try:
        for tab in (first, second):
            open_review(tab, server, thread_id)
        first.locator("#detail article.action").get_by_label("Approve").check()
        card = second.locator("#detail article.action")
        card.get_by_label("Reject").check()
        card.locator('textarea[data-input="reject"]').fill("Not this one.")
        first.locator("#detail button.send").click()
        deadline = time.monotonic() + 10
        while _client(server).threads.get(thread_id)["status"] != "busy":
            assert time.monotonic() < deadline, "the first decision never started a run"
            time.sleep(0.05)
        # The first decision's run is still going (its purchase takes 1.5 s): the second arrives.
        second.locator("#detail button.send").click()
        answered = second.locator("#detail .outcome[data-outcome=answered]")
        answered.wait_for()
        text = answered.inner_text()
        assert "Already answered elsewhere; your decision was not sent." in text
        assert answered.locator("ul.audit li").all_inner_texts() == [
            "buy_now: approve by human (p=0.25)"
        ]
        for jargon in ("multitask", "Thread is already running", "..", "try again"):
            assert jargon not in text
        assert second.locator("#detail button.send").is_disabled()
        done = first.locator("#detail .outcome[data-outcome]")
        done.wait_for()
        assert done.get_attribute("data-outcome") == "finished"
    finally:
        first.close()
        second.close()
    audit = _client(server).threads.get_state(thread_id)["values"]["inferact_audit"]
    assert [(e["decision"], e["decided_by"]) for e in audit] == [("approve", "human")]


def test_the_outcome_lists_every_decision_of_the_run(page, server) -> None:
    thread_id = start(server, "Buy the blue mug B02 (retry)")
    open_review(page, server, thread_id)
    card = page.locator("#detail article.action")
    card.get_by_label("Reject").check()
    card.locator('textarea[data-input="reject"]').fill("Wrong colour.")
    page.locator("#detail button.send").click()
    outcome = page.locator("#detail .outcome[data-outcome]")
    outcome.wait_for()
    assert outcome.get_attribute("data-outcome") == "finished"
    # The human's rejection, then the critic's approval of the purchase the agent made next.
    assert outcome.locator("ul.audit li").all_inner_texts() == [
        "buy_now: reject by human (p=0.25) — Wrong colour.",
        "buy_now: approve by critic (p=0.85)",
    ]
    assert "bought B02" in outcome.locator(".last-message").inner_text()


def test_the_apps_root_leads_to_the_inbox_and_loading_it_requests_nothing_missing(
    page, server
) -> None:
    import httpx

    root = httpx.get(f"{server['url']}/inferact", follow_redirects=False)
    assert root.status_code in (302, 303, 307) and root.headers["location"].endswith(
        "/inferact/inbox"
    )
    thread_id = start(server, "Buy the blue mug B02 (page load)")
    failed: list[str] = []
    page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
    page.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(f"{server['url']}/inferact")
    assert page.url.endswith("/inferact/inbox")
    item(page, thread_id).click()
    page.wait_for_selector("#detail article.action")
    page.wait_for_timeout(1000)  # the browser asks for the icon after the page has loaded
    assert failed == [] and errors == []
    icon = httpx.get(f"{server['url']}/inferact/static/favicon.svg")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")


def test_the_edit_box_shows_every_argument_from_the_first(page, server) -> None:
    thread_id = start(server, "Buy the blue mug B02 (many arguments)")
    open_review(page, server, thread_id)
    card = page.locator("#detail article.action")
    card.locator("pre.args").click()  # focus inside the card, then choose edit by keyboard
    page.keyboard.press("e")
    box = card.locator('textarea[data-input="edit"]')
    assert box.evaluate("b => b === document.activeElement")
    assert json.loads(box.input_value())["address"] == "1 Main St"
    top, height, client_height = box.evaluate("b => [b.scrollTop, b.scrollHeight, b.clientHeight]")
    assert top == 0 and height <= client_height, (top, height, client_height)


def test_the_description_agent_chat_ui_shows_links_to_this_review(page, server) -> None:
    task = "Buy the blue mug B02 (link)"
    thread_id = start(server, task)
    state = _client(server).threads.get_state(thread_id)
    [request] = state["interrupts"][0]["value"]["action_requests"]
    lines = request["description"].splitlines()
    assert lines[1:4] == [
        "InferAct doubts this call: p(user's task) = 0.25 < threshold 0.50.",
        f'Judged against the user\'s task: "{task}"',
        'Most likely task, from the agent\'s actions (p = 0.60): "buy a red mug"',
    ]
    link = f"{server['url']}/inferact/inbox#/thread/{thread_id}"
    assert lines[-1] == f"Review it with every detail in the inbox: {link}"
    page.goto(link)  # the link opens this thread's review
    title = page.locator("#detail-title")
    title.wait_for()
    assert thread_id in title.inner_text()
    shown = page.locator("#detail article.action .description").inner_text()
    assert "Judged against the user's task" in shown and "inferact/inbox" not in shown
