//! `bernstein_scenario`: scenarios (see [`crate::scenarios`]) listed, run
//! and followed through one `action` selector (when absent: `run` with a `scenario_id`,
//! `status` with a `run_id`, `list` otherwise).
//!
//! - `list`: the built-in scenarios and the project's `templates/scenarios/<id>.json` files
//!   (host rounds: list the folder, then read at most [`MAX_PROJECT_FILES`] files; the answer
//!   says `truncated` beyond that), with the files that failed to parse under `problems`.
//! - `run`: reads the project's definition of `scenario_id` (one host round; a built-in one
//!   when the project has none) and creates its tasks as one new run in one transaction: a root
//!   task for the scenario, `waiting_for_subtasks`, and one `open` subtask per scenario task,
//!   drafted with the records `bernstein_run` writes. The answer is the run's handle data
//!   (`task_id`, `run_id`, `poll_after_ms`), polled with `bernstein_run_status`.
//! - `status`: the run handle of a run (what `bernstein_run_status` answers, by delegation).
//!
//! This handler must never write anything for `list` or `status`, and never create part of a
//! scenario: a run is all its tasks or nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::config::Tier;
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::host::{EntryKind, HostFailure, HostReply, HostRequest};
use bernstein_core::protocol::refusal::{Code, Common};
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::{Chars, TaskId, Text};
use super::super::dlp::{self, Redactions};
use super::super::handle::RunHandle;
use super::super::ids::{derive_task_id, quote_for_message};
use super::super::lifecycle::{self, TaskStatus};
use super::super::records::{self, TaskCreated};
use super::super::scenarios::{self, Scenario, Source};
use super::super::skills;
use super::run::{
    DEFAULT_ESTIMATED_MINUTES, DEFAULT_PRIORITY, DEFAULT_ROLE, POLL_AFTER_MS, title_of,
};
use super::{Called, Tool, run_status};

pub const NAME: &str = "bernstein_scenario";

/// Most project definition files one `list` reads.
pub const MAX_PROJECT_FILES: usize = 12;
/// Role of a scenario run's root task (it waits for its subtasks, then is reviewed).
pub const ROOT_ROLE: &str = "manager";

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: true,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "Task sets: list, run (a new run; poll bernstein_run_status) or \
status.";

/// What `bernstein_scenario` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    List,
    Run,
    Status,
}

/// Arguments of `bernstein_scenario`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioArgs {
    /// Default: run with scenario_id, status with run_id, else list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// For run: an id from list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_id: Option<Chars<1, 128>>,
    /// For run: text appended to every goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Text<0, 4000>>,
    /// For status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<TaskId>,
}

/// One scenario of a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioSummary {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub version: String,
    /// How many tasks a run creates (besides its root).
    pub tasks: u64,
    pub source: Source,
}

/// A project definition file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioProblem {
    pub file: String,
    pub problem: String,
}

/// One task a scenario run created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CreatedTask {
    pub task_id: String,
    pub title: String,
    pub role: String,
    pub status: TaskStatus,
}

/// What a scenario run created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioRun {
    pub scenario_id: String,
    pub source: Source,
    /// The root task; also the run id.
    pub task_id: String,
    pub run_id: String,
    pub title: String,
    pub status: TaskStatus,
    /// Wait this long before the first bernstein_run_status poll.
    pub poll_after_ms: u64,
    /// The subtasks, in scenario order.
    pub tasks: Vec<CreatedTask>,
    /// Secrets DLP replaced before recording, per argument (absent when none; docs/RECORDS.md §7).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub redactions: std::collections::BTreeMap<String, u64>,
    /// The kinds replaced, sorted (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted_kinds: Vec<String>,
}

/// Payload of `bernstein_scenario`: `action` says which fields are present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioAnswer {
    pub action: Action,
    /// list: every usable scenario, by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenarios: Option<Vec<ScenarioSummary>>,
    /// list: project files that could not be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<ScenarioProblem>>,
    /// list: whether some project files were not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// run: what was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<ScenarioRun>,
    /// status: the run handle (as bernstein_run_status answers it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<RunHandle>,
}

/// `bernstein_scenario`, declared once (see [`Tool`]).
pub struct ScenarioTool;

