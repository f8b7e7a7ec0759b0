//! Wall-clock time as a value. The runtime reads the clock; the core only receives it.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch (UTC), as observed by the runtime.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// 2027-07-28T00:00:00Z: the end of the legacy `Mcp-Session-Id` grace period.
    pub const LEGACY_SESSION_CUTOFF: Timestamp = Timestamp(1_816_732_800_000);

    /// RFC 3339 / ISO 8601 in UTC with millisecond precision, e.g. `2026-11-30T08:07:12.000Z`.
    pub fn to_rfc3339(self) -> String {
        let ms = self.0 % 1000;
        let secs = self.0 / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
        let (y, mo, d) = civil_from_days(days as i64);
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
    }

    /// The UTC calendar date, `YYYY-MM-DD`.
    pub fn date(self) -> String {
        self.to_rfc3339()[..10].to_string()
    }
}

/// A source of wall-clock time. The core never reads one: a runtime holds a clock (the
/// system's, or [`FixedClock`] in tests) and hands its readings in.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// A clock stopped at one instant, for byte-identical replays.
#[derive(Clone, Copy, Debug, Default)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's civil calendar algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            Timestamp(951_782_400_123).to_rfc3339(),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            Timestamp::LEGACY_SESSION_CUTOFF.to_rfc3339(),
            "2027-07-28T00:00:00.000Z"
        );
    }

    #[test]
    fn fixed_clock_is_fixed() {
        assert_eq!(FixedClock(Timestamp(5)).now(), Timestamp(5));
    }
}
