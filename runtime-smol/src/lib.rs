//! The async runtime on smol / async-io: one task drives each of the server's engines
//! (`bernstein_core::engine::Engine`) and one task per connection moves its bytes. Framing,
//! routing, timeouts, waits and every protocol decision are the engine's; the store, host and
//! operator outputs are performed by `bernstein-effects`'s `Performer` (off the executor
//! whenever they may wait), as for `runtime-std`.
//!
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout.
//! - [`http`]: the HTTP server ([`http::bind`], [`http::serve_http`]).

pub mod http;
pub mod stdio;
