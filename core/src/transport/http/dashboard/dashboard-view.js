/* Bernstein operator dashboard, part 2 of 2: rendering the overview, the selected task, plans,
 * calls and the verify box, and the wiring that starts the page. Loaded after dashboard.js
 * (state, HTTP, auth, the live feed and the refresh, and the test hooks list), whose
 * top-level names it uses: both are classic deferred scripts sharing one global scope.
 * Data is only ever inserted with textContent / text nodes, never as HTML.
 */
"use strict";

// ---- rendering: header and counts -------------------------------------------------------

function renderHeader(ov) {
  const { server, ledger } = ov;
  setText("server-name", server.name);
  setText("server-version", `v${server.version}`);
  byTest("read-only").hidden = !server.read_only;
  document.title = `${server.name} dashboard`;
  document.querySelector(".ledger").hidden = false;
  setText("ledger-records", ledger.records.toLocaleString("en-US"), ledger.records);
  // A field the store does not have at all is "not applicable"; one it cannot tell now, unknown.
  const noBytes = (ledger.not_applicable || []).includes("bytes");
  const size = setText("ledger-bytes", noBytes ? "not applicable" : bytes(ledger.bytes), ledger.bytes);
  size.dataset.applicable = String(!noBytes);
  if (noBytes) size.title = `a ${ledger.store} ledger has no byte length`;
  else if (ledger.bytes === null) size.title = "the store cannot tell its size now";
  else size.title = ledger.store === "postgres" ? `${ledger.bytes} bytes: the ledger table on disk, with its indexes` : `${ledger.bytes} bytes`;
  setText("ledger-head", ledger.head).title = ledger.head;
  setText("ledger-verified", ledger.verified_at_open ? "yes" : "no");
  setText("ledger-store", ledger.store);
  const signed = ledger.signed_head;
  const seq = signed && signed.seq !== undefined ? signed.seq : null;
  setText("ledger-signed-seq", seq === null ? "none" : `seq ${seq}`, seq).title =
    signed ? `signed head ${signed.ledgerHead || ""}` : "no signing key";
}

function renderStatusCounts(counts) {
  const list = byTest("tasks-by-status");
  const entries = Object.entries(counts || {});
  list.replaceChildren(...entries.map(([status, n]) =>
    el("li", { "data-testid": "status-count", "data-status": status, "data-value": n },
      badge(status), el("span", { text: n }))));
  if (!entries.length) list.append(el("li", { class: "empty", text: "No tasks yet." }));
}

function renderOverview(ov) {
  byTest("data").hidden = false;
  renderHeader(ov);
  renderStatusCounts(ov.tasks_by_status);
  keepFocus(() => renderRuns(ov.runs));
  keepFocus(() => renderWorkers(ov.workers));
  renderPlans(ov.plans);
  renderCalls(ov.calls, ov.roles);
  refreshTimes();
}

function clearData() {
  state.overview = null;
  state.taskId = null;
  byTest("data").hidden = true;
  byTest("task-detail").hidden = true;
  byTest("verify-result").hidden = true;
  document.querySelector(".ledger").hidden = true;
  for (const id of ["tasks-by-status", "runs", "workers", "plans", "calls-summary", "calls-by-tool", "refusals",
    "calls-by-principal", "roles", "sparkline", "task-body"]) byTest(id).replaceChildren();
  for (const id of ["ledger-records", "ledger-bytes", "ledger-head", "ledger-verified", "ledger-store",
    "ledger-signed-seq", "workers-note", "verify-kind", "verify-summary", "verify-valid"]) {
    setText(id, "");
  }
  byTest("verify-input").value = "";
}

// ---- rendering: runs and their task trees -----------------------------------------------

// Finished work first, then work under way, then work not started or given up.
const BAR_ORDER = ["done", "completed", "pending_approval", "in_progress", "claimed", "open", "planned",
  "blocked", "failed", "cancelled"];
const barRank = (s) => (BAR_ORDER.includes(s) ? BAR_ORDER.indexOf(s) : BAR_ORDER.length);

