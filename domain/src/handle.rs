//! The run handle: what `bernstein_run_status` answers, and its offline self-check.
//!
//! ```text
//! {taskId, runId, status, journalHead, chainHead, specRevision, receiptHash, pollToken}
//! ```
//! - `taskId` is the run's root task and `runId` the run (equal for runs started by
//!   `bernstein_run`): polling by any member task id yields the same handle.
//! - `status` follows the rule in [`super::runs`]; `journalHead` is the hash of the run
//!   journal's latest record; `chainHead` the chain anchor (the audit record committed with it).
//! - `specRevision` is [`SPEC_REVISION`], the pinned tasks-extension revision, whatever era the
//!   call was served under, so hosts of every era get the same bytes. A handle issued with
//!   another revision the server speaks (servers before the pin wrote the call's revision)
//!   still verifies; an unknown revision does not.
//! - `receiptHash` = `sha256:` + SHA-256 of the canonical JSON object
//!   `{chainHead, journalHead, runId, specRevision, status, taskId}`.
//! - `pollToken` = base64url (no padding) of the canonical JSON `{"runId": <runId>, "v": 1}`.
//!
//! Nothing here reads the clock or the global ledger head, so polls of an unchanged run are
//! byte-identical. This module must never write records.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Snapshot;
use bernstein_core::canonical::to_canonical_bytes;
use bernstein_core::digest::Digest;
use bernstein_core::protocol::era::Revision;

use super::ids::{check_task_id, run_stream};
use super::runs::RunStatus;

/// Version of the poll token's content.
pub const POLL_TOKEN_VERSION: u64 = 1;

/// The `specRevision` of every run handle and claim receipt: the revision of the pinned
/// `io.modelcontextprotocol/tasks` extension, the same in every era.
pub const SPEC_REVISION: &str = "2026-07-28";

/// Whether `revision` may stand in a handle or receipt: one the server speaks (older servers
/// wrote the call's revision there, and those receipts stay valid).
pub fn known_spec_revision(revision: &str) -> bool {
    Revision::parse(revision).is_some()
}

/// A verifiable run handle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunHandle {
    /// The run's root task.
    pub task_id: String,
    /// The run (the id `bernstein_run` returned).
    pub run_id: String,
    /// working | input_required | completed | failed | cancelled.
    pub status: RunStatus,
    /// Hash of the latest record of the run journal (`sha256:<hex>`).
    pub journal_head: String,
    /// Hash of the audit record committed with that journal record (`sha256:<hex>`).
    pub chain_head: String,
    /// The pinned tasks-extension revision (`2026-07-28`), the same in every era.
    pub spec_revision: String,
    /// SHA-256 over the fields above (`sha256:<hex>`).
    pub receipt_hash: String,
    /// Opaque token naming the run; pass it back as-is.
    pub poll_token: String,
}

/// The handle of run `run_id` in `snapshot`, or `None` when there is no such run.
pub fn run_handle(snapshot: &Snapshot, run_id: &str) -> Option<RunHandle> {
    run_handle_at(snapshot, run_id, SPEC_REVISION)
}

/// [`run_handle`] as a server that wrote `spec_revision` would have issued it (the verifier
/// re-derives old handles this way).
pub fn run_handle_at(snapshot: &Snapshot, run_id: &str, spec_revision: &str) -> Option<RunHandle> {
    let run = snapshot.domain.run(run_id)?;
    let journal_head = snapshot.stream_head(&run_stream(run_id)).to_string();
    let chain_head = run.chain_head.to_string();
    let status = run.status();
    let receipt_hash = receipt_hash(
        &run.root_task_id,
        run_id,
        status,
        &journal_head,
        &chain_head,
        spec_revision,
    );
    Some(RunHandle {
        task_id: run.root_task_id.to_string(),
        run_id: run_id.to_string(),
        status,
        journal_head,
        chain_head,
        spec_revision: spec_revision.to_string(),
        receipt_hash,
        poll_token: poll_token(run_id),
    })
}