impl Tool for ScenarioTool {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Scenarios: list, run, status";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::All;
    const EFFECTS: Effects = EFFECTS;
    type Args = ScenarioArgs;
    type Answer = ScenarioAnswer;

    fn call(ctx: &ToolContext<'_>, args: ScenarioArgs) -> Called<ScenarioAnswer> {
        plan(ctx, args)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<ScenarioTool>()
}

fn plan(ctx: &ToolContext<'_>, args: ScenarioArgs) -> Called<ScenarioAnswer> {
    let action = args
        .action
        .unwrap_or(match (&args.scenario_id, &args.run_id) {
            (Some(_), _) => Action::Run,
            (None, Some(_)) => Action::Status,
            (None, None) => Action::List,
        });
    let out = match action {
        Action::List => list(ctx.host),
        Action::Run => run(ctx, &args),
        Action::Status => status(ctx, &args),
    };
    out.unwrap_or_else(Called::refused)
}

fn answer(action: Action) -> ScenarioAnswer {
    ScenarioAnswer {
        action,
        scenarios: None,
        problems: None,
        truncated: None,
        run: None,
        handle: None,
    }
}

fn read(path: String) -> HostRequest {
    HostRequest::Read {
        path,
        max_bytes: scenarios::MAX_FILE_BYTES,
        within: None,
    }
}

fn missing(field: &str, action: &str) -> ToolError {
    ToolError::new(
        Common::InvalidArguments,
        format!("action={action} needs {field}"),
        format!("Pass {field}; action=list shows the scenarios."),
    )
    .with("field", field)
}

fn list(replies: &[HostReply]) -> Result<Called<ScenarioAnswer>, ToolError> {
    let Some(listing) = replies.first() else {
        return Ok(Called::ask(HostRequest::List {
            path: scenarios::PROJECT_DIR.into(),
            within: None,
        }));
    };
    let files: Vec<String> = match listing {
        HostReply::Listing { entries } => entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::File | EntryKind::Symlink))
            .filter(|e| scenarios::id_of_file(&e.name).is_some())
            .map(|e| e.name.clone())
            .collect(),
        HostReply::Failed(HostFailure::NotFound) => Vec::new(),
        other => return Err(host_refusal(scenarios::PROJECT_DIR, other)),
    };
    // Sorted here too: the order of the reads must not depend on the runtime's listing.
    let mut files = files;
    files.sort();
    let reads = &replies[1..];
    let wanted = files.len().min(MAX_PROJECT_FILES);
    if reads.len() < wanted {
        let id = scenarios::id_of_file(&files[reads.len()]).unwrap_or_default();
        return Ok(Called::ask(read(scenarios::project_file(id))));
    }
    let mut by_id: std::collections::BTreeMap<String, ScenarioSummary> = scenarios::builtin()
        .iter()
        .map(|s| (s.id.clone(), summary(s, Source::Builtin)))
        .collect();
    let mut problems = Vec::new();
    for (file, reply) in files.iter().zip(reads) {
        match project_definition(file, reply) {
            Ok(s) => {
                by_id.insert(s.id.clone(), summary(&s, Source::Project));
            }
            Err(problem) => problems.push(ScenarioProblem {
                file: format!("{}/{file}", scenarios::PROJECT_DIR),
                problem,
            }),
        }
    }
    let mut a = answer(Action::List);
    a.scenarios = Some(by_id.into_values().collect());
    a.problems = Some(problems);
    a.truncated = Some(files.len() > MAX_PROJECT_FILES);
    Ok(Called::ok(a))
}

fn summary(s: &Scenario, source: Source) -> ScenarioSummary {
    ScenarioSummary {
        id: s.id.clone(),
        name: s.name.clone(),
        description: s.description.clone(),
        tags: s.tags.clone(),
        version: s.version.clone(),
        tasks: s.tasks.len() as u64,
        source,
    }
}

/// A project file's definition: it must parse and carry the id its name says.
fn project_definition(file: &str, reply: &HostReply) -> Result<Scenario, String> {
    let HostReply::File { text } = reply else {
        return Err(format!("unreadable: {reply:?}"));
    };
    let s = scenarios::parse(text)?;
    match scenarios::id_of_file(file) {
        Some(id) if id == s.id => Ok(s),
        _ => Err(format!(
            "the file must be named after its id ({}.json)",
            s.id
        )),
    }
}

