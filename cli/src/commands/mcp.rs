//! `bernstein mcp`: serve MCP over stdio on the chosen runtime; `bernstein mcp tools`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use bernstein_core::{Server, Tier};
use bernstein_runtime_std::clock::SystemClock;
use clap::{Args, Subcommand, ValueEnum};

use crate::settings;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    command: Option<McpCommand>,
    /// Transport to serve.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// Runtime that moves the bytes.
    #[arg(long, value_enum, default_value_t = Runtime::Std)]
    runtime: Runtime,
    /// Tool tier to advertise (else BERNSTEIN_MCP_TOOL_TIER, else standard).
    #[arg(long = "mcp-tier", value_name = "TIER", value_parser = parse_tier)]
    mcp_tier: Option<Tier>,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Print the tools each tier advertises.
    Tools {
        /// Only this tier.
        #[arg(long, value_parser = parse_tier)]
        tier: Option<Tier>,
        /// Print JSON.
        #[arg(long)]
        json_output: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Transport {
    Stdio,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Runtime {
    Std,
    Smol,
}

pub fn parse_tier(s: &str) -> Result<Tier, String> {
    s.parse()
}

pub fn run(workdir: &Path, args: McpArgs) -> Result<ExitCode, String> {
    if let Some(McpCommand::Tools { tier, json_output }) = args.command {
        return super::tools::run(tier, json_output);
    }
    let tier = settings::tier(args.mcp_tier)?;
    let (store, key) = super::open_store(workdir)?;
    let transports = match args.transport {
        Transport::Stdio => vec!["stdio".to_string()],
    };
    let server = Arc::new(Server::new(settings::config(key, tier, transports)?));
    let clock = Arc::new(SystemClock);
    let served = match args.runtime {
        Runtime::Std => bernstein_runtime_std::stdio::serve_stdio(&server, &*store, &*clock),
        Runtime::Smol => bernstein_runtime_smol::stdio::serve_stdio(server, store, clock),
    };
    served.map_err(|e| format!("stdio: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
