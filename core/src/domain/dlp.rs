//! Data-loss prevention: secrets in caller-supplied free text are replaced by
//! `[REDACTED:<kind>]` before anything is hashed, signed or recorded, so the append-only ledger
//! never holds them. Every tool applies [`redact`] (through [`Redactions`]) to each free-text
//! field it writes; the record builders in [`super::records`] redact the fields they write
//! once more, so a new caller cannot forget.
//!
//! The patterns are a table of regular expressions in [`patterns`], documented with examples in
//! docs/RECORDS.md §7 (the tests run exactly those examples); every secret any of them finds
//! is redacted. Overlapping or touching secrets become one placeholder, named after the one
//! that starts first (on a tie, the earlier row of the table). Placeholders already in the
//! text bound every match, so redacting twice changes nothing. Matching is linear in the text:
//! a `RegexSet` pass tells which rows can match, then each of those rows' regex finds its
//! spans (the `regex` crate's automata, no backtracking). This module is a pure text
//! transformation: it never logs, stores or returns what it removed.

use std::collections::{BTreeMap, BTreeSet};

mod patterns;

/// A text with its secrets replaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    /// How many secrets were replaced.
    pub count: u64,
    /// The kinds replaced, sorted, each once.
    pub kinds: Vec<&'static str>,
}

/// Replaces every secret the documented patterns find in `input`.
pub fn redact(input: &str) -> Redacted {
    let s = input.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    for (start, end) in placeholders(input) {
        find(s, from, start, &mut found);
        from = end;
    }
    find(s, from, s.len(), &mut found);
    found.sort_unstable_by_key(|f| (f.start, f.row));
    let mut text = String::with_capacity(input.len());
    let mut kinds = BTreeSet::new();
    let mut count = 0;
    let mut kept = 0; // input[..kept] is done
    let mut i = 0;
    while i < found.len() {
        let first = found[i];
        let mut end = first.end;
        i += 1;
        while i < found.len() && found[i].start <= end {
            end = end.max(found[i].end);
            i += 1;
        }
        // Spans end on ASCII bytes; widening to character boundaries only guards that.
        let start = floor_boundary(input, first.start.max(kept));
        let end = ceil_boundary(input, end);
        let kind = patterns::PATTERNS[first.row].kind;
        text.push_str(&input[kept..start]);
        text.push_str("[REDACTED:");
        text.push_str(kind);
        text.push(']');
        kinds.insert(kind);
        count += 1;
        kept = end;
    }
    text.push_str(&input[kept..]);
    Redacted {
        text,
        count,
        kinds: kinds.into_iter().collect(),
    }
}

/// The secrets in `s[from..to]` (offsets in `s`).
fn find(s: &[u8], from: usize, to: usize, found: &mut Vec<patterns::Found>) {
    let start = found.len();
    patterns::find(&s[from..to], found);
    for f in &mut found[start..] {
        (f.start, f.end) = (from + f.start, from + f.end);
    }
}

/// The placeholders, `[REDACTED:<kind>]`, already in `s`: what an earlier redaction left. They
/// bound every match (a secret cannot hold one), so redacting twice changes nothing.
fn placeholders(s: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    const OPEN: &str = "[REDACTED:";
    s.match_indices(OPEN).filter_map(|(i, _)| {
        let rest = &s.as_bytes()[i + OPEN.len()..];
        let kind = rest
            .iter()
            .take_while(|c| c.is_ascii_lowercase() || **c == b'_')
            .count();
        (kind > 0 && rest.get(kind) == Some(&b']')).then_some((i, i + OPEN.len() + kind + 1))
    })
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Redactions of several named fields: how many spans each field lost, and of which kinds.
/// Records carry it as `redactions` (`{"goal": 1}`) and `redacted_kinds`; tool answers too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Redactions {
    fields: BTreeMap<String, u64>,
    kinds: BTreeSet<&'static str>,
}

impl Redactions {
    /// The redacted `text` of field `name`, counting what was replaced.
    pub fn field(&mut self, name: &str, text: &str) -> String {
        let r = redact(text);
        if r.count > 0 {
            *self.fields.entry(name.to_string()).or_default() += r.count;
            self.kinds.extend(r.kinds);
        }
        r.text
    }

    /// [`Redactions::field`] of an optional field.
    pub fn optional(&mut self, name: &str, text: Option<&str>) -> Option<String> {
        text.map(|t| self.field(name, t))
    }

    /// Adds what `other` counted.
    pub fn merge(&mut self, other: &Redactions) {
        for (k, n) in &other.fields {
            *self.fields.entry(k.clone()).or_default() += n;
        }
        self.kinds.extend(other.kinds.iter().copied());
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Spans replaced per field (only fields that lost some).
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.fields.clone()
    }

    /// The kinds replaced, sorted, each once.
    pub fn kinds(&self) -> Vec<String> {
        self.kinds.iter().map(|k| k.to_string()).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests;
