//! The catalogue interface between the protocol engine and whatever serves tools, prompts,
//! resources and tasks. The engine knows them only through [`Catalog`]: MCP tasks and progress
//! ticks too, through [`TaskHooks`]. The Bernstein domain builds one (`domain::catalog`), and a
//! test fixture can build another (the conformance fixtures, which create no tasks).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::host::{HostReply, HostRequest};
use super::input::{InputNeeded, InputRequest, Inputs};
use super::logging::LogMessage;
use super::refusal::RefusalCode;
use super::validate::Violation;
use crate::config::{Config, Tier};
use crate::ledger::{Draft, Fold, Snapshot};
use crate::time::Timestamp;

/// What a tool does to the outside world, stated in its description.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    pub reads_files: bool,
    pub writes_files: bool,
    pub spawns_processes: bool,
    pub network: bool,
}

impl Effects {
    /// Whether the tool changes nothing: it writes no file (the ledger included), starts no
    /// process and makes no network request. An OAuth token with `bernstein.read` may call
    /// such a tool ([`super::principal`]).
    pub fn writes_nothing(&self) -> bool {
        !self.writes_files && !self.spawns_processes && !self.network
    }

    /// The sentence `tools/list` ends every tool's description with: the host effects the tool
    /// has, and that it has no other ("Effects: reads files only.", "Effects: reads and writes
    /// files only.", "Effects: none."). It is on every tool of every listing, so it names only
    /// what is there: "only" says the rest is absent.
    pub fn sentence(&self) -> String {
        let files = match (self.reads_files, self.writes_files) {
            (true, true) => Some("reads and writes files"),
            (true, false) => Some("reads files"),
            (false, true) => Some("writes files"),
            (false, false) => None,
        };
        let effects: Vec<&str> = files
            .into_iter()
            .chain(self.spawns_processes.then_some("spawns processes"))
            .chain(self.network.then_some("makes network requests"))
            .collect();
        if effects.is_empty() {
            return "Effects: none.".to_string();
        }
        format!("Effects: {} only.", effects.join(", "))
    }
}

/// `execution.taskSupport` of a tool (revision 2025-11-25).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

/// Everything a tool handler may read. Pure values only. `F` is what the catalogue's snapshots
/// fold the ledger into; the protocol never looks inside it.
#[derive(Debug)]
pub struct ToolContext<'a, F> {
    pub snapshot: &'a Snapshot<F>,
    pub config: &'a Config,
    pub now: Timestamp,
    /// Content-derived id of this call (see `protocol::ids`).
    pub call_id: &'a str,
    pub trace_id: &'a str,
    pub span_id: &'a str,
    /// The protocol revision the request is served under.
    pub spec_revision: &'a str,
    /// The runtime's answers to this call's earlier host requests, in order (see
    /// [`super::host`]); empty on the first run of a call.
    pub host: &'a [HostReply],
    /// The request's `params._meta` as the peer sent it (unvalidated; e.g. W3C trace context,
    /// which `domain::trace` screens), `None` when absent or not called over MCP.
    pub meta: Option<&'a serde_json::Value>,
    /// The client's answers to what this call asked before, the state it kept, and what the
    /// client can be asked (see [`super::input`]); [`super::input::NO_INPUT`] outside a request.
    pub input: &'a Inputs,
    /// Where the task this call runs as stands (see [`super::tool_tasks`]); `None` for a plain
    /// call, which must answer at once.
    pub task: Option<TaskClock>,
}

/// How far a task-capable tool's task has come: the handler answers from this, purely, whether
/// it is still working ([`ToolOutput::working`]), needs input, failed or has its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskClock {
    /// Milliseconds since the task was created (`now` minus its recorded `createdAt`); 0 on
    /// the call that would create it.
    pub elapsed_ms: u64,
    /// `false` on the `tools/call` that would create the task (answering "working" creates
    /// it; a result answers the call at once), `true` once it exists (`tasks/get`).
    pub started: bool,
}

