//! The blocking runtime of the Bernstein MCP server: the stdio loop and the HTTP/1.1 server on
//! std threads and `std::net`. It moves bytes and keeps time; serving a message (the request
//! driver, the waiting room, the HTTP service) is `bernstein-effects`'s, and every protocol
//! decision is the core's.
//!
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout.
//! - [`http`]: the blocking HTTP server ([`http::bind`], [`http::serve_http`]).

pub mod http;
pub mod stdio;
