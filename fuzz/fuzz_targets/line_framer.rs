//! The stdio `LineFramer`: arbitrary bytes, a fuzzed line limit and fuzzed chunking.
//! Invariants: the frames equal a reference split of the whole input (lines on `\n`, one
//! trailing `\r` dropped when the line fits, lines over the limit reported as `Oversize` with
//! their length, a final unterminated line framed at EOF), whatever the chunking; no message
//! is longer than the limit or holds a `\n`.
#![no_main]

use bernstein_core::transport::{Line, LineFramer};
use libfuzzer_sys::fuzz_target;

fn reference(limit: usize, data: &[u8]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let last = parts.pop().unwrap_or_default();
    if !last.is_empty() {
        parts.push(last);
    }
    for mut line in parts {
        if line.len() <= limit + 1 && line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        out.push(if line.len() > limit {
            Line::Oversize(line.len())
        } else {
            Line::Message(line.to_vec())
        });
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&[limit, step], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let limit = usize::from(limit % 64);
    let step = usize::from(step).max(1);
    let mut framer = LineFramer::new(limit);
    let mut got = Vec::new();
    for chunk in rest.chunks(step) {
        framer.handle_bytes(chunk);
        got.extend(std::iter::from_fn(|| framer.poll_line()));
    }
    framer.handle_eof();
    got.extend(std::iter::from_fn(|| framer.poll_line()));
    for line in &got {
        if let Line::Message(m) = line {
            assert!(m.len() <= limit && !m.contains(&b'\n'));
        }
    }
    assert_eq!(got, reference(limit, rest));
});
