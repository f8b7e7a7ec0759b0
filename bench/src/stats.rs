//! Timing statistics: run a closure many times and report percentiles.

use std::time::{Duration, Instant};

/// Percentiles of a set of samples.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub p50: Duration,
    pub p99: Duration,
    pub mean: Duration,
}

impl Summary {
    pub fn of(mut samples: Vec<Duration>) -> Summary {
        assert!(!samples.is_empty(), "a summary needs samples");
        samples.sort();
        let n = samples.len();
        let total: Duration = samples.iter().sum();
        Summary {
            p50: samples[n / 2],
            p99: samples[(n * 99 / 100).min(n - 1)],
            mean: total / n as u32,
        }
    }

    /// Calls per second at the mean.
    pub fn rate(&self) -> f64 {
        1.0 / self.mean.as_secs_f64()
    }
}

/// Times `f` `n` times after `warmup` untimed runs.
pub fn time_each(warmup: usize, n: usize, mut f: impl FnMut()) -> Summary {
    for _ in 0..warmup {
        f();
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    Summary::of(samples)
}

/// Human-readable duration with a unit that fits.
pub fn fmt(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 10_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{:.2} ms", ns as f64 / 1e6)
    }
}
