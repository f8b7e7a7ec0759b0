//! One claimed task, from start to its end: mark it started, run the agent, stream its output
//! as mailbox messages, keep the lease alive, and finish with `bernstein_complete` (exit 0),
//! a `failed` status (non-zero exit, timeout) or an `open` status (released on shutdown).
//!
//! Messages: output lines are batched into bodies of at most [`MAX_BATCH_BYTES`] and posted
//! every [`TaskSettings::flush_interval`]; while the agent is silent a heartbeat goes out every
//! lease/3 so the lease never lapses under a live agent. A task's mailbox holds at most
//! `MAX_UNCONSUMED` (256) messages, so output batches stop after [`MAX_OUTPUT_MESSAGES`]
//! (one note says so) and the rest of the mailbox is kept for heartbeats and the end.
//! Secrets in what is posted are redacted by the server's DLP; the summary and the failure
//! reason are redacted here too, with the same code.
//!
//! This module never claims: the runner hands it a granted claim.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::thread;
use std::time::{Duration, Instant};

use bernstein_domain::claims::ClaimedTask;
use bernstein_domain::dlp;

use crate::redact_lines::LineRedactor;
use serde_json::{Value, json};

use crate::agent::{Agent, AgentSpec};
use crate::display::Display;
use crate::duration::format_duration;
use crate::transport::{Client, ToolReply};

/// Largest message body the worker builds (the tool takes 4096 bytes).
pub const MAX_BATCH_BYTES: usize = 3800;
/// Output batches posted per task before output is no longer streamed.
pub const MAX_OUTPUT_MESSAGES: u32 = 160;
/// Lines of output kept for a summary or a failure reason.
pub const TAIL_LINES: usize = 20;
/// Longest summary sent to `bernstein_complete`.
pub const MAX_SUMMARY_CHARS: usize = 2000;
/// The line prefix that names the agent's result.
pub const RESULT_PREFIX: &str = "RESULT:";

/// How every task of this worker runs.
#[derive(Clone, Debug)]
pub struct TaskSettings {
    pub claimer_id: String,
    pub command: String,
    pub project_dir: PathBuf,
    pub timeout: Duration,
    pub lease: Duration,
    pub flush_interval: Duration,
    /// Between SIGTERM and SIGKILL when an agent is stopped.
    pub stop_patience: Duration,
}

/// The runner's handle on a running task.
#[derive(Debug, Default)]
pub struct TaskControl {
    kill: AtomicBool,
}

impl TaskControl {
    /// Asks the task to stop its agent and release the task (grace period over).
    pub fn kill(&self) {
        self.kill.store(true, Ordering::SeqCst);
    }

    fn killed(&self) -> bool {
        self.kill.load(Ordering::SeqCst)
    }
}

/// A granted claim.
#[derive(Clone, Debug)]
pub struct Claimed {
    pub task_id: String,
    pub task: ClaimedTask,
    /// The signed receipt as the server answered it.
    pub receipt: Value,
    /// The claim call's span: the agent run's parent.
    pub claim_trace: ClaimTrace,
}

/// The content-derived ids of the `bernstein_claim` call that granted a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimTrace {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
}

/// How a task ended for this worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Completed with this summary.
    Completed(String),
    /// Marked failed with this reason.
    Failed(String),
    /// Stopped on shutdown and given back to the queue.
    Released,
    /// The worker no longer holds the task (stale claim, cancelled, refused): its agent was
    /// stopped and nothing more was recorded.
    Lost(String),
}

/// Posts the task's messages and counts them.
struct Poster<'a> {
    client: &'a Client,
    settings: &'a TaskSettings,
    task_id: &'a str,
    display: &'a Display,
    output_messages: u32,
    last_post: Instant,
    batch: String,
    last_flush: Instant,
    output_dropped: bool,
}

/// Why the worker must stop working on a task.
struct LostClaim(String);

