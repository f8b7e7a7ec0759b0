//! The DLP patterns (docs/RECORDS.md §7) as data: one row per pattern, in three parts, each a
//! regular expression: `before` (kept), `secret` (replaced) and `after` (kept). A row matches
//! `before secret after`; the row order is the priority that names a placeholder when two
//! secrets start at the same byte (see [`super`]). `check`, when present, is a condition on
//! the secret the regex does not express.
//!
//! Syntax is the `regex` crate's over bytes with Unicode mode off: classes, `\s` and `(?i)` are
//! ASCII, and a negated class such as `[^\s"]` matches any other byte. Every delimiter being
//! ASCII, a match still starts and ends on character boundaries. `\b{start-half}` is "not
//! right after a letter, digit or `_`", `\b{end-half}` "not right before one".

use std::sync::LazyLock;

use base64::Engine as _;
use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

/// One pattern of the table.
pub(super) struct Pattern {
    pub kind: &'static str,
    pub before: &'static str,
    pub secret: &'static str,
    pub after: &'static str,
    pub check: Option<fn(&[u8]) -> bool>,
}

/// A sensitive name: one of the words, or a name of letters, digits, `_` and `-` ending with
/// one after `_`, `-` or a lower-to-upper case change (`DB_PASSWORD`, `x-api-key`,
/// `apiToken`); the word in any case. Then its closing quote, if quoted (`"`, `'`, `\"`, …),
/// and blanks or line breaks.
macro_rules! name {
    () => {
        concat!(
            r"\b{start-half}(?:(?:[A-Za-z0-9_-]*[_-])?",
            r"(?i:password|passwd|passphrase|secret|token|api_key|apikey|api-key|access_key|secret_key|private_key)",
            r"|[A-Za-z0-9_-]*[a-z]",
            r"(?:P(?i:assword|asswd|assphrase|rivate_key)|S(?i:ecret|ecret_key)|T(?i:oken)",
            r"|A(?i:pi_key|pikey|pi-key|ccess_key)))",
            r#"(?:\\*["'])?[ \t\r\n]*"#,
        )
    };
}

/// Before a quoted value: a sensitive name, then `=`, `:`, `:=` or `=>`, blanks or line breaks.
macro_rules! quoted {
    ($opening:literal) => {
        concat!(name!(), r"(?:=>|:=|[=:])[ \t\r\n]*", $opening)
    };
}

/// A bare value: up to whitespace, a quote, a back quote or `&` (a backslash before a quote
/// is the quote's escape); not starting with a backslash (`{\"password\": \"x\"}` is the
/// quoted rows'), nor with `=` or `>`, so `==` and `=>` are not assignments.
const BARE: &str = r#"[^\s"'`&=>\\](?:[^\s"'`&\\]|\\[^\s"'`&])*"#;

