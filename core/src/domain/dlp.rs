//! Data-loss prevention: secrets in caller-supplied free text are replaced by
//! `[REDACTED:<kind>]` before anything is hashed, signed or recorded, so the append-only ledger
//! never holds them. Every tool applies [`redact`] (through [`Redactions`]) to each free-text
//! field it writes; the record builders in [`super::records`] redact the fields they write
//! once more, so a new caller cannot forget.
//!
//! The patterns live in [`patterns`] and are documented, one example each, in docs/RECORDS.md
//! §7; the tests run exactly those examples. Matching is hand-written, left to right, first
//! pattern wins, and linear in the input (every failed attempt scans a bounded or a
//! never-rescanned span). This module is a pure text transformation: it never logs, stores or
//! returns what it removed.

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
    let mut text = String::with_capacity(input.len());
    let mut kinds = BTreeSet::new();
    let mut count = 0;
    let mut i = 0;
    while i < input.len() {
        if let Some(m) = patterns::match_at(input, i) {
            text.push_str(&input[i..m.keep_until]);
            text.push_str("[REDACTED:");
            text.push_str(m.kind);
            text.push(']');
            text.push_str(&input[m.resume_from..m.end]);
            kinds.insert(m.kind);
            count += 1;
            i = m.end;
            continue;
        }
        // `i` is always on a char boundary: matches end on ASCII bytes or at the end.
        let ch = input[i..]
            .chars()
            .next()
            .expect("i < len on a char boundary");
        text.push(ch);
        i += ch.len_utf8();
    }
    Redacted {
        text,
        count,
        kinds: kinds.into_iter().collect(),
    }
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