fn run(ctx: &ToolContext<'_>, args: &ScenarioArgs) -> Result<Called<ScenarioAnswer>, ToolError> {
    let id = args
        .scenario_id
        .as_deref()
        .ok_or_else(|| missing("scenario_id", "run"))?;
    skills::check_name(id).map_err(|e| {
        ToolError::new(
            Common::InvalidArguments,
            format!("scenario_id {} {e}", quote_for_message(id)),
            "Pass an id exactly as action=list shows it.",
        )
        .with("field", "scenario_id")
    })?;
    let context = args.context.as_deref().unwrap_or("").trim();
    let Some(reply) = ctx.host.first() else {
        return Ok(Called::ask(read(scenarios::project_file(id))));
    };
    let (scenario, source) = match reply {
        HostReply::Failed(HostFailure::NotFound) => match scenarios::builtin_named(id) {
            Some(s) => (s, Source::Builtin),
            None => {
                return Err(ToolError::new(
                    Refusal::UnknownScenario,
                    format!(
                        "no scenario {} (built in or in {})",
                        quote_for_message(id),
                        scenarios::PROJECT_DIR
                    ),
                    "Call bernstein_scenario with action=list for the scenarios.",
                )
                .with("scenario_id", id));
            }
        },
        HostReply::File { .. } => {
            let s = project_definition(&format!("{id}.json"), reply).map_err(|problem| {
                ToolError::new(
                    Refusal::InvalidScenario,
                    format!("{}: {problem}", scenarios::project_file(id)),
                    "Fix the definition file; action=list reports every problem.",
                )
                .with("scenario_id", id)
            })?;
            (s, Source::Project)
        }
        other => return Err(host_refusal(&scenarios::project_file(id), other)),
    };
    let (created, drafts) = draft_run(ctx, &scenario, source, context)?;
    let run_id = created.run_id.clone();
    let mut a = answer(Action::Run);
    a.run = Some(created);
    // As `bernstein_run`: the ids derive from the head served from, and the new run's journal
    // must not exist yet (a stream it writes, named at the zero digest).
    Ok(Called {
        drafts,
        run_id: Some(run_id.clone()),
        ..Called::ok(a)
    }
    .reading_task_of(&run_id))
}