/// What a task-capable tool answers besides a result: not done yet, or failed at the protocol
/// level (a tool error is a refusal, `Err(ToolError)`, and completes the task).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskStep {
    /// Still working; the text is the task's `statusMessage`.
    Working(String),
    /// A protocol-level failure: the task is `failed` with this JSON-RPC error inlined.
    Failed { code: i64, message: String },
}

impl<F> Clone for ToolContext<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for ToolContext<'_, F> {}

/// A refusal: rendered as the structured tool error `{error, message, hint, ...extra}` with
/// `isError: true`. Never a JSON-RPC error, never a panic.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolError {
    /// The refusal code (see [`super::refusal`]).
    pub error: &'static str,
    pub message: String,
    pub hint: String,
    /// Further fields merged into the error object (e.g. `task_id`, `current_status`).
    pub extra: Map<String, Value>,
}

impl ToolError {
    pub fn new(
        error: impl RefusalCode,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> ToolError {
        ToolError {
            error: error.as_str(),
            message: message.into(),
            hint: hint.into(),
            extra: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> ToolError {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// The refusal `invalid_arguments` of a call of `tool`: `message`, the hint to call again
    /// with arguments that match the inputSchema, the first 20 `violations` as `{path, rule}`,
    /// and `field`, the argument the first violation is in (as every other refusal about one
    /// argument names it; absent when the arguments as a whole are wrong).
    pub fn invalid_arguments(tool: &str, message: String, violations: &[Violation]) -> ToolError {
        let e = ToolError::new(
            super::refusal::Common::InvalidArguments,
            message,
            format!("Call {tool} again with arguments that match its inputSchema."),
        )
        .with("violations", Violation::listed(violations));
        match violations.first().map(|v| argument_of(&v.path)) {
            Some(field) if !field.is_empty() => e.with("field", field),
            _ => e,
        }
    }

    /// The error object as a tool result payload.
    pub fn to_value(&self) -> Value {
        let mut obj = self.extra.clone();
        obj.insert("error".into(), self.error.into());
        obj.insert("message".into(), self.message.clone().into());
        obj.insert("hint".into(), self.hint.clone().into());
        Value::Object(obj)
    }
}

/// The top-level argument a violation's path is in: `completed_ids` of
/// `arguments.completed_ids[3]`, empty for `arguments` itself.
fn argument_of(path: &str) -> &str {
    let path = path.strip_prefix("arguments").unwrap_or(path);
    let path = path.strip_prefix('.').unwrap_or(path);
    path.split(['.', '[']).next().unwrap_or_default()
}

/// What a tool call produced.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The payload (`Ok`) or the structured refusal (`Err`).
    pub result: Result<Value, ToolError>,
    /// Records the call appends, committed with the call's audit entry or not at all. A
    /// refusal must leave this empty.
    pub drafts: Vec<Draft>,
    /// The run whose journal the call wrote or read, bound into the call's audit entry.
    pub run_id: Option<String>,
    /// Content blocks (image, audio, embedded resource, ...) to return instead of the JSON text
    /// block of the payload. `None` for every Bernstein tool; the `_meter` envelope, when on,
    /// follows them as a last text block.
    pub content: Option<Vec<Value>>,
    /// "Not yet: perform this on the host and call me again" (see [`super::host`]). When set,
    /// `result`, `drafts` and `content` are ignored.
    pub host: Option<HostRequest>,
    /// "Not yet: ask the client this and call me again with its answers" (see
    /// [`super::input`]). When set, everything else is ignored and nothing is recorded.
    pub input: Option<InputNeeded>,
    /// Messages for the client's log, sent as `notifications/message` before the result (or,
    /// while a long poll waits, with the round that produced them) when the request asked for a
    /// level (`protocol::logging`), those at or above it only.
    pub logs: Vec<LogMessage>,
    /// Resources the result points at, sent as `resource_link` content blocks after the
    /// payload's text block where the revision has them (2025-06-18 onward), on success only.
    pub links: Vec<ResourceLink>,
    /// Progress steps sent as `notifications/progress` before the result, in order, when the
    /// request carries `_meta.progressToken` (none without one). Empty for every Bernstein tool
    /// (a [`TaskHooks::ticking_tool`] ticks through [`super::progress::tick`] instead).
    pub progress: Vec<Progress>,
    /// "Not final yet: hold the answer up to this many milliseconds and run me again when the
    /// ledger moves" (a long poll); with `run_id` set, when that run's stream moves: the
    /// answer must then depend on no other stream's records. Honoured only while the call may
    /// still wait (see [`super::Phase`]); when the wait ends the handler's answer as it stands
    /// is sent, and a cancelled wait answers `{cancelled: true, partial: [that answer]}`.
    pub wait_ms: Option<u64>,
    /// The one stream a wait depends on when it is not the run's (`run_id`): the wait wakes
    /// only when this stream moves. `None` and no `run_id`: any record wakes it.
    pub watch: Option<String>,
    /// Set by a [`Arguments::Typed`] tool whose arguments did not parse
    /// ([`ToolOutput::invalid_arguments`]): what was wrong, for `tools/call` to refuse the call
    /// exactly as a failed schema check is refused.
    pub invalid_arguments: Option<Vec<Violation>>,
    /// A task-capable tool's "not done yet" or protocol failure (see [`TaskStep`]); when set,
    /// `result`, `drafts` and `content` are ignored.
    pub task: Option<TaskStep>,
    /// The streams a successful call's decision read besides those its drafts write, when the
    /// handler names them: its records may then be placed after a later head at which these
    /// and the streams it writes stand where they were (`ledger::rebase::replaced`), instead
    /// of the call running again. `None`: it read the whole ledger (placed only right after
    /// the snapshot it was served from).
    pub reads: Option<Vec<String>>,
}

/// A resource a tool result points at (a `resource_link` content block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceLink {
    pub uri: String,
    pub name: String,
    pub description: &'static str,
    pub mime_type: &'static str,
}

impl ResourceLink {
    /// The content block.
    pub fn to_block(&self) -> Value {
        serde_json::json!({
            "type": "resource_link",
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "mimeType": self.mime_type,
        })
    }
}

/// One progress step a tool reports (`notifications/progress` params without the token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Work done so far; must increase from one step to the next.
    pub progress: u64,
    /// Work in all, when known.
    pub total: Option<u64>,
    pub message: Option<String>,
}

impl ToolOutput {
    pub fn ok(payload: Value) -> ToolOutput {
        ToolOutput {
            result: Ok(payload),
            drafts: Vec::new(),
            run_id: None,
            content: None,
            host: None,
            input: None,
            links: Vec::new(),
            logs: Vec::new(),
            progress: Vec::new(),
            wait_ms: None,
            watch: None,
            invalid_arguments: None,
            task: None,
            reads: None,
        }
    }

