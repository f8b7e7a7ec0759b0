//! Bernstein's domain: tasks and their lifecycle, the projection folded from the ledger, the
//! tools, prompts, capability card and instructions registered into the protocol engine.

pub mod projection;

use crate::protocol::Catalog;

/// Bernstein's full catalogue (the engine filters it by the active tier).
pub fn catalog() -> Catalog {
    Catalog {
        tools: Vec::new(),
        prompts: Vec::new(),
        resources: Vec::new(),
        aliases: Vec::new(),
        instructions: |_| String::new(),
        capability_card: |_| serde_json::Value::Null,
    }
}
