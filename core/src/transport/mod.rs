//! Sans-IO transport framing shared by every runtime. Runtimes feed it the bytes they read and
//! drain complete frames; it never reads or writes anything itself.

pub mod http;
pub mod lines;

pub use lines::{Line, LineFramer};
