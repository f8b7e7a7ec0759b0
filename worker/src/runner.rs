//! The worker loop: claim while a slot is free, run each granted task on its own thread, and
//! on shutdown stop claiming at once, let running agents finish within the grace period, then
//! stop them and release their tasks (back to open, recorded), and return.
//!
//! Shutdown comes from the `stop` flag (SIGTERM/SIGINT, wired by the caller) or from the file
//! `<project>/.sdd/runtime/signals/SHUTDOWN` (written by `bernstein_shutdown_orchestrator`),
//! polled every [`SHUTDOWN_POLL`]. A SHUTDOWN file already older than the worker's start is
//! reported and ignored: it was meant for the workers that ran then.
//!
//! This module never runs an agent itself ([`crate::task_run`] does) and never touches the
//! ledger (every change is a tool call).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use bernstein_core::protocol::ids::RequestIds;
use bernstein_domain::claims::ClaimedTask;
use bernstein_domain::tools::claim::MAX_WAIT_MS as MAX_CLAIM_WAIT_MS;
use serde_json::{Value, json};

use crate::display::Display;
use crate::duration::format_duration;
use crate::task_run::{ClaimTrace, Claimed, Outcome, TaskControl, TaskSettings, release, run_task};
use crate::transport::{Client, ToolReply};

/// How often the SHUTDOWN file and the stop flag are looked at.
pub const SHUTDOWN_POLL: Duration = Duration::from_millis(200);

/// The worker's settings.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub task: TaskSettings,
    /// Only tasks of this role.
    pub role: Option<String>,
    /// Tasks run at once.
    pub concurrency: usize,
    /// How long running agents may finish after a shutdown request.
    pub grace: Duration,
    /// Pause after a claim found nothing; it doubles while nothing is found, up to
    /// `max_poll_interval` (every refused claim is a signed, recorded refusal: an idle worker
    /// should not fill the ledger).
    pub poll_interval: Duration,
    pub max_poll_interval: Duration,
    /// How long one claim may wait on the server for a task (`wait_ms`; zero: answer at
    /// once). A claim that waited is followed by the next at once; the poll pauses above apply
    /// to answers that came back sooner (a server without waits, or out of wait slots).
    pub claim_wait: Duration,
    /// Where granted claim receipts are saved (`<task_id>.<n>.json`), if anywhere.
    pub receipts_dir: Option<PathBuf>,
}

/// What the worker did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub claimed: u64,
    pub completed: u64,
    pub failed: u64,
    pub released: u64,
    pub lost: u64,
    /// What ended the loop.
    pub stopped_by: String,
}

/// The SHUTDOWN signal file of a project (the file `bernstein_shutdown_orchestrator` writes).
pub fn shutdown_file(project_dir: &Path) -> PathBuf {
    project_dir.join(bernstein_effects::host::SIGNAL_FILE)
}

struct Running {
    task_id: String,
    ctl: Arc<TaskControl>,
    handle: JoinHandle<Outcome>,
}

/// A claim in flight on a thread of its own (it may wait on the server for a task).
struct Claiming {
    /// Its request id, for the cancellation on shutdown.
    id: u64,
    handle: JoinHandle<Result<Option<Claimed>, ClaimFailed>>,
}

/// How long a cancelled claim has to answer before the worker stops waiting for it.
const CANCELLED_CLAIM_PATIENCE: Duration = Duration::from_secs(10);