/// The patterns, in priority order.
pub(super) const PATTERNS: &[Pattern] = &[
    // The whole block, to the END line of any label or to the end of the text.
    Pattern {
        kind: "private_key",
        before: "",
        secret: r"-----BEGIN [^\r\n-]{0,64}PRIVATE KEY-----(?s:.)*?(?:-----END [^\r\n-]{0,64}PRIVATE KEY-----|\z)",
        after: "",
        check: None,
    },
    // The user part holds no `[` or `]` (RFC 3986 has them only around IPv6 hosts), so a
    // user already redacted is not read as one again.
    Pattern {
        kind: "url_password",
        before: r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:\[\]]*:",
        secret: r"[^/?#@\s]+",
        after: "@",
        check: None,
    },
    Pattern {
        kind: "bearer_token",
        before: r"\b{start-half}(?i:bearer)[ \t\r\n]+",
        secret: r"[A-Za-z0-9._~+/=-]{8,}",
        after: "",
        check: Some(not_all_letters),
    },
    Pattern {
        kind: "basic_auth",
        before: r"\b{start-half}(?i:basic)[ \t\r\n]+",
        secret: r"[A-Za-z0-9+/]{8,}={0,2}",
        after: "",
        check: Some(basic_credentials),
    },
    Pattern {
        kind: "aws_access_key",
        before: "",
        secret: r"\b{start-half}(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b{end-half}",
        after: "",
        check: None,
    },
    Pattern {
        kind: "google_api_key",
        before: "",
        secret: r"\b{start-half}AIza[A-Za-z0-9_-]{35}\b{end-half}",
        after: "",
        check: None,
    },
    Pattern {
        kind: "aws_secret_key",
        before: r#"\b{start-half}(?i:aws_secret_access_key)[ \t\r\n"'\\]*[=:][ \t\r\n"'\\]*"#,
        secret: r"[A-Za-z0-9/+=]{40}\b{end-half}",
        after: "",
        check: None,
    },
    // The signature may be empty only when the payload is JSON too (`alg: none`).
    Pattern {
        kind: "jwt",
        before: "",
        secret: r"\b{start-half}eyJ[A-Za-z0-9_-]{7,}\.(?:eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*|[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{8,})",
        after: "",
        check: None,
    },
    Pattern {
        kind: "anthropic_key",
        before: "",
        secret: r"\b{start-half}sk-ant-[A-Za-z0-9_-]{16,}",
        after: "",
        check: None,
    },
    Pattern {
        kind: "openai_key",
        before: "",
        secret: r"\b{start-half}sk-[A-Za-z0-9_-]{20,}",
        after: "",
        check: Some(openai_body),
    },
    Pattern {
        kind: "stripe_key",
        before: "",
        secret: r"\b{start-half}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        after: "",
        check: None,
    },
    Pattern {
        kind: "github_token",
        before: "",
        secret: r"\b{start-half}(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})",
        after: "",
        check: None,
    },
    Pattern {
        kind: "gitlab_token",
        before: "",
        secret: r"\b{start-half}(?:glpat|glptt|glrt|gldt|glcbt)-[A-Za-z0-9_-]{20,}",
        after: "",
        check: None,
    },
    Pattern {
        kind: "slack_token",
        before: "",
        secret: r"\b{start-half}(?:xox[bpares]|xapp)-[A-Za-z0-9-]{10,}",
        after: "",
        check: None,
    },
    // Matched at the host, so the `https://` before it is kept.
    Pattern {
        kind: "slack_webhook",
        before: r"hooks\.slack\.com/services/",
        secret: r"[A-Za-z0-9/]{8,}",
        after: "",
        check: None,
    },
    // Quoted values, up to the closing quote or the line's end. A quote escaped once more than
    // the opening one does not end the value: `"a\"b"`, `\"a\\\"b\"`.
    Pattern {
        kind: "secret_assignment",
        before: quoted!(r#"""#),
        secret: r#"(?:[^"\\\n]|\\[^\n])*"#,
        after: "",
        check: Some(not_a_scheme_word),
    },
    Pattern {
        kind: "secret_assignment",
        before: quoted!("'"),
        secret: r"(?:[^'\\\n]|\\[^\n])*",
        after: "",
        check: Some(not_a_scheme_word),
    },
    Pattern {
        kind: "secret_assignment",
        before: quoted!(r#"\\""#),
        secret: r#"(?:[^"\\\n]|\\[^"\\\n]|\\\\(?:[^"\\\n]|\\[^\n]))*"#,
        after: "",
        check: Some(not_a_scheme_word),
    },
    Pattern {
        kind: "secret_assignment",
        before: quoted!(r"\\'"),
        secret: r"(?:[^'\\\n]|\\[^'\\\n]|\\\\(?:[^'\\\n]|\\[^\n]))*",
        after: "",
        check: Some(not_a_scheme_word),
    },
    // Opened by two or more backslashes (JSON in JSON in a string): ends at a quote after
    // fewer than four.
    Pattern {
        kind: "secret_assignment",
        before: quoted!(r#"\\{2,}""#),
        secret: r#"(?:[^"\\\n]|\\+[^"\\\n]|\\{4,}")*"#,
        after: "",
        check: Some(not_a_scheme_word),
    },
    // Bare, after `=`.
    Pattern {
        kind: "secret_assignment",
        before: concat!(name!(), r"=[ \t]*"),
        secret: BARE,
        after: "",
        check: Some(not_a_scheme_word),
    },
    // Bare, after `:`: must hold a digit or a symbol, so "the token: it expires" stays.
    Pattern {
        kind: "secret_assignment",
        before: concat!(name!(), r":[ \t]*"),
        secret: BARE,
        after: "",
        check: Some(digit_or_symbol),
    },
];

/// Key prefixes, each with the length of the shortest key the table redacts that starts with
/// it: a line break inside such a token is joined in the decoded view while the token is
/// shorter (a key wrapped over two lines; see [`super::view`]). JWTs (`eyJ`) also until they
/// have their two dots.
pub(super) const WRAPPABLE: &[(&str, usize)] = &[
    ("sk-", 23), // anthropic_key, openai_key
    ("sk_live_", 24),
    ("sk_test_", 24),
    ("rk_live_", 24),
    ("rk_test_", 24),
    ("ghp_", 24),
    ("gho_", 24),
    ("ghu_", 24),
    ("ghs_", 24),
    ("ghr_", 24),
    ("github_pat_", 33),
    ("glpat-", 26),
    ("glptt-", 26),
    ("glrt-", 25),
    ("gldt-", 25),
    ("glcbt-", 26),
    ("xoxb-", 15),
    ("xoxp-", 15),
    ("xoxa-", 15),
    ("xoxr-", 15),
    ("xoxe-", 15),
    ("xoxs-", 15),
    ("xapp-", 15),
    ("AKIA", 20),
    ("ASIA", 20),
    ("ABIA", 20),
    ("ACCA", 20),
    ("AIza", 39),
    ("eyJ", 22),
];

/// Whether `text` holds a key prefix of [`WRAPPABLE`] anywhere (a literal search).
pub(super) fn has_key_prefix(text: &[u8]) -> bool {
    static PREFIXES: LazyLock<Regex> = LazyLock::new(|| {
        let words: Vec<String> = WRAPPABLE.iter().map(|(p, _)| regex::escape(p)).collect();
        compile(&words.join("|"))
    });
    PREFIXES.is_match(text)
}

/// A secret found: `start..end` of the searched text, and the row that found it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Found {
    pub start: usize,
    pub end: usize,
    pub row: usize,
}

struct Compiled {
    set: RegexSet,
    rows: Vec<Row>,
}

struct Row {
    /// `before secret after`.
    whole: Regex,
    /// `before`, anchored at the start of a match.
    before: Option<Regex>,
    /// `after`, anchored at the end of a match.
    after: Option<Regex>,
    /// `secret`, anchored at both ends: debug builds check that a match splits as the table
    /// says.
    #[cfg(debug_assertions)]
    secret: Regex,
}

fn whole(p: &Pattern) -> String {
    format!("(?:{})(?:{})(?:{})", p.before, p.secret, p.after)
}

fn compile(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .unicode(false)
        .build()
        .expect("a DLP pattern compiles")
}

/// The set is built from each row's `before` part (or its secret, without one): a necessary
/// condition of a match, met once per candidate rather than at every byte of a long secret.
static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    set: RegexSetBuilder::new(PATTERNS.iter().map(|p| {
        if p.before.is_empty() {
            p.secret
        } else {
            p.before
        }
    }))
    .unicode(false)
    .build()
    .expect("the DLP patterns compile"),
    rows: PATTERNS
        .iter()
        .map(|p| Row {
            whole: compile(&whole(p)),
            before: (!p.before.is_empty()).then(|| compile(&format!("^(?:{})", p.before))),
            after: (!p.after.is_empty()).then(|| compile(&format!("(?:{})$", p.after))),
            #[cfg(debug_assertions)]
            secret: compile(&format!("^(?:{})$", p.secret)),
        })
        .collect(),
});