    /// A task-capable tool's "still working" (see [`TaskClock`]): creates the task on the call
    /// that asked for one, keeps it `working` afterwards.
    pub fn working(message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            task: Some(TaskStep::Working(message.into())),
            ..ToolOutput::ok(Value::Null)
        }
    }

    /// A protocol-level failure of a task-capable tool: its task is `failed` with this error
    /// (a plain call answers it as the JSON-RPC error).
    pub fn task_failed(code: i64, message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            task: Some(TaskStep::Failed {
                code,
                message: message.into(),
            }),
            ..ToolOutput::ok(Value::Null)
        }
    }

    /// Asks the client for `needed` and runs the call again with its answers.
    pub fn need_input(needed: InputNeeded) -> ToolOutput {
        ToolOutput {
            input: Some(needed),
            ..ToolOutput::ok(Value::Null)
        }
    }

    /// Asks the runtime to perform `request` and run the call again with its reply.
    pub fn ask(request: HostRequest) -> ToolOutput {
        ToolOutput {
            host: Some(request),
            ..ToolOutput::ok(Value::Null)
        }
    }

    pub fn refused(err: ToolError) -> ToolOutput {
        ToolOutput {
            result: Err(err),
            drafts: Vec::new(),
            run_id: None,
            content: None,
            host: None,
            input: None,
            links: Vec::new(),
            logs: Vec::new(),
            progress: Vec::new(),
            wait_ms: None,
            watch: None,
            invalid_arguments: None,
            task: None,
            reads: None,
        }
    }

    /// The arguments of a call of `tool` did not parse (an [`Arguments::Typed`] tool): the
    /// handler never ran. `result` is the refusal `invalid_arguments` (what a caller outside
    /// `tools/call` sees); `tools/call` answers in its revision's shape from the violations.
    pub fn invalid_arguments(tool: &str, violations: Vec<Violation>) -> ToolOutput {
        let message = Violation::message(tool, &violations);
        ToolOutput {
            invalid_arguments: Some(violations.clone()),
            ..ToolOutput::refused(ToolError::invalid_arguments(tool, message, &violations))
        }
    }
}

