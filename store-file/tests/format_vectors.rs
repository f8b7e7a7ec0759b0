//! The test vectors of docs/FORMATS.md are produced here and compared byte for byte with the
//! document, so the specification cannot drift from the code. After an intended format change,
//! regenerate them with `BERNSTEIN_BLESS=1 cargo test -p bernstein-store-file --test
//! format_vectors` and review the diff.

mod common;

use std::path::PathBuf;

use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::digest::Digest;
use bernstein_core::ledger::verify::verify_ledger;
use bernstein_core::ledger::{Draft, LedgerPosition, Record, seal};
use bernstein_store_file::verify_cmd::audit_verify;
use serde_json::json;

use common::TestDir;

/// The vector key: bytes 0x00..0x1f.
fn key() -> Vec<u8> {
    (0u8..32).collect()
}

/// The example ledger: a two-record transaction, then a one-record transaction.
fn ledger() -> Vec<Record> {
    let first = seal(
        &LedgerPosition::GENESIS,
        |_| Digest::ZERO,
        vec![
            Draft::new("run:R-1", "example.note", json!({"text": "hello"})),
            Draft::new(
                "audit",
                "mcp.stateless_call",
                json!({"call_id": "c-1", "ok": true, "tool": "bernstein_run"}),
            ),
        ],
        &key(),
    );
    let at = LedgerPosition {
        seq: 2,
        head: first[1].hash,
    };
    let audit_head = first[1].hash;
    let second = seal(
        &at,
        |s| {
            if s == "audit" {
                audit_head
            } else {
                Digest::ZERO
            }
        },
        vec![Draft::new(
            "audit",
            "mcp.stateless_call",
            json!({"call_id": "c-2", "ok": false, "tool": "bernstein_cancel"}),
        )],
        &key(),
    );
    first.into_iter().chain(second).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// (name, fenced block content) of every vector.
fn vectors() -> Vec<(&'static str, String)> {
    let recs = ledger();
    let bytes: Vec<u8> = recs.iter().flat_map(Record::to_line).collect();
    let canonical_in =
        json!({"b": 1, "a": {"z": [1, -2], "é": "x\ny\t\"\u{1}", "A": null, "ünï": "✓"}});
    let mut out = vec![
        (
            "canonical",
            text(&to_canonical_bytes(&canonical_in).unwrap()),
        ),
        ("key", hex::encode(key())),
    ];
    let mut records = String::new();
    for r in &recs {
        records.push_str(&format!(
            "record {}\n  preimage: {}\n  hash:     {}\n",
            r.seq,
            text(&r.preimage()),
            r.hash
        ));
        if let Some(mac) = &r.mac {
            records.push_str(&format!("  mac:      {mac}\n"));
        }
    }
    out.push(("records", records.trim_end().to_string()));
    out.push(("ledger", text(&bytes).trim_end().to_string()));
    // What `bernstein audit verify` reports for it (run over a real `.sdd/`).
    let tmp = TestDir::new("vectors");
    let sdd = tmp.path().join(".sdd");
    std::fs::create_dir_all(sdd.join("ledger")).unwrap();
    std::fs::write(sdd.join("ledger/ledger.jsonl"), &bytes).unwrap();
    let no_key = audit_verify(&sdd).unwrap().summary();
    let report = verify_ledger(&bytes, "ledger.jsonl", Some(&key())).unwrap();
    let calls: Vec<String> = report
        .calls
        .iter()
        .map(|c| format!("{} {} {} ok={}", c.seq, c.tool, c.call_id, c.ok))
        .collect();
    out.push((
        "verify",
        format!(
            "{}\n{}\n(without the key) {}",
            calls.join("\n"),
            report.summary(),
            no_key
        ),
    ));
    // Each single flipped byte of record 2 is named at line 2.
    let mut flipped = bytes.clone();
    let at = recs[0].to_line().len() + 10;
    flipped[at] ^= 0x20;
    out.push((
        "tampered",
        verify_ledger(&flipped, "ledger.jsonl", Some(&key()))
            .unwrap_err()
            .to_string(),
    ));
    out
}

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/FORMATS.md")
}

/// Replaces the block of vector `name` in `doc` by `content`; `None` if the markers are missing.
fn splice(doc: &str, name: &str, content: &str) -> Option<String> {
    let begin = format!("<!-- vector:{name} -->\n```text\n");
    let start = doc.find(&begin)? + begin.len();
    let end = start + doc[start..].find("\n```")?;
    Some(format!("{}{}{}", &doc[..start], content, &doc[end..]))
}

#[test]
fn formats_md_vectors_match_the_code() {
    let path = doc_path();
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut updated = doc.clone();
    for (name, content) in vectors() {
        updated = splice(&updated, name, &content)
            .unwrap_or_else(|| panic!("FORMATS.md has no block for vector {name}"));
    }
    if std::env::var_os("BERNSTEIN_BLESS").is_some() {
        std::fs::write(&path, &updated).unwrap();
        return;
    }
    assert!(
        doc == updated,
        "docs/FORMATS.md vectors differ from the code; rerun with BERNSTEIN_BLESS=1 and review"
    );
}
