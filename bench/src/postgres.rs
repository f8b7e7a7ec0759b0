//! PostgreSQL instances side by side (issue 15, docs/POSTGRES.md): 1, 2 and 3 `bernstein mcp
//! --transport http --store URL` instances on one fresh database, 16 keep-alive clients spread
//! round-robin over them, reads (`bernstein_run_status` of one run), writes (`bernstein_run`)
//! and both at once (every fourth client writes). Every call, reads included, appends its
//! audit record. Each rate is also given as a ratio to one instance's in the same run, since
//! the machine is shared.
//!
//! The database server comes from `BERNSTEIN_BENCH_PG_URL` (any database of the cluster; one
//! database is created and dropped per row), else from the repository's throwaway cluster
//! (`scripts/postgres.sh start`, which installs PostgreSQL when it is missing). `psql` must be on
//! PATH.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::http_load::{Conn, MakeMessage, Served, load_spread, spawn, tool_call};
use crate::stats::fmt;

const CLIENTS: usize = 16;

pub fn instances(bin: &Path, full: bool) {
    let period = Duration::from_secs(if full { 10 } else { 3 });
    println!(
        "\n## PostgreSQL: instances on one database ({CLIENTS} clients, {} s per row)\n",
        period.as_secs()
    );
    let admin = match admin_url() {
        Ok(url) => url,
        Err(e) => {
            println!("(skipped: {e})");
            return;
        }
    };
    println!("load average before: {}\n", crate::loadavg());
    println!(
        "| instances | call | calls/s | p50 | p99 | calls | errors | × 1 instance | CPU µs/call: servers + database |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut one: HashMap<&str, f64> = HashMap::new();
    for n in [1usize, 2, 3] {
        let cluster = match Cluster::start(bin, &admin, n) {
            Ok(c) => c,
            Err(e) => {
                println!("| {n} | (could not start: {e}) | | | | | | |");
                continue;
            }
        };
        let run_id = match cluster.seed_run() {
            Ok(id) => id,
            Err(e) => {
                println!("| {n} | (no run to read: {e}) | | | | | | |");
                continue;
            }
        };
        let read: MakeMessage =
            Arc::new(move |_, i| tool_call(i, "bernstein_run_status", json!({ "run_id": run_id })));
        let write: MakeMessage = Arc::new(|c, i| {
            tool_call(
                i,
                "bernstein_run",
                json!({"goal": format!("c{c} goal {i}")}),
            )
        });
        // A quarter of the clients write while the others read: a write decided on a snapshot
        // that other instances' reads moved past is placed, not run again.
        let mixed: MakeMessage = {
            let (read, write) = (read.clone(), write.clone());
            Arc::new(move |c, i| if c % 4 == 0 { write(c, i) } else { read(c, i) })
        };
        let servers: Vec<&Served> = cluster.servers.iter().collect();
        for (name, make) in [("read", read), ("write", write), ("mixed", mixed)] {
            let cpu0 = cluster.cpu_ticks();
            let l = load_spread(&servers, CLIENTS, period, make);
            let cpu = cluster.cpu_ticks().saturating_sub(cpu0);
            let per_call = |ticks: u64| {
                ticks as f64 / crate::cpu::TICKS_PER_SECOND * 1e6 / l.calls.max(1) as f64
            };
            let base = *one.entry(name).or_insert(l.rate);
            let (p50, p99) = l
                .latency
                .map_or(("-".into(), "-".into()), |s| (fmt(s.p50), fmt(s.p99)));
            let errors = match &l.first_error {
                Some(e) => format!("{} (first: {})", l.errors, e.replace(['\n', '|'], " ")),
                None => l.errors.to_string(),
            };
            let ratio = if base > 0.0 { l.rate / base } else { 0.0 };
            println!(
                "| {n} | {name} | {:.0} | {p50} | {p99} | {} | {errors} | {ratio:.2}× | {:.0} + {:.0} |",
                l.rate,
                l.calls,
                per_call(cpu.0),
                per_call(cpu.1)
            );
        }
    }
    println!("\nload average after: {}", crate::loadavg());
}

/// The cluster's URL: `BERNSTEIN_BENCH_PG_URL`, else the repository's throwaway cluster.
fn admin_url() -> Result<String, String> {
    if let Ok(url) = std::env::var("BERNSTEIN_BENCH_PG_URL") {
        return Ok(url);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("start")
        .output()
        .map_err(|e| format!("scripts/postgres.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "scripts/postgres.sh start failed (or set BERNSTEIN_BENCH_PG_URL): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn psql(url: &str, sql: &str) -> Result<(), String> {
    let out = Command::new("psql")
        .args([url, "-Atqc", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "psql: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// CPU ticks of the instances and of the database.
#[derive(Clone, Copy)]
struct CpuTicks(u64, u64);

impl CpuTicks {
    fn saturating_sub(self, before: CpuTicks) -> (u64, u64) {
        (
            self.0.saturating_sub(before.0),
            self.1.saturating_sub(before.1),
        )
    }
}

/// `n` instances on a fresh database; the database is dropped with it.
struct Cluster {
    admin: String,
    db: String,
    servers: Vec<Served>,
}

impl Cluster {
    fn start(bin: &Path, admin: &str, n: usize) -> Result<Cluster, String> {
        let db = format!("bench_pg_{n}_{}", std::process::id());
        psql(admin, &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))?;
        psql(admin, &format!("CREATE DATABASE {db}"))?;
        let mut cluster = Cluster {
            admin: admin.to_string(),
            db: db.clone(),
            servers: Vec::new(),
        };
        let base = admin.rsplit_once('/').map_or(admin, |(b, _)| b);
        let url = format!("{base}/{db}");
        let migrated = Command::new(bin)
            .args(["store", "migrate", "--store", &url])
            .output()
            .map_err(|e| format!("migrate: {e}"))?;
        if !migrated.status.success() {
            return Err(String::from_utf8_lossy(&migrated.stderr).trim().to_string());
        }
        // One workdir for all: the instances must share the audit and signing keys. They start
        // one after the other, so the first creates the keys the others read.
        let dir = crate::scratch_dir(&format!("pg-{n}"));
        for _ in 0..n {
            let mut cmd = Command::new(bin);
            cmd.args(["mcp", "--workdir"]).arg(&dir).args([
                "--transport",
                "http",
                "--port",
                "0",
                "--store",
                &url,
            ]);
            cluster.servers.push(spawn(cmd, None, None)?);
        }
        Ok(cluster)
    }

    /// CPU ticks so far of the instances and of the database server's processes (every
    /// `postgres` process of the machine: run the bench on a cluster nothing else uses).
    fn cpu_ticks(&self) -> CpuTicks {
        let servers = self
            .servers
            .iter()
            .filter_map(|s| crate::cpu::ticks(s.child.id()))
            .sum();
        CpuTicks(servers, crate::cpu::ticks_of_named("postgres"))
    }

    fn seed_run(&self) -> Result<String, String> {
        let mut conn = Conn::open(&self.servers[0].addr, None).map_err(|e| e.to_string())?;
        let call = tool_call(
            1,
            "bernstein_run",
            json!({"goal": "the run every read polls"}),
        );
        let (status, body) = conn.post(&call).map_err(|e| e.to_string())?;
        crate::long_polls::run_id(&body)
            .ok_or_else(|| format!("{status}: {}", String::from_utf8_lossy(&body)))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.servers.clear();
        let _ = psql(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db),
        );
    }
}
