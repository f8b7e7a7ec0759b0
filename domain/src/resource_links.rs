//! The URIs of the run and task resources (`crate::resources` reads them) and the
//! `resource_link`s tool results carry to them. Below the tools, which link; the readers sit
//! above them, since a run's resource is what `bernstein_run_status` answers.

use bernstein_core::protocol::registry::ResourceLink;

/// Every run and task resource is one JSON text block.
pub const MIME_TYPE: &str = "application/json";

pub const RUN_TEMPLATE: &str = "bernstein://runs/{run_id}";
pub const TASK_TEMPLATE: &str = "bernstein://tasks/{task_id}";
pub const MAILBOX_TEMPLATE: &str = "bernstein://tasks/{task_id}/mailbox";
pub const ARTIFACTS_TEMPLATE: &str = "bernstein://tasks/{task_id}/artifacts";

pub const RUN_DESCRIPTION: &str = "A run: its signed handle (status, progress, journal head) and, \
once ended, its outcome, as bernstein_run_status answers.";
pub const TASK_DESCRIPTION: &str = "A task: status, goal, claimer, children, result summary.";
pub const MAILBOX_DESCRIPTION: &str = "A task's signed mailbox entries, oldest first.";
pub const ARTIFACTS_DESCRIPTION: &str = "A task's artifact versions with their lineage.";

/// The link to run `run_id`'s resource.
pub fn run_link(run_id: &str) -> ResourceLink {
    link(
        format!("bernstein://runs/{run_id}"),
        run_id,
        RUN_DESCRIPTION,
    )
}

/// The link to task `task_id`'s resource.
pub fn task_link(task_id: &str) -> ResourceLink {
    link(
        format!("bernstein://tasks/{task_id}"),
        task_id,
        TASK_DESCRIPTION,
    )
}

/// The link to task `task_id`'s mailbox.
pub fn mailbox_link(task_id: &str) -> ResourceLink {
    let uri = format!("bernstein://tasks/{task_id}/mailbox");
    link(uri, &format!("{task_id} mailbox"), MAILBOX_DESCRIPTION)
}

/// The link to task `task_id`'s artifacts.
pub fn artifacts_link(task_id: &str) -> ResourceLink {
    let uri = format!("bernstein://tasks/{task_id}/artifacts");
    link(uri, &format!("{task_id} artifacts"), ARTIFACTS_DESCRIPTION)
}

fn link(uri: String, name: &str, description: &'static str) -> ResourceLink {
    ResourceLink {
        uri,
        name: name.to_string(),
        description,
        mime_type: MIME_TYPE,
    }
}