impl<'a> Poster<'a> {
    fn new(
        client: &'a Client,
        settings: &'a TaskSettings,
        task_id: &'a str,
        display: &'a Display,
    ) -> Poster<'a> {
        Poster {
            client,
            settings,
            task_id,
            display,
            output_messages: 0,
            last_post: Instant::now(),
            batch: String::new(),
            last_flush: Instant::now(),
            output_dropped: false,
        }
    }

    fn post(&mut self, body: &str, status: Option<&str>) -> Result<(), LostClaim> {
        let mut args = json!({
            "task_id": self.task_id,
            "body": fit(body, 4000),
            "kind": "finding",
            "sender": self.settings.claimer_id,
        });
        if let Some(s) = status {
            args["status"] = json!(s);
        }
        let sent = if status.is_some() {
            // A status change must land: the server may be restarting.
            call_with_retry(self.client, "bernstein_post_message", &args)
        } else {
            self.client.call_tool("bernstein_post_message", args)
        };
        match sent {
            Ok(ToolReply::Ok(_)) => {
                self.last_post = Instant::now();
                Ok(())
            }
            Ok(r @ ToolReply::Refused(_)) => match r.error_code() {
                Some("mailbox_full") if status.is_none() => {
                    self.output_dropped = true;
                    Ok(())
                }
                code => {
                    let text = match &r {
                        ToolReply::Refused(v) => v
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        ToolReply::Ok(_) => String::new(),
                    };
                    Err(LostClaim(format!("{}: {text}", code.unwrap_or("refused"))))
                }
            },
            Err(e) if status.is_some() => Err(LostClaim(format!(
                "the status change to {} was not delivered: {e}",
                status.unwrap_or_default()
            ))),
            Err(e) => {
                // The server may be restarting: keep the agent running; the lease decides.
                self.display.event(
                    Some(self.task_id),
                    &format!("could not post a message: {e}"),
                );
                Ok(())
            }
        }
    }

    fn push_line(&mut self, text: &str) -> Result<(), LostClaim> {
        if self.output_dropped {
            return Ok(());
        }
        if self.batch.len() + text.len() + 1 > MAX_BATCH_BYTES {
            self.flush()?;
        }
        if !self.batch.is_empty() {
            self.batch.push('\n');
        }
        self.batch.push_str(&fit(text, MAX_BATCH_BYTES));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), LostClaim> {
        self.last_flush = Instant::now();
        if self.batch.is_empty() {
            return Ok(());
        }
        let body = std::mem::take(&mut self.batch);
        if self.output_messages >= MAX_OUTPUT_MESSAGES {
            if !self.output_dropped {
                self.output_dropped = true;
                return self.post(
                    "[output no longer streamed: the message budget of this task is spent]",
                    None,
                );
            }
            return Ok(());
        }
        self.output_messages += 1;
        self.post(&body, None)
    }

    fn tick(&mut self, started: Instant) -> Result<(), LostClaim> {
        if !self.batch.is_empty() && self.last_flush.elapsed() >= self.settings.flush_interval {
            self.flush()?;
        }
        if self.last_post.elapsed() >= self.settings.lease / 3 {
            let body = format!(
                "heartbeat: agent running for {}",
                format_duration(started.elapsed())
            );
            self.post(&body, None)?;
        }
        Ok(())
    }
}

/// What the agent printed, for the summary.
#[derive(Debug, Default)]
struct Transcript {
    tail: VecDeque<String>,
    result: Option<String>,
}