/// Who checks a tool's arguments: each call's arguments are checked once, before anything
/// reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arguments {
    /// The engine validates them against `input_schema` (`protocol::validate`) before the
    /// handler runs: for a tool with no Rust type of its arguments (a test fixture's, whose
    /// schema is written by hand).
    Schema,
    /// The handler parses them into the Rust type its `input_schema` was generated from, which
    /// refuses everything that schema does; a failed parse answers
    /// [`ToolOutput::invalid_arguments`], and the engine skips its schema check.
    Typed,
}

/// One tool, declared once.
#[derive(Debug)]
pub struct ToolSpec<F> {
    pub name: &'static str,
    pub title: &'static str,
    /// What the call does. In a catalogue with [`Catalog::effects_in_descriptions`],
    /// `tools/list` appends the sentence of its [`Effects`] (whether it reads files, writes
    /// files, spawns processes or makes network requests), so the description never states
    /// them itself.
    pub description: &'static str,
    pub tier: Tier,
    /// JSON Schema of the arguments, generated from the Rust type that parses them.
    pub input_schema: fn() -> Value,
    /// JSON Schema of the payload, generated from the Rust type that emits it.
    pub output_schema: Option<fn() -> Value>,
    pub effects: Effects,
    pub task_support: TaskSupport,
    /// Who checks the arguments: the engine against `input_schema`, or the handler as it
    /// parses them.
    pub arguments: Arguments,
    /// The handler. With [`Arguments::Schema`], the arguments have already been validated
    /// against `input_schema`; with [`Arguments::Typed`], it parses them itself.
    pub call: fn(&ToolContext<'_, F>, Value) -> ToolOutput,
}

impl<F> Clone for ToolSpec<F> {
    fn clone(&self) -> Self {
        ToolSpec { ..*self }
    }
}

/// One prompt argument.
#[derive(Clone, Debug)]
pub struct PromptArgument {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    /// Completion candidates for a partial value (`completion/complete`); `None`: none offered.
    pub complete: Option<Completer>,
}

/// Completion candidates for a partial argument value: (the value typed so far, the other
/// arguments already given as strings) → candidates, best first. Pure; the engine caps the
/// reply at 100 values.
pub type Completer = fn(&str, &Map<String, Value>) -> Vec<String>;

/// What a templated resource's reader and completer may read: pure values only, like a tool's
/// [`ToolContext`].
#[derive(Debug)]
pub struct ResourceContext<'a, F> {
    pub snapshot: &'a Snapshot<F>,
    pub config: &'a Config,
    pub now: Timestamp,
    /// The protocol revision the request is served under.
    pub spec_revision: &'a str,
}

impl<F> Clone for ResourceContext<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for ResourceContext<'_, F> {}

/// Completion candidates for one variable of a resource template.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Candidates {
    /// Best first; the engine sends at most 100.
    pub values: Vec<String>,
    /// How many candidates there are in all (at least `values.len()`).
    pub total: usize,
}

impl Candidates {
    /// Every candidate, listed.
    pub fn all(values: Vec<String>) -> Candidates {
        Candidates {
            total: values.len(),
            values,
        }
    }
}

