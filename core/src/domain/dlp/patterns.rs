//! The DLP patterns (docs/RECORDS.md §7). [`match_at`] tries, at one byte position, the
//! patterns that can start with that byte, then the generic `name=value` assignment.
//!
//! Linear time: a failed attempt either scans a bounded span (fixed-length keys, short
//! prefixes) or a maximal run that starts at a token boundary, which no later attempt of the
//! same pattern rescans (positions inside a run are not token starts).

/// A secret at some position: `input[i..keep_until]` is kept, `keep_until..resume_from` is the
/// secret, `resume_from..end` is kept after the placeholder.
pub(super) struct Match {
    pub keep_until: usize,
    pub resume_from: usize,
    pub end: usize,
    pub kind: &'static str,
}

pub(super) fn match_at(s: &str, i: usize) -> Option<Match> {
    let b = s.as_bytes();
    let specific = match b[i] {
        b'-' => private_key(s, i),
        b':' => url_password(b, i),
        b'b' | b'B' => bearer(b, i),
        b'A' => aws_access_key(b, i).or_else(|| google_key(b, i)),
        b'e' => jwt(b, i),
        b's' => openai_or_anthropic(b, i).or_else(|| stripe_key(b, i)),
        b'r' => stripe_key(b, i),
        b'g' => github_token(b, i).or_else(|| gitlab_token(b, i)),
        b'x' => slack_token(b, i),
        b'h' => slack_webhook(b, i),
        _ => None,
    };
    specific
        .or_else(|| aws_secret_key(b, i))
        .or_else(|| assignment(b, i))
        // A placeholder is never redacted again, so redaction is idempotent.
        .filter(|m| !b[m.keep_until..].starts_with(PLACEHOLDER))
}

const PLACEHOLDER: &[u8] = b"[REDACTED:";

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn is_b64url(c: u8) -> bool {
    is_word(c) || c == b'-'
}

/// Not right after a letter, digit or `_`.
fn word_start(b: &[u8], i: usize) -> bool {
    i == 0 || !is_word(b[i - 1])
}

/// Not right after a letter, digit, `_` or `-` (the start of a base64url run).
fn run_start(b: &[u8], i: usize) -> bool {
    i == 0 || !is_b64url(b[i - 1])
}

/// Length of the run of bytes from `from` satisfying `ok`.
fn run_len(b: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    b[from..].iter().take_while(|c| ok(**c)).count()
}

/// [`run_len`], but scanning at most `max` bytes.
fn run_len_max(b: &[u8], from: usize, max: usize, ok: impl Fn(u8) -> bool) -> usize {
    b[from..].iter().take(max).take_while(|c| ok(**c)).count()
}

fn whole(i: usize, end: usize, kind: &'static str) -> Match {
    Match {
        keep_until: i,
        resume_from: end,
        end,
        kind,
    }
}

fn inner(start: usize, end: usize, kind: &'static str) -> Match {
    Match {
        keep_until: start,
        resume_from: end,
        end,
        kind,
    }
}

/// `prefix` + at least `min` token bytes, at a word start; the run is maximal.
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
    const MAX_LABEL: usize = 64;
    let rest = s[i..].strip_prefix(BEGIN)?;
    let window = &rest.as_bytes()[..rest.len().min(MAX_LABEL + 5)];
    let label_len = window.windows(5).position(|w| w == b"-----")?;
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
    (at > pass_start).then(|| inner(pass_start, at, "url_password"))
}

fn bearer_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// `Bearer`, blanks or line breaks, then a token of 8+ bytes that is not all letters.
fn bearer(b: &[u8], i: usize) -> Option<Match> {
    if !word_start(b, i) || b.len() < i + 6 || !b[i..i + 6].eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let gap = run_len(b, i + 6, |c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'));
    if gap == 0 {
        return None;
    }
    let start = i + 6 + gap;
    let n = run_len(b, start, bearer_byte);
    let token = &b[start..start + n];
    let lettered = token.iter().all(u8::is_ascii_alphabetic);
    (n >= 8 && !lettered).then(|| inner(start, start + n, "bearer_token"))
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
    let n = run_len_max(b, i + 4, 17, |c| {
        c.is_ascii_uppercase() || c.is_ascii_digit()
    });
    let end = i + 4 + n;
    let bounded = b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric());
    (n == 16 && bounded).then(|| whole(i, end, "aws_access_key"))
}

fn google_key(b: &[u8], i: usize) -> Option<Match> {
    if !word_start(b, i) || !b[i..].starts_with(b"AIza") {
        return None;
    }
    let n = run_len_max(b, i + 4, 36, is_b64url);
    (n == 35).then(|| whole(i, i + 4 + n, "google_api_key"))
}

fn aws_secret_key(b: &[u8], i: usize) -> Option<Match> {
    const NAME: &[u8] = b"aws_secret_access_key";
    if !matches!(b[i], b'a' | b'A')
        || !word_start(b, i)
        || b.len() < i + NAME.len()
        || !b[i..i + NAME.len()].eq_ignore_ascii_case(NAME)
    {
        return None;
    }
    let mut k = i + NAME.len();
    k += run_len_max(b, k, 8, |c| matches!(c, b' ' | b'\t' | b'"' | b'\''));
    if !matches!(b.get(k), Some(b'=' | b':')) {
        return None;
    }
    k += 1;
    k += run_len_max(b, k, 8, |c| matches!(c, b' ' | b'\t' | b'"' | b'\''));
    let n = run_len_max(b, k, 41, |c| {
        c.is_ascii_alphanumeric() || matches!(c, b'/' | b'+' | b'=')
    });
    (n == 40).then(|| inner(k, k + n, "aws_secret_key"))
}

