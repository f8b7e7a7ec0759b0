//! `bernstein status`: the project's task table, computed by the same `bernstein_status`
//! handler the server runs, from a local snapshot (a local read records nothing).

use std::path::Path;
use std::process::ExitCode;

use bernstein_core::Config;
use bernstein_core::time::Clock;
use bernstein_domain::bound::ToolContext;
use serde_json::{Value, json};

pub fn run(workdir: &Path, json_output: bool, store: Option<&str>) -> Result<ExitCode, String> {
    let (store, key) = super::open_operator_store(workdir, store)?;
    let snapshot = store.snapshot().map_err(|e| e.to_string())?;
    let config = Config::new(key);
    let catalog = bernstein_domain::catalog();
    let spec = catalog
        .tools
        .iter()
        .find(|t| t.name == "bernstein_status")
        .ok_or("the catalogue has no bernstein_status tool")?;
    let now = bernstein_os::clock::SystemClock.now();
    let cx = ToolContext {
        snapshot: &snapshot,
        config: &config,
        now,
        call_id: "cli",
        trace_id: "cli",
        span_id: "cli",
        spec_revision: "cli",
        host: &[],
        meta: None,
        input: &bernstein_core::protocol::input::NO_INPUT,
        task: None,
    };
    let payload = (spec.call)(&cx, json!({"detail": true}))
        .result
        .map_err(|e| e.message)?;
    if json_output {
        say!(
            "{}",
            serde_json::to_string_pretty(&payload).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_table(&payload);
    Ok(ExitCode::SUCCESS)
}

fn print_table(payload: &Value) {
    let counts = &payload["counts"];
    if let Some(map) = counts.as_object() {
        let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        say!("{}", parts.join("  "));
    }
    let rows = payload["tasks"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        say!(
            "no tasks yet: start a run with `bernstein run GOAL` (or the bernstein_run tool), then `bernstein worker` to work on it"
        );
        return;
    }
    say!();
    say!("{:<20} {:<22} {:<20} TITLE", "TASK", "STATUS", "RUN");
    for r in rows {
        let s = |k: &str| r[k].as_str().unwrap_or("-").to_string();
        say!(
            "{:<20} {:<22} {:<20} {}",
            s("id"),
            s("status"),
            s("run_id"),
            s("title")
        );
    }
    if payload["truncated"].as_bool() == Some(true) {
        say!("(more tasks not shown: use --json)");
    }
}
