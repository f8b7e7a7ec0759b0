//! The async runtime on smol / async-io. It moves bytes only: framing, routing and every
//! protocol decision are the core's; serving a message (the request driver, the waiting room,
//! the HTTP service) is `bernstein-serve`'s, as for `runtime-std` (blocking store calls run on
//! a blocking pool, never on the executor).

pub mod http;
pub mod stdio;
