//! `target/release/projection_memory DIR`: where the projection's resident bytes go
//! (BENCHMARKS.md, "Projection memory at 1M records"). DIR is a project whose ledger has a
//! checkpoint (`bernstein-bench write-ledger DIR N`, then one `bernstein mcp --workdir DIR`
//! that exits, which writes it).
//!
//! Each figure is measured in a child process of its own, as the growth of its VmRSS over one
//! step: folding the ledger record by record (the form a server that opened without a
//! checkpoint holds), reading the snapshot from the checkpoint (what a server started from it
//! holds), and reading it with one collection emptied in the JSON (the difference is that
//! collection's share). Resident growth counts what the allocator keeps, not only live bytes,
//! which is what the server pays. (A counting allocator would need `unsafe`, which the
//! workspace forbids.)

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Command;

use bernstein_core::ledger::Record;

use bernstein_domain::Snapshot;
use serde_json::Value;

fn rss_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Child: the resident growth (KiB) of one step, printed on stdout.
fn child(what: &str, path: &Path) {
    if what == "fold" {
        let file = std::fs::File::open(path).expect("ledger");
        let before = rss_kib();
        let mut snap = Snapshot::genesis();
        for line in BufReader::with_capacity(1 << 16, file).split(b'\n') {
            let line = line.expect("read");
            if line.is_empty() {
                continue;
            }
            let rec = Record::parse_line(&line, None).expect("a valid record");
            snap.apply(&rec).expect("the ledger folds");
        }
        println!("{}", rss_kib() - before);
        std::hint::black_box(&snap);
        return;
    }
    let text = std::fs::read_to_string(path).expect("snapshot json");
    let before = rss_kib();
    let snap: Snapshot = serde_json::from_str(&text).expect("the snapshot reads back");
    println!("{}", rss_kib() - before);
    std::hint::black_box(&snap);
}

fn measure(what: &str, path: &Path) -> i64 {
    let out = Command::new(std::env::current_exe().expect("own path"))
        .args(["--child", what])
        .arg(path)
        .output()
        .expect("spawn the child");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a figure")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1], Path::new(&args[2]));
        return;
    }
    let dir = Path::new(args.first().expect("usage: projection_memory DIR"));
    let ledger = dir.join(".sdd/ledger");
    let text = std::fs::read(ledger.join("checkpoint.json")).expect("a checkpoint");
    let mut file: Value = serde_json::from_slice(&text).expect("checkpoint json");
    drop(text);
    let snapshot = file["checkpoint"]["snapshot"].take();
    drop(file);
    let snap: Snapshot = serde_json::from_value(snapshot.clone()).expect("a snapshot");
    let runs = snap.domain.runs_after(None).count() as f64;
    let tasks = snap.domain.total();
    let records = snap.position.seq;
    drop(snap);
    let tmp = std::env::temp_dir().join(format!("projection-memory-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let write = |name: &str, v: &Value| {
        let path = tmp.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(v).expect("json")).expect("write");
        path
    };
    let per_run = |kib: i64| kib as f64 * 1024.0 / runs;
    println!(
        "{records} records, {runs} runs, {tasks} tasks; TaskRow {} B, RunView {} B inline",
        std::mem::size_of::<bernstein_domain::projection::TaskRow>(),
        std::mem::size_of::<bernstein_domain::runs::RunView>()
    );
    let folded = measure("fold", &ledger.join("ledger.jsonl"));
    let full = write("full", &snapshot);
    let loaded = measure("load", &full);
    println!(
        "resident growth: folding the ledger {:.1} MiB ({:.0} B/run), reading the checkpoint {:.1} MiB ({:.0} B/run)",
        folded as f64 / 1024.0,
        per_run(folded),
        loaded as f64 / 1024.0,
        per_run(loaded)
    );
    // Each collection's share of the checkpoint's form: read without it.
    let mut parts: Vec<(String, Value)> = Vec::new();
    let mut without = |path: &[&str]| {
        let mut v = snapshot.clone();
        let mut field = &mut v;
        for p in path {
            field = &mut field[*p];
        }
        let empty = match field {
            Value::Object(o) if !o.is_empty() => Value::Object(Default::default()),
            Value::Array(a) if !a.is_empty() => Value::Array(Vec::new()),
            _ => return,
        };
        *field = empty;
        parts.push((path.join("."), v));
    };
    without(&["stream_heads"]);
    for name in [
        "tasks",
        "by_creation",
        "by_status",
        "roles",
        "runs",
        "open_queue",
        "mailboxes",
        "plans",
        "leases",
    ] {
        without(&["domain", name]);
    }
    println!("\n| collection | B/run |\n|---|---|");
    let mut rest = loaded;
    for (name, v) in &parts {
        let path = write(name, v);
        let share = loaded - measure("load", &path);
        rest -= share;
        println!("| {name} | {:.0} |", per_run(share));
    }
    println!("| everything else | {:.0} |", per_run(rest));
    let _ = std::fs::remove_dir_all(&tmp);
}
