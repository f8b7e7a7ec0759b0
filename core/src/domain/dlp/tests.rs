use super::*;

/// One row of a table of docs/RECORDS.md §7: cells trimmed of spaces and back quotes, `\n`
/// read as a line break.
fn doc_rows(header: &str) -> Vec<Vec<String>> {
    let doc = include_str!("../../../../docs/RECORDS.md");
    let start = doc.find("## 7. DLP").expect("section 7");
    let section = &doc[start..start + doc[start..].find("\n## 8.").expect("section 8")];
    let table = &section[section.find(header).expect(header) + header.len()..];
    table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('`').replace("\\n", "\n"))
                .collect()
        })
        .collect()
}

/// The documented examples: (kind, example, recorded as).
pub(crate) fn documented_examples() -> Vec<(String, String, String)> {
    doc_rows("| kind | example | recorded as |")
        .into_iter()
        .map(|r| {
            assert_eq!(r.len(), 3, "{r:?}");
            (r[0].clone(), r[1].clone(), r[2].clone())
        })
        .collect()
}

/// The documented texts that stay as they are.
pub(crate) fn documented_harmless() -> Vec<String> {
    doc_rows("| text | why |")
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
}

/// The secret part of a documented example: what its redaction removed.
pub(crate) fn secret_of(example: &str, recorded: &str) -> String {
    let at = recorded.find("[REDACTED:").expect("a placeholder");
    let tail = &recorded[recorded[at..].find(']').expect("closed") + at + 1..];
    example[at..example.len() - tail.len()].to_string()
}

#[test]
fn every_documented_example_is_redacted_as_documented() {
    let examples = documented_examples();
    assert!(examples.len() >= 25);
    let kinds: BTreeSet<&str> = examples.iter().map(|e| e.0.as_str()).collect();
    let table: BTreeSet<String> = doc_rows("| kind | pattern | replaced |")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(
        kinds,
        table.iter().map(String::as_str).collect(),
        "one example per documented kind"
    );
    for (kind, input, want) in &examples {
        let out = redact(input);
        assert_eq!(&out.text, want, "{input:?}");
        assert_eq!(out.count, 1, "{input:?}");
        assert_eq!(out.kinds, [kind.as_str()], "{input:?}");
        let secret = secret_of(input, want);
        assert!(
            secret.len() >= 8 && secret.contains("EXAMPLE"),
            "{secret:?}"
        );
        // Redacting again changes nothing.
        assert_eq!(redact(&out.text).count, 0, "{want:?}");
    }
}

#[test]
fn documented_harmless_text_is_untouched() {
    let texts = documented_harmless();
    assert!(texts.len() >= 10);
    for s in texts.iter().map(String::as_str).chain([
        "",
        "Bearer short",
        "ghp_short and xoxb-tiny",
        "see https://example.com/path?x=1 and mailto:me@example.com",
        "a://b@c has no password; http://user@host neither",
        "xAKIAIOSFODNN7EXAMPLE is glued to a word",
        "eyJ-eyJ.ab.c is too short",
        "password=\nand password=\"\" and password=",
        "the password: secret",
    ]) {
        let out = redact(s);
        assert_eq!((out.text.as_str(), out.count), (s, 0), "{s:?}");
    }
}

#[test]
fn every_example_is_redacted_anywhere_in_a_text() {
    for (kind, input, _) in documented_examples() {
        if input.contains("(cut off)") {
            continue; // an unterminated key block runs to the end of the text
        }
        let body = format!("before ü\n{input}\nafter ✓");
        let out = redact(&body);
        assert_eq!(out.kinds, [kind.as_str()], "{body:?}");
        assert!(out.text.starts_with("before ü\n") && out.text.ends_with("\nafter ✓"));
    }
}

#[test]
fn counts_and_kinds_add_up() {
    let out =
        redact("Bearer abcdefgh12345678 and AKIAIOSFODNN7EXAMPLE and Bearer zyxwvuts87654321 ü");
    assert_eq!(out.count, 3);
    assert_eq!(out.kinds, ["aws_access_key", "bearer_token"]);
    assert!(out.text.ends_with(" ü"));
    assert!(!out.text.contains("abcdefgh"));
    let mut r = Redactions::default();
    assert_eq!(r.field("goal", "plain"), "plain");
    assert!(r.is_empty());
    r.field(
        "goal",
        "password=EXAMPLE-1 and sk_live_EXAMPLEexample0123456789",
    );
    r.optional("note", Some("token=abc123"));
    assert_eq!(
        r.counts(),
        BTreeMap::from([("goal".to_string(), 2), ("note".to_string(), 1)])
    );
    assert_eq!(r.kinds(), ["secret_assignment", "stripe_key"]);
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
        "Bearer\n",
        "aws_secret_access_key",
        "aws_secret_access_key=",
        "ghp_",
        "é://a:b@c",
        "ü-----BEGIN X PRIVATE KEY-----",
        "eyJ",
        "eyJaaaaaaaaaa.",
        "eyJaaaaaaaaaa.bb.",
        "sk-",
        "AIza",
        "password",
        "password=",
        "password:\\",
        "password:\\\"",
        "token=\"ü",
        "token='ü\nx",
    ] {
        let _ = redact(s);
    }
    assert_eq!(redact("x://:p@h").text, "x://:[REDACTED:url_password]@h");
    assert_eq!(
        redact("{\\\"password\\\": \\\"EXAMPLE-1\\\"}").text,
        "{\\\"password\\\": \\\"[REDACTED:secret_assignment]\\\"}"
    );
    assert_eq!(
        redact("token=\"EXAMPLE ü ✓ unterminated\nnext").text,
        "token=\"[REDACTED:secret_assignment]\nnext"
    );
}

/// Adversarial shapes that would be quadratic if a failed attempt rescanned its run (the
/// timing is reported by `bernstein-bench dlp`; here only correctness on them).
#[test]
fn adversarial_shapes_are_handled() {
    for unit in [
        "eyJ-",
        "eyJaaaaaaaaaa.bb.",
        "sk-a",
        "Bearer \n",
        "password:a ",
    ] {
        let s = unit.repeat(10_000);
        let _ = redact(&s);
    }
}
