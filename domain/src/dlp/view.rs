//! The decoded view of a text: the same text with its escapes decoded and wrapped tokens
//! joined, each byte remembering the span of the original it came from, so a secret found in
//! the view is redacted in the original — in whatever encoding it was written.
//!
//! One left-to-right pass, one step per escape; decoded are:
//! - percent escapes: `%XX` → the byte, and `%25XX` (encoded twice) → the byte;
//! - JSON string escapes: `\n`, `\r`, `\t`, `\/`, and `\uXXXX` below U+0080 (`\u0022` becomes
//!   `\"` and `\u005c` `\\`, so it still does not end a quoted value); `\\` and `\"` stay;
//! - a line break (raw `\n`, `\r`, `\r\n`, or one of the escapes above) between two token
//!   characters (`A-Za-z0-9_.-`) is dropped — the key is wrapped — when the token before it
//!   holds a key prefix at a word start ([`super::patterns::WRAPPABLE`]) and either a key from
//!   such a prefix is shorter than the shortest key with it (a JWT: has fewer than two dots),
//!   or the next line holds nothing but the rest: one run of token characters with a digit in
//!   it, up to the end of the text, a line break or a quote. Never when the next line starts
//!   with `NAME=` / `name:` (an identifier), or with a key prefix (but a JWT's next segment,
//!   `eyJ…`).
//!
//! So a complete key that ends a line takes the next line along only when that line is a
//! single token with a digit, most likely the rest of the key.

use super::patterns::WRAPPABLE;

pub(super) struct View {
    pub bytes: Vec<u8>,
    /// Per byte of `bytes`: the span of the original it stands for.
    spans: Vec<(u32, u32)>,
}

impl View {
    /// The decoded view of `s`, without joining wrapped tokens (`join` false) or with; `None`
    /// when it is `s` itself, or when nothing was joined. Joining can also hide a match (the
    /// joined line may have started one), so both views are searched.
    /// `at_end`: whether `s` ends where the whole text does (not at a placeholder). `found`:
    /// the secrets already found (disjoint, sorted), whose bytes are part of no token when
    /// joining, as they will be placeholders when the redacted text is redacted again.
    pub fn of(s: &[u8], join: bool, at_end: bool, found: &[(usize, usize)]) -> Option<View> {
        // Spans are u32; a larger text is matched as it is.
        if u32::try_from(s.len()).is_err() || !might_change(s, join) {
            return None;
        }
        let mut b = Builder {
            s,
            join,
            at_end,
            all_found: found,
            found,
            covered: 0,
            joined: false,
            v: Vec::new(),
            spans: Vec::new(),
            changed: false,
            len: 0,
            last: None,
            run: Run::default(),
            raw: Run::default(),
        };
        let mut i = 0;
        while i < s.len() {
            i = b.step(i);
        }
        (if join { b.joined } else { b.changed }).then_some(View {
            bytes: b.v,
            spans: b.spans,
        })
    }

    /// The span of the original that the view's `start..end` (not empty) stands for.
    pub fn original(&self, start: usize, end: usize) -> (usize, usize) {
        (self.spans[start].0 as usize, self.spans[end - 1].1 as usize)
    }
}

/// Whether the view can differ: an escape it decodes, or (joining) a key prefix and a line
/// break between two token characters.
fn might_change(s: &[u8], join: bool) -> bool {
    let escape = |i: usize| match s[i] {
        b'%' => hex_at(s, i + 1, 2).is_some(),
        b'\\' => matches!(s.get(i + 1), Some(b'n' | b'r' | b't' | b'/' | b'u')),
        _ => false,
    };
    if !join {
        return (0..s.len()).any(escape);
    }
    super::patterns::has_key_prefix(s)
        && (1..s.len()).any(|i| {
            is_token(s[i - 1])
                && line_break(s, i).is_some_and(|(end, c)| {
                    let end = if c == b'\r' {
                        line_break(s, end).map_or(end, |(e, _)| e)
                    } else {
                        end
                    };
                    s.get(end)
                        .is_some_and(|&c| is_token(c) || c == b'%' || c == b'\\')
                })
        })
}