impl Transcript {
    fn push(&mut self, text: &str) {
        if let Some(r) = text.trim_start().strip_prefix(RESULT_PREFIX) {
            let r = r.trim();
            if !r.is_empty() {
                self.result = Some(r.to_string());
            }
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(text.to_string());
    }

    /// The last `RESULT:` line, else the tail of the output.
    fn summary(&self) -> String {
        let text = match &self.result {
            Some(r) => r.clone(),
            None => {
                let tail: Vec<&str> = self
                    .tail
                    .iter()
                    .map(String::as_str)
                    .filter(|l| !l.trim().is_empty())
                    .collect();
                if tail.is_empty() {
                    "the agent exited 0 without output".to_string()
                } else {
                    tail.join("\n")
                }
            }
        };
        last_chars(&dlp::redact(&text).text, MAX_SUMMARY_CHARS)
    }

    fn last_line(&self) -> Option<&str> {
        self.tail
            .iter()
            .rev()
            .map(String::as_str)
            .find(|l| !l.trim().is_empty())
    }
}

/// Runs one claimed task to its end.
/// Gives back a task granted to a worker that is shutting down before it started the agent:
/// back to open, recorded with the worker's reason.
pub fn release(
    client: &Client,
    settings: &TaskSettings,
    claimed: &Claimed,
    display: &Display,
) -> Outcome {
    let mut poster = Poster::new(client, settings, &claimed.task_id, display);
    let why = format!(
        "worker {} shutting down: released before its agent started",
        settings.claimer_id
    );
    match poster.post(&why, Some("open")) {
        Ok(()) => Outcome::Released,
        Err(LostClaim(why)) => Outcome::Lost(why),
    }
}

pub fn run_task(
    client: &Client,
    settings: &TaskSettings,
    claimed: &Claimed,
    ctl: &TaskControl,
    display: &Display,
) -> Outcome {
    let id = claimed.task_id.as_str();
    // The agent run, a child of the claim's span: what is logged meanwhile carries its trace.
    let span = tracing::info_span!(
        target: "bernstein::worker",
        "agent.run",
        otel.name = %format!("agent run {id}"),
        trace_id = %claimed.claim_trace.trace_id,
        parent_span_id = %claimed.claim_trace.span_id,
        bernstein.task_id = id,
        bernstein.command = %settings.command,
        failed = tracing::field::Empty,
    );
    let _entered = span.enter();
    let outcome = run_entered(client, settings, claimed, ctl, display);
    if !matches!(outcome, Outcome::Completed(_)) {
        span.record("failed", true);
    }
    outcome
}

fn run_entered(
    client: &Client,
    settings: &TaskSettings,
    claimed: &Claimed,
    ctl: &TaskControl,
    display: &Display,
) -> Outcome {
    let id = claimed.task_id.as_str();
    let mut poster = Poster::new(client, settings, id, display);
    if let Err(LostClaim(why)) = poster.post(
        &format!("started by {}: {}", settings.claimer_id, settings.command),
        Some("in_progress"),
    ) {
        return Outcome::Lost(why);
    }
    let spec = AgentSpec {
        command: &settings.command,
        dir: &settings.project_dir,
        env: agent_env(settings, claimed),
        stdin: task_json(settings, claimed),
    };
    let mut agent = match Agent::spawn(&spec) {
        Ok(a) => a,
        Err(e) => return fail(&mut poster, format!("cannot start the agent: {e}")),
    };
    display.task_started(id);
    let started = Instant::now();
    let mut transcript = Transcript::default();
    let ended = supervise(
        &mut agent,
        &mut poster,
        &mut transcript,
        settings,
        ctl,
        started,
    );
    display.task_ended(id);
    match ended {
        Ended::Lost(why) => {
            agent.stop(settings.stop_patience);
            Outcome::Lost(why)
        }
        Ended::Killed => {
            agent.stop(settings.stop_patience);
            let _ = poster.flush();
            match poster.post(
                &format!(
                    "worker {} shutting down: agent stopped after {}",
                    settings.claimer_id,
                    format_duration(started.elapsed())
                ),
                Some("open"),
            ) {
                Ok(()) => Outcome::Released,
                Err(LostClaim(why)) => Outcome::Lost(why),
            }
        }
        Ended::TimedOut => {
            agent.stop(settings.stop_patience);
            let _ = poster.flush();
            fail(
                &mut poster,
                format!("timed out after {}", format_duration(settings.timeout)),
            )
        }
        Ended::Exited(status) => {
            if let Err(LostClaim(why)) = poster.flush() {
                return Outcome::Lost(why);
            }
            finish(client, &mut poster, &transcript, status, started)
        }
    }
}

enum Ended {
    Exited(ExitStatus),
    TimedOut,
    Killed,
    Lost(String),
}

fn supervise(
    agent: &mut Agent,
    poster: &mut Poster<'_>,
    transcript: &mut Transcript,
    settings: &TaskSettings,
    ctl: &TaskControl,
    started: Instant,
) -> Ended {
    let mut pipes_open = true;
    let mut exited: Option<(ExitStatus, Instant)> = None;
    let mut redactor = LineRedactor::default();
    loop {
        if ctl.killed() {
            return Ended::Killed;
        }
        if exited.is_none() && started.elapsed() > settings.timeout {
            return Ended::TimedOut;
        }
        if pipes_open {
            match agent.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    // Redacted before it is batched, cut, shown or kept for the summary.
                    let Some(text) = redactor.line(&line.text) else {
                        continue;
                    };
                    transcript.push(&text);
                    poster.display.task_output(poster.task_id, &text);
                    if let Err(LostClaim(why)) = poster.push_line(&text) {
                        return Ended::Lost(why);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => pipes_open = false,
            }
        } else {
            thread::sleep(Duration::from_millis(50));
        }
        if exited.is_none()
            && let Ok(Some(status)) = agent.try_wait()
        {
            exited = Some((status, Instant::now()));
        }
        if let Some((status, at)) = exited {
            // Read what is left in the pipes; a background child holding them open gets a
            // short while, then the group is stopped.
            if !pipes_open || at.elapsed() > Duration::from_millis(500) {
                return Ended::Exited(status);
            }
        }
        if let Err(LostClaim(why)) = poster.tick(started) {
            return Ended::Lost(why);
        }
    }
}

fn finish(
    client: &Client,
    poster: &mut Poster<'_>,
    transcript: &Transcript,
    status: ExitStatus,
    started: Instant,
) -> Outcome {
    let took = format_duration(started.elapsed());
    if !status.success() {
        let mut reason = format!("agent {} after {took}", describe(status));
        if let Some(last) = transcript.last_line() {
            reason.push_str(": ");
            reason.push_str(last);
        }
        return fail(poster, dlp::redact(&reason).text);
    }
    // The last word checks the claim is still ours (a stale claim is refused) and renews it.
    if let Err(LostClaim(why)) = poster.post(&format!("agent exited 0 after {took}"), None) {
        return Outcome::Lost(why);
    }
    let summary = transcript.summary();
    let args = json!({
        "task_id": poster.task_id,
        "result_summary": summary,
        "claimer_id": poster.settings.claimer_id,
    });
    match call_with_retry(client, "bernstein_complete", &args) {
        Ok(ToolReply::Ok(_)) => Outcome::Completed(summary),
        Ok(ToolReply::Refused(v)) => Outcome::Lost(format!("completion refused: {v}")),
        Err(e) => Outcome::Lost(format!("completion not delivered: {e}")),
    }
}

/// Attempts of a call that must land (a completion, a status change) through transport errors.
pub const DELIVERY_ATTEMPTS: u32 = 5;

/// Calls `tool`, retrying transport errors (not refusals) with a doubling pause from 500 ms.
fn call_with_retry(
    client: &Client,
    tool: &str,
    args: &Value,
) -> Result<ToolReply, crate::transport::TransportError> {
    let mut pause = Duration::from_millis(500);
    let mut attempt = 1;
    loop {
        match client.call_tool(tool, args.clone()) {
            Err(_) if attempt < DELIVERY_ATTEMPTS => {
                thread::sleep(pause);
                pause *= 2;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Marks the task failed with `reason`.
fn fail(poster: &mut Poster<'_>, reason: String) -> Outcome {
    match poster.post(&reason, Some("failed")) {
        Ok(()) => Outcome::Failed(reason),
        Err(LostClaim(why)) => Outcome::Lost(why),
    }
}

/// `exited with status 3` / `was killed by signal 9`.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".to_string(),
    }
}

fn agent_env(settings: &TaskSettings, c: &Claimed) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("BERNSTEIN_TASK_ID".to_string(), c.task_id.clone()),
        ("BERNSTEIN_TASK_GOAL".to_string(), c.task.goal.clone()),
        ("BERNSTEIN_TASK_TITLE".to_string(), c.task.title.clone()),
        ("BERNSTEIN_TASK_ROLE".to_string(), c.task.role.clone()),
        ("BERNSTEIN_RUN_ID".to_string(), c.task.run_id.clone()),
        (
            "BERNSTEIN_CLAIMER_ID".to_string(),
            settings.claimer_id.clone(),
        ),
    ])
}