/// The receipt hash of a handle's fields.
pub fn receipt_hash(
    task_id: &str,
    run_id: &str,
    status: RunStatus,
    journal_head: &str,
    chain_head: &str,
    spec_revision: &str,
) -> String {
    let pre = json!({
        "taskId": task_id,
        "runId": run_id,
        "status": status.as_str(),
        "journalHead": journal_head,
        "chainHead": chain_head,
        "specRevision": spec_revision,
    });
    // Strings only: a canonical form always exists.
    let bytes = to_canonical_bytes(&pre).expect("a handle pre-image holds only strings");
    Digest::of(&bytes).to_string()
}

/// The poll token of run `run_id`.
pub fn poll_token(run_id: &str) -> String {
    let body = json!({"runId": run_id, "v": POLL_TOKEN_VERSION});
    let bytes = to_canonical_bytes(&body).expect("a poll token holds a string and an integer");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The keys a `bernstein_run_status` answer may carry beside the handle's fields: they are not
/// covered by `receiptHash` and are left out when the handle is checked.
pub const UNSIGNED_KEYS: [&str; 2] = ["outcome", "waiting"];

/// The handle's fields of `answer` (a handle, or an answer carrying [`UNSIGNED_KEYS`] beside
/// it); any other field is refused.
pub fn handle_fields(answer: &Value) -> Result<RunHandle, String> {
    let parsed = match answer {
        Value::Object(m) if UNSIGNED_KEYS.iter().any(|k| m.contains_key(*k)) => {
            let mut m = m.clone();
            for k in UNSIGNED_KEYS {
                m.remove(k);
            }
            RunHandle::deserialize(Value::Object(m))
        }
        _ => RunHandle::deserialize(answer),
    };
    parsed.map_err(|e| format!("not a run handle: {e}"))
}

/// Checks a handle on its own: every field has its shape, `receiptHash` matches the other
/// fields and `pollToken` names `runId`. (Checking `journalHead` and `chainHead` against a
/// ledger is the job of the ledger verifier.) A `bernstein_run_status` answer verifies as its
/// handle: its [`UNSIGNED_KEYS`] are not checked.
pub fn verify_run_handle(handle: &Value) -> Result<(), String> {
    let h = handle_fields(handle)?;
    check_task_id(&h.task_id).map_err(|e| format!("taskId: {e}"))?;
    check_task_id(&h.run_id).map_err(|e| format!("runId: {e}"))?;
    for (name, v) in [
        ("journalHead", &h.journal_head),
        ("chainHead", &h.chain_head),
    ] {
        if Digest::parse(v).is_none() {
            return Err(format!("{name}: expected sha256:<64 lowercase hex>"));
        }
    }
    if !known_spec_revision(&h.spec_revision) {
        return Err(format!(
            "specRevision: {:?} is no protocol revision this server speaks (handles carry {SPEC_REVISION})",
            h.spec_revision
        ));
    }
    let expected = receipt_hash(
        &h.task_id,
        &h.run_id,
        h.status,
        &h.journal_head,
        &h.chain_head,
        &h.spec_revision,
    );
    if h.receipt_hash != expected {
        return Err(format!(
            "receiptHash does not match the handle's fields (expected {expected})"
        ));
    }
    if h.poll_token != poll_token(&h.run_id) {
        return Err("pollToken does not name the handle's runId".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        let d = Digest::of(b"j").to_string();
        let c = Digest::of(b"c").to_string();
        let id = "T-0123456789abcdef";
        json!({
            "taskId": id,
            "runId": id,
            "status": "working",
            "journalHead": d,
            "chainHead": c,
            "specRevision": "2025-11-25",
            "receiptHash": receipt_hash(id, id, RunStatus::Working, &d, &c, "2025-11-25"),
            "pollToken": poll_token(id),
        })
    }

    #[test]
    fn a_consistent_handle_verifies() {
        verify_run_handle(&sample()).unwrap();
    }

    #[test]
    fn the_pinned_revision_is_the_stateless_one_and_old_revisions_still_verify() {
        assert_eq!(
            SPEC_REVISION,
            bernstein_core::protocol::era::Revision::MODERN.as_str()
        );
        let d = Digest::of(b"j").to_string();
        let id = "T-0123456789abcdef";
        for rev in ["2024-11-05", "2025-06-18", SPEC_REVISION, "9999-12-31"] {
            let h = json!({
                "taskId": id, "runId": id, "status": "working", "journalHead": d, "chainHead": d,
                "specRevision": rev,
                "receiptHash": receipt_hash(id, id, RunStatus::Working, &d, &d, rev),
                "pollToken": poll_token(id),
            });
            // A consistent hash over an unknown revision is still refused.
            assert_eq!(verify_run_handle(&h).is_ok(), rev != "9999-12-31", "{rev}");
        }
    }

    #[test]
    fn poll_token_is_base64url_of_canonical_run_identity() {
        let t = poll_token("T-0123456789abcdef");
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        assert_eq!(raw, br#"{"runId":"T-0123456789abcdef","v":1}"#);
        assert!(!t.contains('='));
    }

    #[test]
    fn any_altered_field_fails() {
        let good = sample();
        let edits: Vec<(&str, Value)> = vec![
            ("status", json!("completed")),
            ("journalHead", json!(Digest::of(b"x").to_string())),
            ("chainHead", json!(Digest::of(b"x").to_string())),
            ("specRevision", json!("2025-06-18")),
            ("specRevision", json!("2099-01-01")),
            ("runId", json!("T-fedcba9876543210")),
            ("taskId", json!("T-fedcba9876543210")),
            ("receiptHash", json!(Digest::of(b"x").to_string())),
            ("pollToken", json!(poll_token("T-fedcba9876543210"))),
            ("status", json!("paused")),
            ("journalHead", json!("sha256:abc")),
            ("runId", json!("../x")),
        ];
        for (field, value) in edits {
            let mut h = good.clone();
            h[field] = value.clone();
            assert!(verify_run_handle(&h).is_err(), "{field} = {value} verified");
        }
        let mut extra = good.clone();
        extra["extra"] = json!(1);
        assert!(verify_run_handle(&extra).is_err());
        // What an answer carries beside the handle is not signed, and not checked.
        let mut answer = good.clone();
        answer["outcome"] = json!({"tasks": [], "more": 0});
        answer["waiting"] = json!({"for": "worker"});
        verify_run_handle(&answer).unwrap();
        assert_eq!(
            handle_fields(&answer).unwrap(),
            handle_fields(&good).unwrap()
        );
        answer["status"] = json!("completed");
        assert!(verify_run_handle(&answer).is_err());
        let mut missing = good;
        missing.as_object_mut().unwrap().remove("chainHead");
        assert!(verify_run_handle(&missing).is_err());
        assert!(verify_run_handle(&json!("handle")).is_err());
    }

    #[test]
    fn receipt_hash_has_a_fixed_vector() {
        // Pinned so the pre-image cannot change silently (docs/RECORDS.md quotes it).
        let z = Digest::ZERO.to_string();
        let h = receipt_hash(
            "T-0123456789abcdef",
            "T-0123456789abcdef",
            RunStatus::Working,
            &z,
            &z,
            SPEC_REVISION,
        );
        let pre = format!(
            "{{\"chainHead\":\"{z}\",\"journalHead\":\"{z}\",\"runId\":\"T-0123456789abcdef\",\
             \"specRevision\":\"2026-07-28\",\"status\":\"working\",\"taskId\":\"T-0123456789abcdef\"}}"
        );
        assert_eq!(h, Digest::of(pre.as_bytes()).to_string());
        assert_eq!(
            h,
            "sha256:b8c1ab855c98c9a9c9e51db2bb2443079134521a0bf8da43cd13b9a6ff65f01d"
        );
        let token = poll_token("T-0123456789abcdef");
        assert_eq!(token, "eyJydW5JZCI6IlQtMDEyMzQ1Njc4OWFiY2RlZiIsInYiOjF9");
        let doc = include_str!("../../docs/RECORDS.md");
        assert!(doc.contains(&h) && doc.contains(&token) && doc.contains(&pre));
    }
}
