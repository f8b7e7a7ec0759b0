//! Several OS processes serve one `.sdd/` at once: each appends through compare-and-append
//! with retry; afterwards every append is present exactly once, whole, and the ledger
//! verifies. Then: writers of several threads each (whose appends the store places in shared
//! batches), killed with SIGKILL mid-stream, never lose an acknowledged append.
//!
//! The child processes are this test binary itself, re-run on the `child` test with
//! `BERNSTEIN_TEST_CHILD` set.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use bernstein_core::ledger::verify::verify_ledger;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_store_file::keys::load_or_create_audit_key;
use bernstein_store_file::verify_cmd::audit_verify;

use common::{TestDir, append_naming_reads_with_retry, append_with_retry, writer_request};

const WRITERS: u64 = 6;
const APPENDS: u64 = 60;

/// Child mode: append `APPENDS` requests (or forever with `BERNSTEIN_TEST_FOREVER`), printing
/// `ack <writer> <n>` after each is durable; with `BERNSTEIN_TEST_THREADS` = T > 1, T threads do
/// so at once on one store, thread t as writer `w + 1000 t`, each naming the run stream it reads
/// (which only it writes), so that the store places their appends together in batches.
#[test]
fn child() {
    let Ok(dir) = std::env::var("BERNSTEIN_TEST_CHILD") else {
        return;
    };
    let var = |name: &str| std::env::var(name).ok().map(|v| v.parse::<u64>().unwrap());
    let w = var("BERNSTEIN_TEST_WRITER").unwrap();
    let threads = var("BERNSTEIN_TEST_THREADS").unwrap_or(1);
    let forever = std::env::var("BERNSTEIN_TEST_FOREVER").is_ok();
    let dir = std::path::PathBuf::from(dir);
    let key = load_or_create_audit_key(&dir.join(".sdd")).unwrap();
    let store = FileStore::open(&dir, key.clone()).unwrap();
    let conflicts: u64 = std::thread::scope(|s| {
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let (store, key) = (&store, &key);
                s.spawn(move || {
                    let id = w + 1000 * t;
                    let mut conflicts = 0;
                    let mut n = 0;
                    while forever || n < APPENDS {
                        let request = writer_request("W", id, n);
                        conflicts += if threads > 1 {
                            append_naming_reads_with_retry(store, key, &request)
                        } else {
                            append_with_retry(store, key, &request)
                        };
                        println!("ack {id} {n}");
                        n += 1;
                    }
                    conflicts
                })
            })
            .collect();
        writers.into_iter().map(|t| t.join().unwrap()).sum()
    });
    let written = store.write_stats();
    println!("conflicts {conflicts}");
    println!("writes {} for {} appends", written.writes, written.appends);
}

/// The value after `tag` on a child's output line (libtest may print its own text before it).
fn field<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    line.find(tag).map(|i| line[i + tag.len()..].trim())
}

/// An acknowledgement on a child's output line: (writer, n).
fn ack(line: &str) -> Option<(u64, u64)> {
    let (w, n) = field(line, "ack ")?.split_once(' ')?;
    Some((w.parse().unwrap(), n.parse().unwrap()))
}

fn spawn_child(dir: &std::path::Path, w: u64, threads: u64, forever: bool) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("BERNSTEIN_TEST_CHILD", dir)
        .env("BERNSTEIN_TEST_WRITER", w.to_string())
        .env("BERNSTEIN_TEST_THREADS", threads.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if forever {
        cmd.env("BERNSTEIN_TEST_FOREVER", "1");
    }
    cmd.spawn().unwrap()
}

/// (writer, n) of every audit call in the ledger, with how often each occurs.
fn calls_in(dir: &std::path::Path) -> BTreeMap<String, u64> {
    let report = audit_verify(&dir.join(".sdd")).unwrap();
    let mut seen = BTreeMap::new();
    for c in report.calls {
        *seen.entry(c.call_id).or_insert(0) += 1;
    }
    seen
}

#[test]
fn concurrent_processes_append_everything_exactly_once() {
    let tmp = TestDir::new("concurrent");
    let children: Vec<_> = (0..WRITERS)
        .map(|w| spawn_child(tmp.path(), w, 1, false))
        .collect();
    let mut conflicts = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let acks = text.lines().filter(|l| ack(l).is_some()).count() as u64;
        assert_eq!(acks, APPENDS);
        conflicts += text
            .lines()
            .find_map(|l| field(l, "conflicts "))
            .unwrap()
            .parse::<u64>()
            .unwrap();
    }
    eprintln!("{WRITERS} writers x {APPENDS} appends: {conflicts} conflicts retried");

    let seen = calls_in(tmp.path());
    assert_eq!(seen.len() as u64, WRITERS * APPENDS);
    assert!(seen.values().all(|&c| c == 1), "an append was duplicated");
    for w in 0..WRITERS {
        for n in 0..APPENDS {
            assert!(
                seen.contains_key(&format!("{w}-{n}")),
                "append {w}-{n} is missing"
            );
        }
    }
    let bytes = std::fs::read(tmp.path().join(".sdd/ledger/ledger.jsonl")).unwrap();
    let key = load_or_create_audit_key(&tmp.path().join(".sdd")).unwrap();
    let report = verify_ledger(&bytes, "ledger.jsonl", Some(&key)).unwrap();
    assert_eq!(report.records, 2 * WRITERS * APPENDS);
    assert_eq!(report.transactions, WRITERS * APPENDS);
}

#[test]
fn killed_writers_never_lose_an_acknowledged_append() {
    const THREADS: u64 = 4;
    let tmp = TestDir::new("killed");
    for round in 0..5u64 {
        let mut children: Vec<_> = (0..3)
            .map(|w| spawn_child(tmp.path(), round * 10 + w, THREADS, true))
            .collect();
        // Let them get going, then kill each after a different number of acks.
        let mut acked: BTreeMap<u64, u64> = BTreeMap::new();
        for (i, child) in children.iter_mut().enumerate() {
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let stop_after = THREADS * (5 + 7 * i as u64 + round);
            let mut acks = 0;
            for line in lines.by_ref() {
                if let Some((w, n)) = ack(&line.unwrap()) {
                    acked.insert(w, n);
                    acks += 1;
                    if acks == stop_after {
                        break;
                    }
                }
            }
            child.kill().unwrap();
            // Acks printed before the kill are all acknowledged appends.
            for line in lines.map_while(Result::ok) {
                if let Some((w, n)) = ack(&line) {
                    acked.insert(w, n);
                }
            }
        }
        for mut c in children {
            c.wait().unwrap();
        }
        // A fresh open repairs whatever a killed writer left, then everything acked is there.
        let key = load_or_create_audit_key(&tmp.path().join(".sdd")).unwrap();
        drop(FileStore::open(tmp.path(), key).unwrap());
        let seen = calls_in(tmp.path());
        for (w, last) in acked {
            for n in 0..=last {
                assert_eq!(
                    seen.get(&format!("{w}-{n}")),
                    Some(&1),
                    "round {round}: acked append {w}-{n} lost"
                );
            }
        }
    }
}