/// The JSON an agent reads on stdin.
pub fn task_json(settings: &TaskSettings, c: &Claimed) -> Vec<u8> {
    let v = json!({
        "task_id": c.task_id,
        "run_id": c.task.run_id,
        "parent_id": c.task.parent_id,
        "title": c.task.title,
        "goal": c.task.goal,
        "role": c.task.role,
        "attempts": c.task.attempts,
        "claimer_id": settings.claimer_id,
        "receipt": c.receipt,
    });
    let mut bytes = v.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// `s` cut to at most `max` bytes on a character boundary.
fn fit(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The last `max` characters of `s`.
fn last_chars(s: &str, max: usize) -> String {
    let n = s.chars().count();
    s.chars().skip(n.saturating_sub(max)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_the_last_result_line_else_the_tail() {
        let mut t = Transcript::default();
        assert_eq!(t.summary(), "the agent exited 0 without output");
        for i in 0..30 {
            t.push(&format!("line {i}"));
        }
        let s = t.summary();
        assert!(s.starts_with("line 10\n") && s.ends_with("line 29"), "{s}");
        t.push("RESULT: first");
        t.push("  RESULT:   second  ");
        t.push("after");
        assert_eq!(t.summary(), "second");
        assert_eq!(t.last_line(), Some("after"));
    }

    #[test]
    fn summaries_are_redacted_and_bounded() {
        let mut t = Transcript::default();
        t.push("RESULT: pushed with token ghp_abcdefghijklmnopqrstuvwxyz0123456789");
        let s = t.summary();
        assert!(
            !s.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            "{s}"
        );
        assert!(s.contains("REDACTED"), "{s}");
        assert_eq!(last_chars("abcdef", 3), "def");
        assert_eq!(fit("ééé", 3), "é");
    }
}
