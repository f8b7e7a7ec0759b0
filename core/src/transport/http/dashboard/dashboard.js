/* Bernstein operator dashboard: plain ES2020, no framework, no build step.
 *
 * Data: GET /api/overview?window=S (re-fetched on every `head` event of GET /api/events, read
 * with fetch() so that the bearer header goes along; reconnects with backoff 0.5 s .. 5 s),
 * GET /api/task?id=T for the selected task, POST /api/verify. Data is only ever inserted with
 * textContent / text nodes, never as HTML. The only timer that is not a reconnect or debounce
 * refreshes the relative ages.
 *
 * Auth: a token from `#token=...` (then removed from the address bar) or from the form shown
 * after a 401, kept in sessionStorage, sent as `Authorization: Bearer` on every request.
 *
 * Test hooks (data-testid unless noted):
 *   conn-state            text and data-state: connecting | live | reconnecting | locked
 *   server-name, server-version, read-only (hidden unless read-only)
 *   ledger-records        data-value = records; ledger-bytes (data-value, may be empty)
 *   ledger-head           textContent = the full head (shortened by CSS, full in title)
 *   ledger-verified (yes|no), ledger-store, ledger-signed-seq (data-value = seq or empty)
 *   auth, token-form, token-input, token-submit, auth-error; data (the data area), load-error
 *   tasks-by-status > status-count[data-status] (data-value = count)
 *   runs > run-row[data-run-id][data-status] with .goal (the expand button, data-testid
 *          run-toggle), .status, run-bar > .seg[data-status][data-value], .progress, .age
 *   run-tasks[data-run-id] (the task tree row; hidden until expanded)
 *          > task-row[data-task-id][data-status][data-depth] with task-select (button),
 *            .status, task-deps, task-claimer, task-lease (data-until = ms)
 *   task-detail > task-body: task-field[data-field], mailbox > mail-entry[data-seq] with
 *          mail-sender, mail-kind, mail-body, mail-signature; artifacts > artifact-row[data-key]
 *          with artifact-lineage (data-ok); task-close; task-missing
 *   plans > plan-row[data-plan-id] with .title, .status, .planned, plan-hash (full text)
 *   window (select), calls-summary > calls-total, calls-refused (data-value), calls-by-tool > tool-row[data-tool]
 *          (data-value), refusals > refusal-row[data-code], roles > role-row[data-role],
 *          sparkline > svg (data-testid sparkline-svg, data-points = minutes)
 *   verify-form, verify-input, verify-button, verify-result with verify-valid
 *          (data-valid = true|false|error), verify-kind, verify-summary
 */
"use strict";

const TOKEN_KEY = "bernstein.dashboard.token";
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 5000;
const REFRESH_GAP_MS = 250;
const SILENCE_MS = 45000; // keep-alives come every 15 s; longer silence means a dead stream
const AGE_TICK_MS = 5000;

const state = {
  token: null,
  windowS: 3600,
  overview: null,
  skewMs: 0, // server clock minus ours
  expanded: new Set(),
  taskId: null,
  stream: null,
  refresh: { timer: null, busy: false, again: false, last: 0 },
};

class Unauthorized extends Error {
  constructor(message, token) {
    super(message);
    this.token = token; // the token the refused request carried (null: none)
  }
}
class Unreachable extends Error {} // fetch itself failed: no answer from the server
class ApiError extends Error {
  constructor(status, body) {
    super((body && (body.message || body.error)) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error;
  }
}

// ---- DOM helpers ------------------------------------------------------------------------

const byTest = (id, root = document) => root.querySelector(`[data-testid="${id}"]`);

function el(tag, attrs = {}, ...kids) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = String(v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid !== null && kid !== undefined && kid !== false) node.append(kid);
  }
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

function setText(testid, text, value) {
  const node = byTest(testid);
  node.textContent = text;
  if (value !== undefined) node.dataset.value = value === null ? "" : String(value);
  return node;
}

const badge = (status, testid) =>
  el("span", { class: `badge status st-${status}`, "data-testid": testid, text: status.replace(/_/g, " ") });

