//! Tallies of tool calls per minute, folded from the `mcp.stateless_call` audit records: what
//! the dashboard shows as calls per tool, refusals by code and the calls-per-minute sparkline.
//!
//! A minute is `ts / 60_000` of the record's `ts` (the server's clock when it served the call).
//! Only the [`KEPT_MINUTES`] minutes up to the newest one seen are kept, so the tallies stay a
//! few kilobytes at any ledger size; which minutes are kept depends only on the records, so
//! every server folds the same tallies.
//!
//! Every key is bounded ([`tally_key`]): at most [`MAX_KEY_BYTES`] bytes of the tool-name
//! alphabet, else [`UNKNOWN_TOOL`]; at most [`MAX_KEYS`] keys in a minute's map and in a
//! window's, the calls of any further key counted under [`OTHER_KEY`]. New records already name
//! an unknown tool by the marker; the bound also holds for an older ledger that recorded the
//! client's bytes.

use std::collections::BTreeMap;

use imbl::OrdMap;
use serde::{Deserialize, Serialize};

use bernstein_core::ledger::audit::{CallAudit, UNKNOWN_TOOL};

/// How many minutes of tallies are kept (a day).
pub const KEPT_MINUTES: u64 = 24 * 60;

/// The longest key a tally keeps (a tool name or a refusal code).
pub const MAX_KEY_BYTES: usize = 64;
/// The most keys one tally map holds, [`OTHER_KEY`] included.
pub const MAX_KEYS: usize = 64;
/// Where the counts of keys beyond [`MAX_KEYS`] go.
pub const OTHER_KEY: &str = "other";

/// The key a tally counts `name` under: itself when it is at most [`MAX_KEY_BYTES`] bytes of
/// `[A-Za-z0-9_.-]` (every tool name and refusal code), else [`UNKNOWN_TOOL`].
pub fn tally_key(name: &str) -> &str {
    let shaped = name.len() <= MAX_KEY_BYTES
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
    if shaped { name } else { UNKNOWN_TOOL }
}

/// The key a tally of principals counts a call made with an OAuth token under: `sub (iss)`
/// when it is at most [`MAX_PRINCIPAL_BYTES`] printable bytes, else [`UNKNOWN_TOOL`].
pub fn principal_key(iss: &str, sub: &str) -> String {
    let key = format!("{sub} ({iss})");
    let shaped = key.len() <= MAX_PRINCIPAL_BYTES && key.chars().all(|c| !c.is_control());
    if shaped {
        key
    } else {
        UNKNOWN_TOOL.to_string()
    }
}

/// The longest principal key a tally keeps.
pub const MAX_PRINCIPAL_BYTES: usize = 200;

/// Adds `n` to `key` in `map`, keeping the map within [`MAX_KEYS`] keys.
fn count(map: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    count_shaped(map, tally_key(key), n);
}

/// [`count`] of a key already bounded.
fn count_shaped(map: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    if let Some(v) = map.get_mut(key) {
        *v += n;
        return;
    }
    // One place is kept for `OTHER_KEY`.
    let key = if map.len() < MAX_KEYS - 1 {
        key
    } else {
        OTHER_KEY
    };
    *map.entry(key.to_string()).or_default() += n;
}

/// One minute's calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinuteTally {
    /// Calls by tool name ([`tally_key`] of the audit record's `tool`).
    pub calls: BTreeMap<String, u64>,
    /// Refused calls by the audit record's `error` code.
    pub refusals: BTreeMap<String, u64>,
    /// Calls made with an OAuth access token, by [`principal_key`] (absent while there is none:
    /// a ledger without OAuth folds what it always did).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub principals: BTreeMap<String, u64>,
}

/// The kept minutes, by minute number.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallStats {
    minutes: OrdMap<u64, MinuteTally>,
    newest: u64,
}

/// The tallies of a window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowTally {
    pub by_tool: BTreeMap<String, u64>,
    pub refusals: BTreeMap<String, u64>,
    /// Calls made with an OAuth access token, by [`principal_key`].
    pub by_principal: BTreeMap<String, u64>,
    /// `(minute start in ms, calls, refused)` for every minute of the window, oldest first.
    pub per_minute: Vec<(u64, u64, u64)>,
}

impl CallStats {
    /// Folds the body of one `mcp.stateless_call` record.
    pub(crate) fn fold(&mut self, audit: &CallAudit<'_>) {
        let (tool, ts) = (audit.tool.as_ref(), audit.ts);
        if tool.is_empty() {
            return;
        }
        let minute = ts / 60_000;
        if minute + KEPT_MINUTES <= self.newest {
            return;
        }
        let tally = self.minutes.entry(minute).or_default();
        count(&mut tally.calls, tool, 1);
        if !audit.ok {
            let code = audit.error.as_deref().unwrap_or("error");
            count(&mut tally.refusals, code, 1);
        }
        if let Some(p) = &audit.principal {
            count_shaped(&mut tally.principals, &principal_key(&p.iss, &p.sub), 1);
        }
        if minute > self.newest {
            self.newest = minute;
            let oldest_kept = minute.saturating_sub(KEPT_MINUTES - 1);
            while let Some(&(m, _)) = self.minutes.get_min() {
                if m >= oldest_kept {
                    break;
                }
                self.minutes.remove(&m);
            }
        }
    }