function statusBar(counts) {
  const entries = Object.entries(counts || {}).filter(([, n]) => n > 0)
    .sort((a, b) => barRank(a[0]) - barRank(b[0]));
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  const label = entries.map(([s, n]) => `${n} ${s.replace(/_/g, " ")}`).join(", ") || "no tasks";
  const bar = el("div", { class: "bar", role: "img", "aria-label": label, title: label, "data-testid": "run-bar" });
  for (const [status, n] of entries) {
    const seg = el("span", { class: `seg st-${status}`, "data-status": status, "data-value": n });
    seg.style.width = `${(100 * n) / total}%`;
    bar.append(seg);
  }
  return bar;
}

// The run's tasks depth first (children under their parent, each level in creation order).
function treeOrder(tasks) {
  const ids = new Set(tasks.map((t) => t.id));
  const kids = new Map();
  for (const t of tasks) {
    const parent = t.parent_id && ids.has(t.parent_id) ? t.parent_id : null;
    if (!kids.has(parent)) kids.set(parent, []);
    kids.get(parent).push(t);
  }
  const out = [];
  const seen = new Set();
  const walk = (parent, depth) => {
    for (const t of kids.get(parent) || []) {
      if (seen.has(t.id)) continue;
      seen.add(t.id);
      out.push({ task: t, depth });
      walk(t.id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

function taskItem({ task, depth }, outcome) {
  const said = outcome && (outcome.summary || outcome.reason);
  const li = el("li", { "data-testid": "task-row", "data-task-id": task.id, "data-status": task.status,
    "data-depth": depth, "aria-current": task.id === state.taskId ? "true" : null },
  el("button", { type: "button", class: "link", "data-action": "select-task", "data-id": task.id,
    "data-key": `task:${task.id}`, "data-testid": "task-select", text: task.title }),
  badge(task.status),
  task.role && el("span", { class: "meta", text: task.role }),
  task.depends_on && task.depends_on.length > 0 && el("span", { class: "meta" }, "after ",
    el("span", { "data-testid": "task-deps", text: task.depends_on.join(", ") })),
  task.claimer && el("span", { class: "meta" }, "claimed by ",
    el("span", { "data-testid": "task-claimer", text: task.claimer })),
  task.lease_expires_at && el("span", { class: "meta" }, "lease ",
    el("span", { "data-testid": "task-lease", "data-until": task.lease_expires_at, title: iso(task.lease_expires_at) })),
  task.attempts > 1 && el("span", { class: "meta", text: `${task.attempts} attempts` }),
  said && el("span", { class: "meta" }, outcome.reason ? "why: " : "result: ",
    el("span", { "data-testid": "task-outcome", "data-truncated": String(Boolean(outcome.truncated)),
      text: outcome.truncated ? `${said}\u2026` : said })));
  li.style.setProperty("--depth", String(depth));
  return li;
}

function runRows(run) {
  const open = state.expanded.has(run.run_id);
  const treeId = `tree-${run.run_id}`;
  const row = el("tr", { "data-testid": "run-row", "data-run-id": run.run_id, "data-status": run.status },
    el("td", {}, el("button", { type: "button", class: "link toggle goal", "data-action": "toggle-run",
      "data-id": run.run_id, "data-key": `run:${run.run_id}`, "data-testid": "run-toggle",
      "aria-expanded": String(open), "aria-controls": treeId, text: run.goal })),
    el("td", {}, badge(run.status), run.waiting && el("div", { class: "meta", "data-testid": "run-waiting",
      "data-last-claim": run.waiting.lastClaimAt || "", text: run.waiting.hint })),
    el("td", {}, statusBar(run.counts)),
    el("td", { class: "progress", text: run.progress ? run.progress.message : "" }),
    el("td", { class: "age", "data-since": run.created_at, title: iso(run.created_at) }));
  // An ended run's outcome: each task's result or the reason it ended (crate::outcome).
  const outcomes = new Map(((run.outcome && run.outcome.tasks) || []).map((t) => [t.taskId, t]));
  const tree = el("ul", { class: "tree", "aria-label": `Tasks of ${run.goal}` },
    treeOrder(run.tasks || []).map((item) => taskItem(item, outcomes.get(item.task.id))));
  const sub = el("tr", { class: "sub", id: treeId, "data-testid": "run-tasks", "data-run-id": run.run_id,
    hidden: !open }, el("td", { colspan: 5 }, tree));
  return [row, sub];
}

function renderRuns(runs) {
  byTest("runs").replaceChildren(...runs.flatMap(runRows));
  byTest("runs-empty").hidden = runs.length > 0;
}

function toggleRun(button) {
  const id = button.dataset.id;
  const open = !state.expanded.has(id);
  if (open) state.expanded.add(id);
  else state.expanded.delete(id);
  button.setAttribute("aria-expanded", String(open));
  document.getElementById(button.getAttribute("aria-controls")).hidden = !open;
}

// ---- rendering: workers ------------------------------------------------------------------

const DASH = "\u2014";

function workerRow(w) {
  const t = w.task;
  const claimed = w.claimed_at
    ? el("td", { "data-testid": "worker-claimed", "data-ago": w.claimed_at, title: iso(w.claimed_at) })
    : el("td", { "data-testid": "worker-claimed", class: "meta", text: DASH,
      title: w.holds_task ? "claimed before it started; the claim's time is in the audit records" : "holds no task now" });
  const lease = w.lease_expires_at
    ? el("span", { "data-testid": "worker-lease", "data-until": w.lease_expires_at, "data-expired": String(w.lease_expired),
      class: w.lease_expired ? "expired" : null, title: iso(w.lease_expires_at) })
    : el("span", { "data-testid": "worker-lease", class: "meta", text: DASH, title: "no lease held" });
  return el("tr", { "data-testid": "worker-row", "data-claimer": w.claimer, "data-holds": String(w.holds_task) },
    el("td", {}, el("code", { "data-testid": "worker-claimer", text: w.claimer }),
      w.held > 1 && el("span", { class: "meta", text: ` holds ${w.held}` })),
    el("td", {}, el("button", { type: "button", class: "link", "data-action": "select-task", "data-id": t.id,
      "data-key": `worker:${w.claimer}`, "data-testid": "worker-task", "data-task-id": t.id, text: t.title }),
    " ", badge(t.status), !w.holds_task && el("span", { class: "meta", text: " (last task)" })),
    claimed,
    el("td", {}, lease),
    el("td", { "data-testid": "worker-active", "data-ago": w.last_active_at, title: iso(w.last_active_at) }));
}

function renderWorkers(w) {
  const rows = (w && w.rows) || [];
  byTest("workers").replaceChildren(...rows.map(workerRow));
  byTest("workers-empty").hidden = rows.length > 0;
  byTest("workers-note").textContent = !rows.length ? ""
    : w.truncated ? `The ${w.max_rows} most recently active of ${w.total} claimers.`
      : `Claimers of held tasks and of the newest tasks, most recently active first (at most ${w.max_rows}).`;
}

// ---- rendering: the selected task -------------------------------------------------------

function field(name, value) {
  if (value === null || value === undefined || value === "") return [];
  const dd = value instanceof Node ? el("dd", {}, value) : el("dd", { text: value });
  dd.dataset.testid = "task-field";
  dd.dataset.field = name;
  return [el("dt", { text: name.replace(/_/g, " ") }), dd];
}

function mailEntry(m) {
  const kinds = Object.entries(m.redactions || {}).map(([k, n]) => `${k} ×${n}`).join(", ");
  return el("li", { "data-testid": "mail-entry", "data-seq": m.seq },
    el("div", {}, el("strong", { "data-testid": "mail-sender", text: m.sender }), " ",
      el("span", { class: "meta", "data-testid": "mail-kind", text: m.kind }), " ",
      el("span", { class: `badge st-${m.signature}`, "data-testid": "mail-signature", text: `signature ${m.signature}` }), " ",
      el("span", { class: "meta", title: iso(m.posted_at), text: iso(m.posted_at).replace("T", " ").slice(0, 19) })),
    el("p", { class: "body", "data-testid": "mail-body", text: m.body }),
    kinds && el("p", { class: "meta", text: `redacted: ${kinds}` }));
}

function artifactRow(a) {
  const ok = a.lineage && a.lineage.ok;
  return el("tr", { "data-testid": "artifact-row", "data-key": a.key },
    el("td", { text: `${a.key} v${a.version}` }),
    el("td", { text: a.kind }),
    el("td", { text: a.title }),
    el("td", {}, el("code", { class: "hash", title: a.content_hash, text: a.content_hash })),
    el("td", {}, el("span", { class: `badge st-${ok ? "ok" : "bad"}`, "data-testid": "artifact-lineage",
      "data-ok": String(Boolean(ok)), title: a.lineage ? a.lineage.detail : "", text: ok ? "lineage ok" : "lineage broken" })));
}

function renderTask(answer) {
  const t = answer.task;
  const mailbox = answer.mailbox || [];
  const artifacts = answer.artifacts || [];
  const lease = t.lease_expires_at && el("span", { "data-until": t.lease_expires_at, title: iso(t.lease_expires_at) });
  byTest("task-body").replaceChildren(
    el("dl", { class: "detail" }, field("title", t.title), field("id", t.id), field("goal", t.goal),
      field("run_id", t.run_id), field("status", badge(t.status)), field("role", t.role),
      field("claimer", t.claimer), field("lease", lease), field("attempts", String(t.attempts ?? "")),
      field("depends_on", (t.depends_on || []).join(", ")), field("requires_approval", t.requires_approval ? "yes" : ""),
      field("result_summary", t.result_summary)),
    el("h3", { text: `Mailbox (${mailbox.length})` }),
    mailbox.length ? el("ul", { class: "mail", "data-testid": "mailbox" }, mailbox.map(mailEntry))
      : el("p", { class: "empty", text: "No messages." }),
    el("h3", { text: `Artifacts and lineage (${artifacts.length})` }),
    artifacts.length ? el("div", { class: "scroll" }, el("table", { "data-testid": "artifacts" },
      el("thead", {}, el("tr", {}, ["Key", "Kind", "Title", "Content hash", "Lineage"].map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, artifacts.map(artifactRow)))) : el("p", { class: "empty", text: "No artifacts." }),
    el("button", { type: "button", "data-action": "close-task", "data-key": "task-close", "data-testid": "task-close", text: "Close" }));
  refreshTimes();
}

async function loadTask(id, focus) {
  const section = byTest("task-detail");
  try {
    const answer = await getJson(`/api/task?id=${encodeURIComponent(id)}`);
    if (state.taskId !== id) return;
    keepFocus(() => renderTask(answer));
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
    byTest("task-body").replaceChildren(el("p", { class: "empty", "data-testid": "task-missing", text: `No task ${id}.` }));
  }
  section.hidden = false;
  if (focus) document.getElementById("task-title").focus();
}

function selectTask(id) {
  state.taskId = id;
  for (const li of document.querySelectorAll('[data-testid="task-row"]')) {
    li.setAttribute("aria-current", String(li.dataset.taskId === id));
  }
  loadTask(id, true).catch(fail);
}

function closeTask() {
  const id = state.taskId;
  state.taskId = null;
  byTest("task-detail").hidden = true;
  const back = document.querySelector(`[data-key="${CSS.escape(`task:${id}`)}"]`);
  if (back) back.focus();
}

// ---- rendering: plans and calls ---------------------------------------------------------

function renderPlans(plans) {
  byTest("plans").replaceChildren(...plans.map((p) =>
    el("tr", { "data-testid": "plan-row", "data-plan-id": p.plan_id },
      el("td", { class: "title", text: p.title }),
      el("td", {}, badge(p.status)),
      el("td", { class: "planned num", text: p.planned }),
      el("td", {}, el("code", { class: "hash", "data-testid": "plan-hash", title: p.rendering_hash, text: p.rendering_hash })))));
  byTest("plans-empty").hidden = plans.length > 0;
}

function countRows(tbody, entries, testid, key) {
  const sorted = entries.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  tbody.replaceChildren(...sorted.map(([name, n]) =>
    el("tr", { "data-testid": testid, [key]: name, "data-value": n },
      el("td", {}, el("code", { text: name })), el("td", { class: "num", text: n }))));
  if (!sorted.length) tbody.append(el("tr", {}, el("td", { colspan: 2, class: "empty", text: "None in this window." })));
}

function sparkline(perMinute) {
  const n = perMinute.length;
  const peak = Math.max(1, ...perMinute.map((m) => m.calls));
  const total = perMinute.reduce((sum, m) => sum + m.calls, 0);
  const w = Math.max(1, n - 1);
  const root = svg("svg", { viewBox: `0 0 ${w} 100`, preserveAspectRatio: "none", role: "img",
    "data-testid": "sparkline-svg", "data-points": n,
    "aria-label": `${total} calls in the window, at most ${peak} in a minute` });
  const title = svg("title");
  title.textContent = `${total} calls in the window, at most ${peak} in a minute`;
  root.append(title);
  for (const key of ["refused", "calls"]) { // calls drawn last, over the refusals
    const pts = perMinute.map((m, i) => `${n === 1 ? 0 : i},${(100 - (98 * m[key]) / peak - 1).toFixed(2)}`);
    if (n === 1) pts.push(`1,${pts[0].split(",")[1]}`);
    root.append(svg("polyline", { class: key, points: pts.join(" "), "vector-effect": "non-scaling-stroke" }));
  }
  return root;
}

function renderCalls(calls, roles) {
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const summary = byTest("calls-summary");
  summary.replaceChildren(
    el("span", { "data-testid": "calls-total", "data-value": calls.total, text: plural(calls.total, "call") }), ", ",
    el("span", { "data-testid": "calls-refused", "data-value": calls.refused, text: `${calls.refused} refused` }),
    ` in the last ${span(state.windowS * 1000)}`);
  countRows(byTest("calls-by-tool"), Object.entries(calls.by_tool || {}), "tool-row", "data-tool");
  countRows(byTest("refusals"), Object.entries(calls.refusals || {}), "refusal-row", "data-code");
  countRows(byTest("calls-by-principal"), Object.entries(calls.by_principal || {}), "principal-row", "data-principal");
  byTest("sparkline").replaceChildren(sparkline(calls.per_minute || []));
  byTest("roles").replaceChildren(...(roles || []).map((r) =>
    el("tr", { "data-testid": "role-row", "data-role": r.role },
      el("td", { text: r.role }), el("td", { class: "num", text: r.tasks }),
      el("td", { class: "num", text: Number(r.cost_usd).toFixed(4) }))));
}

// ---- verify -----------------------------------------------------------------------------

function showVerdict(valid, kind, summary) {
  byTest("verify-result").hidden = false;
  const b = setText("verify-valid", valid === "error" ? "error" : valid ? "valid" : "invalid");
  b.dataset.valid = String(valid);
  b.className = `badge st-${valid === true ? "valid" : "invalid"}`;
  setText("verify-kind", kind);
  setText("verify-summary", summary);
}

async function onVerify(event) {
  event.preventDefault();
  const text = byTest("verify-input").value;
  try {
    const res = await api("/api/verify", { method: "POST", body: text, headers: { "Content-Type": "application/json" } });
    const body = await res.json().catch(() => null);
    if (!res.ok) throw new ApiError(res.status, body);
    showVerdict(Boolean(body.valid), body.kind.replace(/_/g, " "), body.summary);
  } catch (err) {
    if (err instanceof Unauthorized) return fail(err);
    showVerdict("error", "", err.message);
  }
}

// ---- wiring -----------------------------------------------------------------------------

function onClick(event) {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const action = button.dataset.action;
  if (action === "toggle-run") toggleRun(button);
  else if (action === "select-task") selectTask(button.dataset.id);
  else if (action === "close-task") closeTask();
}

function init() {
  byTest("token-form").addEventListener("submit", onTokenSubmit);
  byTest("verify-form").addEventListener("submit", onVerify);
  byTest("data").addEventListener("click", onClick);
  byTest("window").addEventListener("change", (e) => {
    state.windowS = Number(e.target.value);
    scheduleRefresh();
  });
  setInterval(refreshTimes, AGE_TICK_MS);
  state.token = readToken();
  start();
}

init();