// Runs `draw`, then gives focus back to the element with the same data-key, if redrawn.
function keepFocus(draw) {
  const key = document.activeElement && document.activeElement.dataset.key;
  draw();
  if (!key) return;
  const again = document.querySelector(`[data-key="${CSS.escape(key)}"]`);
  if (again && again !== document.activeElement) again.focus();
}

// ---- time and size ----------------------------------------------------------------------

const serverNow = () => Date.now() + state.skewMs;

function span(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

function relative(untilMs) {
  const d = untilMs - serverNow();
  return d >= 0 ? `in ${span(d)}` : `expired ${span(d)} ago`;
}

function bytes(n) {
  if (n === null || n === undefined) return "unknown";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

const iso = (ms) => new Date(ms).toISOString();

function refreshTimes() {
  for (const node of document.querySelectorAll("[data-since]")) {
    node.textContent = span(serverNow() - Number(node.dataset.since));
  }
  for (const node of document.querySelectorAll("[data-until]")) {
    node.textContent = relative(Number(node.dataset.until));
  }
}

// ---- HTTP -------------------------------------------------------------------------------

async function api(path, init = {}) {
  const headers = new Headers(init.headers || {});
  const token = state.token;
  if (token) headers.set("Authorization", `Bearer ${token}`);
  let res;
  try {
    res = await fetch(path, { ...init, headers, cache: "no-store" });
  } catch (err) {
    throw err.name === "AbortError" ? err : new Unreachable(err.message);
  }
  if (res.status === 401) {
    const body = await res.json().catch(() => ({}));
    throw new Unauthorized(body.error_description || body.error || "unauthorized", token);
  }
  return res;
}

async function getJson(path) {
  const res = await api(path);
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

// ---- auth -------------------------------------------------------------------------------

function readToken() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    sessionStorage.setItem(TOKEN_KEY, fromHash);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function lock(reason) {
  if (state.stream) state.stream.abort();
  state.stream = null;
  const hadToken = Boolean(state.token);
  state.token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  clearData();
  setConn("locked", "token needed");
  if (hadToken) byTest("auth-error").textContent = `The server refused the token: ${reason}`;
  byTest("auth").hidden = false;
  byTest("token-input").focus();
}

function onTokenSubmit(event) {
  event.preventDefault();
  const token = byTest("token-input").value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  byTest("token-input").value = "";
  state.token = token;
  start();
}

function fail(err) {
  if (err instanceof Unauthorized) {
    // A refusal of a request sent before the user entered another token says nothing of it.
    return err.token === state.token ? lock(err.message) : undefined;
  }
  // The server is unreachable: the connection state says so, and the reconnect reloads.
  if (err instanceof Unreachable) return;
  const banner = byTest("load-error");
  banner.textContent = `Could not load: ${err.message}`;
  banner.hidden = false;
  if (!(err instanceof ApiError)) reportError(err); // a bug of this page: let it be seen
}

// ---- live feed --------------------------------------------------------------------------

function setConn(s, label = s) {
  const node = byTest("conn-state");
  node.dataset.state = s;
  node.textContent = label;
  node.parentElement.className = `conn conn-${s}`;
}

// A parser of Server-Sent Events: feed it text, it calls onEvent({event, data, id}).
function sseParser(onEvent) {
  let buf = "";
  let ev = { event: "message", data: [], id: null };
  const line = (l) => {
    if (l === "") {
      if (ev.data.length) onEvent({ event: ev.event, data: ev.data.join("\n"), id: ev.id });
      ev = { event: "message", data: [], id: ev.id };
      return;
    }
    if (l.startsWith(":")) return;
    const i = l.indexOf(":");
    const field = i < 0 ? l : l.slice(0, i);
    const value = i < 0 ? "" : l.slice(i + 1).replace(/^ /, "");
    if (field === "data") ev.data.push(value);
    else if (field === "event") ev.event = value;
    else if (field === "id") ev.id = value;
  };
  return (text) => {
    buf += text;
    const cut = buf.endsWith("\r") ? buf.length - 1 : buf.length; // "\r" may start a "\r\n"
    const lines = buf.slice(0, cut).split(/\r\n|\r|\n/);
    buf = lines.pop() + buf.slice(cut);
    lines.forEach(line);
  };
}

async function readStream(body, onEvent, alive) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const feed = sseParser(onEvent);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    alive();
    feed(decoder.decode(value, { stream: true }));
  }
}

// One connection: resolves when the stream ends, rejects when it breaks or stays silent.
async function connectOnce(outer, onOpen) {
  const ctrl = new AbortController();
  const stop = () => ctrl.abort();
  outer.signal.addEventListener("abort", stop);
  let watchdog = null;
  const alive = () => {
    clearTimeout(watchdog);
    watchdog = setTimeout(stop, SILENCE_MS);
  };
  try {
    const res = await api("/api/events", { signal: ctrl.signal, headers: { Accept: "text/event-stream" } });
    if (!res.ok || !res.body) throw new ApiError(res.status, await res.json().catch(() => null));
    alive();
    await readStream(res.body, (ev) => {
      if (ev.event !== "head") return;
      onOpen();
      scheduleRefresh();
    }, alive);
  } finally {
    clearTimeout(watchdog);
    outer.signal.removeEventListener("abort", stop);
  }
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });

