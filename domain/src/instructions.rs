//! Connect-time instructions: the one Bernstein text that stays in a host model's context for
//! the whole connection, so it spends its budget (at most [`MAX_CHARS`] characters) on the
//! start-then-poll loop: one clause of identity, how to start a run (and that it takes minutes
//! to hours), how to poll it, when to stop, and `load_skill` for anything deeper. It names
//! only tools the active tier serves; a test checks both. This module must never read state
//! beyond the configuration.

use bernstein_core::config::Config;

use super::tiers;

/// Upper bound on the instructions' length, in characters.
pub const MAX_CHARS: usize = 900;

const LOOP: &str = "Bernstein orchestrates multi-agent work and records every call in a \
tamper-evident ledger.\n\
To drive a run:\n\
1. bernstein_run starts a run and returns at once; the work takes minutes to hours. Its task_id \
is the run id.\n\
2. Poll bernstein_run_status with run_id set to that id, tens of seconds apart (first after \
poll_after_ms). A working status is progress, not a stall: never start the goal again.\n\
3. Stop polling at completed, failed or cancelled. input_required means the run waits on a \
person's decision.\n\
bernstein_status lists task counts and, with detail=true, tasks.";

const CANCEL: &str = "\nbernstein_cancel stops a task and its subtasks.";

const WORKER: &str = "\nAs a worker: bernstein_claim takes the next eligible task (keep its signed receipt), \
bernstein_post_message reports progress, bernstein_complete finishes it.";

const DEEPER: &str = "\nFor anything deeper (roles, conventions, playbooks), call load_skill: \
without arguments it lists the project's skills.";

/// The instructions for `config`.
pub fn instructions(config: &Config) -> String {
    let mut text = LOOP.to_string();
    if tiers::tier_of("bernstein_cancel").is_some_and(|t| config.tier.includes(t)) {
        text.push_str(CANCEL);
    }
    if tiers::tier_of("bernstein_claim").is_some_and(|t| config.tier.includes(t)) {
        text.push_str(WORKER);
    }
    if tiers::tier_of("load_skill").is_some_and(|t| config.tier.includes(t)) {
        text.push_str(DEEPER);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use bernstein_core::config::Tier;

    fn named_tools(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(i) = ["bernstein_", "load_skill"]
            .iter()
            .filter_map(|p| rest.find(p))
            .min()
        {
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            rest = &rest[i + name.len()..];
            out.push(name);
        }
        out
    }

    #[test]
    fn short_enough_and_names_only_served_tools() {
        for tier in Tier::ALL {
            let mut c = Config::new(vec![]);
            c.tier = tier;
            let text = instructions(&c);
            assert!(
                text.chars().count() <= MAX_CHARS,
                "{tier:?}: {} chars",
                text.chars().count()
            );
            let served = tiers::tools_in(tier);
            let named = named_tools(&text);
            assert!(named.contains(&"bernstein_run".to_string()));
            assert!(named.contains(&"bernstein_run_status".to_string()));
            for n in &named {
                assert!(
                    served.contains(&n.as_str()),
                    "{tier:?} instructions name {n}"
                );
            }
            assert_eq!(
                named.contains(&"load_skill".to_string()),
                tier != Tier::Core,
                "{tier:?}: load_skill is named exactly where it is served"
            );
        }
    }

    #[test]
    fn states_the_loop() {
        let text = instructions(&Config::new(vec![]));
        assert!(text.contains("task_id is the run id"));
        assert!(text.contains("minutes to hours"));
        assert!(text.contains("call load_skill"));
        assert!(text.contains("tens of seconds apart"));
        assert!(text.contains("completed, failed or cancelled"));
        assert!(text.contains("bernstein_cancel"));
    }
}