/// Three base64url segments joined by `.`, the header starting `eyJ` (`{"`). The signature
/// may be empty only when the payload is JSON too (`alg: none`).
fn jwt(b: &[u8], i: usize) -> Option<Match> {
    if !run_start(b, i) || !b[i..].starts_with(b"eyJ") {
        return None;
    }
    let n1 = run_len(b, i, is_b64url);
    let dot1 = i + n1;
    if n1 < 10 || b.get(dot1) != Some(&b'.') {
        return None;
    }
    let n2 = run_len(b, dot1 + 1, is_b64url);
    let dot2 = dot1 + 1 + n2;
    if n2 < 2 || b.get(dot2) != Some(&b'.') {
        return None;
    }
    let n3 = run_len(b, dot2 + 1, is_b64url);
    let json_payload = b[dot1 + 1..].starts_with(b"eyJ");
    (n3 >= 8 || json_payload).then(|| whole(i, dot2 + 1 + n3, "jwt"))
}

/// `sk-ant-…` (Anthropic), `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` and legacy `sk-…`
/// (OpenAI; the legacy body must mix upper case, lower case and digits, so `sk-learn-…` and
/// other words stay).
fn openai_or_anthropic(b: &[u8], i: usize) -> Option<Match> {
    if !word_start(b, i) || !b[i..].starts_with(b"sk-") {
        return None;
    }
    let body = i + 3;
    let n = run_len(b, body, is_b64url);
    let token = &b[body..body + n];
    if n < 20 {
        return None;
    }
    let end = body + n;
    if token.starts_with(b"ant-") {
        return Some(whole(i, end, "anthropic_key"));
    }
    let project = [&b"proj-"[..], b"svcacct-", b"admin-"]
        .iter()
        .any(|p| token.starts_with(p));
    let mixed = token.iter().any(u8::is_ascii_uppercase)
        && token.iter().any(u8::is_ascii_lowercase)
        && token.iter().any(u8::is_ascii_digit);
    (project || mixed).then(|| whole(i, end, "openai_key"))
}

/// Stripe secret and restricted keys (publishable `pk_` keys are public and stay).
fn stripe_key(b: &[u8], i: usize) -> Option<Match> {
    prefixed_token(
        b,
        i,
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        16,
        |c| c.is_ascii_alphanumeric(),
        "stripe_key",
    )
}

fn github_token(b: &[u8], i: usize) -> Option<Match> {
    prefixed_token(b, i, &["github_pat_"], 22, is_word, "github_token").or_else(|| {
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
        is_b64url,
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
    (n >= 8).then(|| inner(start, start + n, "slack_webhook"))
}

/// Names whose value is a secret: a name is sensitive when it is one of these or ends with
/// one after `_`, `-` or a lower-to-upper case change (`DB_PASSWORD`, `apiToken`).
const SENSITIVE: [&str; 11] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "secret_key",
    "private_key",
];

fn sensitive_name(name: &[u8]) -> bool {
    SENSITIVE.iter().any(|w| {
        let w = w.as_bytes();
        if name.len() < w.len() || !name[name.len() - w.len()..].eq_ignore_ascii_case(w) {
            return false;
        }
        let at = name.len() - w.len();
        at == 0
            || matches!(name[at - 1], b'_' | b'-')
            || (name[at - 1].is_ascii_lowercase() && name[at].is_ascii_uppercase())
    })
}

/// `name=value`, `name: value`, `"name": "value"` with a sensitive name: the value goes.
/// Quoted values go up to the closing quote (or the line's end); bare values up to
/// whitespace, a quote or `&`. A bare value after `:` must hold a digit or a symbol, so prose
/// such as "the token: it expires" stays.
fn assignment(b: &[u8], i: usize) -> Option<Match> {
    const MAX_NAME: usize = 128;
    if !b[i].is_ascii_alphabetic() || !run_start(b, i) {
        return None;
    }
    let n = run_len_max(b, i, MAX_NAME + 1, is_b64url);
    if n > MAX_NAME || !sensitive_name(&b[i..i + n]) {
        return None;
    }
    let mut k = i + n;
    k += run_len_max(b, k, 2, |c| matches!(c, b'"' | b'\'' | b'\\'));
    k += run_len_max(b, k, 8, |c| c == b' ' || c == b'\t');
    let sep = *b.get(k)?;
    if !matches!(sep, b'=' | b':') {
        return None;
    }
    k += 1;
    if matches!(b.get(k), Some(b'=' | b'>')) {
        return None; // `==`, `=>`: code, not an assignment
    }
    k += run_len_max(b, k, 8, |c| c == b' ' || c == b'\t');
    let escaped = b.get(k) == Some(&b'\\') && matches!(b.get(k + 1), Some(b'"' | b'\''));
    let q = if escaped { k + 1 } else { k };
    let (start, end) = match b.get(q) {
        Some(&quote @ (b'"' | b'\'')) => {
            let start = q + 1;
            let len = run_len(b, start, |c| c != quote && c != b'\n');
            let mut end = start + len;
            if escaped && end > start && b[end - 1] == b'\\' {
                end -= 1;
            }
            (start, end)
        }
        _ => {
            let len = run_len(b, k, |c| {
                !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b'`' | b'&')
            });
            let value = &b[k..k + len];
            let plain = value
                .iter()
                .all(|c| !c.is_ascii_digit() && !c.is_ascii_punctuation());
            if sep == b':' && plain {
                return None;
            }
            (k, k + len)
        }
    };
    let value = &b[start..end];
    let deferred = value.len() >= 6 && value[..6].eq_ignore_ascii_case(b"bearer");
    (end > start && !deferred).then(|| inner(start, end, "secret_assignment"))
}