/// Runs the worker until shutdown. Returns what it did.
pub fn run_worker(
    client: Arc<Client>,
    config: &WorkerConfig,
    stop: Arc<AtomicBool>,
    display: Arc<Display>,
) -> RunSummary {
    let started_at = SystemTime::now();
    let signal_file = shutdown_file(&config.task.project_dir);
    if signal_file.exists() && !written_since(&signal_file, started_at) {
        display.event(
            None,
            &format!(
                "ignoring {} (older than this worker)",
                signal_file.display()
            ),
        );
    }
    display.event(
        None,
        &format!(
            "{} up: concurrency {}, task timeout {}, lease {}, agent: {}",
            config.task.claimer_id,
            config.concurrency,
            format_duration(config.task.timeout),
            format_duration(config.task.lease),
            config.task.command
        ),
    );
    let mut summary = RunSummary::default();
    let mut running: Vec<Running> = Vec::new();
    let mut claiming: Option<Claiming> = None;
    let mut next_claim = Instant::now();
    let mut idle = config.poll_interval;
    let mut backoff = config.poll_interval;
    let mut claim_wait = config.claim_wait;
    let stopped_by = loop {
        reap(&mut running, &mut summary, &display, false);
        if stop.load(Ordering::SeqCst) {
            break "signal".to_string();
        }
        if written_since(&signal_file, started_at) {
            break format!("{}", signal_file.display());
        }
        if let Some(c) = claiming.take_if(|c| c.handle.is_finished()) {
            match joined(c) {
                Ok(Some(c)) => {
                    summary.claimed += 1;
                    backoff = config.poll_interval;
                    idle = config.poll_interval;
                    save_receipt(config, &c, summary.claimed, &display);
                    display.event(Some(&c.task_id), &format!("claimed ({})", c.task.title));
                    running.push(start(&client, config, c, &display));
                    continue;
                }
                // After a claim that waited on the server, `next_claim` has passed.
                Ok(None) => {
                    idle = (idle * 2).min(config.max_poll_interval.max(config.poll_interval));
                }
                Err(e) => {
                    match e {
                        ClaimFailed::WaitRefused => {
                            display.event(None, "the server cannot hold claims: polling instead");
                            claim_wait = Duration::ZERO;
                        }
                        ClaimFailed::Other(e) => display.event(None, &format!("claim failed: {e}")),
                    }
                    next_claim = Instant::now() + backoff;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
        if claiming.is_none()
            && running.len() < config.concurrency.max(1)
            && Instant::now() >= next_claim
        {
            next_claim = Instant::now() + idle;
            claiming = Some(start_claim(&client, config, claim_wait));
        }
        display.redraw();
        thread::sleep(Duration::from_millis(100).min(SHUTDOWN_POLL));
    };
    if let Some(c) = claiming {
        stop_claim(&client, config, c, &mut running, &display);
    }
    display.event(
        None,
        &format!(
            "shutdown ({stopped_by}): no new claims; {} running task(s) get {} to finish",
            running.len(),
            format_duration(config.grace)
        ),
    );
    drain(&mut running, &mut summary, config.grace, &display);
    summary.stopped_by = stopped_by;
    display.event(
        None,
        &format!(
            "stopped: {} claimed, {} completed, {} failed, {} released, {} lost",
            summary.claimed, summary.completed, summary.failed, summary.released, summary.lost
        ),
    );
    summary
}

/// Whether `path` exists and was written at or after `since` (less a second of mtime slack).
fn written_since(path: &Path, since: SystemTime) -> bool {
    let Ok(meta) = fs::metadata(path) else {
        return false;
    };
    let since = since.checked_sub(Duration::from_secs(1)).unwrap_or(since);
    meta.modified().map_or(true, |m| m >= since)
}

/// Starts one claim on its own thread, waiting up to `wait` on the server for a task.
fn start_claim(client: &Arc<Client>, config: &WorkerConfig, wait: Duration) -> Claiming {
    let id = client.next_id();
    let (client, config) = (Arc::clone(client), config.clone());
    let handle = thread::spawn(move || claim(&client, &config, id, wait));
    Claiming { id, handle }
}

/// What a finished claim thread answered.
fn joined(c: Claiming) -> Result<Option<Claimed>, ClaimFailed> {
    c.handle
        .join()
        .unwrap_or_else(|_| Err("the claim thread panicked".into()))
}

/// On shutdown: cancels the claim in flight and, should it have been granted before the
/// cancellation arrived, gives the task straight back.
fn stop_claim(
    client: &Arc<Client>,
    config: &WorkerConfig,
    c: Claiming,
    running: &mut Vec<Running>,
    display: &Arc<Display>,
) {
    if let Err(e) = client.cancel(c.id, "the worker is shutting down") {
        display.event(None, &format!("could not cancel the waiting claim: {e}"));
    }
    let deadline = Instant::now() + CANCELLED_CLAIM_PATIENCE;
    while !c.handle.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    if !c.handle.is_finished() {
        display.event(None, "the waiting claim did not end; leaving it");
        return;
    }
    if let Ok(Some(granted)) = joined(c) {
        display.event(
            Some(&granted.task_id),
            "granted while shutting down: giving it back",
        );
        let ctl = Arc::new(TaskControl::default());
        ctl.kill();
        let client = Arc::clone(client);
        let (settings, display2) = (config.task.clone(), Arc::clone(display));
        let task_id = granted.task_id.clone();
        let handle = thread::spawn(move || release(&client, &settings, &granted, &display2));
        running.push(Running {
            task_id,
            ctl,
            handle,
        });
    }
}

/// One claim: `Ok(None)` when nothing is eligible (within `wait`, when not zero).
fn claim(
    client: &Client,
    config: &WorkerConfig,
    id: u64,
    wait: Duration,
) -> Result<Option<Claimed>, ClaimFailed> {
    let mut args = json!({
        "claimer_id": config.task.claimer_id,
        "lease_seconds": config.task.lease.as_secs().max(1),
    });
    if let Some(role) = &config.role {
        args["role"] = json!(role);
    }
    let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
    if wait_ms > 0 {
        args["wait_ms"] = json!(wait_ms.min(MAX_CLAIM_WAIT_MS));
    }
    // The claim's content-derived trace and span ids, as the server derives them: the agent
    // run is traced as a child of the claim.
    let claim = crate::transport::tool_call_request(id, "bernstein_claim", args.clone());
    let ids = RequestIds::of_request("tools/call", claim.get("params"));
    match client.call_tool_as(id, "bernstein_claim", args, wait) {
        // A claim cancelled while it waited (shutdown): nothing was granted.
        Ok(ToolReply::Ok(receipt)) if receipt.get("cancelled") == Some(&Value::Bool(true)) => {
            Ok(None)
        }
        Ok(ToolReply::Ok(receipt)) => {
            if receipt.get("granted") != Some(&Value::Bool(true)) {
                return Ok(None);
            }
            let task_id = receipt
                .get("taskId")
                .and_then(Value::as_str)
                .ok_or("a granted receipt without taskId")?
                .to_string();
            let task: ClaimedTask = receipt
                .get("task")
                .cloned()
                .ok_or("the server's claim answer carries no task descriptor (an older server?)")
                .and_then(|t| {
                    serde_json::from_value(t).map_err(|_| "a malformed task descriptor")
                })?;
            Ok(Some(Claimed {
                task_id,
                task,
                receipt,
                claim_trace: ClaimTrace {
                    trace_id: ids.trace_id,
                    span_id: ids.span_id,
                },
            }))
        }
        // An older server refuses the argument itself (`too_many_waits`, a lack of wait slots,
        // is another refusal).
        Ok(ToolReply::Refused(v))
            if wait_ms > 0
                && v["error"] == "invalid_arguments"
                && v.to_string().contains("wait_ms") =>
        {
            Err(ClaimFailed::WaitRefused)
        }
        Ok(ToolReply::Refused(v)) => Err(format!("refused: {v}").into()),
        Err(e) => Err(e.to_string().into()),
    }
}

/// Why a claim brought nothing to act on.
enum ClaimFailed {
    /// The server refused `wait_ms` itself (an older server): claim without it from now on.
    WaitRefused,
    Other(String),
}

impl From<&str> for ClaimFailed {
    fn from(why: &str) -> ClaimFailed {
        ClaimFailed::Other(why.to_string())
    }
}

impl From<String> for ClaimFailed {
    fn from(why: String) -> ClaimFailed {
        ClaimFailed::Other(why)
    }
}

fn save_receipt(config: &WorkerConfig, c: &Claimed, n: u64, display: &Display) {
    let Some(dir) = &config.receipts_dir else {
        return;
    };
    let path = dir.join(format!("{}.{n}.json", c.task_id));
    let written = fs::create_dir_all(dir).and_then(|()| {
        fs::write(
            &path,
            serde_json::to_vec_pretty(&c.receipt).unwrap_or_default(),
        )
    });
    if let Err(e) = written {
        display.event(
            Some(&c.task_id),
            &format!("could not save the receipt to {}: {e}", path.display()),
        );
    }
}

fn start(
    client: &Arc<Client>,
    config: &WorkerConfig,
    c: Claimed,
    display: &Arc<Display>,
) -> Running {
    let ctl = Arc::new(TaskControl::default());
    let task_id = c.task_id.clone();
    let (client, settings, ctl2, display) = (
        Arc::clone(client),
        config.task.clone(),
        Arc::clone(&ctl),
        Arc::clone(display),
    );
    let handle = thread::spawn(move || run_task(&client, &settings, &c, &ctl2, &display));
    Running {
        task_id,
        ctl,
        handle,
    }
}

/// Collects finished tasks (all of them when `all`).
fn reap(running: &mut Vec<Running>, summary: &mut RunSummary, display: &Display, all: bool) {
    let mut i = 0;
    while i < running.len() {
        if all || running[i].handle.is_finished() {
            let r = running.swap_remove(i);
            let outcome = r
                .handle
                .join()
                .unwrap_or_else(|_| Outcome::Lost("the task thread panicked".to_string()));
            record(summary, display, &r.task_id, outcome);
        } else {
            i += 1;
        }
    }
}

fn record(summary: &mut RunSummary, display: &Display, task_id: &str, outcome: Outcome) {
    let text = match outcome {
        Outcome::Completed(s) => {
            summary.completed += 1;
            format!("completed: {}", first_line(&s))
        }
        Outcome::Failed(r) => {
            summary.failed += 1;
            format!("failed: {r}")
        }
        Outcome::Released => {
            summary.released += 1;
            "stopped on shutdown and released (back to open)".to_string()
        }
        Outcome::Lost(why) => {
            summary.lost += 1;
            format!("no longer ours, agent stopped: {why}")
        }
    };
    display.event(Some(task_id), &text);
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Waits up to `grace` for running tasks, then stops and releases the rest.
fn drain(running: &mut Vec<Running>, summary: &mut RunSummary, grace: Duration, display: &Display) {
    let deadline = Instant::now() + grace;
    while !running.is_empty() && Instant::now() < deadline {
        reap(running, summary, display, false);
        display.redraw();
        thread::sleep(Duration::from_millis(50));
    }
    if running.is_empty() {
        return;
    }
    for r in running.iter() {
        display.event(Some(&r.task_id), "grace period over: stopping the agent");
        r.ctl.kill();
    }
    reap(running, summary, display, true);
}
