//! Data-loss prevention for mailbox bodies: secrets are replaced by `[REDACTED:<kind>]` before a
//! message is hashed, signed or recorded, so the ledger never holds them.
//!
//! Patterns (documented in docs/RECORDS.md, section "DLP"), matched left to right, first match
//! wins, without regular expressions:
//!
//! | kind | what | replaced |
//! | --- | --- | --- |
//! | `private_key` | a PEM block `-----BEGIN <label>PRIVATE KEY-----` … `-----END <label>PRIVATE KEY-----` (to the end of the body if the END line is missing) | the whole block |
//! | `url_password` | `scheme://user:password@` in a URL | the password |
//! | `bearer_token` | `Bearer <token>` (any case), token of 8+ characters of `A-Za-z0-9-._~+/=` | the token |
//! | `aws_access_key` | `AKIA`, `ASIA`, `ABIA` or `ACCA` + 16 of `A-Z0-9` | the key id |
//! | `aws_secret_key` | `aws_secret_access_key` (any case) + `=` or `:` + 40 of `A-Za-z0-9/+=` | the secret |
//! | `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 20+ of `A-Za-z0-9`; `github_pat_` + 22+ of `A-Za-z0-9_` | the token |
//! | `gitlab_token` | `glpat-`, `glptt-`, `glrt-`, `gldt-`, `glcbt-` + 20+ of `A-Za-z0-9_-` | the token |
//! | `slack_token` | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxe-`, `xapp-` + 10+ of `A-Za-z0-9-` | the token |
//! | `slack_webhook` | `https://hooks.slack.com/services/` + its path | the path |
//!
//! Token patterns only match at a word start (not after a letter, digit or `_`) and only when
//! the token ends at a non-token character, so ordinary words are left alone. This module is a
//! pure text transformation: it never logs, stores or returns what it removed.

use std::collections::BTreeSet;

