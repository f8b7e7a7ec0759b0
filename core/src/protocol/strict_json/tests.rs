use super::*;

fn dup(text: &str) -> String {
    let e = parse(text).expect_err(text).to_string();
    assert_eq!(e, parse_slice(text.as_bytes()).unwrap_err().to_string());
    e
}

#[test]
fn duplicate_keys_at_any_depth_are_errors_naming_the_key() {
    let e = dup(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bernstein_status","name":"bernstein_run"}}"#,
    );
    assert!(e.starts_with(r#"duplicate key "name" in an object"#), "{e}");
    let e = dup(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#);
    assert!(e.starts_with(r#"duplicate key "id" in an object"#), "{e}");
    let e = dup(r#"{"params":{"_meta":{"progressToken":1,"progressToken":2}}}"#);
    assert!(e.contains(r#""progressToken""#), "{e}");
    let e = dup(r#"{"a":[1,{"b":{"c":[{"d":1,"d":1}]}}]}"#);
    assert!(e.contains(r#""d""#), "{e}");
    let e = dup(r#"[{"x":1},{"y":1,"y":2}]"#);
    assert!(e.contains(r#""y""#), "{e}");
}

#[test]
fn keys_are_compared_after_escapes_are_decoded() {
    let e = dup(r#"{"a":1,"\u0061":2}"#);
    assert!(e.starts_with(r#"duplicate key "a" in an object"#), "{e}");
    let e = dup(r#"{"na\u006de":1,"name":2}"#);
    assert!(e.contains(r#""name""#), "{e}");
    let e = dup(r#"{"\/":1,"/":2}"#);
    assert!(e.contains(r#""/""#), "{e}");
    // Distinct keys that differ only by case or by an escape that is not equal are fine.
    assert!(parse(r#"{"a":1,"A":2,"\u00e9":3,"é\u0000":4}"#).is_ok());
}

#[test]
fn a_quoted_key_in_the_error_is_escaped_and_short() {
    let long = "k\n".repeat(200);
    let text = format!(r#"{{"{0}":1,"{0}":2}}"#, long.replace('\n', "\\n"));
    let e = dup(&text);
    assert!(!e.contains('\n'), "{e}");
    assert!(e.len() < 200, "{e}");
}

#[test]
fn without_duplicates_the_value_is_serde_jsons() {
    for text in [
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping","params":{}}"#,
        r#"{"a":-9223372036854775808,"b":1.5e300,"c":-0.0,"d":[true,false,null],"e":"\ud83d\ude00"}"#,
        r#"  [1, "two", {"three": {"four": []}}]  "#,
        r#""just a string""#,
        "12",
        r#"{"same":{"k":1},"other":{"k":1}}"#,
    ] {
        let want: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parse(text).unwrap(), want, "{text}");
        assert_eq!(parse_slice(text.as_bytes()).unwrap(), want, "{text}");
    }
}

#[test]
fn syntax_errors_and_trailing_bytes_are_still_errors() {
    for text in ["", "{", r#"{"a":1} x"#, r#"{"a":1,}"#, "[1,]", "nul"] {
        assert!(parse(text).is_err(), "{text:?}");
    }
}
