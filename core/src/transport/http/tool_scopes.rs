//! The scope each tool name needs (tools of the tier and their deprecated aliases), read once
//! from the catalogue's declared [`Effects`](crate::protocol::registry::Effects): the router
//! refuses a `tools/call` beyond an OAuth token's scopes with `403 insufficient_scope` before
//! the engine sees it.

use std::collections::BTreeMap;

use crate::ledger::Fold;
use crate::protocol::Server;
use crate::protocol::principal::{Scopes, needed_scope};
use crate::protocol::registry::Effects;

/// Tool name → its effects, for every name a call may use.
#[derive(Clone, Debug, Default)]
pub struct ToolScopes {
    by_name: BTreeMap<String, Effects>,
}

impl ToolScopes {
    /// The names `server` serves: its tools and the aliases that stand for them.
    pub fn of<F: Fold>(server: &Server<F>) -> ToolScopes {
        let catalog = &server.catalog;
        let mut by_name: BTreeMap<String, Effects> = catalog
            .tools
            .iter()
            .map(|t| (t.name.to_string(), t.effects))
            .collect();
        for (alias, replacement) in &catalog.aliases {
            if let Some(t) = catalog.tool(replacement) {
                by_name.insert((*alias).to_string(), t.effects);
            }
        }
        ToolScopes { by_name }
    }

    /// The scope a call of `name` needs that `scopes` lacks (`None`: allowed, or a name that is
    /// no tool, which the engine answers itself).
    pub fn missing(&self, name: &str, scopes: Scopes) -> Option<&'static str> {
        let effects = *self.by_name.get(name)?;
        (!scopes.allow(effects)).then(|| needed_scope(effects))
    }
}
