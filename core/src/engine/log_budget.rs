//! How many lines about single peers (refusals, caps; failed TLS handshakes) a server process
//! writes, whichever of its engines writes them: at most [`PER_SECOND`] a second of each kind.
//! A peer that sends a flood of bad requests could otherwise make the server write a line for
//! each, and fill the operator's disk or bury every other line;
//! the lines beyond the budget are counted, and the count is said in one line before the next
//! line written.

use core::time::Duration;

/// Lines about peers written in one second, at most.
pub const PER_SECOND: u32 = 20;

/// The budget's state, on a monotonic clock the caller gives.
#[derive(Clone, Debug, Default)]
pub struct LogBudget {
    window_start: Duration,
    used: u32,
    suppressed: u64,
}

/// What to do with one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Write it, after a line saying how many were left out before it (when not 0).
    Write { left_out: u64 },
    /// Leave it out (it is counted).
    Drop,
}

impl LogBudget {
    pub const fn new() -> LogBudget {
        LogBudget {
            window_start: Duration::ZERO,
            used: 0,
            suppressed: 0,
        }
    }

    /// Whether a line may be written at `now`.
    pub fn admit(&mut self, now: Duration) -> Admit {
        if now.saturating_sub(self.window_start) >= Duration::from_secs(1) {
            self.window_start = now;
            self.used = 0;
        }
        if self.used >= PER_SECOND {
            self.suppressed += 1;
            return Admit::Drop;
        }
        self.used += 1;
        Admit::Write {
            left_out: core::mem::take(&mut self.suppressed),
        }
    }

    /// The line that says `left_out` lines were not written.
    pub fn summary(prefix: &str, left_out: u64) -> String {
        format!(
            "{prefix}{left_out} more lines about single peers were left out (over {PER_SECOND} a second)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_cut_to_the_budget_and_counted() {
        let mut b = LogBudget::new();
        let t = |ms: u64| Duration::from_millis(1000 + ms);
        let written = (0..500)
            .filter(|i| matches!(b.admit(t(*i)), Admit::Write { .. }))
            .count();
        assert_eq!(written, PER_SECOND as usize);
        // The next second: the first line written says how many were left out.
        assert_eq!(
            b.admit(t(1000)),
            Admit::Write {
                left_out: 500 - u64::from(PER_SECOND)
            }
        );
        assert_eq!(b.admit(t(1001)), Admit::Write { left_out: 0 });
    }

    #[test]
    fn a_quiet_server_writes_every_line() {
        let mut b = LogBudget::new();
        for s in 0..100 {
            assert_eq!(
                b.admit(Duration::from_secs(s)),
                Admit::Write { left_out: 0 }
            );
        }
    }
}
