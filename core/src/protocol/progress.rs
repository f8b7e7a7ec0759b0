//! `notifications/progress` ticks for `bernstein_run_status` calls that carry
//! `params._meta.progressToken`.
//!
//! One tick at most, sent before the result: `progress` = tasks of the run that reached a
//! terminal status, `total` = tasks of the run, `message` rendered from the fold
//! ([`crate::domain::task_view::progress_of`]). A tick that does not strictly advance every
//! tick already sent for the run is suppressed; a sent tick is recorded in the call's own
//! transaction (`run.progress_tick`), so suppression holds across server instances and, since
//! a conflicting append re-runs the request, across racing ones. No token, no tick; anything
//! that goes wrong drops the tick and leaves the result untouched.
//!
//! This module must never change a call's result nor keep state between requests.

use serde_json::{Value, json};

use super::call::{AUDIT_KIND, CallInput, CallReply};
use crate::domain::task_view::{progress_of, tick_advances, tick_draft};
use crate::ledger::{AUDIT_STREAM, Draft, seal};

/// The tool whose calls tick.
pub const TICKING_TOOL: &str = crate::domain::tools::run_status::NAME;

/// The progress token of a request, when it is a string or an integer.
pub fn progress_token(params: Option<&Value>) -> Option<&Value> {
    let token = params?.get("_meta")?.get("progressToken")?;
    match token {
        Value::String(_) => Some(token),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(token),
        _ => None,
    }
}

/// Adds the tick of a successful `bernstein_run_status` call to `reply` (its record joins the
/// call's transaction) and returns the serialized notification, or `None` when no tick is due.
pub fn tick(audit_key: &[u8], input: &CallInput<'_>, reply: &mut CallReply) -> Option<Vec<u8>> {
    let token = progress_token(input.params)?;
    let name = input.params?.get("name")?.as_str()?;
    if name != TICKING_TOOL {
        return None;
    }
    let ok = reply
        .result
        .as_ref()
        .is_ok_and(|v| v.get("isError") == Some(&Value::Bool(false)));
    let run_id = reply.run_id.as_deref().filter(|_| ok)?;
    let snapshot = input.snapshot;
    let run = snapshot.domain.run(run_id)?;
    let progress = progress_of(run);
    if !tick_advances(snapshot, run_id, &progress) {
        return None;
    }
    // The call's records are its audit entry only (the handler never writes), so resealing
    // them with the tick changes no journal anchor.
    if reply
        .records
        .iter()
        .any(|r| r.stream != AUDIT_STREAM || r.kind != AUDIT_KIND)
    {
        return None;
    }
    let mut drafts: Vec<Draft> = reply
        .records
        .iter()
        .map(|r| Draft::new(r.stream.clone(), r.kind.clone(), r.body.clone()))
        .collect();
    drafts.insert(0, tick_draft(run_id, &progress));
    reply.records = seal(
        &snapshot.position,
        |s| snapshot.stream_head(s),
        drafts,
        audit_key,
    );
    let note = json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {
            "progressToken": token,
            "progress": progress.earned,
            "total": progress.total,
            "message": progress.message,
        }
    });
    serde_json::to_vec(&note).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_string_and_integer_tokens_count() {
        for (meta, expected) in [
            (json!({"_meta": {"progressToken": "a"}}), true),
            (json!({"_meta": {"progressToken": 7}}), true),
            (json!({"_meta": {"progressToken": 1.5}}), false),
            (json!({"_meta": {"progressToken": null}}), false),
            (json!({"_meta": {}}), false),
            (json!({}), false),
        ] {
            assert_eq!(progress_token(Some(&meta)).is_some(), expected, "{meta}");
        }
    }
}