fn is_token(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

struct Builder<'a> {
    s: &'a [u8],
    /// Whether wrapped tokens are joined, and whether one was.
    join: bool,
    joined: bool,
    /// Whether `s` ends where the text does.
    at_end: bool,
    /// The secrets found before (disjoint, sorted), those not begun yet, and up to where the
    /// ones begun so far cover `s`.
    all_found: &'a [(usize, usize)],
    found: &'a [(usize, usize)],
    covered: usize,
    /// The view so far, once it differs from `s` (before that, it is `s[..len]`).
    v: Vec<u8>,
    spans: Vec<(u32, u32)>,
    changed: bool,
    len: usize,
    last: Option<u8>,
    /// The run of token characters the view ends with, cut where a secret already found
    /// begins and ends (as a placeholder will cut it), and not cut there.
    run: Run,
    raw: Run,
}

/// A run of token characters at the end of the view, and the keys in it.
#[derive(Clone, Copy, Default)]
struct Run {
    /// Where it starts (view offset); it is searched for key prefixes up to `scanned`.
    start: usize,
    scanned: usize,
    /// Whether a key prefix starts at a word start in it, and until where (view offset) one
    /// of those keys is shorter than the shortest key with its prefix.
    key: bool,
    short_until: usize,
    /// Where the last JWT (`eyJ` not after a dot) starts, and the run's last two dots.
    jwt_at: Option<usize>,
    dots: [Option<usize>; 2],
}

impl Run {
    fn at(start: usize) -> Run {
        Run {
            start,
            scanned: start,
            ..Run::default()
        }
    }

    /// Finds the key prefixes in `v[self.scanned..]` (the view up to a line break).
    fn scan(&mut self, v: &[u8]) {
        for p in self.scanned..v.len() {
            if p > self.start && is_word(v[p - 1]) {
                continue;
            }
            if let Some(&(prefix, min)) = WRAPPABLE
                .iter()
                .find(|(k, _)| v[p..].starts_with(k.as_bytes()))
            {
                if prefix == "eyJ" && p > self.start && v[p - 1] == b'.' {
                    continue; // a JWT's next segment
                }
                self.key = true;
                self.short_until = self.short_until.max(p + min);
                if prefix == "eyJ" {
                    self.jwt_at = Some(p);
                }
            }
        }
        self.scanned = self.scanned.max(v.len());
    }

    /// The view grew by `bytes` at offset `base`; the run restarts after `bytes[cut]`.
    fn grow(&mut self, bytes: &[u8], base: usize, cut: Option<usize>) {
        let from = cut.map_or(0, |k| {
            *self = Run::at(base + k + 1);
            k + 1
        });
        for (k, &c) in bytes.iter().enumerate().skip(from) {
            if c == b'.' {
                self.dots = [self.dots[1], Some(base + k)];
            }
        }
    }

