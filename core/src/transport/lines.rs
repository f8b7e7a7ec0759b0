//! Newline-delimited framing for the stdio transport, bounded so that a peer cannot make the
//! server buffer an endless line: the bytes of an over-long line are dropped as they arrive
//! and the line is reported as [`Line::Oversize`].

use std::collections::VecDeque;

/// One frame read from a stdio peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete message without its `\n` (and without a trailing `\r`).
    Message(Vec<u8>),
    /// A line of this many bytes, longer than the limit; its bytes were discarded.
    Oversize(usize),
}

/// Splits a byte stream into bounded lines.
#[derive(Debug)]
pub struct LineFramer {
    limit: usize,
    partial: Vec<u8>,
    /// Length of the current line so far, counting discarded bytes.
    seen: usize,
    ready: VecDeque<Line>,
}

impl LineFramer {
    pub fn new(limit: usize) -> LineFramer {
        LineFramer {
            limit,
            partial: Vec::new(),
            seen: 0,
            ready: VecDeque::new(),
        }
    }

    /// Feeds bytes read from the peer.
    pub fn handle_bytes(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (body, rest, done) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            self.seen += body.len();
            if self.seen <= self.limit.saturating_add(1) {
                // One byte of slack so that a trailing `\r` does not count against the limit.
                self.partial.extend_from_slice(body);
            } else {
                self.partial.clear();
            }
            if done {
                self.end_line();
            }
            bytes = rest;
        }
    }

    /// Signals end of input: a final unterminated line becomes a frame.
    pub fn handle_eof(&mut self) {
        if self.seen > 0 {
            self.end_line();
        }
    }

    /// The next complete frame, if any.
    pub fn poll_line(&mut self) -> Option<Line> {
        self.ready.pop_front()
    }

    /// Whether a complete frame waits to be taken.
    pub fn has_line(&self) -> bool {
        !self.ready.is_empty()
    }

    fn end_line(&mut self) {
        let mut line = std::mem::take(&mut self.partial);
        if line.last() == Some(&b'\r') {
            line.pop();
            self.seen -= 1;
        }
        let frame = if self.seen > self.limit {
            Line::Oversize(self.seen)
        } else {
            Line::Message(line)
        };
        self.seen = 0;
        self.ready.push_back(frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(limit: usize, chunks: &[&[u8]]) -> Vec<Line> {
        let mut f = LineFramer::new(limit);
        let mut out = Vec::new();
        for c in chunks {
            f.handle_bytes(c);
            out.extend(std::iter::from_fn(|| f.poll_line()));
        }
        f.handle_eof();
        out.extend(std::iter::from_fn(|| f.poll_line()));
        out
    }

    #[test]
    fn splits_bounds_and_finishes() {
        let got = frames(8, &[b"{\"a\":1}\r", b"\n0123", b"456789\nla", b"st"]);
        assert_eq!(
            got,
            vec![
                Line::Message(b"{\"a\":1}".to_vec()),
                Line::Oversize(10),
                Line::Message(b"last".to_vec())
            ]
        );
    }

    #[test]
    fn exact_limit_fits_and_crlf_does_not_count() {
        assert_eq!(
            frames(4, &[b"abcd\r\n"]),
            vec![Line::Message(b"abcd".to_vec())]
        );
        assert_eq!(frames(4, &[b"abcde\n"]), vec![Line::Oversize(5)]);
        assert_eq!(frames(4, &[b"\n"]), vec![Line::Message(Vec::new())]);
        assert_eq!(frames(4, &[]), vec![]);
    }

    proptest::proptest! {
        #[test]
        fn chunking_never_changes_frames(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), cut in 0usize..200) {
            let cut = cut.min(data.len());
            let whole = frames(16, &[&data]);
            let split = frames(16, &[&data[..cut], &data[cut..]]);
            proptest::prop_assert_eq!(whole, split);
        }
    }
}
