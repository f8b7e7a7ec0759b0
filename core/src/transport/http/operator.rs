//! The operator's routes beside MCP on the HTTP port: the dashboard page and its assets, the
//! dashboard's JSON API and live feed, Prometheus metrics and the health probes.
//!
//! | route | what | auth |
//! |---|---|---|
//! | `GET /`, `/dashboard.js`, `/dashboard-view.js`, `/dashboard.css` | the page (embedded, the same bytes for everyone) | none: it holds no data |
//! | `GET /api/overview?window=S` | runs, tasks, plans, calls, workers and the ledger ([`crate::dashboard`]) | as `/mcp` |
//! | `GET /api/task?id=T` | a task's mailbox, artifacts and lineage | as `/mcp` |
//! | `POST /api/verify` | checks a pasted run handle, claim receipt or capsule against this ledger | as `/mcp` |
//! | `GET /api/events` | SSE: one `head` event per ledger head move | as `/mcp` |
//! | `GET /metrics` | Prometheus text format | as `/mcp` |
//! | `GET /healthz`, `GET /readyz` | process alive; ledger open, verified and reachable | as `/mcp` |
//!
//! "As `/mcp`" means anonymous on loopback (bind and peer), the bearer token otherwise; the
//! `Host` and `Origin` rules apply to every route. A browser cannot attach a bearer header to a
//! navigation, so the page itself is public and asks for the token, which it then sends with
//! every API call; nothing it shows comes without it. Pure: parsing and the static answers
//! only; the runtime serves the routes that read the ledger.

use super::request::Request;
use super::response::{HttpResponse, Status};
use super::sse;

/// The page, its script and its style sheet, compiled into the binary.
const PAGE: &str = include_str!("dashboard/index.html");
const SCRIPT: &str = include_str!("dashboard/dashboard.js");
const VIEW: &str = include_str!("dashboard/dashboard-view.js");
const STYLE: &str = include_str!("dashboard/dashboard.css");

/// The longest window `/api/overview` accepts (the projection keeps 24 h of call tallies).
pub const MAX_WINDOW_S: u64 = 24 * 3600;
/// The window `/api/overview` uses when none is given.
pub const DEFAULT_WINDOW_S: u64 = 3600;
/// The longest pasted object `POST /api/verify` reads.
pub const MAX_VERIFY_BYTES: usize = 1 << 20;

/// An embedded file of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asset {
    Page,
    /// State, HTTP, auth and the live feed.
    Script,
    /// Rendering and start-up (loaded after [`Asset::Script`]).
    View,
    Style,
}

/// A route of the operator's surface, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperatorRoute {
    /// `GET /healthz`.
    Healthz,
    /// `GET /readyz`.
    Readyz,
    /// `GET /metrics`.
    Metrics,
    /// `GET /api/overview`: over the last `window_s` seconds.
    Overview { window_s: u64 },
    /// `GET /api/task?id=…`.
    Task { id: String },
    /// `POST /api/verify`: the pasted text.
    Verify { pasted: Vec<u8> },
    /// `GET /api/events`.
    Events,
}

/// An operator request the runtime serves (it reads the ledger or the process's counters).
#[derive(Clone, Debug)]
pub struct OperatorRequest {
    pub route: OperatorRoute,
    pub span_id: String,
    pub keep_alive: bool,
}

