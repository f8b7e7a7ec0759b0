//! The typed MCP model: the methods ([`method::Method`]), typed views of request params
//! ([`params`]) and result types ([`results`]). Handlers read params through these views and
//! answer these types; the wire names and the error for a malformed field live here once.

pub mod method;

pub use method::Method;
