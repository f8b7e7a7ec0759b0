//! `bernstein worker`: claim tasks and execute each with a command-line agent, over MCP
//! (`--url`, streamable HTTP) or in process against the project's ledger (default).
//!
//! This module turns flags into a [`WorkerConfig`], picks the transport and wires SIGTERM and
//! SIGINT to the worker's stop flag; the loop itself is `bernstein_worker`'s.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bernstein_core::Tier;
use bernstein_domain::Server;
use bernstein_domain::tools::claim::MAX_WAIT_MS as MAX_CLAIM_WAIT_MS;
use bernstein_effects::host::ProjectHost;
use bernstein_effects::perform::Backend;
use bernstein_os::clock::SystemClock;
use bernstein_worker::display::Display;
use bernstein_worker::duration::parse_duration;
use bernstein_worker::path_lookup::find_on_path;
use bernstein_worker::presets::{self, PRESETS};
use bernstein_worker::task_run::TaskSettings;
use bernstein_worker::{Client, HttpMcp, InProcess, Mcp, WorkerConfig, run_worker};
use clap::Args;

use crate::settings;

#[derive(Debug, Args)]
#[command(after_help = presets_help())]
#[command(group(clap::ArgGroup::new("agent_command").required(true).args(["exec", "agent"])))]
pub struct WorkerArgs {
    #[command(flatten)]
    pub log: crate::telemetry::LogArgs,
    /// The agent command line, run with `sh -c` in the project directory (task JSON on stdin;
    /// BERNSTEIN_TASK_ID, BERNSTEIN_TASK_GOAL, BERNSTEIN_TASK_ROLE, BERNSTEIN_RUN_ID set).
    #[arg(long, value_name = "CMD", conflicts_with = "agent")]
    exec: Option<String>,
    /// A preset agent command (see below); BERNSTEIN_AGENT_<NAME> overrides its command line.
    #[arg(long, value_name = "NAME", value_parser = ["claude", "codex", "gemini", "aider"])]
    agent: Option<String>,
    /// The server's streamable-HTTP endpoint; without it the worker drives the project's ledger
    /// in process. BERNSTEIN_MCP_TOKEN is sent as a bearer token when set, or one obtained with OAuth
    /// client credentials (BERNSTEIN_WORKER_OAUTH_TOKEN_URL and its siblings).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// With an https:// --url: a PEM file of CA certificates trusted besides the system's roots
    /// (else BERNSTEIN_WORKER_CA; SSL_CERT_FILE replaces the system's roots).
    #[arg(long, value_name = "FILE", requires = "url")]
    ca: Option<PathBuf>,
    /// In process (without --url): drive the PostgreSQL ledger at this URL (else
    /// BERNSTEIN_STORE_URL, else the .sdd/ of --workdir, which holds the keys either way).
    #[arg(long, value_name = "URL", conflicts_with = "url")]
    store: Option<String>,
    /// Where agents run and where the SHUTDOWN signal is watched (default: --workdir).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Only claim tasks of this role.
    #[arg(long)]
    role: Option<String>,
    /// Tasks run at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    concurrency: u16,
    /// Longest an agent may run (e.g. 30s, 5m, 1h).
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    task_timeout: Duration,
    /// The claimer identity (default: <hostname>-<pid>).
    #[arg(long, value_name = "ID")]
    claimer_id: Option<String>,
    /// After a shutdown request, how long running agents may finish before they are stopped.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    grace: Duration,
    /// Claim lease: another worker may take a task over once this passes without a message.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    lease: Duration,
    /// How long one claim waits on the server for a task to become claimable (at most 2m; 0s:
    /// answer at once). An idle worker records one empty claim per wait.
    #[arg(long, default_value = "2m", value_parser = parse_claim_wait)]
    claim_wait: Duration,
    /// Pause between claims that found nothing at once (a server that cannot hold claims; doubling while idle, up to --max-poll).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    poll: Duration,
    /// Longest pause between claims of an idle worker.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    max_poll: Duration,
    /// How often buffered agent output is posted to the task's mailbox.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    flush: Duration,
    /// Save each granted claim receipt here as <task_id>.<n>.json (for verify-claim).
    #[arg(long, value_name = "DIR")]
    receipts_dir: Option<PathBuf>,
}

