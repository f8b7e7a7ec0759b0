//! Reading a stored record line at hashing speed, without building a JSON value.
//!
//! A record line is canonical JSON (docs/FORMATS.md §2–3), so its members stand in one fixed
//! order: `body`, `hash`, `kind`, `mac`, `prev`, `seq`, `sprev`, `stream`, `txn`. [`RecordLine::
//! scan`] walks the line once, checks that it is exactly that template with a canonical body
//! (keys strictly increasing by their bytes, no whitespace, canonical escapes and integers),
//! and hands back the field values plus the body's bytes. The pre-image (the line without its
//! `hash` and `mac` members) is then three slices of the line, fed to SHA-256 without copying;
//! the tag is checked over the hash (format 3, docs/FORMATS.md §3).
//!
//! The scan accepts exactly what the reference parse [`super::Record::parse_line`] accepts
//! (serde plus re-serialization); the property tests in `line/tests.rs` hold the two to it.
//! When the scan refuses a line, the reference parse names the reason.

use std::borrow::Cow;

use hmac::{Hmac, Mac};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::digest::{Digest, RECORD_TAG_LABEL};

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

    /// The tag of the record whose hash is `hash` (format 3): HMAC-SHA256 of
    /// [`RECORD_TAG_LABEL`] followed by the hash's 32 bytes.
    pub fn tag(&self, hash: &Digest) -> [u8; 32] {
        let mut mac = self.mac.clone();
        mac.update(RECORD_TAG_LABEL);
        mac.update(&hash.0);
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` is the tag of the record whose hash is `hash`, compared in constant time
    /// (`subtle`, as the HTTP guard compares tokens) eight bytes at a time: `verify_slice`
    /// compares byte by byte, a few per cent of a whole `audit verify`.
    pub fn verifies(&self, hash: &Digest, tag: &[u8; 32]) -> bool {
        let words = |b: &[u8; 32]| -> [u64; 4] {
            std::array::from_fn(|i| {
                u64::from_ne_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"))
            })
        };
        bool::from(
            words(&self.tag(hash))
                .as_slice()
                .ct_eq(words(tag).as_slice()),
        )
    }

    /// Whether `tag` is what format 2 (and format 1, on its keyed streams) tagged a record
    /// with: HMAC-SHA256 of the pre-image itself, fed in `parts`. Only to name an older ledger
    /// in an error and to upgrade it; no reader accepts such a tag.
    pub fn verifies_format_2<'p>(
        &self,
        parts: impl IntoIterator<Item = &'p [u8]>,
        tag: &[u8; 32],
    ) -> bool {
        let mut mac = self.mac.clone();
        for part in parts {
            mac.update(part);
        }
        mac.verify_slice(tag).is_ok()
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
    /// The tag is a format-2 tag (over the pre-image): a ledger from before format 3.
    Format2Mac,
}

impl<'a> RecordLine<'a> {
    /// Scans `line` (without its `\n`); `None` if it is not a canonical record line.
    pub fn scan(line: &'a [u8]) -> Option<RecordLine<'a>> {
        RecordLine::scan_prefix(line).filter(|r| r.line.len() == line.len())
    }

    /// Scans the canonical record line that `bytes` start with, whatever follows it; the
    /// record's own bytes are [`RecordLine::line`]. A canonical line holds no `\n` (nor any
    /// other control byte outside escapes), so when the byte after it is `\n`, it is exactly
    /// the first line of `bytes`, and [`RecordLine::scan`] of that line gives the same result.
    pub fn scan_prefix(bytes: &'a [u8]) -> Option<RecordLine<'a>> {
        let mut c = Cursor { b: bytes, i: 0 };
        c.lit(b"{\"body\":")?;
        let body_start = c.i;
        c.value(1)?;
        let body = &bytes[body_start..c.i];
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
        let line = &bytes[..c.i];
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

    /// The pre-image, in three pieces of the line.
    fn preimage(&self) -> [&'a [u8]; 3] {
        let [hash_at, kind_at, mac_at, prev_at] = self.cuts;
        [
            &self.line[..hash_at],
            &self.line[kind_at..mac_at],
            &self.line[prev_at..],
        ]
    }

    /// The pre-image's bytes (the canonical record without `hash` and `mac`).
    pub fn preimage_bytes(&self) -> Vec<u8> {
        self.preimage().concat()
    }

    /// Checks `hash`, and with `key` the `mac`, which every record must carry.
    pub fn check(&self, key: Option<&RecordKey>) -> Result<(), SealError> {
        let mut sha = Sha256::new();
        for part in self.preimage() {
            sha.update(part);
        }
        if Digest(sha.finalize().into()) != self.hash {
            return Err(SealError::HashMismatch);
        }
        let Some(tag) = self.mac else {
            return Err(SealError::MissingMac);
        };
        match key {
            Some(k) if !k.verifies(&self.hash, &tag) => {
                Err(if k.verifies_format_2(self.preimage(), &tag) {
                    SealError::Format2Mac
                } else {
                    SealError::BadMac
                })
            }
            _ => Ok(()),
        }
    }

    /// The line this record was read from.
    pub fn line(&self) -> &'a [u8] {
        self.line
    }
}

/// `0x01` in every byte of a `u64`.
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
/// The high bit of every byte of a `u64`.
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The high bit set in the bytes of `x` that are below `n` (`n <= 0x80`). Exact up to the
/// lowest flagged byte (a borrow can only flag bytes above a true one), which is all the
/// callers look at.
#[inline(always)]
fn bytes_below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS
}

/// The high bit set in the bytes of `x` equal to `c`; exact up to the lowest flagged byte.
#[inline(always)]
fn bytes_equal(x: u64, c: u8) -> u64 {
    bytes_below(x ^ (ONES * u64::from(c)), 1)
}

/// Eight lowercase hex digits (loaded little-endian: the first digit in the lowest byte) as
/// four bytes, the first digit pair first; `None` if any byte is not `0-9a-f`.
#[inline(always)]
fn hex8(x: u64) -> Option<u32> {
    if x & HIGHS != 0 {
        return None;
    }
    // With every byte below 0x80, adding at most 0x50 to each carries into no other byte:
    // `b + (0x80 - lo)` has its high bit set iff `b >= lo`.
    let at_least = |lo: u8| x.wrapping_add(ONES * u64::from(0x80 - lo)) & HIGHS;
    let digit = at_least(b'0') & !at_least(b'9' + 1);
    let alpha = at_least(b'a') & !at_least(b'f' + 1);
    if digit | alpha != HIGHS {
        return None;
    }
    // '0'..'9' have low nibbles 0..9, 'a'..'f' have 1..6 (plus 9: 10..15).
    let v = (x & (ONES * 0x0f)) + (alpha >> 7) * 9;
    // Byte pairs (hi, lo) into one byte each, in the low byte of each 16-bit lane.
    let lanes = ((v & 0x00ff_00ff_00ff_00ff) << 4) | ((v >> 8) & 0x00ff_00ff_00ff_00ff);
    let pairs = (lanes | (lanes >> 8)) & 0x0000_ffff_0000_ffff;
    Some((pairs | (pairs >> 16)) as u32)
}

/// Whether `a < b` as byte strings (the order of canonical object keys); inline, for the
/// short keys of record bodies.
#[inline(always)]
fn bytes_less(a: &[u8], b: &[u8]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x < y;
        }
    }
    a.len() < b.len()
}

/// A position in a line being scanned.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    fn peek_lit<const N: usize>(&self, lit: &[u8; N]) -> bool {
        self.b
            .get(self.i..)
            .and_then(<[u8]>::first_chunk::<N>)
            .is_some_and(|c| c == lit)
    }

    #[inline(always)]
    fn lit<const N: usize>(&mut self, lit: &[u8; N]) -> Option<()> {
        if self.peek_lit(lit) {
            self.i += N;
            Some(())
        } else {
            None
        }
    }

    /// 64 lowercase hex digits.
    #[inline(always)]
    fn hex32(&mut self) -> Option<[u8; 32]> {
        let hex = self.b.get(self.i..)?.first_chunk::<64>()?;
        let mut out = [0u8; 32];
        let mut ok = true;
        for (o, digits) in out.chunks_exact_mut(4).zip(hex.chunks_exact(8)) {
            let x = u64::from_le_bytes(digits.try_into().expect("chunks of 8"));
            match hex8(x) {
                Some(v) => o.copy_from_slice(&v.to_le_bytes()),
                None => ok = false,
            }
        }
        if !ok {
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
    /// quotes and whether it holds escapes. Its bytes must be UTF-8: outside strings a line
    /// can only hold ASCII, so this is the whole line's UTF-8 check.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        self.lit(b"\"")?;
        let start = self.i;
        let mut escaped = false;
        // High bits of the bytes skipped eight at a time: any set means non-ASCII text.
        let mut high = 0u64;
        loop {
            // Plain bytes (no quote, backslash or control byte) eight at a time.
            while let Some(chunk) = self.b.get(self.i..).and_then(<[u8]>::first_chunk::<8>) {
                let x = u64::from_le_bytes(*chunk);
                let special = bytes_equal(x, b'"') | bytes_equal(x, b'\\') | bytes_below(x, 0x20);
                if special == 0 {
                    high |= x;
                    self.i += 8;
                    continue;
                }
                // The lowest flagged byte is the first special one; the bytes before it are
                // plain.
                let plain = special.trailing_zeros() / 8;
                high |= x & ((1u64 << (plain * 8)) - 1);
                self.i += plain as usize;
                break;
            }
            let c = self.peek()?;
            match c {
                b'"' => {
                    let end = self.i;
                    self.i += 1;
                    if high & HIGHS != 0 {
                        std::str::from_utf8(&self.b[start..end]).ok()?;
                    }
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
                _ => {
                    high |= u64::from(c);
                    self.i += 1;
                }
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
            // `string` checked the span to be UTF-8.
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
                && !bytes_less(prev, &key)
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
