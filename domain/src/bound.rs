//! The protocol's catalogue types bound to Bernstein's fold, the [`Projection`]: what the
//! domain's tools, resources and task hooks are written against, and the server they make.

use super::projection::Projection;
use bernstein_core::protocol::{self, registry};

pub type ToolContext<'a> = registry::ToolContext<'a, Projection>;
pub type ToolSpec = registry::ToolSpec<Projection>;
pub type ResourceSpec = registry::ResourceSpec<Projection>;
pub type ResourceTemplateSpec = registry::ResourceTemplateSpec<Projection>;
pub type ResourceContext<'a> = registry::ResourceContext<'a, Projection>;
pub type TemplateCompleter = registry::TemplateCompleter<Projection>;
pub type TaskHooks = registry::TaskHooks<Projection>;
pub type ToolLookup<'a> = registry::ToolLookup<'a, Projection>;
pub type Catalog = registry::Catalog<Projection>;
pub type Server = protocol::Server<Projection>;
pub type Input<'a> = protocol::Input<'a, Projection>;