/// What an operator path asks for, before authentication.
#[derive(Debug)]
pub(super) enum Parsed {
    /// Not an operator path.
    None,
    /// A public asset.
    Asset(Asset),
    /// A route behind authentication.
    Route(OperatorRoute),
    /// An operator path with the wrong method: the `Allow` value.
    Method(&'static str),
    /// A malformed query: the message.
    Bad(String),
}

/// Parses `request` if its path is an operator route (`request` is consumed only for its
/// body, which `POST /api/verify` keeps).
pub(super) fn parse(request: &mut Request) -> Parsed {
    let get = request.method == "GET";
    let path = request.path();
    let asset = match path {
        "/" | "/index.html" => Some(Asset::Page),
        "/dashboard.js" => Some(Asset::Script),
        "/dashboard-view.js" => Some(Asset::View),
        "/dashboard.css" => Some(Asset::Style),
        _ => None,
    };
    if let Some(a) = asset {
        return if get {
            Parsed::Asset(a)
        } else {
            Parsed::Method("GET")
        };
    }
    let route = match path {
        "/healthz" => OperatorRoute::Healthz,
        "/readyz" => OperatorRoute::Readyz,
        "/metrics" => OperatorRoute::Metrics,
        "/api/events" => OperatorRoute::Events,
        "/api/overview" => match window(request.query()) {
            Ok(window_s) => OperatorRoute::Overview { window_s },
            Err(m) => return Parsed::Bad(m),
        },
        "/api/task" => match query_value(request.query(), "id") {
            Some(id) if !id.is_empty() => OperatorRoute::Task { id },
            _ => return Parsed::Bad("give the task as ?id=T".into()),
        },
        "/api/verify" => {
            if request.method != "POST" {
                return Parsed::Method("POST");
            }
            if request.body.len() > MAX_VERIFY_BYTES {
                return Parsed::Bad(format!(
                    "the pasted object is over {MAX_VERIFY_BYTES} bytes"
                ));
            }
            return Parsed::Route(OperatorRoute::Verify {
                pasted: std::mem::take(&mut request.body),
            });
        }
        _ => return Parsed::None,
    };
    if get {
        Parsed::Route(route)
    } else {
        Parsed::Method("GET")
    }
}

fn window(query: Option<&str>) -> Result<u64, String> {
    let Some(raw) = query_value(query, "window") else {
        return Ok(DEFAULT_WINDOW_S);
    };
    match raw.parse::<u64>() {
        Ok(s) if (60..=MAX_WINDOW_S).contains(&s) => Ok(s),
        _ => Err(format!(
            "window must be a number of seconds from 60 to {MAX_WINDOW_S}, got {raw:?}"
        )),
    }
}

/// The percent-decoded value of `name` in a query string (`+` is a space).
fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    let raw = query?
        .split('&')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?;
    percent_decode(raw)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The answer for an embedded file: cacheable only by revalidation, never sniffed, and the
/// page may load nothing but itself (no CDN, no inline script).
pub fn asset(a: Asset, span: &str) -> HttpResponse {
    let (body, ty) = match a {
        Asset::Page => (PAGE, "text/html; charset=utf-8"),
        Asset::Script => (SCRIPT, "text/javascript; charset=utf-8"),
        Asset::View => (VIEW, "text/javascript; charset=utf-8"),
        Asset::Style => (STYLE, "text/css; charset=utf-8"),
    };
    let mut r = HttpResponse::new(Status::OK, span)
        .with_header("Content-Type", ty)
        .with_header("Cache-Control", "no-cache")
        .with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header(
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        );
    r.body = body.as_bytes().to_vec();
    r
}

/// The head of the `/api/events` stream (open until either side closes it), with the
/// reconnection delay a client should use.
pub fn feed_head(span: &str) -> Vec<u8> {
    let mut out = sse::open_stream_head(span);
    out.extend_from_slice(b"retry: 2000\n\n");
    out
}

/// The `head` event of the ledger at `records` records with head `head` (its id is the
/// record count, so a reconnecting client's `Last-Event-ID` says where it was).
pub fn head_event(records: u64, head: &str) -> Vec<u8> {
    let data = serde_json::json!({"records": records, "head": head}).to_string();
    let mut out = Vec::new();
    sse::push_event(&mut out, &records.to_string(), "head", data.as_bytes());
    out
}

/// The total size of the embedded page (what `budget` tests hold under 100 KB).
pub fn embedded_bytes() -> usize {
    PAGE.len() + SCRIPT.len() + VIEW.len() + STYLE.len()
}

#[cfg(test)]
mod tests;
