//! Text put before a person: an elicitation form's message, a task's status message. A
//! worker's or a caller's text there is clipped, and cannot make the form read other than it
//! is: the characters that reorder or hide text (bidirectional embeddings, overrides and
//! isolates, zero-width marks, the byte-order mark) and any control character are shown as
//! `<U+XXXX>`, and a line break inside quoted text starts an indented line, so quoted text never
//! begins a line of the form's own. (Arguments already refuse control characters but tab and
//! line breaks; the record keeps the text as given.)

/// `text` as shown to a person: at most `max_chars` characters of it (then `…`), made visible
/// as the module says.
pub fn shown(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    let mut chars = text.chars();
    for c in chars.by_ref().take(max_chars) {
        match c {
            '\n' => out.push_str("\n  "),
            '\r' => {}
            '\t' => out.push(' '),
            c if hides(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

/// Whether `c` reorders or hides text, or is a control character.
fn hides(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn reordering_and_hidden_characters_are_made_visible() {
        assert_eq!(shown("plain \u{202E}evil", 100), "plain <U+202E>evil");
        assert_eq!(
            shown("a\u{2066}b\u{2069}\u{200B}c\u{FEFF}", 100),
            "a<U+2066>b<U+2069><U+200B>c<U+FEFF>"
        );
        assert_eq!(shown("bell\u{7}", 100), "bell<U+0007>");
        assert_eq!(shown("ünïcödé stays", 100), "ünïcödé stays");
    }

    #[test]
    fn quoted_lines_are_indented_and_long_text_is_clipped() {
        assert_eq!(
            shown("q?\nRendering hash: x", 100),
            "q?\n  Rendering hash: x"
        );
        assert_eq!(shown("a\r\nb\tc", 100), "a\n  b c");
        assert_eq!(shown("abcdef", 3), "abc…");
        assert_eq!(shown("abc", 3), "abc");
    }
}
