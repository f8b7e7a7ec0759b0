//! Bernstein's domain, pure: tasks and their lifecycle, the projection folded from the ledger, and the
//! tools, prompts, capability card and instructions registered into the protocol engine through
//! [`catalog`].
//!
//! - [`lifecycle`]: the one table of legal status transitions and the sets derived from it.
//! - [`ids`]: content-derived task/run ids and the shape check for peer-supplied ids.
//! - [`records`]: the record kinds of the backlog and the run journals (docs/RECORDS.md).
//! - [`projection`], [`runs`]: the state folded from those records; run status rule.
//! - [`handle`]: the verifiable run handle and `verify_run_handle`.
//! - [`tools`], [`tiers`]: the tools and the table of their tiers; [`refusal`]: their
//!   refusal codes.
//! - [`aliases`]: the deprecated tool names and their replacements (never listed).
//! - [`skills`], [`scenarios`]: skill files and scenario definitions (`load_skill`,
//!   `bernstein_scenario`).
//! - [`prompts`], [`card`], [`instructions`]: the rest of the catalogue; [`resources`]: runs
//!   and tasks as resource templates, and the links tool results carry to them.
//! - [`schema`]: advertised JSON Schemas generated from the Rust types; [`args`]: argument
//!   newtypes whose limits are both their schema and their check.
//! - [`deps`]: `depends_on` checks (unknown tasks, cycles).
//! - [`claims`], [`claim_verify`]: claim selection, signed claim receipts, their verifier.
//! - [`mailbox`], [`dlp`]: signed mailbox entries, their verifier, secret redaction.
//! - [`completion`]: parents resuming when their last subtask finishes.
//! - [`plans`], [`operator`]: plan documents, hashes and decisions; operator commands.
//! - [`task_view`]: the catalogue's task hooks: MCP tasks (tasks/*, progress ticks) of runs.
//! - [`artifacts`], [`lineage`]: versioned, content-hashed artifacts and the lineage walk.
//! - [`capsule`]: signed task capsules and their checks; [`handle_verify`]: run handles
//!   checked against a ledger; [`trace`]: W3C trace context screened from `_meta`.
//!
//! The tools are listed in [`tools`]; each declares its own tier ([`tools::Tool`]).
//!
//! Everything here is pure: no IO, no clock (the time arrives in the tool context), no
//! randomness. The domain never frames messages or writes records itself; it returns drafts.
//!
//! It is built on the MCP engine (`bernstein-core`) and re-exports none of it: a crate that
//! needs the engine names it. It never touches a socket, a file, a clock, the environment or an OS random source
//! (`clippy.toml` and `tests/purity.rs`, which scans the two crates below too). Crates depend
//! one way (`store-file/tests/crate_graph.rs`); inside each, modules do too
//! (`tests/module_graph.rs`).

pub use bound::Input;

pub mod aliases;
pub mod args;
pub mod artifacts;
pub mod bound;
pub mod call_stats;
pub mod capsule;
pub mod capsule_index;
pub mod card;
pub mod claim_verify;
pub mod claims;
pub mod completion;
pub mod dashboard;
pub mod deps;
pub mod dlp;
pub mod handle;
pub mod handle_verify;
pub mod ids;
pub mod instructions;
pub mod lease;
pub mod lifecycle;
pub mod lineage;
pub mod mailbox;
pub mod operator;
pub mod outcome;
pub mod plans;
pub mod projection;
pub mod prompts;
pub mod questions;
pub mod records;
pub mod refusal;
pub mod resource_links;
pub mod resources;
pub mod runs;
pub mod scenarios;
pub mod schema;
pub mod shown;
pub mod signed_head;
pub mod skills;
pub mod status_changes;
pub mod task_row;
pub mod task_view;
pub mod tiers;
pub mod tools;
pub mod trace;
pub mod views;
pub mod witness;

pub use bound::Server;
pub use handle::{RunHandle, verify_run_handle};
pub use lifecycle::TaskStatus;
pub use projection::{Projection, Snapshot};
pub use runs::RunStatus;

use bound::Catalog;

/// Bernstein's full catalogue (the engine filters it by the active tier).
pub fn catalog() -> Catalog {
    Catalog {
        tools: tools::registered(),
        prompts: prompts::registered(),
        resources: vec![card::resource(), signed_head::resource()],
        resource_templates: resources::templates(),
        aliases: aliases::DEPRECATED_ALIASES.to_vec(),
        instructions: instructions::instructions,
        capability_card: card::capability_card,
        tasks: Some(task_view::hooks()),
        // Bernstein's tasks are its runs, driven by workers through the hooks above.
        tool_tasks: None,
        effects_in_descriptions: true,
        redact: |text| dlp::redact(text).text,
    }
}

/// Bernstein's server (`Server::new`) serves this catalogue.
impl bernstein_core::protocol::registry::Domain for Projection {
    fn catalog() -> Catalog {
        catalog()
    }
}

#[cfg(test)]
pub(crate) mod testkit;

#[cfg(test)]
mod budget_tests;

#[cfg(test)]
mod model_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_is_complete_and_sorted() {
        let c = catalog();
        let names: Vec<&str> = c.tools.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "bernstein_approve",
                "bernstein_cancel",
                "bernstein_claim",
                "bernstein_complete",
                "bernstein_post_artifact",
                "bernstein_post_message",
                "bernstein_run",
                "bernstein_run_status",
                "bernstein_scenario",
                "bernstein_shutdown_orchestrator",
                "bernstein_status",
                "bernstein_task_capsule",
                "bernstein_verify_lineage",
                "load_skill"
            ]
        );
        assert_eq!(c.prompts.len(), 3);
        assert_eq!(c.resources[0].uri, "bernstein://capability");
        let config = bernstein_core::config::Config::new(vec![]);
        assert!(!(c.instructions)(&config).is_empty());
        assert_eq!((c.capability_card)(&config)["name"], "bernstein");
    }
}
