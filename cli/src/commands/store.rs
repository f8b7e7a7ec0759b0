//! `bernstein store migrate`: applies the PostgreSQL schema migrations this software knows.
//! Servers never migrate on their own (except `bernstein mcp --migrate`) and refuse a schema
//! they do not know.

use std::process::ExitCode;

use clap::Subcommand;

use crate::settings;

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Bring the database's schema up to this version (idempotent; safe to run concurrently).
    Migrate {
        /// The database (else BERNSTEIN_STORE_URL).
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// Print the database, the migrations applied and the schema version as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: StoreCommand) -> Result<ExitCode, String> {
    match command {
        StoreCommand::Migrate { store, json } => {
            let url = settings::store_url(store.as_deref())?
                .ok_or("store migrate needs --store postgres://… (or BERNSTEIN_STORE_URL)")?;
            // Named by host, port, database and user only: the URL may hold a password.
            let db = bernstein_store_postgres::describe_url(&url);
            let applied =
                bernstein_store_postgres::migrate(&url).map_err(|e| format!("{db}: {e}"))?;
            let latest = bernstein_store_postgres::schema::latest();
            if json {
                super::task::print_json(&serde_json::json!({
                    "database": db,
                    "applied": applied,
                    "version": latest,
                }))?;
            } else if applied.is_empty() {
                say!("schema is up to date (version {latest}) in {db}");
            } else {
                say!("applied migrations {applied:?} to {db}; schema is at version {latest}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
