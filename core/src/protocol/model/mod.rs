//! The typed MCP model: the methods ([`method::Method`]), typed views of request params
//! ([`params`]) and typed results ([`results`]). The engine routes on the method, handlers read
//! params only through these views and answer with these results, so each wire name and the
//! error for each malformed field live here once.

pub mod method;
pub mod params;
pub mod results;

pub use method::Method;
pub use params::{
    CallParams, CompleteParams, CompleteRef, GetPromptParams, InitializeParams, ListParams, Meta,
    ReadResourceParams, TaskListParams, TaskParams, TaskUpdateParams,
};
