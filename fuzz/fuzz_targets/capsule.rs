//! Task capsules (`bernstein audit verify-capsule`, `bernstein_verify_capsule`): `check_self`
//! and `extract_capsule` on arbitrary JSON; real capsules, signed over the fixture snapshot with
//! the fixture's signing seed, with one leaf changed, added or removed; the capsule wrapped in
//! the envelopes a host saves; `CapsuleLedgerCheck` fed the records of arbitrary ledger bytes,
//! of the fixture ledger, and of the fixture ledger followed by the capsule's issuance record
//! (sealed under the fixture's audit key); `verify_on` the projection after that record.
//! Invariants: no panic; a real capsule verifies (with and without the expected signer), is
//! found again inside every envelope, and is valid on the ledger that issued it (records and
//! projection); a capsule that verifies after a change, on its own or on that ledger, parses to
//! exactly the signed capsule (only its PEM may be spelled differently, for the same key), so
//! no change of content ever verifies; a ledger that issued nothing never finds one valid.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use bernstein_domain::capsule::{
    self, CapsuleLedgerCheck, CapsuleVerdict, TaskCapsule, check_self, extract_capsule,
};
use bernstein_domain::projection::Projection;
use bernstein_core::signing::{Signer, parse_public_key_pem};
use bernstein_core::ledger::{AUDIT_STREAM, Draft, Record, seal};
use bernstein_fuzz::fixture;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// A capsule of a fixture task (as the tool serves it), the audit record issuing it right after
/// the fixture ledger, and the projection once that record is folded.
struct Issued {
    capsule: TaskCapsule,
    value: Value,
    record: Record,
    projection: Projection,
}

/// The capsules of the fixture's tasks and their signer's PEM.
fn capsules() -> &'static (Vec<Issued>, String) {
    static C: OnceLock<(Vec<Issued>, String)> = OnceLock::new();
    C.get_or_init(|| {
        let signer = Signer::from_seed(&fixture::SIGNING_SEED);
        let pem = signer.public_key_pem().to_string();
        let snapshot = fixture::snapshot();
        let key = fixture::audit_key();
        let built = fixture::task_ids()
            .iter()
            .filter_map(|id| snapshot.domain.task(id))
            .map(|row| {
                let c = capsule::build(snapshot, row, "2025-11-25", &signer);
                let value = serde_json::to_value(&c).expect("a capsule serializes");
                let body = serde_json::to_value(capsule::issued_record(&c, fixture::NOW.0))
                    .expect("an issuance serializes");
                let draft = Draft::new(AUDIT_STREAM, capsule::CAPSULE_ISSUED, body);
                let [record] = <[Record; 1]>::try_from(seal(
                    &snapshot.position,
                    |s| snapshot.stream_head(s),
                    vec![draft],
                    &key,
                ))
                .expect("one record");
                let mut after = snapshot.clone();
                after.apply(&record).expect("the issuance chains");
                let issued = Issued {
                    capsule: c,
                    value,
                    record,
                    projection: after.domain,
                };
                real_capsule_verifies(&issued, &pem);
                issued
            })
            .collect::<Vec<_>>();
        assert!(!built.is_empty(), "the fixture has tasks");
        (built, pem)
    })
}

/// The checks of `capsule` on the ledger that issued `issued` (records, then projection).
fn on_issuing_ledger(issued: &Issued, capsule: &Value, pem: &str) -> [CapsuleVerdict; 2] {
    let mut check = CapsuleLedgerCheck::new(capsule, Some(pem));
    fixture_records().iter().for_each(|r| check.push(r));
    check.push(&issued.record);
    [
        check.finish(),
        capsule::verify_on(&issued.projection, capsule, Some(pem)),
    ]
}

/// A real capsule verifies (with and without the expected signer), is found again in every
/// envelope a host saves, and is valid on the ledger that issued it. Constant per capsule:
/// checked once, when the capsules are built.
fn real_capsule_verifies(issued: &Issued, pem: &str) {
    let (original, value) = (&issued.capsule, &issued.value);
    for verdict in on_issuing_ledger(issued, value, pem) {
        assert!(
            verdict.valid,
            "an issued capsule failed: {:?}",
            verdict.problems
        );
    }
    for signer in [None, Some(pem)] {
        let (c, problems) = check_self(value, signer);
        assert!(problems.is_empty(), "a real capsule failed: {problems:?}");
        assert_eq!(c.as_ref(), Some(original));
    }
    let text = value.to_string();
    for saved in [
        json!({"result": value, "_meter": {"ms": 1}}),
        json!({"content": [{"type": "text", "text": text}], "structuredContent": value}),
        json!({"content": [{"type": "text", "text": text}]}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"result": value}}}),
    ] {
        assert_eq!(extract_capsule(&saved).as_ref(), Some(value), "{saved}");
    }
}