async function follow(outer) {
  let backoff = BACKOFF_MIN_MS;
  const onOpen = () => {
    backoff = BACKOFF_MIN_MS;
    setConn("live");
  };
  while (!outer.signal.aborted) {
    try {
      await connectOnce(outer, onOpen);
    } catch (err) {
      if (err instanceof Unauthorized) return fail(err);
    }
    if (outer.signal.aborted) return;
    setConn("reconnecting");
    await sleep(backoff, outer.signal);
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
  }
}

// ---- refresh ----------------------------------------------------------------------------

function scheduleRefresh() {
  const r = state.refresh;
  if (r.busy) {
    r.again = true;
    return;
  }
  if (r.timer) return;
  r.timer = setTimeout(refresh, Math.max(0, r.last + REFRESH_GAP_MS - Date.now()));
}

async function refresh() {
  const r = state.refresh;
  r.timer = null;
  r.busy = true;
  r.last = Date.now();
  try {
    const ov = await getJson(`/api/overview?window=${state.windowS}`);
    if (state.stream === null) return; // locked meanwhile
    state.skewMs = ov.now - Date.now();
    state.overview = ov;
    byTest("load-error").hidden = true;
    renderOverview(ov);
    if (state.taskId) await loadTask(state.taskId, false);
  } catch (err) {
    fail(err);
  } finally {
    r.busy = false;
    if (r.again) {
      r.again = false;
      scheduleRefresh();
    }
  }
}

function start() {
  byTest("auth").hidden = true;
  if (state.stream) state.stream.abort();
  state.stream = new AbortController();
  setConn("connecting");
  scheduleRefresh();
  follow(state.stream);
}

// ---- rendering: header and counts -------------------------------------------------------

function renderHeader(ov) {
  const { server, ledger } = ov;
  setText("server-name", server.name);
  setText("server-version", `v${server.version}`);
  byTest("read-only").hidden = !server.read_only;
  document.title = `${server.name} dashboard`;
  document.querySelector(".ledger").hidden = false;
  setText("ledger-records", ledger.records.toLocaleString("en-US"), ledger.records);
  setText("ledger-bytes", bytes(ledger.bytes), ledger.bytes).title =
    ledger.bytes === null ? "the store does not report its size" : `${ledger.bytes} bytes`;
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
  for (const id of ["tasks-by-status", "runs", "plans", "calls-summary", "calls-by-tool", "refusals",
    "roles", "sparkline", "task-body"]) byTest(id).replaceChildren();
  for (const id of ["ledger-records", "ledger-bytes", "ledger-head", "ledger-verified", "ledger-store",
    "ledger-signed-seq", "verify-kind", "verify-summary", "verify-valid"]) {
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

function taskItem({ task, depth }) {
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
  task.attempts > 1 && el("span", { class: "meta", text: `${task.attempts} attempts` }));
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
    el("td", {}, badge(run.status)),
    el("td", {}, statusBar(run.counts)),
    el("td", { class: "progress", text: run.progress ? run.progress.message : "" }),
    el("td", { class: "age", "data-since": run.created_at, title: iso(run.created_at) }));
  const tree = el("ul", { class: "tree", "aria-label": `Tasks of ${run.goal}` },
    treeOrder(run.tasks || []).map(taskItem));
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