    /// The tallies of the `minutes` minutes up to and including the one holding `now_ms`.
    pub fn window(&self, now_ms: u64, minutes: u64) -> WindowTally {
        let minutes = minutes.clamp(1, KEPT_MINUTES);
        let last = now_ms / 60_000;
        let first = last.saturating_sub(minutes - 1);
        let mut out = WindowTally::default();
        for m in first..=last {
            let (calls, refused) = match self.minutes.get(&m) {
                None => (0, 0),
                Some(t) => {
                    for (tool, n) in &t.calls {
                        count(&mut out.by_tool, tool, *n);
                    }
                    for (code, n) in &t.refusals {
                        count(&mut out.refusals, code, *n);
                    }
                    for (who, n) in &t.principals {
                        count_shaped(&mut out.by_principal, who, *n);
                    }
                    (t.calls.values().sum(), t.refusals.values().sum())
                }
            };
            out.per_minute.push((m * 60_000, calls, refused));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn call(tool: &str, ts: u64, error: Option<&str>) -> Value {
        match error {
            None => json!({"tool": tool, "ts": ts, "ok": true}),
            Some(e) => json!({"tool": tool, "ts": ts, "ok": false, "error": e}),
        }
    }

    impl CallStats {
        /// Folds an audit body as the projection reads it.
        fn fold_value(&mut self, body: &Value) {
            self.fold(&CallAudit::read(body));
        }
    }

    #[test]
    fn calls_with_a_token_are_counted_by_principal_and_others_change_nothing() {
        let mut plain = CallStats::default();
        plain.fold_value(&call("t", 60_000, None));
        let before = serde_json::to_string(&plain).unwrap();
        assert!(!before.contains("principals"), "{before}");
        let mut s = plain.clone();
        let with = |sub: &str| {
            json!({"tool": "t", "ts": 60_000, "ok": true,
                   "principal": {"iss": "https://idp.example", "sub": sub}})
        };
        s.fold_value(&with("alice"));
        s.fold_value(&with("alice"));
        s.fold_value(&with("bob\u{7}"));
        let w = s.window(60_000, 1);
        assert_eq!(w.by_principal["alice (https://idp.example)"], 2);
        assert_eq!(
            w.by_principal[UNKNOWN_TOOL], 1,
            "a subject with control characters"
        );
        assert_eq!(w.by_tool["t"], 4);
        assert!(plain.window(60_000, 1).by_principal.is_empty());
    }

    #[test]
    fn a_window_counts_its_minutes_only() {
        let mut s = CallStats::default();
        let t0 = 1_000 * 60_000;
        s.fold_value(&call("bernstein_run", t0, None));
        s.fold_value(&call("bernstein_run", t0 + 1_000, None));
        s.fold_value(&call(
            "bernstein_status",
            t0 + 60_000,
            Some("invalid_arguments"),
        ));
        s.fold_value(&call("bernstein_status", t0 + 5 * 60_000, None));
        let w = s.window(t0 + 60_000, 2);
        assert_eq!(w.by_tool.get("bernstein_run"), Some(&2));
        assert_eq!(w.by_tool.get("bernstein_status"), Some(&1));
        assert_eq!(w.refusals.get("invalid_arguments"), Some(&1));
        assert_eq!(w.per_minute, vec![(t0, 2, 0), (t0 + 60_000, 1, 1)]);
        let later = s.window(t0 + 5 * 60_000, 1);
        assert_eq!(later.by_tool.get("bernstein_status"), Some(&1));
        assert!(later.refusals.is_empty());
    }

    #[test]
    fn only_a_day_is_kept() {
        let mut s = CallStats::default();
        for m in 0..(KEPT_MINUTES + 10) {
            s.fold_value(&call("t", m * 60_000, None));
        }
        assert_eq!(s.minutes.len() as u64, KEPT_MINUTES);
        assert_eq!(s.minutes.get_min().map(|(m, _)| *m), Some(10));
        // A straggler older than the kept day is not counted.
        s.fold_value(&call("t", 60_000, None));
        assert_eq!(s.minutes.len() as u64, KEPT_MINUTES);
        // Records without a tool or a time are not calls.
        s.fold_value(&json!({"ts": 5}));
        s.fold_value(&json!({"tool": "t"}));
        assert_eq!(
            s.window((KEPT_MINUTES + 9) * 60_000, KEPT_MINUTES)
                .per_minute
                .len() as u64,
            KEPT_MINUTES
        );
    }

    /// An older ledger recorded names as the client sent them: each minute and each window
    /// still holds at most `MAX_KEYS` keys of at most `MAX_KEY_BYTES` bytes.
    #[test]
    fn keys_are_bounded_in_length_and_number() {
        let mut s = CallStats::default();
        let t0 = 1_000 * 60_000;
        for m in 0..3 {
            for i in 0..(2 * MAX_KEYS) {
                let ts = t0 + m * 60_000;
                s.fold_value(&call(&format!("t{m}_{i}"), ts, Some(&format!("code_{i}"))));
            }
            s.fold_value(&call(&"y".repeat(MAX_KEY_BYTES + 1), t0 + m * 60_000, None));
            s.fold_value(&call("a\nb", t0 + m * 60_000, None));
        }
        for (_, t) in s.minutes.iter() {
            assert_eq!(t.calls.len(), MAX_KEYS);
            assert_eq!(t.refusals.len(), MAX_KEYS);
        }
        let w = s.window(t0 + 2 * 60_000, 3);
        assert!(w.by_tool.len() <= MAX_KEYS);
        assert!(w.by_tool.keys().all(|k| k.len() <= MAX_KEY_BYTES));
        let total: u64 = w.by_tool.values().sum();
        assert_eq!(total, 3 * (2 * MAX_KEYS as u64 + 2));
        assert!(w.by_tool[OTHER_KEY] > 0);
        assert_eq!(tally_key("bernstein_run"), "bernstein_run");
        assert_eq!(tally_key("load_skill\nAuthorization"), UNKNOWN_TOOL);
    }
}
