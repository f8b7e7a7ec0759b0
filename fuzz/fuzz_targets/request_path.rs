//! The whole request path: arbitrary bytes, split on `\n` into up to 8 messages of one
//! connection, handled by `Server::handle` against the fixed fixture snapshot (advanced by
//! each outcome's records) at a fixed or fuzzed clock, over fuzzed transport facts.
//! Invariants: see `bernstein_fuzz::invariants` (no panic, a well-formed reply or none only
//! for notifications, deterministic, appended records extend the ledger and fold cleanly).
#![no_main]

use bernstein_core::time::Timestamp;
use bernstein_fuzz::{fixture, invariants};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let mut facts = fixture::facts(selector);
    // Half the inputs also fuzz the clock (any u64, the legacy-session cut-off included).
    let (now, rest) = match rest.split_first_chunk::<8>() {
        Some((clock, tail)) if selector & 0x40 != 0 => {
            (Timestamp(u64::from_le_bytes(*clock)), tail)
        }
        _ => (fixture::NOW, rest),
    };
    let mut snapshot = fixture::snapshot().clone();
    invariants::serve_sequence(
        fixture::server(),
        &mut snapshot,
        &mut facts,
        now,
        rest.split(|&b| b == b'\n').take(8),
    );
});
