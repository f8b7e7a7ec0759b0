//! Offline verification of ledger bytes (`bernstein audit verify`).