/// Appends every secret the patterns find in `text` to `out` (in no particular order; they may
/// overlap).
pub(super) fn find(text: &[u8], out: &mut Vec<Found>) {
    let c = &*COMPILED;
    // One pass tells which patterns match anywhere; prose is done after it.
    for row in c.set.matches(text).iter() {
        let (pattern, compiled) = (&PATTERNS[row], &c.rows[row]);
        for m in compiled.whole.find_iter(text) {
            let (mut start, mut end) = (m.start(), m.end());
            // Both parts are anchored inside the match, which they begin or end.
            if let Some(before) = &compiled.before {
                start += before.find(&text[start..end]).map_or(0, |b| b.end());
            }
            if let Some(after) = &compiled.after {
                end = start
                    + after
                        .find(&text[start..end])
                        .map_or(end - start, |a| a.start());
            }
            let secret = &text[start..end];
            #[cfg(debug_assertions)]
            assert!(
                compiled.secret.is_match(secret),
                "{}: {:?} does not split as `before secret after`",
                pattern.kind,
                String::from_utf8_lossy(m.as_bytes())
            );
            if secret.is_empty() || pattern.check.is_some_and(|f| !f(secret)) {
                continue;
            }
            out.push(Found { start, end, row });
        }
    }
}

/// `Bearer` tokens hold a digit or a symbol: "bearer instruments" stays.
fn not_all_letters(b: &[u8]) -> bool {
    !b.iter().all(u8::is_ascii_alphabetic)
}

