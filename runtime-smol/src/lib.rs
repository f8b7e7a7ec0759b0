//! The async runtime on smol / async-io. It moves bytes only: framing, routing and every
//! protocol decision are the core's; the ledger store and the request driver are shared with
//! `runtime-std` (blocking store calls run on smol's blocking pool, never on the executor).

pub mod http;
pub mod stdio;