/// Completion candidates for one variable of a resource template: (the context, variable name,
/// the value typed so far, the other variables already given) → candidates.
pub type TemplateCompleter<F> =
    fn(&ResourceContext<'_, F>, &str, &str, &Map<String, Value>) -> Candidates;

/// A templated resource as its reader produced it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TemplatedRead {
    /// `TextResourceContents` / `BlobResourceContents` objects.
    pub contents: Vec<Value>,
    /// How long a client may cache it (the 2026-07-28 `ttlMs`); `None`: the engine's default.
    pub ttl_ms: Option<u64>,
    /// The run whose journal the read answered from, bound into the read's audit record.
    pub run_id: Option<String>,
    /// The one ledger stream the contents depend on, when they depend on one: a subscription
    /// to the resource is rendered again only when that stream moves. `None`: any record.
    pub watch: Option<String>,
}

/// Reads a templated resource from the URI's variables (percent-decoded strings) and the URI
/// itself at the request's snapshot; `Err` says why no such resource exists (the revision's
/// resource-not-found error).
pub type TemplateReader<F> =
    fn(&ResourceContext<'_, F>, &str, &Map<String, Value>) -> Result<TemplatedRead, String>;

/// Renders a prompt from its string arguments and the client's answers so far (see
/// [`super::input`]), or says why the arguments are unusable.
pub type PromptRenderer = fn(&Map<String, Value>, &Inputs) -> Result<PromptTurn, String>;

/// What a prompt's renderer produced.
#[derive(Clone, Debug, PartialEq)]
pub enum PromptTurn {
    /// The `PromptMessage` objects.
    Messages(Vec<Value>),
    /// Not yet: ask the client this and render again with its answers.
    NeedInput(InputNeeded),
}

/// A prompt: rendered deterministically from its arguments alone.
#[derive(Clone, Debug)]
pub struct PromptSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub arguments: Vec<PromptArgument>,
    /// Renders the prompt's messages (`PromptMessage` objects) or explains why the arguments
    /// are unusable.
    pub render: PromptRenderer,
}

/// A static resource.
#[derive(Debug)]
pub struct ResourceSpec<F> {
    pub uri: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub mime_type: &'static str,
    /// Reads the resource's contents (`TextResourceContents` / `BlobResourceContents` objects).
    /// Reads the resource's contents at the snapshot the request was answered from.
    pub read: fn(&Config, &Snapshot<F>) -> Vec<Value>,
}

impl<F> Clone for ResourceSpec<F> {
    fn clone(&self) -> Self {
        ResourceSpec { ..*self }
    }
}

/// A family of resources named by an RFC 6570 level-1 URI template (`test://items/{id}`):
/// listed by `resources/templates/list`, read by `resources/read` for any matching URI.
#[derive(Debug)]
pub struct ResourceTemplateSpec<F> {
    pub uri_template: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub mime_type: &'static str,
    pub read: TemplateReader<F>,
    /// Completion candidates for the template's variables; `None`: none offered.
    pub complete: Option<TemplateCompleter<F>>,
}

impl<F> Clone for ResourceTemplateSpec<F> {
    fn clone(&self) -> Self {
        ResourceTemplateSpec { ..*self }
    }
}

/// A fold that comes with the catalogue written against it: what [`Server::new`] serves.
/// Bernstein's domain implements it for its projection; the protocol never names one.
///
/// [`Server::new`]: super::Server::new
pub trait Domain: Fold {
    fn catalog() -> Catalog<Self>;
}

/// Everything a server offers. Tools are kept sorted by name (deterministic listing order).
#[derive(Clone, Debug)]
pub struct Catalog<F> {
    pub tools: Vec<ToolSpec<F>>,
    pub prompts: Vec<PromptSpec>,
    pub resources: Vec<ResourceSpec<F>>,
    /// Resource templates, read at the request's snapshot.
    pub resource_templates: Vec<ResourceTemplateSpec<F>>,
    /// Deprecated tool names: (alias, replacement). Callable, never listed.
    pub aliases: Vec<(&'static str, &'static str)>,
    /// Connect-time instructions.
    pub instructions: fn(&Config) -> String,
    /// The capability card served in `initialize` and as a resource.
    pub capability_card: fn(&Config) -> Value,
    /// MCP tasks and progress ticks; `None`: no tool creates a task, so every task id is
    /// unknown, `tasks/list` is empty and no call ticks.
    pub tasks: Option<TaskHooks<F>>,
    /// The engine's own task support for task-capable tools (`task_support` optional or
    /// required) of a catalogue without hooks of its own: where the catalogue's fold keeps the
    /// task records the engine writes ([`super::task_records`]). `None`: no such tasks.
    pub tool_tasks: Option<fn(&F) -> &super::task_records::ToolTasks>,
    /// Whether `tools/list` ends each tool's description with the sentence of its [`Effects`]
    /// ([`Effects::sentence`]); a catalogue that does not states them in its own words.
    pub effects_in_descriptions: bool,
    /// The domain's redactor of client text the engine itself quotes (the prefix of an unknown
    /// tool name in an error message); [`no_redaction`] for a catalogue without one.
    pub redact: fn(&str) -> String,
}

