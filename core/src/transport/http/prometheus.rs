//! The Prometheus text exposition format, version 0.0.4: the body of `GET /metrics`.
//!
//! A family is written as `# HELP` and `# TYPE` lines followed by its samples, all together;
//! a histogram sample expands to its cumulative `_bucket{le=…}` lines (ascending, ending with
//! `+Inf`), `_sum` and `_count`. Label values and help texts are escaped as the format says
//! (`\\`, `\"` in label values, `\n`); values are written as the shortest decimal that reads
//! back exactly, with `+Inf`, `-Inf` and `NaN` spelled out. The caller chooses names and
//! labels (bounded sets, never a peer's string); this module only writes them.

use std::fmt::Write as _;

use crate::histogram::Histogram;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The type of a metric family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// An exposition being written, one family after another.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
    family: String,
    kind: Option<Kind>,
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Starts the family `name`: its help and type lines. Its samples follow.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Exposition {
        debug_assert!(valid_name(name), "metric name {name:?}");
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.as_str());
        self.family = name.to_string();
        self.kind = Some(kind);
        self
    }

    /// One sample of the current counter or gauge family.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: f64) -> &mut Exposition {
        debug_assert!(matches!(self.kind, Some(Kind::Counter | Kind::Gauge)));
        let name = std::mem::take(&mut self.family);
        self.line(&name, labels, None, value);
        self.family = name;
        self
    }

    /// One (labelled) histogram of the current histogram family.
    pub fn histogram(&mut self, labels: &[(&str, &str)], h: &Histogram) -> &mut Exposition {
        debug_assert_eq!(self.kind, Some(Kind::Histogram));
        let name = std::mem::take(&mut self.family);
        let bucket = format!("{name}_bucket");
        for (le, n) in h.cumulative() {
            self.line(&bucket, labels, Some(&number(le)), n as f64);
        }
        self.line(&format!("{name}_sum"), labels, None, h.sum());
        self.line(&format!("{name}_count"), labels, None, h.count() as f64);
        self.family = name;
        self
    }

    /// The text, every line ending with `\n`.
    pub fn finish(self) -> String {
        self.out
    }

    fn line(&mut self, name: &str, labels: &[(&str, &str)], le: Option<&str>, value: f64) {
        self.out.push_str(name);
        let le = le.map(|v| ("le", v));
        let mut all = labels.iter().copied().chain(le).peekable();
        if all.peek().is_some() {
            self.out.push('{');
            for (i, (k, v)) in all.enumerate() {
                debug_assert!(valid_label(k), "label name {k:?}");
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }
}

/// A value as the format writes it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        // Rust's shortest round-trip form, never an exponent: `5`, `0.0005`, `2.5`.
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label(name: &str) -> bool {
    valid_name(name) && !name.contains(':') && !name.starts_with("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_gauges_with_and_without_labels() {
        let mut x = Exposition::new();
        x.family("demo_requests_total", Kind::Counter, "Requests served.")
            .sample(&[("method", "tools/call")], 3.0)
            .sample(&[("method", "other")], 0.0);
        x.family("demo_open", Kind::Gauge, "Open things.")
            .sample(&[], 2.5);
        assert_eq!(
            x.finish(),
            "# HELP demo_requests_total Requests served.\n\
             # TYPE demo_requests_total counter\n\
             demo_requests_total{method=\"tools/call\"} 3\n\
             demo_requests_total{method=\"other\"} 0\n\
             # HELP demo_open Open things.\n\
             # TYPE demo_open gauge\n\
             demo_open 2.5\n"
        );
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut x = Exposition::new();
        x.family("demo", Kind::Gauge, "A \\ help\nline with \"quotes\"")
            .sample(&[("a", "back\\slash \"q\"\nnew"), ("b", "é")], 1.0);
        assert_eq!(
            x.finish(),
            "# HELP demo A \\\\ help\\nline with \"quotes\"\n\
             # TYPE demo gauge\n\
             demo{a=\"back\\\\slash \\\"q\\\"\\nnew\",b=\"é\"} 1\n"
        );
    }

    #[test]
    fn histograms_write_cumulative_buckets_up_to_inf_then_sum_and_count() {
        let mut h = Histogram::new(&[0.0005, 0.1, 10.0]);
        for v in [0.0001, 0.05, 0.07, 11.0] {
            h.observe(v);
        }
        let mut x = Exposition::new();
        x.family("demo_seconds", Kind::Histogram, "Durations.")
            .histogram(&[("tool", "t")], &h);
        let text = x.finish();
        let expected = "# HELP demo_seconds Durations.\n\
             # TYPE demo_seconds histogram\n\
             demo_seconds_bucket{tool=\"t\",le=\"0.0005\"} 1\n\
             demo_seconds_bucket{tool=\"t\",le=\"0.1\"} 3\n\
             demo_seconds_bucket{tool=\"t\",le=\"10\"} 3\n\
             demo_seconds_bucket{tool=\"t\",le=\"+Inf\"} 4\n";
        assert!(text.starts_with(expected), "{text}");
        let tail: Vec<&str> = text.lines().skip(6).collect();
        assert_eq!(tail.len(), 2, "{text}");
        let sum: f64 = tail[0]
            .strip_prefix("demo_seconds_sum{tool=\"t\"} ")
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - 11.1201).abs() < 1e-9, "{sum}");
        assert_eq!(tail[1], "demo_seconds_count{tool=\"t\"} 4");
    }

    #[test]
    fn special_values_are_spelled_out() {
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(1_700_000_000.123), "1700000000.123");
        assert_eq!(number(1e20), "100000000000000000000");
    }

    #[test]
    fn names_are_checked() {
        assert!(valid_name("bernstein_tool_calls_total"));
        assert!(!valid_name("9lives") && !valid_name("a-b") && !valid_name(""));
        assert!(valid_label("le") && !valid_label("__name__") && !valid_label("a:b"));
    }
}
