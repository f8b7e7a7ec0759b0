/* Bernstein operator dashboard, part 1 of 2: plain ES2020, no framework, no build step. This
 * file holds the state, HTTP, auth, the live feed and the refresh; dashboard-view.js (loaded
 * after it) renders and starts the page.
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
 * Not ready: /api/* answer 503 {"status":"not_ready","reason","retryable"} while the ledger
 * cannot be served. The page then shows the ledger's state instead of the connection's, with
 * the reason in the error banner: `not_ready` (retryable false: the ledger does not verify, or
 * was replaced; only the operator mends it, so the page waits for the feed to reconnect to a
 * restarted server), `opening` (retryable, still opening and verifying) or `unavailable`
 * (retryable otherwise); the retryable ones are asked again every RETRY_MS.
 *
 * Test hooks (data-testid unless noted):
 *   conn-state            text and data-state: connecting | live | reconnecting | locked |
 *                         not_ready | opening | unavailable (title = the server's reason)
 *   server-name, server-version, read-only (hidden unless read-only)
 *   ledger-records        data-value = records; ledger-bytes (data-value, may be empty;
 *                         data-applicable = false when the store has no such field)
 *   ledger-head           textContent = the full head (shortened by CSS, full in title)
 *   ledger-verified (yes|no), ledger-store, ledger-signed-seq (data-value = seq or empty)
 *   auth, token-form, token-input, token-submit, auth-error; data (the data area), load-error
 *   tasks-by-status > status-count[data-status] (data-value = count)
 *   runs > run-row[data-run-id][data-status] with .goal (the expand button, data-testid
 *          run-toggle), .status, run-waiting (the waits-for-a-worker hint, data-last-claim = ms
 *          or empty), run-bar > .seg[data-status][data-value], .progress, .age
 *   run-tasks[data-run-id] (the task tree row; hidden until expanded)
 *          > task-row[data-task-id][data-status][data-depth] with task-select (button),
 *            .status, task-deps, task-claimer, task-lease (data-until = ms), task-outcome
 *            (an ended run's result or reason; data-truncated)
 *   task-detail > task-body: task-field[data-field], mailbox > mail-entry[data-seq] with
 *          mail-sender, mail-kind, mail-body, mail-signature; artifacts > artifact-row[data-key]
 *          with artifact-lineage (data-ok); task-close; task-missing
 *   workers > worker-row[data-claimer][data-holds] with worker-claimer, worker-task
 *          (button, data-task-id), worker-claimed (data-ago = ms, or "—"), worker-lease
 *          (data-until = ms, data-expired), worker-active (data-ago); workers-empty, workers-note
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
const RETRY_MS = 2000; // asking again while the ledger is opening or unreachable

const state = {
  token: null,
  windowS: 3600,
  overview: null,
  skewMs: 0, // server clock minus ours
  expanded: new Set(),
  taskId: null,
  stream: null,
  feedUp: false, // the feed's response arrived and its stream is open
  notReady: null, // the body of the last 503 not_ready answer, until an overview loads
  retryTimer: null,
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
    super((body && (body.reason || body.message || body.error)) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error;
    this.body = body;
  }

  // A 503 saying the ledger cannot be served now (see "Not ready" above).
  get notReady() {
    return this.status === 503 && Boolean(this.body) && this.body.status === "not_ready";
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
  for (const node of document.querySelectorAll("[data-ago]")) {
    node.textContent = `${span(serverNow() - Number(node.dataset.ago))} ago`;
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
  state.notReady = null;
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
  if (err instanceof ApiError && err.notReady) return showNotReady(err.body);
  const banner = byTest("load-error");
  banner.textContent = `Could not load: ${err.message}`;
  banner.hidden = false;
  if (!(err instanceof ApiError)) reportError(err); // a bug of this page: let it be seen
}

// ---- live feed --------------------------------------------------------------------------

function setConn(s, label = s, reason = "") {
  const node = byTest("conn-state");
  node.dataset.state = s;
  node.textContent = label;
  node.title = reason;
  node.parentElement.className = `conn conn-${s}`;
}

// [data-state, label] for a not_ready answer.
function notReadyState(body) {
  const reason = String(body.reason || body.message || "");
  if (body.retryable === false) {
    return ["not_ready", /does not verify/i.test(reason) ? "ledger does not verify" : "not ready"];
  }
  return /being opened|opening/i.test(reason) ? ["opening", "opening…"] : ["unavailable", "unavailable, retrying…"];
}

// The ledger cannot be served: say why, hide what a ledger that does not verify would vouch
// for, and ask again later if waiting may help.
function showNotReady(body) {
  state.notReady = body;
  const reason = String(body.reason || body.message || "not ready");
  const [s, label] = notReadyState(body);
  setConn(s, label, reason);
  const banner = byTest("load-error");
  banner.textContent = `${body.retryable === false ? "Not ready" : "Not ready yet"}: ${reason}`;
  banner.hidden = false;
  if (body.retryable === false) {
    byTest("data").hidden = true;
    document.querySelector(".ledger").hidden = true;
  } else if (!state.retryTimer) {
    state.retryTimer = setTimeout(() => {
      state.retryTimer = null;
      if (state.notReady) scheduleRefresh();
    }, RETRY_MS);
  }
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
    state.feedUp = true;
    // A feed of a ledger that cannot be served sends no head: ask the API what it is now.
    if (state.notReady) scheduleRefresh();
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
    if (!state.notReady) setConn("live"); // else the refresh this head causes says what it is
  };
  while (!outer.signal.aborted) {
    try {
      await connectOnce(outer, onOpen);
    } catch (err) {
      if (err instanceof Unauthorized) return fail(err);
    }
    state.feedUp = false;
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
    if (state.notReady) {
      // The ledger is served again (it opened, or the database answers).
      state.notReady = null;
      setConn(state.feedUp ? "live" : "reconnecting");
    }
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
  state.feedUp = false;
  setConn("connecting");
  scheduleRefresh();
  follow(state.stream);
}
