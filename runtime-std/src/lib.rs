//! The blocking runtime of the Bernstein MCP server: the stdio loop and the HTTP/1.1 server on
//! std threads and `std::net`. It moves bytes and keeps time; performing the engine's store,
//! host and operator outputs is `bernstein-effects`'s, and every protocol decision is the
//! core's. It is generic over the fold and the store it is handed (the CLI wires Bernstein's).
//!
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout.
//! - [`http`]: the blocking HTTP server ([`http::bind`], [`http::serve_http`]).

pub mod http;
pub mod stdio;
