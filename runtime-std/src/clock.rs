//! Wall-clock time for the core. The core never reads a clock: the runtime reads this one and
//! hands the value in. Tests use [`FixedClock`] for byte-identical replays.

use std::time::{SystemTime, UNIX_EPOCH};

use bernstein_core::Timestamp;

/// A source of wall-clock time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

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

/// A clock stopped at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_after_2024_and_fixed_clock_is_fixed() {
        assert!(SystemClock.now() > Timestamp(1_704_067_200_000));
        assert_eq!(FixedClock(Timestamp(5)).now(), Timestamp(5));
    }
}
