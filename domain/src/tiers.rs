//! The tool tiers, read off the tools themselves (each declares the tier that introduces it:
//! [`super::tools::Tool::TIER`]). Tiers are cumulative (`core` ⊂ `standard` ⊂ `all`); the
//! engine lists and calls a tool only when the active tier includes the tool's tier.
//! `bernstein mcp tools` prints the table, and the README's copy of it is compared with that
//! output by a test. This module must never hold tool behaviour.

use bernstein_core::config::Tier;

use super::tools::registered;

/// The tier that introduces `tool`, if it is a Bernstein tool.
pub fn tier_of(tool: &str) -> Option<Tier> {
    registered().iter().find(|t| t.name == tool).map(|t| t.tier)
}

/// The tools available when `active` is the active tier, sorted by name.
pub fn tools_in(active: Tier) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = registered()
        .iter()
        .filter(|t| active.includes(t.tier))
        .map(|t| t.name)
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