/// `Basic` credentials are base64 of printable `user:password`: "Basic authentication" stays.
fn basic_credentials(b: &[u8]) -> bool {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const B64: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    B64.decode(b)
        .is_ok_and(|d| d.contains(&b':') && d.iter().all(|c| (b' '..=b'~').contains(c)))
}

/// `sk-proj-`, `sk-svcacct-`, `sk-admin-`, or a legacy body mixing upper case, lower case and
/// digits (`sk-learn-…` and other words stay); `sk-ant-` is Anthropic's.
fn openai_body(b: &[u8]) -> bool {
    let body = &b[3..];
    if body.starts_with(b"ant-") {
        return false;
    }
    let project = [&b"proj-"[..], b"svcacct-", b"admin-"]
        .iter()
        .any(|p| body.starts_with(p));
    project
        || (body.iter().any(u8::is_ascii_uppercase)
            && body.iter().any(u8::is_ascii_lowercase)
            && body.iter().any(u8::is_ascii_digit))
}

/// A value that is the word `Bearer` (its token after the value: `token=Bearer abc…`), or
/// `Bearer` and a token the `bearer_token` row redacts (`"token": "Bearer abc…"`), is left to
/// that row, which keeps the word.
fn not_a_scheme_word(b: &[u8]) -> bool {
    let Some(rest) = strip_prefix_ignore_case(b.trim_ascii_end(), b"bearer") else {
        return true;
    };
    let token = rest.trim_ascii_start();
    let gap = rest.len() - token.len();
    let bearer_token = token.len() >= 8
        && not_all_letters(token)
        && token
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._~+/=-".contains(c));
    !(rest.is_empty() || (gap > 0 && bearer_token))
}

fn digit_or_symbol(b: &[u8]) -> bool {
    b.iter()
        .any(|c| c.is_ascii_digit() || c.is_ascii_punctuation())
        && not_a_scheme_word(b)
}

fn strip_prefix_ignore_case<'a>(b: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    (b.len() >= prefix.len() && b[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &b[prefix.len()..])
}
