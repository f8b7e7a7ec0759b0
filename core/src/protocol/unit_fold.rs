//! The protocol's own tests build catalogues of their own over the empty fold `()`, so they
//! name no domain type (what a fold holds is only passed through to a catalogue's functions).

pub type Snapshot = crate::ledger::Snapshot<()>;
pub type Server = super::Server<()>;
pub type Input<'a> = super::Input<'a, ()>;
pub type Catalog = super::registry::Catalog<()>;
pub type ToolSpec = super::registry::ToolSpec<()>;
pub type ToolContext<'a> = super::registry::ToolContext<'a, ()>;
pub type ResourceSpec = super::registry::ResourceSpec<()>;
