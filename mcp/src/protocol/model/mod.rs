//! The typed MCP model: the methods ([`method::Method`]) and typed views of request params
//! ([`params`]). The engine routes on the method and handlers read params only through these
//! views, so each wire name and the error for each malformed field live here once.

pub mod method;
pub mod params;

pub use method::Method;
pub use params::{
    CallParams, CompleteParams, CompleteRef, GetPromptParams, InitializeParams, ListParams, Meta,
    ReadResourceParams, TaskListParams, TaskParams, TaskUpdateParams,
};
