//! Line-by-line redaction of agent output, applied to each line as it arrives — before it is
//! batched into message bodies, cut to fit, shown, or kept for the result summary. The server
//! redacts every body again, but a secret that spans lines (a PEM private key, `Bearer` with
//! its token on the next line) could straddle two bodies or the summary's window, where no
//! single text holds the whole pattern; this keeps that state across lines.

use bernstein_domain::dlp;

/// What the lines before told about the next one.
#[derive(Debug, Default)]
pub struct LineRedactor {
    /// Inside a private key block whose BEGIN line was redacted.
    in_private_key: bool,
    /// The previous line ended with the word `Bearer`.
    after_bearer: bool,
}

impl LineRedactor {
    /// The line with its secrets replaced, or `None` for a line inside a private key block
    /// (the block's first line already stands for it as `[REDACTED:private_key]`).
    pub fn line(&mut self, text: &str) -> Option<String> {
        if self.in_private_key {
            if text.contains("-----END ") && text.contains("PRIVATE KEY-----") {
                self.in_private_key = false;
            }
            return None;
        }
        let out = if self.after_bearer {
            const PREFIX: &str = "Bearer ";
            let r = dlp::redact(&format!("{PREFIX}{text}"));
            r.text[PREFIX.len()..].to_string()
        } else {
            dlp::redact(text).text
        };
        let opened = text.contains("-----BEGIN ") && text.contains("PRIVATE KEY-----");
        self.in_private_key = opened && !text.contains("-----END ");
        self.after_bearer = ends_with_bearer(text);
        Some(out)
    }
}

fn ends_with_bearer(text: &str) -> bool {
    let t = text.trim_end().as_bytes();
    t.len() >= 6
        && t[t.len() - 6..].eq_ignore_ascii_case(b"bearer")
        && (t.len() == 6 || !(t[t.len() - 7].is_ascii_alphanumeric() || t[t.len() - 7] == b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str]) -> Vec<String> {
        let mut r = LineRedactor::default();
        lines.iter().filter_map(|l| r.line(l)).collect()
    }

    #[test]
    fn a_private_key_over_lines_is_dropped_to_its_end_line() {
        let out = run(&[
            "before",
            "-----BEGIN RSA PRIVATE KEY-----",
            "MIIEowEXAMPLEKEYMATERIAL",
            "EXAMPLEKEYMATERIAL2",
            "-----END RSA PRIVATE KEY-----",
            "after",
        ]);
        assert_eq!(out, ["before", "[REDACTED:private_key]", "after"]);
    }

    #[test]
    fn a_bearer_token_on_the_next_line_is_redacted() {
        let out = run(&[
            "curl -H Authorization: Bearer",
            "EXAMPLE0token0EXAMPLE rest",
            "next",
        ]);
        assert_eq!(
            out,
            [
                "curl -H Authorization: Bearer",
                "[REDACTED:bearer_token] rest",
                "next"
            ]
        );
        assert_eq!(run(&["the bearer", "of news"]), ["the bearer", "of news"]);
    }

    #[test]
    fn single_line_secrets_go_too() {
        assert_eq!(
            run(&["key sk-proj-EXAMPLEexample0123456789EXAMPLE"]),
            ["key [REDACTED:openai_key]"]
        );
        assert_eq!(run(&["plain", ""]), ["plain", ""]);
    }
}
