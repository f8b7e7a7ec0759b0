//! `bernstein`: the command-line entry point. It parses flags and environment into a core
//! `Config`, picks a runtime and hands over; it holds no protocol logic of its own.

#[macro_use]
mod output;
mod commands;
mod settings;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Create the `.sdd/` store explicitly (it is otherwise created on first use).
    Init,
    /// Show the task table of the project.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
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
        #[command(subcommand)]
        command: commands::plan::PlanCommand,
    },
    /// Operator actions on tasks.
    Task {
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
        #[command(subcommand)]
        command: commands::ledger::LedgerCommand,
    },
    /// Claim tasks and execute each with a command-line agent (over --url or in process).
    Worker(Box<commands::worker::WorkerArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let workdir = match cli.workdir.map_or_else(std::env::current_dir, Ok) {
        Ok(dir) => dir,
        Err(e) => return fail(&format!("cannot determine the working directory: {e}")),
    };
    let result = match cli.command {
        Command::Mcp(args) => commands::mcp::run(&workdir, args),
        Command::Init => commands::init::run(&workdir),
        Command::Status { json } => commands::status::run(&workdir, json),
        Command::Audit { command } => commands::audit::run(&workdir, command),
        Command::Backlog { command } => commands::backlog::run(&workdir, command),
        Command::Capsule { command } => commands::capsule::run(&workdir, command),
        Command::Mailbox { command } => commands::mailbox::run(&workdir, command),
        Command::Plan { command } => commands::plan::run(&workdir, command),
        Command::Task { command } => commands::task::run(&workdir, command),
        Command::Store { command } => commands::store::run(command),
        Command::Ledger { command } => commands::ledger::run(&workdir, command),
        Command::Worker(args) => commands::worker::run(&workdir, *args),
    };
    match result {
        Ok(code) => code,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    bernstein_runtime_std::log_line!("bernstein: {message}");
    ExitCode::from(2)
}
