// InferAct inbox. Every string that comes from the agent, its tools or the critic is put in the
// page as text (textContent / text nodes); this file never assigns innerHTML or builds markup
// from data, and the server's Content-Security-Policy allows no inline script.
"use strict";

(function () {
  const POLL_MS = 2000;
  const FOLD_CHARS = 280;
  const FOLD_LINES = 4;
  const EDIT_MAX_ROWS = 24;
  const CRED_KEY = "inferact-inbox-authorization";
  const LABELS = {approve: "Approve", edit: "Edit arguments", reject: "Reject", respond: "Respond"};
  const KEYS = {a: "approve", e: "edit", r: "reject", s: "respond"};

  const state = {
    reviews: [],          // summaries from GET api/reviews, newest first
    openId: null,         // thread id of the open review
    openView: null,       // its full view
    listError: null,
    lastRefresh: null,
    sending: false,
    decided: new Set(),   // threads this page has just resumed (their review left the list)
  };

  const $ = (id) => document.getElementById(id);

  // el("p", {class: "x"}, "text", child, ...): children that are strings become text nodes.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fmt(p) {
    return typeof p === "number" && isFinite(p) ? p.toFixed(2) : "–";
  }

  function ago(iso) {
    if (!iso) return "";
    const then = Date.parse(iso);
    if (isNaN(then)) return String(iso);
    const s = Math.max(0, Math.round((Date.now() - then) / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.round(s / 60) + " min ago";
    if (s < 86400) return Math.round(s / 3600) + " h ago";
    return new Date(then).toLocaleString();
  }

  function pretty(value) {
    try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
  }

  // ------------------------------------------------------------------ server calls
  function credentials() {
    try { return sessionStorage.getItem(CRED_KEY) || ""; } catch (e) { return ""; }
  }

  async function api(path, options) {
    const headers = Object.assign({"Accept": "application/json"}, (options || {}).headers || {});
    const cred = credentials();
    if (cred) headers["Authorization"] = cred;
    let response;
    try {
      response = await fetch(path, Object.assign({}, options, {headers, credentials: "same-origin"}));
    } catch (e) {
      return {ok: false, status: 0, body: {error: "The server cannot be reached: " + e.message}};
    }
    let body = null;
    try { body = await response.json(); } catch (e) { body = {error: response.statusText || "no answer"}; }
    if (response.status === 401) showCredentials(true);
    return {ok: response.ok, status: response.status, body};
  }

  // ------------------------------------------------------------------ the list
  async function refresh() {
    const result = await api("api/reviews");
    state.lastRefresh = new Date();
    if (!result.ok) {
      state.listError = (result.body && result.body.error) || ("HTTP " + result.status);
    } else {
      state.listError = null;
      state.reviews = result.body.reviews || [];
      // Without auth on the server there is nothing to sign in with.
      $("credentials-toggle").hidden = result.body.auth === false && !credentials();
    }
    renderStatus();
    renderList();
    markOpenGone();
  }

  function renderStatus() {
    const status = $("status");
    if (state.listError) {
      status.textContent = "Cannot refresh the list: " + state.listError;
      status.classList.add("error");
    } else {
      const time = state.lastRefresh ? state.lastRefresh.toLocaleTimeString() : "";
      status.textContent = "Live: updated " + time + " (every " + POLL_MS / 1000 + " s)";
      status.classList.remove("error");
    }
  }

  function renderList() {
    const list = $("list");
    const focusedId = document.activeElement && document.activeElement.dataset
      ? document.activeElement.dataset.threadId : null;
    const items = state.reviews.map((r) => {
      const low = typeof r.min_score === "number";
      const score = r.critic_failed
        ? el("span", {class: "badge failed"}, "critic failed")
        : r.spot_check  // the critic passed it: a human checks it anyway
        ? el("span", {class: "badge spot"}, "spot check: p=" + fmt(r.min_score))
        : el("span", {class: "badge low"}, "p=" + fmt(r.min_score) + (r.threshold !== null ? " < " + fmt(r.threshold) : ""));
      const button = el("button", {
        type: "button", class: "thread", "data-thread-id": r.thread_id,
        "aria-current": r.thread_id === state.openId ? "true" : "false",
        onclick: () => openReview(r.thread_id, true),
      },
        el("span", {class: "line1"},
          el("span", {class: "tools"}, r.tools.join(", ")),
          low || r.critic_failed ? score : null,
        ),
        el("span", {class: "task"}, r.task || "(task unknown)"),
        el("span", {class: "meta"},
          ago(r.updated_at), " · ", r.graph_id || "graph ?",
          r.actions > 1 ? " · " + r.actions + " actions" : "",
          r.risk === "high" ? " · high risk" : ""),
      );
      return el("li", {}, button);
    });
    list.replaceChildren(...items);
    $("count").textContent = "(" + state.reviews.length + ")";
    $("empty").hidden = state.reviews.length > 0;
    if (focusedId) {
      const again = list.querySelector('[data-thread-id="' + CSS.escape(focusedId) + '"]');
      if (again) again.focus();
    }
  }

  function markOpenGone() {
    if (!state.openId || state.listError || state.sending || state.decided.has(state.openId)) return;
    const still = state.reviews.some((r) => r.thread_id === state.openId);
    const notice = $("gone-notice");
    if (notice) notice.hidden = still;
  }

  // ------------------------------------------------------------------ one review
  async function openReview(threadId, focus) {
    state.openId = threadId;
    state.decided.delete(threadId);
    if (location.hash !== "#/thread/" + threadId) history.replaceState(null, "", "#/thread/" + threadId);
    document.body.classList.add("reading");
    renderList();
    const detail = $("detail");
    detail.replaceChildren(el("p", {class: "muted"}, "Loading the review…"));
    const result = await api("api/reviews/" + encodeURIComponent(threadId));
    if (state.openId !== threadId) return;
    if (!result.ok) {
      detail.replaceChildren(
        backButton(),
        el("p", {class: "outcome refused", role: "alert"}, (result.body && result.body.error) || "HTTP " + result.status));
      return;
    }
    state.openView = result.body;
    renderReview(result.body);
    if (focus) {
      const title = $("detail-title");
      if (title) title.focus();
    }
  }

  function backButton() {
    return el("button", {type: "button", class: "secondary back", onclick: closeReview}, "← All reviews");
  }

  function closeReview() {
    document.body.classList.remove("reading");
    const id = state.openId;
    history.replaceState(null, "", location.pathname + location.search);
    const item = id && $("list").querySelector('[data-thread-id="' + CSS.escape(id) + '"]');
    if (item) item.focus();
  }

  function renderReview(view) {
    const detail = $("detail");
    const head = el("div", {class: "review-head"},
      backButton(),
      el("h2", {id: "detail-title", tabindex: "-1"}, "Review of thread ", el("span", {class: "mono"}, view.thread_id)),
      el("span", {class: "muted"}, (view.graph_id || "") + " · " + ago(view.updated_at)),
    );
    const gone = el("p", {id: "gone-notice", class: "notice", hidden: true},
      "This thread is no longer waiting for this review (answered elsewhere, or the run moved on).");
    const reviews = view.reviews.map((review, i) => renderOneReview(view, review, i));
    detail.replaceChildren(head, gone, ...reviews);
  }

  function renderOneReview(view, review, reviewIndex) {
    const form = el("form", {class: "review", "data-interrupt-id": review.interrupt_id || "", novalidate: true});
    const cards = review.actions.map((action) => renderAction(action, reviewIndex));
    const outcome = el("div", {class: "outcome", role: "status", "aria-live": "polite"});
    const send = el("button", {type: "submit", class: "send"},
      review.actions.length > 1 ? "Send " + review.actions.length + " decisions" : "Send decision");
    form.append(...cards, el("div", {class: "send-row"}, send,
      el("span", {class: "muted"}, "Ctrl+Enter")), outcome);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sendDecisions(view, review, form, outcome, send);
    });
    return form;
  }

  function renderAction(action, reviewIndex) {
    const card = el("article", {class: "card action", "data-index": action.index, "data-tool": action.tool});
    const title = el("div", {class: "action-head"},
      el("h3", {}, (action.index + 1) + ". ", el("span", {class: "mono tool-name"}, action.tool)),
      action.risk ? el("span", {class: "badge" + (action.risk === "high" ? " high" : "")}, "risk: " + action.risk) : null,
      action.critic ? el("span", {class: "badge"}, "critic: " + action.critic) : null,
    );
    card.append(title);
    if (action.description) card.append(el("p", {class: "muted description"}, action.description));

    card.append(el("p", {class: "label"}, "Arguments"),
      el("pre", {class: "args", "data-field": "args"}, pretty(action.args)));

    if (action.error) {
      card.append(el("p", {class: "label"}, "The critic failed"),
        el("p", {class: "critic-error", role: "note", "data-field": "error"},
          action.error, el("br"), "A person must decide: the call does not run unless approved."));
    }
    if (typeof action.score === "number") {
      const threshold = typeof action.threshold === "number" ? action.threshold : null;
      const ok = threshold !== null && action.score >= threshold;
      const meter = el("span", {class: "meter", "aria-hidden": "true"},
        el("span", {class: "fill" + (ok ? " ok" : ""), style: null}),
        threshold !== null ? el("span", {class: "mark"}) : null);
      // Widths set through the style object (no markup is built from data).
      meter.firstChild.style.width = Math.round(Math.min(1, Math.max(0, action.score)) * 100) + "%";
      if (threshold !== null) meter.lastChild.style.left = Math.round(threshold * 100) + "%";
      card.append(el("p", {class: "label"}, "Score"),
        el("div", {class: "score"},
          el("span", {"data-field": "score"}, "p(user's task) = ", el("strong", {}, fmt(action.score))),
          threshold !== null ? el("span", {"data-field": "threshold"}, (ok ? "≥" : "<") + " threshold " + fmt(threshold)) : null,
          meter,
          el("span", {class: ok ? "" : "badge low"}, ok ? "on track" : "doubtful")));
    }
    card.append(el("p", {class: "label"}, "User's task"),
      el("p", {class: "user-task", "data-field": "task"}, action.task || "(not recorded)"));

    if (action.options && action.options.length) {
      const rows = action.options.map((o) => el("tr", {class: o.kind === "task" ? "task-row" : "", "data-kind": o.kind},
        el("td", {class: "mono"}, o.label),
        el("td", {}, el("span", {class: "option-text"}, o.text),
          el("span", {class: "kind"}, {inferred: "inferred by the critic", task: "the user's task", none: "none of the above"}[o.kind] || "")),
        el("td", {class: "num"}, fmt(o.p_original)),
        el("td", {class: "num"}, fmt(o.p_reversed)),
        el("td", {class: "num"}, el("strong", {}, fmt(o.p_mean)))));
      card.append(el("p", {class: "label"}, "Tasks the critic inferred from the actions, and how likely each is"),
        el("div", {class: "table-wrap"}, el("table", {class: "options"},
          el("thead", {}, el("tr", {},
            el("th", {scope: "col"}, ""), el("th", {scope: "col"}, "Option"),
            el("th", {scope: "col", class: "num", title: "Options shown in the original order"},
              el("span", {class: "long"}, "Original order"), el("span", {class: "short"}, "Orig.")),
            el("th", {scope: "col", class: "num", title: "Options shown in the reversed order"},
              el("span", {class: "long"}, "Reversed order"), el("span", {class: "short"}, "Rev.")),
            el("th", {scope: "col", class: "num"}, "Mean"))),
          el("tbody", {}, rows))));
    } else if (action.inferred_tasks && action.inferred_tasks.length) {
      card.append(el("p", {class: "label"}, "Tasks the critic inferred from the actions"),
        el("ul", {class: "inferred"}, action.inferred_tasks.map((t) => el("li", {class: "option-text"}, t))));
    }
    if (action.justification) {
      card.append(el("p", {class: "label"}, "The critic's justification"),
        el("p", {class: "justification", "data-field": "justification"}, action.justification));
    }
    if (action.action_chain && action.action_chain.length) {
      const steps = action.action_chain.map((step, i) => {
        const pending = step.observation === null || step.observation === undefined;
        return el("li", {class: pending ? "pending" : ""},
          el("code", {class: "action"}, step.action),
          pending ? el("span", {class: "muted"}, " (pending: the call under review)") : observation(step.observation));
      });
      card.append(el("p", {class: "label"}, "What the agent did (the actions and observations the critic judged)"),
        el("ol", {class: "chain"}, steps));
    }
    card.append(decisionControls(action, reviewIndex));
    return card;
  }

  function observation(text) {
    const lines = text.split("\n").length;
    if (text.length <= FOLD_CHARS && lines <= FOLD_LINES) {
      return el("pre", {class: "observation"}, text);
    }
    const head = text.slice(0, 140).split("\n").slice(0, 2).join(" ");
    return el("details", {class: "observation"},
      el("summary", {}, head + "… (" + text.length + " characters; show all)"),
      el("pre", {}, text));
  }

  function decisionControls(action, reviewIndex) {
    const name = "decision-" + reviewIndex + "-" + action.index;
    const allowed = action.allowed_decisions && action.allowed_decisions.length
      ? action.allowed_decisions : ["approve", "edit", "reject", "respond"];
    const fieldset = el("fieldset", {class: "decision"}, el("legend", {}, "Your decision"));
    const choices = el("div", {class: "choices", role: "radiogroup"});
    for (const kind of ["approve", "edit", "reject", "respond"]) {
      if (!allowed.includes(kind)) continue;
      const input = el("input", {type: "radio", name, value: kind, "data-decision": kind});
      choices.append(el("label", {}, input, LABELS[kind]));
    }
    const editBox = el("textarea", {class: "json", "data-input": "edit", hidden: true, spellcheck: "false",
      "aria-label": "Arguments as JSON"});
    editBox.value = pretty(action.args);
    // Tall enough for every argument, up to EDIT_MAX_ROWS lines (then it scrolls).
    editBox.rows = Math.min(EDIT_MAX_ROWS, editBox.value.split("\n").length + 1);
    const rejectBox = el("textarea", {"data-input": "reject", hidden: true,
      "aria-label": "Feedback for the agent (optional)", placeholder: "Feedback for the agent: what is wrong (optional)"});
    const respondBox = el("textarea", {"data-input": "respond", hidden: true,
      "aria-label": "Response given to the agent instead of running the tool", placeholder: "The answer the agent gets instead of running the tool"});
    const error = el("p", {class: "field-error", role: "alert", "data-field": "decision-error"});
    fieldset.append(choices, editBox, rejectBox, respondBox, error);
    choices.addEventListener("change", () => showInput(fieldset));
    editBox.addEventListener("input", () => { validateEdit(fieldset); });
    return fieldset;
  }

  function chosen(fieldset) {
    const input = fieldset.querySelector("input[type=radio]:checked");
    return input ? input.value : null;
  }

  function showInput(fieldset) {
    const kind = chosen(fieldset);
    for (const box of fieldset.querySelectorAll("textarea")) box.hidden = box.dataset.input !== kind;
    setError(fieldset, "");
    const box = fieldset.querySelector('textarea[data-input="' + kind + '"]');
    if (box && kind === "edit") {
      // The caret at the start, so that focusing the box shows the first arguments.
      box.setSelectionRange(0, 0);
      box.scrollTop = 0;
    }
    return box;
  }

  function setError(fieldset, message) {
    const error = fieldset.querySelector("[data-field=decision-error]");
    error.textContent = message;
    const kind = chosen(fieldset);
    for (const box of fieldset.querySelectorAll("textarea")) {
      box.setAttribute("aria-invalid", message && box.dataset.input === kind ? "true" : "false");
    }
  }

  // The edited arguments: a JSON object, checked before anything is sent.
  function validateEdit(fieldset) {
    const box = fieldset.querySelector('textarea[data-input="edit"]');
    let value;
    try {
      value = JSON.parse(box.value);
    } catch (e) {
      setError(fieldset, "The arguments are not valid JSON: " + e.message);
      return null;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      setError(fieldset, "The arguments must be a JSON object, e.g. {\"asin\": \"B01\"}.");
      return null;
    }
    setError(fieldset, "");
    return value;
  }

  function collect(review, form) {
    const decisions = [];
    let problem = false;
    let firstBad = null;
    review.actions.forEach((action) => {
      const card = form.querySelector('article[data-index="' + action.index + '"]');
      const fieldset = card.querySelector("fieldset.decision");
      const kind = chosen(fieldset);
      if (!kind) {
        setError(fieldset, "Choose a decision for this action.");
        problem = true; firstBad = firstBad || fieldset.querySelector("input[type=radio]");
        return;
      }
      const box = fieldset.querySelector('textarea[data-input="' + kind + '"]');
      if (kind === "approve") decisions.push({type: "approve"});
      else if (kind === "edit") {
        const args = validateEdit(fieldset);
        if (args === null) { problem = true; firstBad = firstBad || box; return; }
        decisions.push({type: "edit", edited_action: {name: action.tool, args}});
      } else if (kind === "reject") {
        const message = box.value.trim();
        decisions.push(message ? {type: "reject", message} : {type: "reject"});
      } else if (kind === "respond") {
        const message = box.value.trim();
        if (!message) {
          setError(fieldset, "A response needs a message: it is what the agent gets instead of the tool's result.");
          problem = true; firstBad = firstBad || box; return;
        }
        decisions.push({type: "respond", message});
      }
      setError(fieldset, "");
    });
    if (problem) { if (firstBad) firstBad.focus(); return null; }
    return decisions;
  }

  async function sendDecisions(view, review, form, outcome, send) {
    if (state.sending) return;
    const decisions = collect(review, form);
    if (!decisions) return;
    state.sending = true;
    send.disabled = true;
    outcome.className = "outcome info";
    outcome.replaceChildren("Sending… the thread resumes and the run continues.");
    const result = await api("api/reviews/" + encodeURIComponent(view.thread_id) + "/decisions", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({interrupt_id: review.interrupt_id, decisions,
        tool_call_ids: review.actions.map((a) => a.tool_call_id)}),
    });
    state.sending = false;
    send.disabled = false;
    if (!result.ok && result.body && result.body.answered) {
      // Someone else answered first: nothing to retry. Say who decided what, and lock the form.
      showAnswered(view, form, outcome, result.body);
      refresh();
      return;
    }
    if (!result.ok) {
      // Refused: nothing is lost. The form keeps every choice and text; the reason is shown.
      outcome.className = "outcome refused";
      outcome.setAttribute("role", "alert");
      outcome.replaceChildren(el("strong", {}, "Not accepted (HTTP " + result.status + "): "),
        (result.body && result.body.error) || "no reason given",
        el("br"), "Your decisions are still in the form.");
      refresh();
      return;
    }
    state.decided.add(view.thread_id);
    showOutcome(view, form, outcome, result.body);
    refresh();
  }

  function auditList(entries) {
    return el("ul", {class: "audit"}, entries.map((e) => el("li", {},
      e.tool + ": " + e.decision + " by " + e.decided_by +
      (typeof e.score === "number" ? " (p=" + fmt(e.score) + ")" : "") +
      (e.feedback ? " — " + e.feedback : ""))));
  }

  function showAnswered(view, form, outcome, body) {
    for (const control of form.querySelectorAll("input, textarea, button.send")) control.disabled = true;
    state.decided.add(view.thread_id);
    outcome.className = "outcome refused";
    outcome.setAttribute("role", "alert");
    outcome.setAttribute("data-outcome", "answered");
    const parts = [el("strong", {}, "Already answered elsewhere; your decision was not sent.")];
    if (body.answers && body.answers.length) parts.push(auditList(body.answers));
    else parts.push(el("p", {}, body.error || ""));
    outcome.replaceChildren(...parts);
  }

  function showOutcome(view, form, outcome, body) {
    for (const control of form.querySelectorAll("input, textarea, button.send")) control.disabled = true;
    const text = {
      finished: "Sent. The run continued and the thread finished.",
      review: "Sent. The run continued and stopped at a new review (below).",
      interrupted: "Sent. The run continued and is waiting on another interrupt.",
      running: "Sent. The run is still going; the list shows it when it stops again.",
      error: "Sent, but the run failed.",
    }[body.outcome] || ("Sent. Outcome: " + body.outcome);
    outcome.className = "outcome " + (body.outcome === "error" ? "refused" : "ok");
    outcome.setAttribute("data-outcome", body.outcome);
    const parts = [el("strong", {}, text)];
    if (body.error) parts.push(el("p", {}, "Error: ", body.error));
    if (body.audit && body.audit.length) parts.push(auditList(body.audit));
    if (body.last_message) parts.push(el("p", {}, "Agent's last message: ", el("q", {class: "last-message"}, body.last_message)));
    outcome.replaceChildren(...parts);
    if (body.outcome === "review" && body.review) {
      const next = el("section", {class: "next-review", "aria-label": "The new review"},
        el("h2", {}, "New review"),
        ...body.review.reviews.map((review, i) => renderOneReview(body.review, review, 100 + i)));
      form.after(next);
    }
  }

  // ------------------------------------------------------------------ keyboard
  function inTextField(target) {
    return target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type !== "radio"));
  }

  function onKey(event) {
    const target = event.target;
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      const form = (target.closest && target.closest("form.review")) || $("detail").querySelector("form.review");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (inTextField(target) || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "?") { toggle("help"); event.preventDefault(); return; }
    if (event.key === "Escape") { closeReview(); return; }
    const items = Array.from($("list").querySelectorAll("button.thread"));
    const inList = target.closest && target.closest("#list");
    if (["j", "k", "ArrowDown", "ArrowUp"].includes(event.key) && (inList || !target.closest("#detail"))) {
      if (!items.length) return;
      const at = items.indexOf(target);
      const step = event.key === "j" || event.key === "ArrowDown" ? 1 : -1;
      const next = at < 0 ? items[0] : items[Math.min(items.length - 1, Math.max(0, at + step))];
      next.focus();
      event.preventDefault();
      return;
    }
    if (KEYS[event.key]) {
      const card = (target.closest && target.closest("article.action")) || $("detail").querySelector("article.action");
      if (!card) return;
      const radio = card.querySelector('input[data-decision="' + KEYS[event.key] + '"]');
      if (!radio || radio.disabled) return;
      radio.checked = true;
      const box = showInput(card.querySelector("fieldset.decision"));
      (box || radio).focus();
      event.preventDefault();
    }
  }

  // ------------------------------------------------------------------ credentials and help
  function toggle(id) {
    const panel = $(id);
    panel.hidden = !panel.hidden;
    $(id + "-toggle").setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) { const first = panel.querySelector("input, button"); if (first) first.focus(); }
  }

  function showCredentials(show) {
    const panel = $("credentials");
    if (panel.hidden === !show) return;
    toggle("credentials");
  }

  function start() {
    $("help-toggle").addEventListener("click", () => toggle("help"));
    $("credentials-toggle").addEventListener("click", () => toggle("credentials"));
    $("credentials").addEventListener("submit", (event) => {
      event.preventDefault();
      try { sessionStorage.setItem(CRED_KEY, $("credentials-value").value.trim()); } catch (e) { /* private mode */ }
      showCredentials(false);
      refresh();
      if (state.openId) openReview(state.openId, false);
    });
    $("credentials-clear").addEventListener("click", () => {
      try { sessionStorage.removeItem(CRED_KEY); } catch (e) { /* private mode */ }
      $("credentials-value").value = "";
      refresh();
    });
    document.addEventListener("keydown", onKey);
    const match = /^#\/thread\/(.+)$/.exec(location.hash);
    if (match) openReview(decodeURIComponent(match[1]), true);
    refresh();
    setInterval(() => { if (!document.hidden) refresh(); }, POLL_MS);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