impl<F> Catalog<F> {
    /// A catalogue offering nothing: no tools, prompts, resources, aliases or tasks, empty
    /// instructions and no card.
    pub fn empty() -> Catalog<F> {
        Catalog {
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            resource_templates: Vec::new(),
            aliases: Vec::new(),
            instructions: |_| String::new(),
            capability_card: |_| Value::Null,
            tasks: None,
            tool_tasks: None,
            effects_in_descriptions: false,
            redact: no_redaction,
        }
    }
}

/// A [`Catalog::redact`] that keeps the text as it is.
pub fn no_redaction(text: &str) -> String {
    text.to_string()
}

/// The status of an MCP task (revision 2025-11-25 `TaskStatus`, the tasks extension's too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the status is terminal (completed, failed, cancelled): a host stops polling.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// One MCP task as the catalogue describes it: the fields of a `Task` object that are not the
/// engine's (`ttl` and `pollInterval` are, see `protocol::tasks`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub task_id: String,
    pub status: TaskStatus,
    pub status_message: String,
    pub created_at: Timestamp,
    pub last_updated_at: Timestamp,
}

impl Task {
    /// Whether the task reached a terminal status.
    pub fn is_terminal(&self) -> bool {
        self.status.is_final()
    }
}

/// The root tasks after a task id (`None`: from the first) in id order, at most `limit` of
/// them, and whether more follow.
pub type TaskLister<F> = fn(&Snapshot<F>, Option<&str>, usize) -> (Vec<Task>, bool);

/// What a task asks its requestor now, keyed (see [`TaskHooks::asks`]).
pub type Asker<F> = fn(&Snapshot<F>, &str) -> Vec<(String, InputRequest)>;

/// The tick due for a run (see [`TaskHooks::tick`]).
pub type Ticker<F> = fn(&Snapshot<F>, &str) -> Option<(Progress, Draft)>;

/// What the task layer (`protocol::tasks`) and the progress ticks (`protocol::progress`) ask of
/// a catalogue that creates tasks. Every function is pure in the snapshot, so any instance over
/// the same ledger answers alike.
#[derive(Debug)]
pub struct TaskHooks<F> {
    /// The tool that starts tasks: a finished task's `tasks/result` answers (and is metered as)
    /// its call.
    pub start_tool: &'static str,
    /// Task `id` as it stands; `None` when unknown.
    pub view: fn(&Snapshot<F>, &str) -> Option<Task>,
    /// The `tasks/list` page.
    pub list: TaskLister<F>,
    /// Whether `id` is shaped as a task id (a `tasks/list` cursor naming anything else is
    /// refused).
    pub is_task_id: fn(&str) -> bool,
    /// The payload `start_tool` answers for task `id` as it stands.
    pub answer: fn(&Snapshot<F>, &str) -> Option<Value>,
    /// The tool `tasks/cancel` goes through, and its arguments cancelling task `id`.
    pub cancel_tool: &'static str,
    pub cancel_args: fn(&str) -> Value,
    /// The tool whose calls tick (with a progress token), and the tick due for the run such a
    /// call read: the step, when it advances every tick already sent, and the record that
    /// says it was sent.
    pub ticking_tool: &'static str,
    pub tick: Ticker<F>,
    /// What task `id` asks its requestor now, keyed by question (empty: nothing), shown as
    /// `inputRequests` (2026-07-28) or put to a handshake-era client waiting on `tasks/result`.
    pub asks: Asker<F>,
    /// The tool an answer goes through, and its arguments recording `response` to question
    /// `key` (`None`: the response records nothing, e.g. a dismissed form).
    pub reply_tool: &'static str,
    pub reply_args: fn(&str, &Value) -> Option<Value>,
}

