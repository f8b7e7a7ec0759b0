//! `notifications/progress` for `tools/call` requests that carry `params._meta.progressToken`:
//! the steps a catalogue tool reports itself ([`crate::protocol::registry::ToolOutput::progress`],
//! rendered by [`tool_steps`]) and the ticks of the catalogue's ticking tool ([`tick`];
//! [`TaskHooks::ticking_tool`], Bernstein's `bernstein_run_status`).
//!
//! A tick is what [`TaskHooks::tick`] says is due for the run the call read: its step and the
//! record that says it was sent, only when it strictly advances every tick already sent for the
//! run. A plain poll sends one tick at most, before the result. A long poll (`wait_ms`) sends
//! the current tick when it starts waiting and one each time the ledger moves while it waits
//! ([`waiting_tick`]: the pending round then appends the tick record alone and sends its
//! notification at once), then the result (with a last tick if the final round advanced). A
//! sent tick's record joins the call's own transaction, so suppression holds across server
//! instances and, since a conflicting append re-runs the request, across racing ones. No token,
//! no tick; anything that goes wrong drops the tick and leaves the result untouched.
//!
//! This module must never change a call's result nor keep state between requests.

use serde_json::{Value, json};

use super::Server;
use super::call::{AUDIT_KIND, CallInput, CallReply};
use super::model::{CallParams, Meta};
use super::registry::{Progress, TaskHooks};
use crate::ledger::Fold;
use crate::ledger::{AUDIT_STREAM, Draft, Record, seal};

/// The progress token of a request, when it is a string or an integer.
pub fn progress_token(params: Option<&Value>) -> Option<&Value> {
    Meta::of(params).progress_token()
}

/// The serialized `notifications/progress` of a tool's own steps, in order; none without a
/// progress token. A step that does not advance past the one before is dropped (the
/// revision requires progress to increase).
pub fn tool_steps(params: Option<&Value>, steps: &[Progress]) -> Vec<Vec<u8>> {
    let Some(token) = progress_token(params) else {
        return Vec::new();
    };
    let mut last: Option<u64> = None;
    let mut notes = Vec::new();
    for step in steps {
        if last.is_some_and(|l| step.progress <= l) {
            continue;
        }
        last = Some(step.progress);
        notes.extend(note(token, step));
    }
    notes
}

fn note(token: &Value, step: &Progress) -> Option<Vec<u8>> {
    let mut params = serde_json::Map::new();
    params.insert("progressToken".into(), token.clone());
    params.insert("progress".into(), Value::from(step.progress));
    if let Some(total) = step.total {
        params.insert("total".into(), Value::from(total));
    }
    if let Some(message) = &step.message {
        params.insert("message".into(), Value::String(message.clone()));
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params});
    serde_json::to_vec(&note).ok()
}

/// The tick of a ticking tool's long poll that is waiting (`reply` is pending): the
/// serialized notification and the records that send it once (the tick record alone: the
/// call's audit record is written with its result), or `None` when no tick is due.
pub fn waiting_tick<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    reply: &CallReply,
) -> Option<(Vec<u8>, Vec<Record>)> {
    let token = progress_token(input.params)?;
    let run_id = reply
        .run_id
        .as_deref()
        .filter(|_| reply.wait_ms.is_some())?;
    let (step, draft) = due(server.catalog.tasks.as_ref()?, input, run_id)?;
    let snapshot = input.snapshot;
    let records = seal(
        &snapshot.position,
        |s| snapshot.stream_head(s),
        vec![draft],
        &server.config.audit_key,
    );
    Some((note(token, &step)?, records))
}

/// The run's tick when the call is a ticking one and the tick advances every tick sent.
fn due<F: Fold>(
    hooks: &TaskHooks<F>,
    input: &CallInput<'_, F>,
    run_id: &str,
) -> Option<(Progress, Draft)> {
    if CallParams::read(input.params).ok()?.name != hooks.ticking_tool {
        return None;
    }
    (hooks.tick)(input.snapshot, run_id)
}

/// Adds the tick of a successful ticking call to `reply` (its record joins the call's
/// transaction) and returns the serialized notification, or `None` when no tick is due.
pub fn tick<F: Fold>(
    server: &Server<F>,
    input: &CallInput<'_, F>,
    reply: &mut CallReply,
) -> Option<Vec<u8>> {
    let token = progress_token(input.params)?;
    let ok = reply
        .result
        .as_ref()
        .is_ok_and(|v| v.get("isError") == Some(&Value::Bool(false)));
    let run_id = reply.run_id.as_deref().filter(|_| ok)?;
    let (step, draft) = due(server.catalog.tasks.as_ref()?, input, run_id)?;
    let snapshot = input.snapshot;
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
    drafts.insert(0, draft);
    reply.records = seal(
        &snapshot.position,
        |s| snapshot.stream_head(s),
        drafts,
        &server.config.audit_key,
    );
    note(token, &step)
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

    fn step(progress: u64, message: Option<&str>) -> Progress {
        Progress {
            progress,
            total: Some(100),
            message: message.map(String::from),
        }
    }

    #[test]
    fn tool_steps_need_a_token_and_must_increase() {
        let steps = [
            step(0, None),
            step(50, Some("half")),
            step(50, None),
            step(100, None),
        ];
        assert!(tool_steps(Some(&json!({"name": "t"})), &steps).is_empty());
        let params = json!({"name": "t", "_meta": {"progressToken": "p-1"}});
        let notes: Vec<Value> = tool_steps(Some(&params), &steps)
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap())
            .collect();
        let progress: Vec<&Value> = notes.iter().map(|n| &n["params"]["progress"]).collect();
        assert_eq!(progress, [&json!(0), &json!(50), &json!(100)]);
        assert_eq!(
            notes[1],
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "p-1", "progress": 50, "total": 100, "message": "half"}})
        );
        assert!(notes[0]["params"].get("message").is_none());
    }
}
