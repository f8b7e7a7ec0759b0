//! Shared ground of the fuzz targets: a fixed server, snapshot and clock built from a recorded
//! journal in `tests/fixtures/`, and the invariants every target asserts about what the server
//! emits. A target that finds an input breaking one of these has found a bug; its crash input
//! becomes a regression test in the normal suite (see README.md).
//!
//! Nothing here reads the environment or the clock: every run of a target over the same input
//! behaves the same, so every crash reproduces. (Only `torn_tail` touches files, in a scratch
//! directory of its own.)

pub mod fixture;
pub mod invariants;
