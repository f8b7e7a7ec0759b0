//! Tallies of tool calls per minute, folded from the `mcp.stateless_call` audit records: what
//! the dashboard shows as calls per tool, refusals by code and the calls-per-minute sparkline.
//!
//! A minute is `ts / 60_000` of the record's `ts` (the server's clock when it served the call).
//! Only the [`KEPT_MINUTES`] minutes up to the newest one seen are kept, so the tallies stay a
//! few kilobytes at any ledger size; which minutes are kept depends only on the records, so
//! every server folds the same tallies.

use std::collections::BTreeMap;

use imbl::OrdMap;
use serde::{Deserialize, Serialize};

use crate::ledger::audit::CallAudit;

/// How many minutes of tallies are kept (a day).
pub const KEPT_MINUTES: u64 = 24 * 60;

/// One minute's calls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinuteTally {
    /// Calls by tool name (as the caller named it).
    pub calls: BTreeMap<String, u64>,
    /// Refused calls by the audit record's `error` code.
    pub refusals: BTreeMap<String, u64>,
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
        *tally.calls.entry(tool.to_string()).or_default() += 1;
        if !audit.ok {
            let code = audit.error.as_deref().unwrap_or("error");
            *tally.refusals.entry(code.to_string()).or_default() += 1;
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
                        *out.by_tool.entry(tool.clone()).or_default() += n;
                    }
                    for (code, n) in &t.refusals {
                        *out.refusals.entry(code.clone()).or_default() += n;
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
}
