//! Data-loss prevention: secrets in caller-supplied free text are replaced by
//! `[REDACTED:<kind>]` before anything is hashed, signed or recorded, so the append-only ledger
//! never holds them. Every tool applies [`redact`] (through [`Redactions`]) to each free-text
//! field it writes; the record builders in [`super::records`] redact the fields they write
//! once more, so a new caller cannot forget.
//!
//! The patterns are a table of regular expressions in [`patterns`], documented with examples in
//! docs/RECORDS.md §7 (the tests run exactly those examples). A text is searched as it is and,
//! when it has escapes or line breaks inside keys, as its decoded views ([`view`]: escapes
//! decoded; then also wrapped keys joined), whose matches are mapped back to the bytes they
//! stand for: every secret any of them finds is redacted. Overlapping or touching secrets
//! become one placeholder, named after the one that starts first (on a tie, the earlier row of
//! the table). Placeholders already in the text bound every match, so redacting twice changes
//! nothing. Matching is linear in the text: a `RegexSet` pass tells which rows can match, then
//! each of those rows' regex finds its spans (the `regex` crate's automata, no backtracking).
//! This module is a pure text transformation: it never logs, stores or returns what it
//! removed.

use std::collections::{BTreeMap, BTreeSet};

mod patterns;
mod view;

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

/// The secrets in `s[from..to]` (offsets in `s`): in the text as it is and in its decoded
/// views.
fn find(s: &[u8], from: usize, to: usize, found: &mut Vec<patterns::Found>) {
    let text = &s[from..to];
    if text.is_empty() {
        return;
    }
    let at_end = to == s.len();
    let mut here = Vec::new();
    patterns::find(text, &mut here);
    find_in(view::View::of(text, false, at_end, &[]), &mut here);
    // Joining sees what was found as it will be once redacted: no part of a token.
    let mut spans: Vec<(usize, usize)> = here.iter().map(|f| (f.start, f.end)).collect();
    spans.sort_unstable();
    spans.dedup_by(|next, kept| {
        let overlap = next.0 < kept.1;
        if overlap {
            kept.1 = kept.1.max(next.1);
        }
        overlap
    });
    find_in(view::View::of(text, true, at_end, &spans), &mut here);
    found.extend(here.into_iter().map(|f| patterns::Found {
        start: from + f.start,
        end: from + f.end,
        ..f
    }));
}

/// The secrets in a decoded view, as spans of the text it decodes.
fn find_in(view: Option<view::View>, found: &mut Vec<patterns::Found>) {
    let Some(view) = view else { return };
    let start = found.len();
    patterns::find(&view.bytes, found);
    for f in &mut found[start..] {
        (f.start, f.end) = view.original(f.start, f.end);
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
