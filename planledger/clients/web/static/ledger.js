// plan ledger: one session's page. Renders the plan at the chosen revision and the history
// from the JSON API, then follows the session's SSE stream. Text only ever goes in as text.
"use strict";

(() => {
  const root = document.getElementById("session");
  if (!root) return;
  const base = "/sessions/" + encodeURIComponent(root.dataset.sessionId);
  const $ = (id) => document.getElementById(id);

  const state = {
    entries: new Map(), // position -> history entry
    proposals: new Map(), // proposal_id -> its "proposed" element (pending until decided)
    plans: new Map(), // revision -> plan view
    commits: new Map(), // revision -> its "committed" history entry
    latest: 0,
    shown: 0,
    follow: true, // at the latest revision: new commits show at once
  };

  // An element with attributes and children; strings become text nodes, never markup.
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, String(value));
    }
    node.append(...children.filter((child) => child !== null && child !== undefined));
    return node;
  }

  async function getJSON(path) {
    const response = await fetch(path, { headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const error = body && body.error;
      throw new Error(error ? `${error.code}: ${error.message}` : `HTTP ${response.status}`);
    }
    return body;
  }

  function showError(error) {
    $("error").textContent = error ? String(error.message || error) : "";
    $("error").hidden = !error;
  }

  const when = (at) => (at ? at.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC") : "");

  // -- the plan at a revision -----------------------------------------------------------------

  function remember(plan) {
    if (plan && typeof plan.revision === "number") state.plans.set(plan.revision, plan);
  }

  async function show(revision) {
    state.shown = revision;
    renderSlider();
    let plan = state.plans.get(revision);
    if (!plan) {
      try {
        plan = await getJSON(`${base}/plan?revision=${revision}`);
        remember(plan);
        showError(null);
      } catch (error) {
        showError(error);
        return;
      }
    }
    if (state.shown === revision) renderPlan(plan);
  }

  function renderPlan(plan) {
    const changed = new Map();
    const commit = state.commits.get(plan.revision);
    for (const t of (commit && commit.transitions) || []) changed.set(t.step_id, t.from);
    $("revision").textContent = String(plan.revision);
    $("plan-title").textContent = plan.title || "";
    const meta = [];
    if (plan.policy) meta.push(`policy ${plan.policy}`);
    if (plan.goal_id) meta.push(`goal ${plan.goal_id}`);
    if (commit) meta.push(`committed ${when(commit.at)}`);
    $("plan-meta").textContent = meta.join(" · ");
    $("plan").replaceChildren(
      ...plan.steps.map((step) => {
        const from = changed.has(step.id) ? changed.get(step.id) || "new" : null;
        // A task's blockers and owner are shown by the style sheet: the text stays the title.
        const notes = [];
        if (step.blocked_by && step.blocked_by.length) notes.push(`blocked by ${step.blocked_by.join(", ")}`);
        if (step.owner) notes.push(`@${step.owner}`);
        return h(
          "li",
          {
            class: "step",
            "data-step-id": step.id,
            "data-status": step.status,
            "data-from": from,
            "data-blocked-by": step.blocked_by && step.blocked_by.length ? step.blocked_by.join(" ") : null,
            "data-owner": step.owner || null,
            "data-notes": notes.length ? notes.join(" · ") : null,
          },
          step.title,
        );
      }),
    );
    const empty = plan.steps.length === 0;
    $("plan-empty").hidden = !empty;
    $("plan-empty").textContent =
      plan.revision === 0 ? "No plan was committed yet." : "The plan was cleared at this revision.";
    for (const item of $("history").querySelectorAll(".entry.shown")) item.classList.remove("shown");
    const shownEntry = commit && $("history").querySelector(`[data-position="${commit.position}"]`);
    if (shownEntry) shownEntry.classList.add("shown");
  }

  function renderSlider() {
    const slider = $("slider");
    slider.max = String(state.latest);
    slider.value = String(state.shown);
    slider.disabled = state.latest === 0;
    $("latest").textContent = String(state.latest);
    offerRevisions();
    $("to-latest").hidden = state.follow;
    const newer = state.latest - state.shown;
    $("newer").hidden = state.follow || newer <= 0;
    $("newer").textContent =
      newer > 0
        ? `${newer} newer revision${newer === 1 ? "" : "s"} exist${newer === 1 ? "s" : ""}: ` +
          `the latest is ${state.latest}.`
        : "";
  }

  function moveTo(revision) {
    state.follow = revision >= state.latest;
    show(Math.max(0, Math.min(revision, state.latest)));
  }

  // -- two revisions compared ------------------------------------------------------------------

  function diffItem(change, stepId, text) {
    return h("li", { "data-change": change, "data-step-id": stepId }, h("code", {}, stepId), " ", text);
  }

  async function compare(event) {
    event.preventDefault();
    const from = Number($("diff-from").value);
    const to = Number($("diff-to").value);
    let diff;
    try {
      diff = await getJSON(`${base}/plan/diff?from=${from}&to=${to}`);
      showError(null);
    } catch (error) {
      showError(error);
      return;
    }
    const items = [
      ...diff.added.map((s) => diffItem("added", s.id, `added: ${s.title} (${s.status})`)),
      ...diff.removed.map((s) => diffItem("removed", s.id, `removed: ${s.title} (was ${s.status})`)),
      ...diff.retitled.map((c) => diffItem("retitled", c.step_id, `retitled: ${c.from} → ${c.to}`)),
      ...diff.status.map((c) => diffItem("status", c.step_id, `${c.from} → ${c.to}`)),
    ];
    $("diff").replaceChildren(...(items.length ? items : [h("li", { class: "muted" }, "no change")]));
  }

  function offerRevisions() {
    for (const id of ["diff-from", "diff-to"]) $(id).max = String(state.latest);
    if (!$("diff-to").dataset.touched) $("diff-to").value = String(state.latest);
  }

  // -- the history timeline -------------------------------------------------------------------

  function entryBody(entry) {
    if (entry.kind === "committed") {
      const moves = (entry.transitions || []).map((t) =>
        h(
          "li",
          { "data-step-id": t.step_id },
          h("code", {}, t.step_id),
          ` ${t.from || "added"} → ${t.to || "removed"}`,
        ),
      );
      return moves.length ? h("ul", { class: "transitions" }, ...moves) : h("p", {}, "no change");
    }
    if (entry.kind === "rejected") {
      const violations = (entry.violations || []).map((v) =>
        h("li", { "data-code": v.code }, h("code", {}, v.code), " ", v.message),
      );
      return h("ul", { class: "violations" }, ...violations);
    }
    const source = [
      entry.form && `${entry.form} form`,
      entry.actor && `by ${entry.actor}`,
      entry.client && `from ${entry.client}`,
    ];
    const expected =
      typeof entry.expected_revision === "number" ? `expects ${entry.expected_revision}` : null;
    const said = h("p", { class: "muted small" }, [...source, expected].filter(Boolean).join(" · "));
    if (!entry.operation) return said;
    return h("div", {}, said, h("p", { class: "operation small" }, operationText(entry.operation)));
  }

  // A task operation as a person reads it: "update 3: status in_progress, blocked by 1".
  function operationText(op) {
    const parts = [];
    if (op.title !== null && op.title !== undefined) parts.push(`title "${op.title}"`);
    if (op.status) parts.push(`status ${op.status}`);
    if (op.owner) parts.push(`owner ${op.owner}`);
    if (op.add_blocked_by && op.add_blocked_by.length) parts.push(`blocked by ${op.add_blocked_by.join(", ")}`);
    if (op.add_blocks && op.add_blocks.length) parts.push(`blocks ${op.add_blocks.join(", ")}`);
    const head = op.id ? `${op.op} ${op.id}` : op.op;
    return parts.length ? `${head}: ${parts.join(", ")}` : head;
  }

  function entryTitle(entry) {
    if (entry.kind !== "committed") return h("span", { class: "kind" }, entry.kind);
    const jump = h("button", { type: "button", class: "link" }, `revision ${entry.revision}`);
    jump.addEventListener("click", () => moveTo(entry.revision));
    return h("span", { class: "kind" }, "committed ", jump);
  }

  function addEntry(entry) {
    if (state.entries.has(entry.position)) return false;
    state.entries.set(entry.position, entry);
    const item = h(
      "li",
      { class: "entry", "data-kind": entry.kind, "data-position": entry.position },
      h(
        "div",
        { class: "entry-head" },
        entryTitle(entry),
        h("span", { class: "muted small", title: `proposal ${entry.proposal_id}` }, when(entry.at)),
      ),
      entryBody(entry),
    );
    if (entry.kind === "proposed") {
      item.classList.add("pending");
      state.proposals.set(entry.proposal_id, item);
    } else {
      const proposed = state.proposals.get(entry.proposal_id);
      if (proposed) proposed.classList.remove("pending");
    }
    if (entry.kind === "committed") {
      state.commits.set(entry.revision, entry);
      state.latest = Math.max(state.latest, entry.revision);
    }
    $("history").prepend(item);
    return true;
  }

  // -- live -----------------------------------------------------------------------------------

  function onEvent(message) {
    const data = JSON.parse(message.data);
    if (!addEntry(data)) return;
    if (data.kind !== "committed") return;
    if (data.plan && data.plan.revision === data.revision) remember(data.plan);
    if (state.follow) show(state.latest);
    else renderSlider();
  }

  function follow() {
    const live = $("live");
    const stream = new EventSource(`${base}/events?after=${root.dataset.after || 0}`);
    const mark = (name) => {
      live.dataset.state = name;
      live.textContent = name;
    };
    stream.onopen = () => mark("live");
    stream.onerror = () => mark(stream.readyState === EventSource.CLOSED ? "offline" : "reconnecting");
    for (const name of ["plan.proposed", "plan.committed", "plan.rejected"]) {
      stream.addEventListener(name, onEvent);
    }
  }

  async function start() {
    $("slider").addEventListener("input", (event) => moveTo(Number(event.target.value)));
    $("to-latest").addEventListener("click", () => moveTo(state.latest));
    $("diff-form").addEventListener("submit", compare);
    $("diff-to").addEventListener("input", () => ($("diff-to").dataset.touched = "1"));
    try {
      const [plan, history] = await Promise.all([
        getJSON(`${base}/plan`),
        getJSON(`${base}/plan/history`),
      ]);
      for (const entry of history.entries) addEntry(entry);
      remember(plan);
      state.latest = Math.max(state.latest, plan.revision);
      await show(state.latest);
    } catch (error) {
      showError(error);
    }
    follow();
  }

  start();
})();
