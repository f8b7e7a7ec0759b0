//! The Bernstein worker runner: claims tasks and executes each with a command-line agent.
//!
//! A worker is an MCP client of the server that uses three verbs only — `bernstein_claim`,
//! `bernstein_post_message` (progress, heartbeats, and the claimer's status changes: started,
//! failed, released) and `bernstein_complete` — over one of two transports behind [`Mcp`]:
//! [`HttpMcp`] (streamable HTTP to a running server, `--url`) or [`InProcess`] (the same
//! JSON-RPC messages submitted to a local engine over a project's ledger, `--workdir`).
//!
//! - [`transport`]: the tool-call client and the in-process transport.
//! - [`credential`]: the bearer token: fixed, or obtained with OAuth client credentials.
//! - [`http_client`]: the blocking streamable-HTTP transport on `ureq` (http:// or https://,
//!   JSON or SSE answers).
//! - [`agent`]: one agent process in its own process group: stdin, output lines, kill.
//! - [`presets`]: the documented command templates of common agent CLIs.
//! - [`path_lookup`]: whether a preset's agent CLI is on `PATH`.
//! - [`task_run`]: one claimed task from start to complete/fail/release.
//! - [`runner`]: the claim loop, concurrency, shutdown and drain.
//! - [`display`]: a live line per running task on a TTY, plain log lines otherwise.
//! - [`duration`]: `30s`, `5m`, `1h30m` parsing.
//!
//! This crate never touches the ledger files itself: every state change goes through a tool
//! call, so a worker over HTTP and one in process record exactly the same things.

pub mod agent;
pub mod credential;
pub mod display;
pub mod duration;
pub mod http_client;
pub mod path_lookup;
pub mod presets;
pub mod redact_lines;
pub mod runner;
pub mod task_run;
pub mod transport;

pub use http_client::HttpMcp;
pub use runner::{RunSummary, WorkerConfig, run_worker};
pub use transport::{Client, InProcess, Mcp, ToolReply, TransportError};
