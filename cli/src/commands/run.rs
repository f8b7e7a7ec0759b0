//! `bernstein run GOAL`: starts a run from the command line. The command line is an MCP client
//! like any host: it sends `tools/call bernstein_run` (in process against the project's ledger,
//! or to `--url` over streamable HTTP), so the run is recorded exactly as a host's call is (the
//! same records and the same `mcp.stateless_call` audit record). `--wait` then long-polls
//! `bernstein_run_status` until the run ends and prints its outcome: each task of the run with
//! its result summary or the reason it failed or was cancelled (the answer's `outcome`), and,
//! while it waits, the answer's notice that no worker is claiming. `--json` prints the last
//! answer (the handle with its `outcome`) and the root task from `bernstein_task_capsule`.
//! Exit 0 started (or completed), 1 the run failed or was cancelled or the call was refused, 2
//! usage or IO error.

use std::path::Path;
use std::process::ExitCode;

use bernstein_worker::{Client, ToolReply};
use clap::Args;
use serde_json::{Value, json};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What the run should achieve; its first line is the title.
    goal: String,
    /// The role of the run's first task (default backend).
    #[arg(long)]
    role: Option<String>,
    /// Keep the run planned until an operator approves it (`bernstein plan approve`).
    #[arg(long)]
    plan: bool,
    /// Completion waits for bernstein_approve.
    #[arg(long)]
    requires_approval: bool,
    /// Follow the run until it ends and print its outcome (a worker must be running:
    /// `bernstein worker`).
    #[arg(long)]
    wait: bool,
    /// The server's streamable-HTTP endpoint; without it the run is started in process on the
    /// project's ledger. BERNSTEIN_MCP_TOKEN is sent as a bearer token when set.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// In process: the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else `.sdd/`).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Print the tool answers as JSON.
    #[arg(long)]
    json: bool,
}

/// How long one status poll may wait for the run to move.
const POLL_WAIT_MS: u64 = 20_000;

pub fn run(workdir: &Path, args: RunArgs) -> Result<ExitCode, String> {
    let transport =
        super::worker::transport(workdir, args.url.as_deref(), None, args.store.as_deref())?;
    let client = Client::new(transport);
    let mut arguments = json!({"goal": args.goal});
    if let Some(role) = &args.role {
        arguments["role"] = json!(role);
    }
    if args.plan {
        arguments["plan"] = json!(true);
    }
    if args.requires_approval {
        arguments["requires_approval"] = json!(true);
    }
    let started = match call(&client, "bernstein_run", arguments)? {
        ToolReply::Ok(v) => v,
        ToolReply::Refused(e) => return refused(&e, args.json),
    };
    let run_id = text(&started, "run_id").to_string();
    if args.json {
        super::task::print_json(&started)?;
    } else {
        say!(
            "started run {run_id}: {} ({})",
            text(&started, "title"),
            text(&started, "status")
        );
    }
    if !args.wait {
        if !args.json {
            say!(
                "a worker does the work (`bernstein worker`); follow the run with `bernstein \
                 status`, the dashboard, or `bernstein run --wait` next time"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut said_input = false;
    let mut said_waiting = false;
    let handle = loop {
        let handle = match call(
            &client,
            "bernstein_run_status",
            json!({"run_id": run_id, "wait_ms": POLL_WAIT_MS}),
        )? {
            ToolReply::Ok(v) => v,
            ToolReply::Refused(e) => return refused(&e, args.json),
        };
        if let Some(w) = handle.get("waiting")
            && !said_waiting
            && !args.json
        {
            said_waiting = true;
            say!("run {run_id} waits: {}", text(w, "hint"));
        }
        match text(&handle, "status") {
            "completed" | "failed" | "cancelled" => break handle,
            "input_required" if !said_input && !args.json => {
                said_input = true;
                say!(
                    "run {run_id} waits for an operator's decision: `bernstein plan list`, then \
                     `bernstein plan approve`, or bernstein_approve for finished work"
                );
            }
            _ => {}
        }
    };
    let capsule = match call(
        &client,
        "bernstein_task_capsule",
        json!({"task_id": run_id}),
    )? {
        ToolReply::Ok(v) => v,
        ToolReply::Refused(e) => return refused(&e, args.json),
    };
    let task = find_task(&capsule).cloned().unwrap_or(Value::Null);
    let status = text(&handle, "status");
    if args.json {
        super::task::print_json(&json!({"handle": handle, "task": task}))?;
    } else {
        say!("run {run_id} {status}");
        print_outcome(&handle);
    }
    Ok(if status == "completed" {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The outcome: the root task's result (or the reason it ended) as `result: …` (`reason: …`),
/// then each other task of the run on an indented line with its id and status.
fn print_outcome(handle: &Value) {
    let outcome = handle.get("outcome").unwrap_or(&Value::Null);
    let tasks = outcome.get("tasks").and_then(Value::as_array);
    for (i, t) in tasks.into_iter().flatten().enumerate() {
        let cut = if t.get("truncated") == Some(&Value::Bool(true)) {
            " (cut)"
        } else {
            ""
        };
        let said = match (t.get("summary"), t.get("reason")) {
            (Some(Value::String(s)), _) => format!("result: {s}{cut}"),
            (_, Some(Value::String(r))) => format!("reason: {r}{cut}"),
            _ => "no result was recorded".to_string(),
        };
        if i == 0 {
            say!("{said}");
        } else {
            say!("  {} {}: {said}", text(t, "taskId"), text(t, "status"));
        }
    }
    if tasks.is_none_or(Vec::is_empty) {
        say!("no result was recorded");
    }
    if let Some(more) = outcome.get("more").and_then(Value::as_u64)
        && more > 0
    {
        say!("  and {more} more tasks (`bernstein status`)");
    }
}

fn call(client: &Client, tool: &str, arguments: Value) -> Result<ToolReply, String> {
    client
        .call_tool(tool, arguments)
        .map_err(|e| format!("{tool}: {e}"))
}

fn refused(error: &Value, as_json: bool) -> Result<ExitCode, String> {
    if as_json {
        super::task::print_json(error)?;
    } else {
        say!(
            "refused ({}): {} {}",
            text(error, "error"),
            text(error, "message"),
            text(error, "hint")
        );
    }
    Ok(ExitCode::from(1))
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The capsule's task (the payload is the capsule, or holds it under `capsule`).
fn find_task(payload: &Value) -> Option<&Value> {
    payload
        .get("task")
        .or_else(|| payload.get("capsule").and_then(|c| c.get("task")))
}