/// The fixture ledger's records, read under its key.
fn fixture_records() -> &'static [Record] {
    static R: OnceLock<Vec<Record>> = OnceLock::new();
    R.get_or_init(|| {
        let key = fixture::audit_key();
        fixture::ledger_lines()
            .into_iter()
            .map(|l| Record::parse_line(l, Some(&key)).expect("fixture records verify"))
            .collect()
    })
}

#[derive(Arbitrary, Debug)]
enum Replacement {
    Str(String),
    Int(u64),
    Neg(i64),
    Bool(bool),
    Null,
    Array,
    Remove,
    Add(String, String),
}

#[derive(Arbitrary, Debug)]
struct Input {
    pick: u8,
    leaf: u16,
    replacement: Replacement,
    raw: Vec<u8>,
    ledger: Vec<u8>,
}

/// JSON pointers of every member and element of `v` (not `v` itself).
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(x, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(x, &p, out);
            }
        }
        _ => {}
    }
}

/// `v` with the value at `pointer` replaced (or removed, or given a new sibling member).
fn mutate(v: &Value, pointer: &str, r: &Replacement) -> Value {
    let mut out = v.clone();
    let (parent, last) = pointer.rsplit_once('/').expect("a pointer below the root");
    let new = match r {
        Replacement::Str(s) => Value::from(s.as_str()),
        Replacement::Int(n) => Value::from(*n),
        Replacement::Neg(n) => Value::from(*n),
        Replacement::Bool(b) => Value::Bool(*b),
        Replacement::Null => Value::Null,
        Replacement::Array => json!([]),
        Replacement::Remove | Replacement::Add(..) => Value::Null,
    };
    match (out.pointer_mut(parent).expect("pointer of v"), r) {
        (Value::Object(m), Replacement::Remove) => {
            m.remove(&last.replace("~1", "/").replace("~0", "~"));
        }
        (Value::Object(m), Replacement::Add(k, x)) => {
            m.insert(k.clone(), Value::from(x.as_str()));
        }
        (Value::Array(a), Replacement::Remove) => {
            a.remove(last.parse::<usize>().expect("an index"));
        }
        _ => *out.pointer_mut(pointer).expect("pointer of v") = new,
    }
    out
}

/// The capsule with its PEM replaced by the key it names (PEM spellings may differ).
fn same_content(a: &TaskCapsule, b: &TaskCapsule) -> bool {
    let key = |c: &TaskCapsule| parse_public_key_pem(&c.signer_public_key_pem).ok();
    let strip = |c: &TaskCapsule| TaskCapsule {
        signer_public_key_pem: String::new(),
        ..c.clone()
    };
    strip(a) == strip(b) && key(a).is_some() && key(a) == key(b)
}

fuzz_target!(|input: Input| {
    let (built, pem) = capsules();

    // Raw mode: anything as a capsule, or as what a host saved.
    if let Ok(v) = serde_json::from_slice::<Value>(&input.raw) {
        let (c, problems) = check_self(&v, Some(pem));
        if problems.is_empty() {
            let c = c.expect("a valid capsule parsed");
            assert_eq!(c.capsule_hash, capsule::capsule_hash(&c));
        }
        if let Some(found) = extract_capsule(&v) {
            assert_eq!(found["type"], capsule::CAPSULE_TYPE);
            let _ = check_self(&found, None);
        }
    }

    let issued = &built[usize::from(input.pick) % built.len()];
    let (original, value) = (&issued.capsule, &issued.value);

    // Changed, it verifies only if it still is the signed capsule.
    let mut all = Vec::new();
    pointers(value, "", &mut all);
    let pointer = &all[usize::from(input.leaf) % all.len()];
    let changed = mutate(value, pointer, &input.replacement);
    if changed != *value {
        // Without an expected signer the check is at its most lenient.
        let (c, problems) = check_self(&changed, None);
        if problems.is_empty() {
            let c = c.expect("a valid capsule parsed");
            assert!(
                same_content(&c, original),
                "{pointer} changed ({:?}) and the capsule still verified",
                input.replacement
            );
        }
        for verdict in on_issuing_ledger(issued, &changed, pem) {
            if verdict.valid {
                let c: TaskCapsule =
                    serde_json::from_value(changed.clone()).expect("a valid capsule parses");
                assert!(
                    same_content(&c, original),
                    "{pointer} changed ({:?}) and the capsule was valid on its ledger",
                    input.replacement
                );
            }
        }
    }

    // Against ledger records: never valid unless issued there (the fixture issued none).
    let raw: Vec<Record> = input
        .ledger
        .split(|&b| b == b'\n')
        .filter_map(|line| Record::parse_line(line, None).ok())
        .collect();
    for records in [raw.as_slice(), fixture_records()] {
        let mut check = CapsuleLedgerCheck::new(&changed, Some(pem));
        records.iter().for_each(|r| check.push(r));
        let any_issued = records.iter().any(|r| r.kind == capsule::CAPSULE_ISSUED);
        assert!(
            any_issued || !check.finish().valid,
            "a capsule no record issued was found valid on a ledger"
        );
    }
});
