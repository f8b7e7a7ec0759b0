//! The system's wall clock, the [`Clock`] a server hands the core (the trait and the
//! [`FixedClock`](bernstein_ledger::time::FixedClock) of tests are the core's).

use std::time::{SystemTime, UNIX_EPOCH};

use bernstein_ledger::time::Clock;
use bernstein_ledger::time::Timestamp;

/// The system's real-time clock (milliseconds since the Unix epoch; 0 if the clock is set
/// before 1970).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Timestamp(u64::try_from(ms).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_after_2024() {
        assert!(SystemClock.now() > Timestamp(1_704_067_200_000));
    }
}