/// `--claim-wait`: a duration of at most the server's longest claim wait.
fn parse_claim_wait(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    let most = Duration::from_millis(MAX_CLAIM_WAIT_MS);
    if d > most {
        return Err(format!("{s:?}: a claim waits {}s at most", most.as_secs()));
    }
    Ok(d)
}

fn presets_help() -> String {
    let mut s = String::from("Agent presets (--agent NAME):\n");
    for p in PRESETS {
        s.push_str(&format!(
            "  {:<7} {}\n          {}\n",
            p.name, p.command, p.note
        ));
    }
    s
}

/// The agent command line of the flags.
fn command_of(args: &WorkerArgs) -> Result<String, String> {
    if let Some(cmd) = &args.exec {
        return Ok(cmd.clone());
    }
    let name = args
        .agent
        .as_deref()
        .ok_or("pass --exec CMD or --agent NAME")?;
    let preset = presets::preset(name).ok_or_else(|| format!("no agent preset {name}"))?;
    if let Ok(command) = std::env::var(presets::override_var(name)) {
        return Ok(command);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if find_on_path(preset.program(), &path).is_none() {
        return Err(format!(
            "--agent {name}: `{program}` is not on PATH ({path}); install it, or set {var} or pass --exec CMD (nothing was claimed)",
            program = preset.program(),
            path = path.to_string_lossy(),
            var = presets::override_var(name),
        ));
    }
    Ok(preset.command.to_string())
}

fn default_claimer_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".to_string());
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.:-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{host}-{}", std::process::id())
}

/// The worker's MCP: the server at `url`, else the project's ledger in process (the database
/// `--store` or BERNSTEIN_STORE_URL names, else `.sdd/`), which must exist: a worker never
/// creates a project or a key, and says which store it drives.
pub(crate) fn transport(
    workdir: &Path,
    url: Option<&str>,
    ca: Option<&Path>,
    store: Option<&str>,
) -> Result<Box<dyn Mcp>, String> {
    if let Some(url) = url {
        let ca = settings::worker_ca(ca)?;
        let mcp = HttpMcp::new(url, None, ca.as_deref())?;
        let credential = settings::worker_credential(mcp.url())?;
        return Ok(Box::new(mcp.with_credential(credential)));
    }
    let store_url = settings::store_url(store)?;
    let (store, key) = super::open_operator_store(workdir, store_url.as_deref())?;
    super::announce_store(&store, workdir, store_url.as_deref());
    let mut config = settings::config(key, Tier::Standard, vec!["stdio".to_string()])?;
    config.signing_key = Some(super::load_signer(workdir)?);
    let backend = Backend::new(
        store,
        Arc::new(SystemClock),
        Arc::new(ProjectHost::new(workdir)),
    );
    let local = InProcess::new(Arc::new(Server::new(config)), &backend)
        .map_err(|e| format!("cannot start the local engine: {e}"))?;
    Ok(Box::new(local))
}

pub fn run(workdir: &Path, args: WorkerArgs) -> Result<ExitCode, String> {
    let command = command_of(&args)?;
    let project_dir = args
        .project
        .clone()
        .unwrap_or_else(|| workdir.to_path_buf());
    let project_dir = project_dir
        .canonicalize()
        .map_err(|e| format!("project directory {}: {e}", project_dir.display()))?;
    // Watched before the store is opened (and named on stderr): a stop asked for from then on
    // is a graceful one.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| format!("cannot watch signal {sig}: {e}"))?;
    }
    let client = Arc::new(Client::new(transport(
        workdir,
        args.url.as_deref(),
        args.ca.as_deref(),
        args.store.as_deref(),
    )?));
    let config = WorkerConfig {
        task: TaskSettings {
            claimer_id: args.claimer_id.clone().unwrap_or_else(default_claimer_id),
            command,
            project_dir,
            timeout: args.task_timeout,
            lease: args.lease.max(Duration::from_secs(1)),
            flush_interval: args.flush,
            stop_patience: Duration::from_secs(3),
        },
        role: args.role.clone(),
        concurrency: usize::from(args.concurrency),
        grace: args.grace,
        poll_interval: args.poll,
        max_poll_interval: args.max_poll,
        claim_wait: args.claim_wait,
        receipts_dir: args.receipts_dir.clone(),
    };
    let display = Arc::new(Display::new(std::io::stdout().is_terminal()));
    run_worker(client, &config, stop, display);
    Ok(ExitCode::SUCCESS)
}
