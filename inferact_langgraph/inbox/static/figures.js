// InferAct inbox: the reviewers' running figures (GET api/figures), one block per deployment.
// Every value is put in the page as text; this file never builds markup from data.
"use strict";

(function () {
  const REFRESH_MS = 30000;
  const CRED_KEY = "inferact-inbox-authorization";

  function el(tag, text) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function row(list, term, value) {
    list.append(el("dt", term), el("dd", value));
  }

  function credentials() {
    try { return sessionStorage.getItem(CRED_KEY) || ""; } catch (e) { return ""; }
  }

  function render(section, deployments) {
    section.replaceChildren();
    if (!deployments.length) { section.hidden = true; return; }
    for (const d of deployments) {
      section.append(el("h2", "What the reviewers found: " + d.deployment));
      const list = el("dl");
      row(list, "Reviews this week", d.reviews_this_week + " (" + d.labels + " decisions kept as labels)");
      row(list, "False alarms", d.false_alarms + " of " + d.flagged_reviewed +
        " flagged calls were approved (" + d.caught + " rejected or edited)");
      row(list, "Spot checks", d.spot_checks + " calls the critic passed were checked; " +
        d.spot_check_misses + " of them were mistakes it missed");
      row(list, "Current threshold", typeof d.threshold === "number" ? d.threshold.toFixed(2) : "–");
      const command = el("dd");
      command.append(el("code", d.command));
      list.append(el("dt", "Fit it to these labels"), command);
      section.append(list);
    }
    section.hidden = false;
  }

  async function refresh() {
    const section = document.getElementById("figures");
    if (!section) return;
    const headers = {"Accept": "application/json"};
    const cred = credentials();
    if (cred) headers["Authorization"] = cred;
    try {
      const response = await fetch("api/figures", {headers, credentials: "same-origin"});
      if (!response.ok) { section.hidden = true; return; }
      const body = await response.json();
      render(section, Array.isArray(body.deployments) ? body.deployments : []);
    } catch (e) {
      section.hidden = true;  // the figures are extra: the reviews still work without them
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    refresh();
    setInterval(refresh, REFRESH_MS);
  });
})();
