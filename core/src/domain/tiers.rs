//! The tool tier table: every Bernstein tool declared once, with the tier that introduces it.
//! Tiers are cumulative (`core` ⊂ `standard` ⊂ `all`); the engine lists and calls a tool only
//! when the active tier includes the tool's tier.
//!
//! | tool                   | tier     |
//! |------------------------|----------|
//! | `bernstein_run`        | core     |
//! | `bernstein_run_status` | core     |
//! | `bernstein_status`     | core     |
//! | `bernstein_cancel`     | standard |
//! | `bernstein_claim`      | standard |
//! | `bernstein_post_message` | standard |
//! | `bernstein_complete`   | standard |
//! | `bernstein_approve`    | standard |
//! | `bernstein_post_artifact` | standard |
//! | `bernstein_task_capsule` | standard |
//! | `bernstein_verify_lineage` | all |
//! | `bernstein_shutdown_orchestrator` | standard |
//! | `load_skill` | standard |
//! | `bernstein_scenario` | all |
//!
//! A test fails when this table, the list above and the registered tools disagree. This
//! module must never hold tool behaviour.

use crate::config::Tier;

/// THE table: (tool name, the tier that introduces it).
pub const TOOL_TIERS: &[(&str, Tier)] = &[
    ("bernstein_run", Tier::Core),
    ("bernstein_run_status", Tier::Core),
    ("bernstein_status", Tier::Core),
    ("bernstein_cancel", Tier::Standard),
    ("bernstein_claim", Tier::Standard),
    ("bernstein_post_message", Tier::Standard),
    ("bernstein_complete", Tier::Standard),
    ("bernstein_approve", Tier::Standard),
    ("bernstein_post_artifact", Tier::Standard),
    ("bernstein_task_capsule", Tier::Standard),
    ("bernstein_verify_lineage", Tier::All),
    ("bernstein_shutdown_orchestrator", Tier::Standard),
    ("load_skill", Tier::Standard),
    ("bernstein_scenario", Tier::All),
];

/// The tier that introduces `tool`, if it is a Bernstein tool.
pub fn tier_of(tool: &str) -> Option<Tier> {
    TOOL_TIERS.iter().find(|(n, _)| *n == tool).map(|(_, t)| *t)
}

/// The tools available when `active` is the active tier, sorted by name.
pub fn tools_in(active: Tier) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = TOOL_TIERS
        .iter()
        .filter(|(_, t)| active.includes(*t))
        .map(|(n, _)| *n)
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn table_and_registry_agree() {
        let table: BTreeSet<&str> = TOOL_TIERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(table.len(), TOOL_TIERS.len(), "a tool is declared twice");
        let registered: BTreeSet<&str> = crate::domain::tools::registered()
            .iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(table, registered);
        for spec in crate::domain::tools::registered() {
            assert_eq!(Some(spec.tier), tier_of(spec.name), "{}", spec.name);
        }
    }

    #[test]
    fn module_docs_list_the_table() {
        let docs: Vec<(String, String)> =
            crate::domain::testkit::doc_table(include_str!("tiers.rs"), 2)
                .into_iter()
                .map(|r| (r[0].clone(), r[1].clone()))
                .collect();
        let table: Vec<(String, String)> = TOOL_TIERS
            .iter()
            .map(|(n, t)| (n.to_string(), t.as_str().to_string()))
            .collect();
        let mut docs_sorted = docs.clone();
        docs_sorted.sort();
        let mut table_sorted = table;
        table_sorted.sort();
        assert_eq!(docs_sorted, table_sorted);
    }

    #[test]
    fn tiers_are_cumulative() {
        assert_eq!(
            tools_in(Tier::Core),
            ["bernstein_run", "bernstein_run_status", "bernstein_status"]
        );
        assert_eq!(
            tools_in(Tier::Standard),
            [
                "bernstein_approve",
                "bernstein_cancel",
                "bernstein_claim",
                "bernstein_complete",
                "bernstein_post_artifact",
                "bernstein_post_message",
                "bernstein_run",
                "bernstein_run_status",
                "bernstein_shutdown_orchestrator",
                "bernstein_status",
                "bernstein_task_capsule",
                "load_skill"
            ]
        );
        for t in tools_in(Tier::Core) {
            assert!(tools_in(Tier::Standard).contains(&t));
        }
        for t in tools_in(Tier::Standard) {
            assert!(tools_in(Tier::All).contains(&t));
        }
    }
}
