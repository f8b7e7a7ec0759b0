//! Reading a stored record line at hashing speed, without building a JSON value.
//!
//! A record line is canonical JSON (docs/FORMATS.md §2–3), so its members stand in one fixed
//! order: `body`, `hash`, `kind`, `mac`, `prev`, `seq`, `sprev`, `stream`, `txn`. [`RecordLine::
//! scan`] walks the line once, checks that it is exactly that template with a canonical body
//! (keys strictly increasing by their bytes, no whitespace, canonical escapes and integers),
//! and hands back the field values plus the body's bytes. The pre-image (the line without its
//! `hash` and `mac` members) is then three slices of the line, fed to SHA-256 and HMAC without
//! copying.
//!
//! The scan accepts exactly what the reference parse [`super::Record::parse_line`] accepts
//! (serde plus re-serialization); the property tests in `line/tests.rs` hold the two to it.
//! When the scan refuses a line, the reference parse names the reason.

use std::borrow::Cow;

use hmac::{Hmac, Mac};
use sha2::{Digest as _, Sha256};

use crate::digest::Digest;

#[cfg(test)]
mod tests;

/// Deepest nesting of arrays and objects a record may hold, counting the record itself; the
/// same limit as the JSON parser of the reference parse (serde_json refuses the 128th level).
pub const MAX_DEPTH: usize = 127;

/// The audit key, prepared once (HMAC's keyed inner and outer states), for many records.
#[derive(Clone)]
pub struct RecordKey {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordKey(..)")
    }
}

impl RecordKey {
    pub fn new(key: &[u8]) -> RecordKey {
        RecordKey {
            mac: Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length"),
        }
    }
}

/// The fields of one record line, borrowed from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLine<'a> {
    pub seq: u64,
    pub prev: Digest,
    pub txn: [u32; 2],
    pub stream: Cow<'a, str>,
    pub sprev: Digest,
    pub kind: Cow<'a, str>,
    /// The body's canonical JSON bytes.
    pub body: &'a [u8],
    pub hash: Digest,
    pub mac: Option<[u8; 32]>,
    /// The pre-image as slices of the line: `line[..a]`, `line[b..c]`, `line[d..]`.
    cuts: [usize; 4],
    line: &'a [u8],
}

/// What [`RecordLine::check`] found wrong with a well-formed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SealError {
    HashMismatch,
    MissingMac,
    BadMac,
}

impl<'a> RecordLine<'a> {
    /// Scans `line` (without its `\n`); `None` if it is not a canonical record line.
    pub fn scan(line: &'a [u8]) -> Option<RecordLine<'a>> {
        std::str::from_utf8(line).ok()?;
        let mut c = Cursor { b: line, i: 0 };
        c.lit(b"{\"body\":")?;
        let body_start = c.i;
        c.value(1)?;
        let body = &line[body_start..c.i];
        let hash_at = c.i;
        c.lit(b",\"hash\":")?;
        let hash = c.digest()?;
        let kind_at = c.i;
        c.lit(b",\"kind\":")?;
        let kind = c.string_value()?;
        let mac_at = c.i;
        let mac = if c.peek_lit(b",\"mac\":") {
            c.lit(b",\"mac\":\"hmac-sha256:")?;
            let tag = c.hex32()?;
            c.lit(b"\"")?;
            Some(tag)
        } else {
            None
        };
        let prev_at = c.i;
        c.lit(b",\"prev\":")?;
        let prev = c.digest()?;
        c.lit(b",\"seq\":")?;
        let seq = c.uint()?;
        c.lit(b",\"sprev\":")?;
        let sprev = c.digest()?;
        c.lit(b",\"stream\":")?;
        let stream = c.string_value()?;
        c.lit(b",\"txn\":[")?;
        let index = u32::try_from(c.uint()?).ok()?;
        c.lit(b",")?;
        let count = u32::try_from(c.uint()?).ok()?;
        c.lit(b"]}")?;
        if c.i != line.len() {
            return None;
        }
        Some(RecordLine {
            seq,
            prev,
            txn: [index, count],
            stream,
            sprev,
            kind,
            body,
            hash,
            mac,
            cuts: [hash_at, kind_at, mac_at, prev_at],
            line,
        })
    }

    /// Feeds the pre-image to `sink`, in three pieces.
    fn preimage(&self, mut sink: impl FnMut(&[u8])) {
        let [hash_at, kind_at, mac_at, prev_at] = self.cuts;
        sink(&self.line[..hash_at]);
        sink(&self.line[kind_at..mac_at]);
        sink(&self.line[prev_at..]);
    }

    /// The pre-image's bytes (the canonical record without `hash` and `mac`).
    pub fn preimage_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.line.len());
        self.preimage(|part| out.extend_from_slice(part));
        out
    }

    /// Checks `hash`, and with `key` the `mac`, which every record must carry.
    pub fn check(&self, key: Option<&RecordKey>) -> Result<(), SealError> {
        let mut sha = Sha256::new();
        let mut mac = key.map(|k| k.mac.clone());
        self.preimage(|part| {
            sha.update(part);
            if let Some(m) = mac.as_mut() {
                m.update(part);
            }
        });
        if Digest(sha.finalize().into()) != self.hash {
            return Err(SealError::HashMismatch);
        }
        let Some(tag) = self.mac else {
            return Err(SealError::MissingMac);
        };
        if let Some(m) = mac
            && m.verify_slice(&tag).is_err()
        {
            return Err(SealError::BadMac);
        }
        Ok(())
    }

    /// The line this record was read from.
    pub fn line(&self) -> &'a [u8] {
        self.line
    }
}