/// A body with its secrets replaced.
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
        if let Some(m) = match_at(input, i) {
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
        // `i` is always on a char boundary: matches end on ASCII bytes.
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

/// A secret at some position: `input[i..keep_until]` is kept, `keep_until..resume_from` is the
/// secret, `resume_from..end` is kept after the placeholder.
struct Match {
    keep_until: usize,
    resume_from: usize,
    end: usize,
    kind: &'static str,
}

fn match_at(s: &str, i: usize) -> Option<Match> {
    let b = s.as_bytes();
    match b[i] {
        b'-' => private_key(s, i),
        b':' => url_password(b, i),
        b'b' | b'B' => bearer(b, i),
        b'A' => aws_access_key(b, i),
        b'a' => aws_secret_key(b, i),
        b'g' => github_token(b, i).or_else(|| gitlab_token(b, i)),
        b'x' => slack_token(b, i),
        b'h' => slack_webhook(b, i),
        _ => None,
    }
}

fn word_start(b: &[u8], i: usize) -> bool {
    i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Length of the run of bytes from `from` satisfying `ok`.
fn run_len(b: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    b[from..].iter().take_while(|c| ok(**c)).count()
}

fn whole(i: usize, end: usize, kind: &'static str) -> Match {
    Match {
        keep_until: i,
        resume_from: end,
        end,
        kind,
    }
}

/// `prefix` + at least `min` token bytes, at a word start, ending at a non-token byte.
fn prefixed_token(
    b: &[u8],
    i: usize,
    prefixes: &[&str],
    min: usize,
    ok: impl Fn(u8) -> bool + Copy,
    kind: &'static str,
) -> Option<Match> {
    if !word_start(b, i) {
        return None;
    }
    let p = prefixes.iter().find(|p| b[i..].starts_with(p.as_bytes()))?;
    let start = i + p.len();
    let n = run_len(b, start, ok);
    (n >= min).then(|| whole(i, start + n, kind))
}

fn private_key(s: &str, i: usize) -> Option<Match> {
    const BEGIN: &str = "-----BEGIN ";
    let rest = s[i..].strip_prefix(BEGIN)?;
    let label_len = rest.find("-----")?;
    let label = &rest[..label_len];
    if !label.ends_with("PRIVATE KEY") || label.contains('\n') {
        return None;
    }
    let end_line = format!("-----END {label}-----");
    let after_header = i + BEGIN.len() + label_len + 5;
    let end = s[after_header..]
        .find(&end_line)
        .map_or(s.len(), |k| after_header + k + end_line.len());
    Some(whole(i, end, "private_key"))
}

fn url_password(b: &[u8], i: usize) -> Option<Match> {
    if !b[i..].starts_with(b"://") {
        return None;
    }
    // A scheme must stand before `://`.
    let scheme = b[..i]
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-'))
        .count();
    if scheme == 0 || !b[i - scheme].is_ascii_alphabetic() {
        return None;
    }
    let auth = i + 3;
    let len = run_len(b, auth, |c| {
        !matches!(c, b'/' | b'?' | b'#' | b'@') && !c.is_ascii_whitespace()
    });
    if b.get(auth + len) != Some(&b'@') {
        return None;
    }
    let colon = b[auth..auth + len].iter().position(|&c| c == b':')?;
    let pass_start = auth + colon + 1;
    let at = auth + len;
    (at > pass_start).then_some(Match {
        keep_until: pass_start,
        resume_from: at,
        end: at,
        kind: "url_password",
    })
}

fn bearer(b: &[u8], i: usize) -> Option<Match> {
    if !word_start(b, i) || b.len() < i + 6 || !b[i..i + 6].eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let gap = run_len(b, i + 6, |c| c == b' ' || c == b'\t');
    if gap == 0 {
        return None;
    }
    let start = i + 6 + gap;
    let n = run_len(b, start, |c| {
        c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
    });
    (n >= 8).then_some(Match {
        keep_until: start,
        resume_from: start + n,
        end: start + n,
        kind: "bearer_token",
    })
}

fn aws_access_key(b: &[u8], i: usize) -> Option<Match> {
    if !word_start(b, i) {
        return None;
    }
    if !["AKIA", "ASIA", "ABIA", "ACCA"]
        .iter()
        .any(|p| b[i..].starts_with(p.as_bytes()))
    {
        return None;
    }
    let n = run_len(b, i + 4, |c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let end = i + 4 + n;
    let bounded = b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric());
    (n == 16 && bounded).then(|| whole(i, end, "aws_access_key"))
}

fn aws_secret_key(b: &[u8], i: usize) -> Option<Match> {
    const NAME: &[u8] = b"aws_secret_access_key";
    if !word_start(b, i)
        || b.len() < i + NAME.len()
        || !b[i..i + NAME.len()].eq_ignore_ascii_case(NAME)
    {
        return None;
    }
    let mut k = i + NAME.len();
    k += run_len(b, k, |c| matches!(c, b' ' | b'\t' | b'"' | b'\''));
    if !matches!(b.get(k), Some(b'=' | b':')) {
        return None;
    }
    k += 1;
    k += run_len(b, k, |c| matches!(c, b' ' | b'\t' | b'"' | b'\''));
    let n = run_len(b, k, |c| {
        c.is_ascii_alphanumeric() || matches!(c, b'/' | b'+' | b'=')
    });
    (n == 40).then_some(Match {
        keep_until: k,
        resume_from: k + n,
        end: k + n,
        kind: "aws_secret_key",
    })
}

fn github_token(b: &[u8], i: usize) -> Option<Match> {
    prefixed_token(
        b,
        i,
        &["github_pat_"],
        22,
        |c| c.is_ascii_alphanumeric() || c == b'_',
        "github_token",
    )
    .or_else(|| {
        prefixed_token(
            b,
            i,
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
            20,
            |c| c.is_ascii_alphanumeric(),
            "github_token",
        )
    })
}

fn gitlab_token(b: &[u8], i: usize) -> Option<Match> {
    prefixed_token(
        b,
        i,
        &["glpat-", "glptt-", "glrt-", "gldt-", "glcbt-"],
        20,
        |c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-',
        "gitlab_token",
    )
}

fn slack_token(b: &[u8], i: usize) -> Option<Match> {
    prefixed_token(
        b,
        i,
        &[
            "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xapp-",
        ],
        10,
        |c| c.is_ascii_alphanumeric() || c == b'-',
        "slack_token",
    )
}

fn slack_webhook(b: &[u8], i: usize) -> Option<Match> {
    const URL: &[u8] = b"hooks.slack.com/services/";
    // Matched at the host, so the `https://` before it is kept.
    if !b[i..].starts_with(URL) {
        return None;
    }
    let start = i + URL.len();
    let n = run_len(b, start, |c| c.is_ascii_alphanumeric() || c == b'/');
    (n >= 8).then_some(Match {
        keep_until: start,
        resume_from: start + n,
        end: start + n,
        kind: "slack_webhook",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> (String, u64) {
        let out = redact(s);
        (out.text, out.count)
    }

    #[test]
    fn every_documented_pattern_is_redacted() {
        let cases = [
            (
                "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter",
                "key:\n[REDACTED:private_key]\nafter",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn (cut off)",
                "[REDACTED:private_key]",
            ),
            (
                "db at postgres://admin:s3cr3t!@db.internal:5432/app ok",
                "db at postgres://admin:[REDACTED:url_password]@db.internal:5432/app ok",
            ),
            (
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc",
                "Authorization: Bearer [REDACTED:bearer_token]",
            ),
            ("id AKIAIOSFODNN7EXAMPLE.", "id [REDACTED:aws_access_key]."),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED:aws_secret_key]",
            ),
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 used",
                "token [REDACTED:github_token] used",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
                "[REDACTED:github_token]",
            ),
            ("glpat-abcdefghij0123456789 x", "[REDACTED:gitlab_token] x"),
            (
                "slack xoxb-1234567890-abcdefghij",
                "slack [REDACTED:slack_token]",
            ),
            (
                "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
                "https://hooks.slack.com/services/[REDACTED:slack_webhook]",
            ),
        ];
        for (input, want) in cases {
            let (text, count) = r(input);
            assert_eq!(text, want, "{input:?}");
            assert_eq!(count, 1, "{input:?}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in [
            "",
            "The bearer of bad news",
            "Bearer short",
            "AKIA is a prefix; AKIAIOSFODNN7EXAMPLEX is too long",
            "ghp_short and xoxb-tiny",
            "see https://example.com/path?x=1 and mailto:me@example.com",
            "a://b@c has no password; http://user@host neither",
            "-----BEGIN PUBLIC KEY-----\nMCow\n-----END PUBLIC KEY-----",
            "naïve café — ünïcode ✓ stays",
            "xAKIAIOSFODNN7EXAMPLE is glued to a word",
        ] {
            assert_eq!(r(s), (s.to_string(), 0), "{s:?}");
        }
    }

    #[test]
    fn counts_and_kinds_add_up() {
        let out = redact(
            "Bearer abcdefgh12345678 and AKIAIOSFODNN7EXAMPLE and Bearer zyxwvuts87654321 ü",
        );
        assert_eq!(out.count, 3);
        assert_eq!(out.kinds, ["aws_access_key", "bearer_token"]);
        assert!(out.text.ends_with(" ü"));
        assert!(!out.text.contains("abcdefgh"));
    }

    #[test]
    fn never_panics_on_edges() {
        for s in [
            "://",
            "a://",
            "x://:@",
            "-----BEGIN ",
            "-----BEGIN PRIVATE KEY",
            "bearer",
            "Bearer \t",
            "aws_secret_access_key",
            "aws_secret_access_key=",
            "ghp_",
            "é://a:b@c",
            "ü-----BEGIN X PRIVATE KEY-----",
        ] {
            let _ = redact(s);
        }
        assert_eq!(r("x://:p@h").0, "x://:[REDACTED:url_password]@h");
    }
}
