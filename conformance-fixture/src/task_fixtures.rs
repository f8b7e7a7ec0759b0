//! The tasks extension's fixtures (SEP-2663): `greet` (no task) and the task-capable tools the
//! `tasks-*` scenarios call. Each is an ordinary pure handler: it answers from the task's
//! elapsed time ([`TaskClock`]) and the client's answers whether it is still working
//! ([`ToolOutput::working`]), needs input, failed or has its result; the engine records and
//! serves the tasks (`bernstein_core::protocol::tool_tasks`). No state, no timer here.

use bernstein_core::protocol::input::{Elicited, InputNeeded, InputRequest, Inputs};
use bernstein_core::protocol::jsonrpc::INTERNAL_ERROR;
use bernstein_core::protocol::registry::{TaskClock, TaskSupport, ToolError, ToolOutput};
use bernstein_domain::bound::{ToolContext, ToolSpec};
use serde_json::{Value, json};

use crate::kit::{NO_EFFECTS, empty_schema, fixture_tool};

bernstein_core::refusal_codes! {
    /// The task fixtures' refusals.
    enum TaskFixture {
        JobFailed = "job_failed",
    }
}

/// How long `failing_job` and `protocol_error_job` work before failing, in milliseconds.
pub const FAIL_AFTER_MS: u64 = 1_000;

fn text(text: String) -> ToolOutput {
    ToolOutput {
        content: Some(vec![json!({"type": "text", "text": text})]),
        ..ToolOutput::ok(Value::String(text))
    }
}

fn greet_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": false
    })
}

fn slow_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "seconds": {"type": "integer", "minimum": 0, "maximum": 86400},
            "label": {"type": "string"}
        },
        "required": ["seconds"],
        "additionalProperties": false
    })
}

fn filename_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"filename": {"type": "string"}},
        "required": ["filename"],
        "additionalProperties": false
    })
}

fn greet(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    text(format!(
        "Hello, {}!",
        args["name"].as_str().unwrap_or_default()
    ))
}

/// `slow_compute`: its result once `seconds` have passed since the task was created; a plain
/// call, or `seconds: 0`, answers at once.
fn slow_compute(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    let seconds = args["seconds"].as_u64().unwrap_or(0);
    let label = args["label"].as_str().unwrap_or("compute");
    let done = text(format!("Computed {label} in {seconds}s"));
    match ctx.task {
        Some(clock) if clock.elapsed_ms < seconds.saturating_mul(1000) => {
            ToolOutput::working(format!(
                "computing {label}: {}s to go",
                seconds - clock.elapsed_ms / 1000
            ))
        }
        _ => done,
    }
}

/// Whether a task-capable tool still works at `clock` (`None`: a plain call never does).
fn still_working(clock: Option<TaskClock>, for_ms: u64) -> bool {
    clock.is_some_and(|c| !c.started || c.elapsed_ms < for_ms)
}

/// `failing_job`: a tool execution error after about a second.
fn failing_job(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    if still_working(ctx.task, FAIL_AFTER_MS) {
        return ToolOutput::working("the job runs");
    }
    ToolOutput::refused(ToolError::new(
        TaskFixture::JobFailed,
        "the job failed, as failing_job always does",
        "This fixture fails by design.",
    ))
}

/// `protocol_error_job`: a protocol-level failure after about a second.
fn protocol_error_job(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    if still_working(ctx.task, FAIL_AFTER_MS) {
        return ToolOutput::working("the job runs");
    }
    ToolOutput::task_failed(
        INTERNAL_ERROR,
        "Internal error: protocol_error_job failed by design",
    )
}

fn confirmed(inputs: &Inputs, key: &str) -> Option<bool> {
    Some(match inputs.elicited(key)? {
        Elicited::Accepted(content) => content.get("confirm") == Some(&Value::Bool(true)),
        Elicited::Declined | Elicited::Cancelled => false,
    })
}

fn confirm_form(message: String) -> InputRequest {
    InputRequest::form(
        message,
        json!({"confirm": {"type": "boolean"}}),
        &["confirm"],
    )
}

fn name_form() -> InputRequest {
    InputRequest::form(
        "What is your name?",
        json!({"name": {"type": "string"}}),
        &["name"],
    )
}

/// `confirm_delete`: once its task runs, asks the client to confirm, then answers.
fn confirm_delete(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    let file = args["filename"].as_str().unwrap_or_default();
    if ctx.task.is_some_and(|c| !c.started) {
        return ToolOutput::working(format!("about to delete {file}"));
    }
    match confirmed(ctx.input, "confirm_delete") {
        Some(true) => text(format!("Deleted {file}")),
        Some(false) => text(format!("Kept {file}: not confirmed")),
        None => ToolOutput::need_input(InputNeeded::one(
            "confirm_delete",
            confirm_form(format!("Delete {file}?")),
        )),
    }
}

/// `multi_input`: once its task runs, asks two things at once and answers when both are in.
fn multi_input(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    if ctx.task.is_some_and(|c| !c.started) {
        return ToolOutput::working("about to ask two questions");
    }
    let asks = [
        ("user_name", name_form()),
        ("confirmation", confirm_form("Proceed?".into())),
    ];
    let pending: Vec<(String, InputRequest)> = asks
        .into_iter()
        .filter(|(key, _)| ctx.input.response(key).is_none())
        .map(|(key, request)| (key.to_string(), request))
        .collect();
    if !pending.is_empty() {
        return ToolOutput::need_input(InputNeeded {
            requests: pending,
            state: None,
            related_task: None,
        });
    }
    let name = match ctx.input.elicited("user_name") {
        Some(Elicited::Accepted(c)) => c.get("name").and_then(Value::as_str).unwrap_or_default(),
        _ => "",
    };
    text(format!(
        "Got {name:?}, confirmed: {}",
        confirmed(ctx.input, "confirmation").unwrap_or(false)
    ))
}