/// Value of a lowercase hex digit; any other byte maps to 0x10 (rejected: the canonical form
/// has only `0-9a-f`).
const NIBBLE: [u8; 256] = {
    let mut t = [0x10u8; 256];
    let mut c = 0;
    while c < 10 {
        t[b'0' as usize + c] = c as u8;
        c += 1;
    }
    let mut c = 0;
    while c < 6 {
        t[b'a' as usize + c] = 10 + c as u8;
        c += 1;
    }
    t
};

/// A position in a line being scanned.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn peek_lit(&self, lit: &[u8]) -> bool {
        self.b[self.i..].starts_with(lit)
    }

    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        if self.peek_lit(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// 64 lowercase hex digits.
    fn hex32(&mut self) -> Option<[u8; 32]> {
        let hex = self.b.get(self.i..self.i + 64)?;
        let mut out = [0u8; 32];
        let mut bad = 0u8;
        for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
            let (hi, lo) = (NIBBLE[usize::from(pair[0])], NIBBLE[usize::from(pair[1])]);
            bad |= (hi | lo) & 0x10;
            *o = (hi << 4) | (lo & 0x0f);
        }
        if bad != 0 {
            return None;
        }
        self.i += 64;
        Some(out)
    }

    /// `"sha256:<64 lowercase hex>"`.
    fn digest(&mut self) -> Option<Digest> {
        self.lit(b"\"sha256:")?;
        let d = self.hex32()?;
        self.lit(b"\"")?;
        Some(Digest(d))
    }

    /// A canonical unsigned integer that fits a u64.
    fn uint(&mut self) -> Option<u64> {
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        if digits == 0 || (digits > 1 && self.b[start] == b'0') {
            return None;
        }
        Some(n)
    }

    /// A canonical integer of JSON: a u64, or a negative i64.
    fn int(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
            let n = self.uint()?;
            // No `-0`, nothing below i64::MIN.
            if n == 0 || n > 1 << 63 {
                return None;
            }
            return Some(());
        }
        self.uint().map(drop)
    }

    /// A canonical string (the cursor at its opening quote); returns its raw span inside the
    /// quotes and whether it holds escapes.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        self.lit(b"\"")?;
        let start = self.i;
        let mut escaped = false;
        loop {
            let c = self.peek()?;
            match c {
                b'"' => {
                    let end = self.i;
                    self.i += 1;
                    return Some((start, end, escaped));
                }
                b'\\' => {
                    escaped = true;
                    let e = *self.b.get(self.i + 1)?;
                    match e {
                        b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r' => self.i += 2,
                        b'u' => {
                            // Only control characters without a short escape are `\u00xx`.
                            let hex = self.b.get(self.i + 2..self.i + 6)?;
                            let [b'0', b'0', h, l] = *hex else {
                                return None;
                            };
                            let v = (hex_digit(h)? << 4) | hex_digit(l)?;
                            if v >= 0x20 || matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                                return None;
                            }
                            self.i += 6;
                        }
                        _ => return None,
                    }
                }
                0x00..=0x1f => return None,
                _ => self.i += 1,
            }
        }
    }

    /// A string value, unescaped when it has escapes.
    fn string_value(&mut self) -> Option<Cow<'a, str>> {
        let (start, end, escaped) = self.string()?;
        if escaped {
            let s: String = serde_json::from_slice(&self.b[start - 1..=end]).ok()?;
            Some(Cow::Owned(s))
        } else {
            // The whole line was checked to be UTF-8, and quotes are ASCII.
            std::str::from_utf8(&self.b[start..end])
                .ok()
                .map(Cow::Borrowed)
        }
    }

    /// A canonical JSON value at nesting `depth` (1 for a member of the record).
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b't' => self.lit(b"true"),
            b'f' => self.lit(b"false"),
            b'n' => self.lit(b"null"),
            b'-' | b'0'..=b'9' => self.int(),
            _ => None,
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.lit(b"[")?;
        if self.lit(b"]").is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.lit(b"{")?;
        if self.lit(b"}").is_some() {
            return Some(());
        }
        let mut last: Option<Cow<'a, [u8]>> = None;
        loop {
            let (start, end, escaped) = self.string()?;
            let key: Cow<'a, [u8]> = if escaped {
                let s: String = serde_json::from_slice(&self.b[start - 1..=end]).ok()?;
                Cow::Owned(s.into_bytes())
            } else {
                Cow::Borrowed(&self.b[start..end])
            };
            // Strictly increasing: sorted, and no key twice.
            if let Some(prev) = &last
                && prev.as_ref() >= key.as_ref()
            {
                return None;
            }
            last = Some(key);
            self.lit(b":")?;
            self.value(depth)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}
