//! A single pass over a message's raw bytes beside its parse ([`super::message`]): it measures
//! JSON nesting depth against the configured limit (stopping as soon as the limit is passed; a
//! message nested deeper is refused, and the parse itself is bounded by serde_json's recursion
//! limit) and records the raw text of the top-level `id` members, so ids the JSON value model
//! cannot hold exactly (integers beyond 64 bits) can be echoed verbatim.
//!
//! The scan trusts nothing: on malformed input it returns whatever it saw and the parser then
//! reports the syntax error. It must never panic, allocate per byte, or recurse.

use std::ops::Range;

/// What the scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prescan {
    /// The input nests deeper than the limit (the scan stopped there).
    pub too_deep: bool,
    /// Raw byte range of the `id` member of each top-level message: one slot for an object,
    /// one per element for an array (`None` where the element has no `id` or is no object).
    pub ids: Vec<Option<Range<usize>>>,
}

impl Prescan {
    /// The raw `id` text of message slot `i`, when it is valid UTF-8.
    pub fn id_text<'a>(&self, bytes: &'a [u8], i: usize) -> Option<&'a str> {
        let range = self.ids.get(i)?.clone()?;
        std::str::from_utf8(bytes.get(range)?).ok()
    }
}

/// Scans `bytes`, allowing at most `max_depth` nested arrays and objects.
pub fn prescan(bytes: &[u8], max_depth: usize) -> Prescan {
    let mut out = Prescan::default();
    let mut depth = 0usize;
    // Depth of the objects whose members are recorded: 1 for a top-level object, 2 for the
    // objects directly inside a top-level array. 0 until the first byte decides.
    let mut record_depth = 0usize;
    let mut in_record = false;
    let mut expect_key = false;
    let mut key_is_id = false;
    let mut value_pending = false;
    let mut value_start: Option<usize> = None;
    let mut element_pending = false;
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
            continue;
        }
        if record_depth == 0 {
            record_depth = match b {
                b'{' => 1,
                b'[' => 2,
                _ => return out,
            };
        }
        // Start of a value directly inside the top-level array: a new slot.
        if record_depth == 2 && depth == 1 && element_pending && b != b']' {
            element_pending = false;
            out.ids.push(None);
            in_record = b == b'{';
        }
        let at_record = in_record && depth == record_depth;
        if at_record && value_pending {
            value_pending = false;
            value_start = Some(i);
        }
        match b {
            b'"' => {
                let start = i;
                i = skip_string(bytes, i);
                if at_record && expect_key {
                    expect_key = false;
                    key_is_id = is_id_key(&bytes[start..i.min(bytes.len())]);
                }
                continue;
            }
            b':' if at_record => value_pending = true,
            b',' if at_record => {
                close_member(&mut out, bytes, i, key_is_id, value_start.take());
                key_is_id = false;
                expect_key = true;
            }
            b',' if record_depth == 2 && depth == 1 => element_pending = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max_depth {
                    out.too_deep = true;
                    return out;
                }
                if b == b'[' && record_depth == 2 && depth == 1 {
                    element_pending = true;
                }
                if b == b'{' && depth == record_depth && (record_depth == 1 || in_record) {
                    in_record = true;
                    expect_key = true;
                    if record_depth == 1 {
                        out.ids.push(None);
                    }
                }
            }
            b'}' | b']' => {
                if at_record && b == b'}' {
                    close_member(&mut out, bytes, i, key_is_id, value_start.take());
                    key_is_id = false;
                    in_record = false;
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Index just past the string starting at `start` (an opening quote), or the input's end.
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Whether the raw key token (with its quotes) decodes to `id`.
fn is_id_key(raw: &[u8]) -> bool {
    if raw == b"\"id\"" {
        return true;
    }
    raw.contains(&b'\\') && serde_json::from_slice::<String>(raw).is_ok_and(|k| k == "id")
}

/// Records the finished member's value range when its key was `id`.
fn close_member(
    out: &mut Prescan,
    bytes: &[u8],
    end: usize,
    key_is_id: bool,
    start: Option<usize>,
) {
    let (true, Some(start)) = (key_is_id, start) else {
        return;
    };
    let mut stop = end;
    while stop > start && matches!(bytes[stop - 1], b' ' | b'\t' | b'\n' | b'\r') {
        stop -= 1;
    }
    if let Some(slot) = out.ids.last_mut() {
        *slot = Some(start..stop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(input: &str) -> Vec<Option<String>> {
        let scan = prescan(input.as_bytes(), 32);
        (0..scan.ids.len())
            .map(|i| scan.id_text(input.as_bytes(), i).map(str::to_string))
            .collect()
    }

    #[test]
    fn finds_top_level_ids() {
        assert_eq!(
            ids(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#),
            vec![Some("123456789012345678901234567890".to_string())]
        );
        assert_eq!(
            ids(r#"{"params":{"id":5},"id" : "a,b" }"#),
            vec![Some("\"a,b\"".to_string())]
        );
        assert_eq!(ids(r#"{"\u0069d":7}"#), vec![Some("7".to_string())]);
        assert_eq!(ids(r#"{"method":"x"}"#), vec![None]);
        assert_eq!(ids(r#"{"id":1,"id":2}"#), vec![Some("2".to_string())]);
        assert_eq!(
            ids(r#"{"id":{"id":1}}"#),
            vec![Some(r#"{"id":1}"#.to_string())]
        );
    }

    #[test]
    fn finds_ids_of_batch_elements() {
        assert_eq!(
            ids(r#"[{"id":1},2,{"method":"x"},{"id":"q"},[{"id":9}]]"#),
            vec![
                Some("1".to_string()),
                None,
                None,
                Some("\"q\"".to_string()),
                None
            ]
        );
        assert_eq!(ids("[]"), Vec::<Option<String>>::new());
    }

    #[test]
    fn measures_depth() {
        assert!(!prescan(b"[[[]]]", 3).too_deep);
        assert!(prescan(b"[[[[]]]]", 3).too_deep);
        assert!(!prescan(br#"{"a":"[[[[[[[["}"#, 2).too_deep);
        assert!(prescan(&vec![b'['; 100_000], 32).too_deep);
    }

    #[test]
    fn survives_garbage() {
        for input in [
            &b"\"unterminated"[..],
            b"{\"id\"",
            b"{\"id\":",
            b"}}}]]]",
            b"\\",
            b"{\"a\\",
            b"\xff\xfe{",
        ] {
            let _ = prescan(input, 4);
        }
    }
}