/// `test_tool_with_task`: asks the caller's name in the request's own rounds, then runs as a
/// task whose result greets that name.
fn with_task(ctx: &ToolContext<'_>, _: Value) -> ToolOutput {
    let name = match ctx.input.elicited("user_name") {
        Some(Elicited::Accepted(c)) => c.get("name").and_then(Value::as_str).unwrap_or_default(),
        Some(_) => "",
        None => {
            return ToolOutput::need_input(InputNeeded::one("user_name", name_form()));
        }
    };
    if ctx.task.is_some_and(|c| !c.started) {
        return ToolOutput::working(format!("greeting {name}"));
    }
    text(format!("Hello, {name}! (from a task)"))
}

fn task_tool(
    name: &'static str,
    title: &'static str,
    support: TaskSupport,
    input_schema: fn() -> Value,
    call: fn(&ToolContext<'_>, Value) -> ToolOutput,
) -> ToolSpec {
    ToolSpec {
        task_support: support,
        ..fixture_tool(name, title, NO_EFFECTS, input_schema, call)
    }
}

pub fn tools() -> Vec<ToolSpec> {
    vec![
        fixture_tool("greet", "Greet", NO_EFFECTS, greet_schema, greet),
        task_tool(
            "slow_compute",
            "Slow compute",
            TaskSupport::Optional,
            slow_schema,
            slow_compute,
        ),
        task_tool(
            "failing_job",
            "Failing job",
            TaskSupport::Required,
            empty_schema,
            failing_job,
        ),
        task_tool(
            "protocol_error_job",
            "Protocol error job",
            TaskSupport::Optional,
            empty_schema,
            protocol_error_job,
        ),
        task_tool(
            "confirm_delete",
            "Confirm delete",
            TaskSupport::Optional,
            filename_schema,
            confirm_delete,
        ),
        task_tool(
            "multi_input",
            "Multi input",
            TaskSupport::Optional,
            empty_schema,
            multi_input,
        ),
        task_tool(
            "test_tool_with_task",
            "Input, then a task",
            TaskSupport::Required,
            empty_schema,
            with_task,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use bernstein_core::protocol::registry::TaskStep;

    fn call(tool: &str, args: Value, task: Option<TaskClock>) -> ToolOutput {
        let snapshot = bernstein_core::ledger::Snapshot::genesis();
        let config = bernstein_core::Config::new(b"k".to_vec());
        let spec = tools().into_iter().find(|t| t.name == tool).unwrap();
        let ctx = ToolContext {
            snapshot: &snapshot,
            config: &config,
            now: bernstein_core::time::Timestamp(0),
            call_id: "c",
            trace_id: "t",
            span_id: "s",
            spec_revision: "2026-07-28",
            host: &[],
            meta: None,
            input: &bernstein_core::protocol::input::NO_INPUT,
            task,
        };
        (spec.call)(&ctx, args)
    }

    fn at(elapsed_ms: u64, started: bool) -> Option<TaskClock> {
        Some(TaskClock {
            elapsed_ms,
            started,
        })
    }

    #[test]
    fn slow_compute_works_for_its_seconds_then_answers() {
        let args = json!({"seconds": 2, "label": "x"});
        assert!(
            call("slow_compute", args.clone(), at(0, false))
                .task
                .is_some()
        );
        assert!(
            call("slow_compute", args.clone(), at(1_999, true))
                .task
                .is_some()
        );
        let done = call("slow_compute", args.clone(), at(2_000, true));
        assert_eq!(done.task, None);
        assert_eq!(done.result, Ok(json!("Computed x in 2s")));
        // Immediately: a plain call, or no seconds to wait.
        assert!(call("slow_compute", args, None).task.is_none());
        assert!(
            call("slow_compute", json!({"seconds": 0}), at(0, false))
                .task
                .is_none()
        );
    }

    #[test]
    fn the_failing_jobs_fail_after_a_second_each_its_own_way() {
        assert!(call("failing_job", json!({}), at(999, true)).task.is_some());
        assert!(
            call("failing_job", json!({}), at(1_000, true))
                .result
                .is_err()
        );
        let fault = call("protocol_error_job", json!({}), at(1_000, true)).task;
        assert!(matches!(
            fault,
            Some(TaskStep::Failed {
                code: INTERNAL_ERROR,
                ..
            })
        ));
    }

    #[test]
    fn the_input_tools_ask_once_their_task_runs() {
        assert!(
            call("confirm_delete", json!({"filename": "f"}), at(0, false))
                .task
                .is_some()
        );
        let asks = call("confirm_delete", json!({"filename": "f"}), at(0, true));
        assert_eq!(asks.input.map(|n| n.requests.len()), Some(1));
        let asks = call("multi_input", json!({}), at(0, true));
        assert_eq!(asks.input.map(|n| n.requests.len()), Some(2));
        // test_tool_with_task asks before any task exists.
        assert!(
            call("test_tool_with_task", json!({}), at(0, false))
                .input
                .is_some()
        );
        let supports: Vec<_> = tools().iter().map(|t| (t.name, t.task_support)).collect();
        assert!(supports.contains(&("failing_job", TaskSupport::Required)));
        assert!(supports.contains(&("greet", TaskSupport::Forbidden)));
    }
}
