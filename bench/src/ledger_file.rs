//! `bernstein-bench write-ledger DIR N`: writes a project at DIR whose `.sdd/` holds a ledger
//! of at least N records (runs and polls, built through the pure core as the server would),
//! with the audit key and signing seed that wrote it. For timing start-up and `audit verify`
//! on large ledgers from outside (BENCHMARKS.md, "Open and verify at size").

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::ledger::MemLedger;

/// What [`write_ledger`] wrote.
pub struct Written {
    /// A run in the ledger, to read.
    pub run_id: String,
    pub records: u64,
    pub bytes: usize,
}

/// Writes a project under `dir` holding a ledger of at least `records` records.
pub fn write_ledger(dir: &Path, records: u64) -> Written {
    let mut l = MemLedger::new();
    let run_id = l.grow_to(records);
    let sdd = dir.join(".sdd");
    let keys = sdd.join("keys");
    let ledger = sdd.join("ledger");
    fs::create_dir_all(&keys).expect("create .sdd/keys");
    fs::create_dir_all(&ledger).expect("create .sdd/ledger");
    fs::set_permissions(&keys, fs::Permissions::from_mode(0o700)).expect("chmod keys");
    let secret = |name: &str, bytes: &[u8]| {
        let path = keys.join(name);
        fs::write(&path, format!("{}\n", hex(bytes))).expect("write key");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod key");
    };
    secret("audit.key", &l.key);
    secret("signing.ed25519", &crate::ledger::SIGNING_SEED);
    fs::write(ledger.join("ledger.jsonl"), &l.lines).expect("write ledger");
    Written {
        run_id,
        records: l.snapshot.position.seq,
        bytes: l.lines.len(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