    /// A JWT in it has fewer than two dots.
    fn jwt_open(&self) -> bool {
        self.jwt_at
            .is_some_and(|j| self.dots[0].is_none_or(|d| d < j))
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

fn hex_at(s: &[u8], i: usize, n: usize) -> Option<u32> {
    let digits = s.get(i..i + n)?;
    digits
        .iter()
        .try_fold(0u32, |acc, &c| Some(acc * 16 + u32::from(hex(c)?)))
}

/// A line break at `i`: its end and the byte it stands for.
fn line_break(s: &[u8], i: usize) -> Option<(usize, u8)> {
    let single = |c: u8| matches!(c, b'\n' | b'\r').then_some(c);
    match *s.get(i)? {
        b'\n' | b'\r' => Some((i + 1, s[i])),
        b'\\' => match s.get(i + 1) {
            Some(b'n') => Some((i + 2, b'\n')),
            Some(b'r') => Some((i + 2, b'\r')),
            Some(b'u') => single(u8::try_from(hex_at(s, i + 2, 4)?).ok()?).map(|c| (i + 6, c)),
            _ => None,
        },
        b'%' => single(u8::try_from(hex_at(s, i + 1, 2)?).ok()?).map(|c| (i + 3, c)),
        _ => None,
    }
}

impl Builder<'_> {
    /// Decodes the unit at `i`; returns where the next one starts.
    fn step(&mut self, i: usize) -> usize {
        let s = self.s;
        let special = |c: &u8| matches!(c, b'%' | b'\\' | b'\n' | b'\r');
        if !special(&s[i]) {
            let end = s[i..].iter().position(special).map_or(s.len(), |n| i + n);
            self.copy_plain(i, end);
            return end;
        }
        if let Some((end, c)) = line_break(s, i) {
            return self.line_break(i, end, c);
        }
        match s[i] {
            b'%' => {
                if let Some(mut byte) = hex_at(s, i + 1, 2).map(|x| x as u8) {
                    let mut end = i + 3;
                    if byte == b'%'
                        && let Some(twice) = hex_at(s, end, 2)
                    {
                        byte = twice as u8;
                        end += 2;
                    }
                    self.push(i, end, &[byte]);
                    return end;
                }
            }
            b'\\' => match s.get(i + 1) {
                Some(b'\\') => {
                    self.copy(i);
                    self.copy(i + 1);
                    return i + 2;
                }
                Some(b't') => {
                    self.push(i, i + 2, b"\t");
                    return i + 2;
                }
                Some(b'/') => {
                    self.push(i, i + 2, b"/");
                    return i + 2;
                }
                Some(b'u') => {
                    if let Some(c) = hex_at(s, i + 2, 4).and_then(|c| u8::try_from(c).ok())
                        && c.is_ascii()
                    {
                        let decoded: &[u8] = match c {
                            b'"' => b"\\\"",
                            b'\\' => b"\\\\",
                            _ => &[c],
                        };
                        self.push(i, i + 6, decoded);
                        return i + 6;
                    }
                }
                _ => {}
            },
            _ => {}
        }
        self.copy(i);
        i + 1
    }

    /// A line break `i..end` standing for `c`, with the `\n` after a `\r`: joined (dropped) in
    /// a wrapped token, else kept as the bytes it stands for.
    fn line_break(&mut self, i: usize, end: usize, c: u8) -> usize {
        let s = self.s;
        let lf = (c == b'\r')
            .then(|| line_break(s, end))
            .flatten()
            .filter(|&(_, c)| c == b'\n');
        let after = lf.map_or(end, |(e, _)| e);
        if self.join && self.wrapped_at(after) {
            self.diverge();
            self.joined = true;
            return after;
        }
        self.push(i, end, &[c]);
        if let Some((e, _)) = lf {
            self.push(end, e, b"\n");
        }
        after
    }

    /// Whether a line break before `next` falls inside a wrapped token.
    fn wrapped_at(&mut self, next: usize) -> bool {
        let s = self.s;
        // What follows the break as a second redaction will see it: a secret already found
        // is a placeholder then, no token, name, separator or quote.
        let free = |i: usize| {
            let k = self.all_found.partition_point(|&(_, end)| end <= i);
            self.all_found.get(k).is_none_or(|&(start, _)| i < start)
        };
        let byte = |i: usize| s.get(i).copied().filter(|_| free(i));
        if !self.last.is_some_and(is_token) || !byte(next).is_some_and(is_token) {
            return false;
        }
        // Where keys start as the patterns see them: a prefix at a word start.
        let v: &[u8] = if self.changed {
            &self.v
        } else {
            &s[..self.len]
        };
        self.run.scan(v);
        self.raw.scan(v);
        if !self.raw.key {
            return false;
        }
        let rest = &s[next..];
        let run = |from: usize, ok: fn(u8) -> bool| {
            (from..s.len())
                .take_while(|&i| byte(i).is_some_and(ok))
                .count()
        };
        let name = run(next, is_word);
        let after = next + name + run(next + name, |c| c == b' ' || c == b'\t');
        if !rest[0].is_ascii_digit() && matches!(byte(after), Some(b'=' | b':')) {
            return false; // `NAME=` on the next line
        }
        let jwt_open = self.run.jwt_open();
        if WRAPPABLE
            .iter()
            .any(|(k, _)| rest.starts_with(k.as_bytes()))
            && !(jwt_open && rest.starts_with(b"eyJ"))
        {
            return false; // a key on the next line (not a JWT's payload)
        }
        if self.run.key && (self.len < self.run.short_until || jwt_open) {
            return true; // too short to be the key yet
        }
        // The next line holds only the rest of the key: a token with a digit, which can be
        // no name and no scheme word (so joining it hides nothing).
        let tail = run(next, is_token);
        let end = next + tail;
        rest[..tail].iter().any(u8::is_ascii_digit)
            && ((end == s.len() && self.at_end)
                || (free(end) && line_break(s, end).is_some())
                || matches!(byte(end), Some(b'"' | b'\'')))
    }

    /// `s[i]` as it is.
    fn copy(&mut self, i: usize) {
        self.copy_plain(i, i + 1);
    }

    /// `s[from..to]` as it is.
    fn copy_plain(&mut self, from: usize, to: usize) {
        let bytes = &self.s[from..to];
        if self.changed {
            self.v.extend_from_slice(bytes);
            self.spans
                .extend((from as u32..to as u32).map(|k| (k, k + 1)));
        }
        self.grow(bytes, from, to);
    }

    /// `s[from..to]` stands for `bytes`.
    fn push(&mut self, from: usize, to: usize, bytes: &[u8]) {
        if !self.changed && bytes.len() == 1 && to == from + 1 && self.s[from] == bytes[0] {
            return self.copy(from);
        }
        self.diverge();
        for &c in bytes {
            self.v.push(c);
            self.spans.push((from as u32, to as u32));
            self.grow(&[c], from, to);
        }
    }

    /// The view grew by `bytes`, standing for `s[from..to]` (byte for byte, or all of them
    /// for each).
    fn grow(&mut self, bytes: &[u8], from: usize, to: usize) {
        let base = self.len;
        self.len += bytes.len();
        self.last = bytes.last().copied().or(self.last);
        // The last byte of `bytes` that a secret found before covers.
        let one_to_one = to - from == bytes.len();
        let origin = |k: usize| if one_to_one { from + k } else { from };
        let mut covered = None;
        // The last byte standing for text before `end`.
        let last_covered = |end: usize| {
            if one_to_one {
                (end.min(to).max(from) - from).checked_sub(1)
            } else {
                (from < end).then(|| bytes.len() - 1)
            }
        };
        if self.covered > from {
            covered = last_covered(self.covered);
        }
        while let Some(&(start, end)) = self.found.first()
            && start < to
        {
            self.covered = self.covered.max(end);
            self.found = &self.found[1..];
            covered = covered.max(last_covered(end).filter(|&k| origin(k) >= start));
        }
        let token_cut = bytes.iter().rposition(|&c| !is_token(c));
        self.raw.grow(bytes, base, token_cut);
        self.run.grow(bytes, base, token_cut.max(covered));
    }

    /// From here on the view differs from the text: materialise what it was so far.
    fn diverge(&mut self) {
        if !self.changed {
            self.changed = true;
            self.v.extend_from_slice(&self.s[..self.len]);
            self.spans.extend((0..self.len as u32).map(|i| (i, i + 1)));
        }
    }
}
