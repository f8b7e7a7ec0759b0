//! A fixed-bucket histogram as a plain value: what a runtime observes (a duration, a batch
//! size) and what the Prometheus exposition renders
//! ([`crate::transport::http::prometheus`]). The runtime owns and locks it; nothing here reads
//! a clock.

/// Upper bounds, in seconds, for durations from half a millisecond to ten seconds.
pub const SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upper bounds for small counts (appends covered by one fsync), powers of two up to 256.
pub const POWERS_OF_TWO: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// Observations counted into buckets with fixed upper bounds (plus the implicit `+Inf`).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket, not cumulative: `counts[i]` holds those in
    /// `(bounds[i-1], bounds[i]]`, the last entry those above every bound.
    counts: Vec<u64>,
    sum: f64,
}

impl Histogram {
    /// An empty histogram over `bounds` (strictly ascending, finite).
    pub fn new(bounds: &'static [f64]) -> Histogram {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        debug_assert!(bounds.iter().all(|b| b.is_finite()));
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
        }
    }

    /// Counts one observation (`NaN` is ignored: it belongs in no bucket).
    pub fn observe(&mut self, value: f64) {
        if value.is_nan() {
            return;
        }
        let i = self.bounds.partition_point(|b| *b < value);
        self.counts[i] += 1;
        self.sum += value;
    }

    /// Adds `other`'s observations (over the same bounds) to these.
    pub fn add(&mut self, other: &Histogram) {
        debug_assert_eq!(self.bounds, other.bounds);
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c += o;
        }
        self.sum += other.sum;
    }

    /// How many observations were counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The sum of every observation.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// The cumulative buckets, lowest bound first, ending with `+Inf` (which equals
    /// [`Histogram::count`]).
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let bounds = self.bounds.iter().copied().chain([f64::INFINITY]);
        bounds.zip(self.counts.iter().scan(0u64, |acc, c| {
            *acc += c;
            Some(*acc)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_whose_bound_holds_them() {
        let mut h = Histogram::new(&[1.0, 2.0]);
        for v in [0.5, 1.0, 1.5, 2.0, 7.0, f64::NAN] {
            h.observe(v);
        }
        let buckets: Vec<(f64, u64)> = h.cumulative().collect();
        assert_eq!(buckets, vec![(1.0, 2), (2.0, 4), (f64::INFINITY, 5)]);
        assert_eq!(h.count(), 5);
        assert_eq!(h.sum(), 12.0);
    }

    #[test]
    fn an_empty_histogram_has_zero_buckets() {
        let h = Histogram::new(SECONDS);
        assert_eq!(h.cumulative().count(), SECONDS.len() + 1);
        assert!(h.cumulative().all(|(_, n)| n == 0));
        assert_eq!(h.count(), 0);
    }
}
