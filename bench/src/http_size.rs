//! `bernstein_run_status` over HTTP against ledger size (`bernstein-bench [--full] http-size`):
//! a project holding 1k, 100k (and 1M with `--full`) records is written as `write-ledger`
//! writes it, `bernstein mcp --transport http` is started on it (each runtime in turn, on the
//! same project), and 16 keep-alive clients read one of its runs back to back. Every call
//! appends its audit record, so the ledger grows under the load, as a served one does. The
//! issue's goal: p99 at 1M within 2× of the 1k row under the same load.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::http_load::{MakeMessage, http_command, load, spawn, tool_call};
use crate::ledger_file::write_ledger;
use crate::stats::fmt;

const CLIENTS: usize = 16;
const RUNTIMES: [&str; 2] = ["std", "smol"];

pub fn row(bin: &Path, full: bool) {
    let period = Duration::from_secs(if full { 10 } else { 3 });
    let mut sizes = vec![1_000u64, 100_000];
    if full {
        sizes.push(1_000_000);
    }
    println!(
        "## `bernstein_run_status` over HTTP against ledger size ({CLIENTS} clients, {} s per row)\n",
        period.as_secs()
    );
    println!("load average before: {}\n", crate::loadavg());
    println!(
        "| records | runtime | start → first answer | calls/s | p50 | p99 | errors | p99 ÷ 1k p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut small: [Option<Duration>; 2] = [None, None];
    for n in sizes {
        let dir = crate::scratch_dir(&format!("http-size-{n}"));
        let written = write_ledger(&dir, n);
        let run_id = written.run_id.clone();
        let read: MakeMessage =
            Arc::new(move |_, i| tool_call(i, "bernstein_run_status", json!({ "run_id": run_id })));
        for (r, runtime) in RUNTIMES.iter().enumerate() {
            let served = match spawn(http_command(bin, &dir, runtime), None, None) {
                Ok(s) => s,
                Err(e) => {
                    println!(
                        "| {} | {runtime} | failed to start: {e} | | | | | |",
                        written.records
                    );
                    continue;
                }
            };
            let l = load(&served, CLIENTS, period, read.clone());
            let Some(lat) = l.latency else {
                println!(
                    "| {} | {runtime} | {} | no answer: {} | | | {} | |",
                    written.records,
                    fmt(served.startup),
                    l.first_error.unwrap_or_default(),
                    l.errors
                );
                continue;
            };
            let base = *small[r].get_or_insert(lat.p99);
            println!(
                "| {} | {runtime} | {} | {:.0} | {} | {} | {} | {:.2}× |",
                written.records,
                fmt(served.startup),
                l.rate,
                fmt(lat.p50),
                fmt(lat.p99),
                l.errors,
                lat.p99.as_secs_f64() / base.as_secs_f64()
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!("\nload average after: {}\n", crate::loadavg());
}