/// The drafts of a scenario run: the root as a new run, then each subtask, in order.
fn draft_run(
    ctx: &ToolContext<'_>,
    s: &Scenario,
    source: Source,
    context: &str,
) -> Result<(ScenarioRun, Vec<Draft>), ToolError> {
    let head = &ctx.snapshot.position.head;
    let id_of = |parts: Value| {
        let bytes = to_canonical_bytes(&parts).expect("strings and integers have a canonical form");
        derive_task_id(head, &bytes)
    };
    let mut redactions = Redactions::default();
    redactions.field("context", context);
    let definition = serde_json::to_value(s).expect("a scenario always serializes");
    let root_id = id_of(json!({"scenario": definition, "context": context}));
    let with_context = |text: &str| {
        if context.is_empty() {
            text.to_string()
        } else {
            format!("{text}\n\nContext: {context}")
        }
    };
    let root_goal = with_context(&format!(
        "Scenario {} ({}): {}",
        s.id, s.name, s.description
    ));
    let mut root = task(&root_id, &root_id, None, &root_goal, ctx.now.0);
    // Titles come from redacted text, so a cut cannot split a secret.
    root.title = title_of(&dlp::redact(&format!("Scenario: {}", s.name)).text);
    root.redact();
    root.role = ROOT_ROLE.into();
    root.status = TaskStatus::WaitingForSubtasks;
    let mut drafts = records::new_run_drafts(&root);
    let mut tasks = Vec::new();
    for (i, t) in s.tasks.iter().enumerate() {
        let id = id_of(json!({"root": root_id, "index": i}));
        let goal = if t.description.trim().is_empty() {
            with_context(&t.title)
        } else {
            with_context(&format!("{}\n\n{}", t.title, t.description))
        };
        let mut sub = task(&id, &root_id, Some(&root_id), &goal, ctx.now.0);
        sub.title = title_of(&dlp::redact(&t.title).text);
        sub.redact();
        sub.role = t.role.clone().unwrap_or_else(|| DEFAULT_ROLE.into());
        sub.priority = t.priority.unwrap_or(DEFAULT_PRIORITY);
        sub.scope = t.scope;
        sub.complexity = t.complexity;
        sub.estimated_minutes = t.estimated_minutes.unwrap_or(DEFAULT_ESTIMATED_MINUTES);
        let (b, j) = records::new_subtask_drafts(&sub);
        drafts.push(b);
        drafts.push(j);
        tasks.push(CreatedTask {
            task_id: id,
            title: sub.title,
            role: sub.role,
            status: sub.status,
        });
    }
    let all: Vec<&str> = std::iter::once(root_id.as_str())
        .chain(tasks.iter().map(|t| t.task_id.as_str()))
        .collect();
    if let Some(clash) = all
        .iter()
        .enumerate()
        .find(|(i, id)| ctx.snapshot.domain.task(id).is_some() || all[..*i].contains(id))
    {
        return Err(ToolError::new(
            Refusal::IdCollision,
            format!("the derived task id {} already exists", clash.1),
            "This should not happen; retry the call (the ledger head will have moved).",
        ));
    }
    let run = ScenarioRun {
        scenario_id: s.id.clone(),
        source,
        task_id: root_id.clone(),
        run_id: root_id,
        title: root.title,
        status: root.status,
        poll_after_ms: POLL_AFTER_MS,
        tasks,
        redactions: redactions.counts(),
        redacted_kinds: redactions.kinds(),
    };
    Ok((run, drafts))
}

/// A task of a scenario run with the `bernstein_run` defaults.
fn task(id: &str, run_id: &str, parent: Option<&str>, goal: &str, at: u64) -> TaskCreated {
    TaskCreated {
        task_id: id.into(),
        run_id: run_id.into(),
        parent_id: parent.map(str::to_string),
        title: title_of(goal),
        goal: goal.into(),
        role: DEFAULT_ROLE.into(),
        priority: DEFAULT_PRIORITY,
        scope: Default::default(),
        complexity: Default::default(),
        estimated_minutes: DEFAULT_ESTIMATED_MINUTES,
        status: lifecycle::initial_status(false),
        created_at: at,
        depends_on: Vec::new(),
        requires_approval: false,
        plan: false,
        project: None,
        capabilities: Vec::new(),
        redactions: Default::default(),
        redacted_kinds: Vec::new(),
    }
}

fn status(ctx: &ToolContext<'_>, args: &ScenarioArgs) -> Result<Called<ScenarioAnswer>, ToolError> {
    let run_id = args
        .run_id
        .clone()
        .ok_or_else(|| missing("run_id", "status"))?;
    let poll = run_status::RunStatusArgs {
        run_id,
        wait_ms: None,
        since: None,
    };
    let polled = run_status::PollRun::call(ctx, poll);
    let mut a = answer(Action::Status);
    a.handle = Some(polled.answer?.handle);
    Ok(Called {
        run_id: polled.run_id,
        ..Called::ok(a)
    })
}

fn host_refusal(what: &str, reply: &HostReply) -> ToolError {
    let (code, hint) = match reply {
        HostReply::Failed(HostFailure::Escapes) => (
            Code::of(Refusal::PathEscapes),
            "Scenario files must live inside the project; a symlink out of it is not followed.",
        ),
        HostReply::Failed(HostFailure::TooLarge { .. }) => (
            Code::of(Refusal::FileTooLarge),
            "Scenario definitions are read up to 64 KiB.",
        ),
        HostReply::Failed(HostFailure::Unsupported) => (
            Code::of(Common::HostUnavailable),
            "This server runtime does not serve project files.",
        ),
        _ => (
            Code::of(Refusal::IoError),
            "Check the scenario folder; nothing was changed.",
        ),
    };
    ToolError::new(code, format!("{what}: {reply:?}"), hint)
}

#[cfg(test)]
mod tests;
