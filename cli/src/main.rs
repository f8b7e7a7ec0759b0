//! `bernstein`: the command-line entry point. It parses flags and environment into a core
//! `Config`, picks a runtime and hands over; it holds no protocol logic of its own.

#[macro_use]
mod output;
mod commands;
mod settings;
mod telemetry;
mod views;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc rather than the C library's allocator. A request's buffers are allocated on one
/// thread and freed on another (loop, performer, syncer), which glibc's per-thread caches serve
/// badly: under `bernstein_run` load its `_int_malloc` was a fifth of the server's CPU, and
/// mimalloc serves 1.1× the writes (BENCHMARKS.md, "Memory under a write load").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "bernstein",
    version,
    about = "Bernstein MCP server: verifiable multi-agent orchestration over MCP"
)]
struct Cli {
    /// Project directory; its `.sdd/` holds the ledger (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    workdir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP (stdio by default).
    Mcp(commands::mcp::McpArgs),
    /// Serve the operator's web dashboard, metrics and health probes for a project's ledger,
    /// read-only, beside any number of MCP servers on the same ledger.
    Dashboard(commands::dashboard::DashboardArgs),
    /// Create a project: DIR (else --workdir, else the current directory) and its `.sdd/`
    /// store with the audit and signing keys. The one command that creates a directory; the
    /// others refuse a workdir that does not exist (`mcp` creates `.sdd/` on first use).
    Init {
        /// The project directory (created if missing).
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the task table of the project.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Read the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else the .sdd/
        /// of --workdir, which holds the instances' keys either way).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
    },
    /// Offline verification of the tamper-evident record.
    Audit {
        #[command(subcommand)]
        command: commands::audit::AuditCommand,
    },
    /// Claim receipts: offline verification.
    Backlog {
        #[command(subcommand)]
        command: commands::backlog::BacklogCommand,
    },
    /// Task capsules: offline verification.
    Capsule {
        #[command(subcommand)]
        command: commands::capsule::CapsuleCommand,
    },
    /// Task mailboxes: offline verification.
    Mailbox {
        #[command(subcommand)]
        command: commands::mailbox::MailboxCommand,
    },
    /// Plans: list, show, approve or reject as a whole.
    Plan {
        /// Work on the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else the
        /// .sdd/ of --workdir, which holds the instances' keys either way).
        #[arg(long, global = true, value_name = "URL")]
        store: Option<String>,
        #[command(subcommand)]
        command: commands::plan::PlanCommand,
    },
    /// Operator actions on tasks.
    Task {
        /// Work on the PostgreSQL ledger at this URL (else BERNSTEIN_STORE_URL, else the
        /// .sdd/ of --workdir, which holds the instances' keys either way).
        #[arg(long, global = true, value_name = "URL")]
        store: Option<String>,
        #[command(subcommand)]
        command: commands::task::TaskCommand,
    },
    /// The shared PostgreSQL store: schema migrations.
    Store {
        #[command(subcommand)]
        command: commands::store::StoreCommand,
    },
    /// Move a PostgreSQL ledger to and from the file store's format.
    Ledger {
        /// Print the outcome as JSON.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        command: commands::ledger::LedgerCommand,
    },
    /// Claim tasks and execute each with a command-line agent (over --url or in process).
    Worker(Box<commands::worker::WorkerArgs>),
    /// Start a run for a goal (recorded as a bernstein_run call); --wait follows it to its end.
    Run(commands::run::RunArgs),
}

impl Command {
    /// Whether the command works in an existing workdir (all but `init`, which creates it,
    /// and those that never read it).
    fn needs_workdir(&self) -> bool {
        match self {
            Command::Init { .. } | Command::Store { .. } => false,
            Command::Mcp(args) => !args.is_tools(),
            _ => true,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let workdir = match cli.workdir.map_or_else(std::env::current_dir, Ok) {
        Ok(dir) => dir,
        Err(e) => return fail(&format!("cannot determine the working directory: {e}")),
    };
    if cli.command.needs_workdir()
        && let Err(message) = commands::check_workdir(&workdir)
    {
        return fail(&message);
    }
    let traced = match &cli.command {
        Command::Mcp(args) => Some((&args.log, "mcp")),
        Command::Dashboard(args) => Some((&args.log, "dashboard")),
        Command::Worker(args) => Some((&args.log, "worker")),
        _ => None,
    };
    // Held until the command returns: dropping it exports the spans still queued.
    let _telemetry = match traced {
        Some((log, command)) => {
            match telemetry::log_format(log.log_format)
                .and_then(|format| telemetry::start(format, command))
            {
                Ok(t) => t,
                Err(message) => return fail(&message),
            }
        }
        None => telemetry::Telemetry::default(),
    };
    let result = match cli.command {
        Command::Mcp(args) => commands::mcp::run(&workdir, args),
        Command::Dashboard(args) => commands::dashboard::run(&workdir, args),
        Command::Init { dir, json } => {
            commands::init::run(dir.as_deref().unwrap_or(&workdir), json)
        }
        Command::Status { json, store } => commands::status::run(&workdir, json, store.as_deref()),
        Command::Audit { command } => commands::audit::run(&workdir, command),
        Command::Backlog { command } => commands::backlog::run(&workdir, command),
        Command::Capsule { command } => commands::capsule::run(&workdir, command),
        Command::Mailbox { command } => commands::mailbox::run(&workdir, command),
        Command::Plan { store, command } => {
            commands::plan::run(&workdir, store.as_deref(), command)
        }
        Command::Task { store, command } => {
            commands::task::run(&workdir, store.as_deref(), command)
        }
        Command::Store { command } => commands::store::run(command),
        Command::Ledger { json, command } => commands::ledger::run(&workdir, command, json),
        Command::Worker(args) => commands::worker::run(&workdir, *args),
        Command::Run(args) => commands::run::run(&workdir, args),
    };
    match result {
        Ok(code) => code,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    bernstein_os::log_line!("bernstein: {message}");
    ExitCode::from(2)
}
