//! The deprecated tool names of the Python server, kept callable for one more minor release
//! (until `protocol::call::ALIAS_REMOVAL_RELEASE`) and never listed.
//!
//! Each alias names the tool that replaced it. The engine (`protocol::call`) resolves an alias
//! only when `Config::deprecated_aliases` is on (`BERNSTEIN_MCP_DEPRECATED_ALIASES`, default
//! on) and the replacement is registered and inside the active tier; otherwise the alias does
//! not exist and a call to it is an unknown tool. An alias's answer is the replacement's, wrapped
//! as `{deprecated: true, tool, replacement, removal_release, notice, result}`.
//!
//! | alias                       | replacement                       |
//! |-----------------------------|-----------------------------------|
//! | `bernstein_health`          | `bernstein_status`                |
//! | `bernstein_tasks`           | `bernstein_status`                |
//! | `bernstein_cost`            | `bernstein_status`                |
//! | `bernstein_create_subtask`  | `bernstein_run`                   |
//! | `bernstein_task_handle`     | `bernstein_run_status`            |
//! | `bernstein_update`          | `bernstein_post_message`          |
//! | `bernstein_context`         | `bernstein_task_capsule`          |
//! | `bernstein_stop`            | `bernstein_shutdown_orchestrator` |
//! | `bernstein_scenarios`       | `bernstein_scenario`              |
//! | `bernstein_scenario_status` | `bernstein_scenario`              |
//! | `verify_chain`              | `bernstein_verify_lineage`        |
//!
//! This module holds the table only; it must never hold behaviour.

/// (alias, replacement), in the order of the table above.
pub const DEPRECATED_ALIASES: &[(&str, &str)] = &[
    ("bernstein_health", "bernstein_status"),
    ("bernstein_tasks", "bernstein_status"),
    ("bernstein_cost", "bernstein_status"),
    ("bernstein_create_subtask", "bernstein_run"),
    ("bernstein_task_handle", "bernstein_run_status"),
    ("bernstein_update", "bernstein_post_message"),
    ("bernstein_context", "bernstein_task_capsule"),
    ("bernstein_stop", "bernstein_shutdown_orchestrator"),
    ("bernstein_scenarios", "bernstein_scenario"),
    ("bernstein_scenario_status", "bernstein_scenario"),
    ("verify_chain", "bernstein_verify_lineage"),
];

#[cfg(test)]
mod tests;