impl<F> Clone for TaskHooks<F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for TaskHooks<F> {}

impl TaskSupport {
    /// The wire value of `execution.taskSupport`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// How a tool name resolves under a configuration.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolLookup<'a, F> {
    /// A tool of the active tier.
    Tool(&'a ToolSpec<F>),
    /// A deprecated alias of a tool of the active tier (aliases enabled).
    Alias {
        alias: &'static str,
        tool: &'a ToolSpec<F>,
    },
    /// A registered tool outside the active tier.
    OutsideTier(&'a ToolSpec<F>),
    /// A deprecated alias while aliases are turned off, or whose replacement is out of tier.
    AliasUnavailable {
        alias: &'static str,
        replacement: &'static str,
    },
    Unknown,
}

impl<F> Clone for ToolLookup<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for ToolLookup<'_, F> {}

impl<F: Fold> Catalog<F> {
    /// The tool registered under `name`, whatever its tier.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec<F>> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The tools the active tier offers, sorted by name.
    pub fn tools_in_tier(&self, tier: Tier) -> Vec<&ToolSpec<F>> {
        let mut tools: Vec<&ToolSpec<F>> = self
            .tools
            .iter()
            .filter(|t| tier.includes(t.tier))
            .collect();
        tools.sort_by(|a, b| a.name.cmp(b.name));
        tools
    }

    /// Resolves a tool name the way `tools/call` does.
    pub fn lookup_tool(&self, name: &str, config: &Config) -> ToolLookup<'_, F> {
        if let Some(t) = self.tool(name) {
            return if config.tier.includes(t.tier) {
                ToolLookup::Tool(t)
            } else {
                ToolLookup::OutsideTier(t)
            };
        }
        let Some(&(alias, replacement)) = self.aliases.iter().find(|(a, _)| *a == name) else {
            return ToolLookup::Unknown;
        };
        match self.tool(replacement) {
            Some(t) if config.deprecated_aliases && config.tier.includes(t.tier) => {
                ToolLookup::Alias { alias, tool: t }
            }
            _ => ToolLookup::AliasUnavailable { alias, replacement },
        }
    }

    /// Whether `name` is a tool or a deprecated alias of this catalogue, whatever the tier.
    pub fn knows_tool(&self, name: &str) -> bool {
        self.tool(name).is_some() || self.aliases.iter().any(|(a, _)| *a == name)
    }

    pub fn prompt(&self, name: &str) -> Option<&PromptSpec> {
        self.prompts.iter().find(|p| p.name == name)
    }

    pub fn resource(&self, uri: &str) -> Option<&ResourceSpec<F>> {
        self.resources.iter().find(|r| r.uri == uri)
    }

    /// Whether anything in the catalogue offers completions (the `completions` capability).
    pub fn has_completions(&self) -> bool {
        self.prompts
            .iter()
            .any(|p| p.arguments.iter().any(|a| a.complete.is_some()))
            || self.resource_templates.iter().any(|t| t.complete.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_refusal_names_the_field_of_its_first_violation() {
        let v = |path: &str| Violation::new(path, "must be a string");
        let e = ToolError::invalid_arguments(
            "t",
            "bad".into(),
            &[v("arguments.completed_ids[3]"), v("arguments.goal")],
        );
        assert_eq!(e.extra["field"], "completed_ids");
        let e = ToolError::invalid_arguments("t", "bad".into(), &[v("arguments.scope.kind")]);
        assert_eq!(e.extra["field"], "scope");
        // The arguments as a whole (not an object): no field to name.
        let e = ToolError::invalid_arguments("t", "bad".into(), &[v("arguments")]);
        assert!(!e.extra.contains_key("field"));
        let e = ToolError::invalid_arguments("t", "bad".into(), &[]);
        assert!(!e.extra.contains_key("field"));
    }
}
