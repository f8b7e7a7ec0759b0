use serde_json::json;

use super::*;
use crate::domain::schema::input_schema;

#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The goal.
    goal: Text<1, 20>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<Text<0, 5>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<Label<8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    who: Option<Ident<6>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    priority: Option<Int<u8, 1, 3>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ids: Option<List<Ident<6>, 2>>,
}

fn parse(v: serde_json::Value) -> Result<Args, String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// The advertised schema is the limits the types check, and nothing the derive would not say.
#[test]
fn the_schema_states_the_limits_the_types_check() {
    let schema = input_schema::<Args>();
    let p = &schema["properties"];
    assert_eq!(
        p["goal"],
        json!({"type": "string", "minLength": 1, "maxLength": 20, "description": "The goal."})
    );
    assert_eq!(p["reason"], json!({"type": "string", "maxLength": 5}));
    assert_eq!(
        p["label"],
        json!({"type": "string", "minLength": 1, "maxLength": 8})
    );
    assert_eq!(
        p["who"],
        json!({"type": "string", "minLength": 1, "maxLength": 6})
    );
    assert_eq!(
        p["priority"],
        json!({"type": "integer", "minimum": 1, "maximum": 3})
    );
    assert_eq!(
        p["ids"],
        json!({"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 6}, "maxItems": 2})
    );
    assert_eq!(schema["required"], json!(["goal"]));
}

#[test]
fn each_type_checks_its_limits_on_parse() {
    assert!(parse(json!({"goal": "ship it"})).is_ok());
    for (bad, says) in [
        (json!({"goal": "   "}), "non-blank"),
        (json!({"goal": ""}), "1 to 20 characters"),
        (json!({"goal": "x".repeat(21)}), "got 21 characters"),
        (
            json!({"goal": "g", "reason": "123456"}),
            "0 to 5 characters",
        ),
        (
            json!({"goal": "g", "label": "a\u{7}b"}),
            "control characters",
        ),
        (json!({"goal": "g", "label": " "}), "without control"),
        (json!({"goal": "g", "who": "a b"}), "letters, digits"),
        (json!({"goal": "g", "who": "abcdefg"}), "1 to 6 characters"),
        (json!({"goal": "g", "priority": 0}), "from 1 to 3 (got 0)"),
        (json!({"goal": "g", "priority": 4}), "from 1 to 3 (got 4)"),
        (json!({"goal": "g", "ids": ["a", "b", "c"]}), "at most 2"),
        (json!({"goal": "g", "ids": ["a", "b c"]}), "letters, digits"),
    ] {
        let e = parse(bad.clone()).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
    // Blank text is fine where none is required.
    assert!(parse(json!({"goal": "g", "reason": ""})).is_ok());
}

/// A newtype serializes as its value: canonical arguments, which derive task ids, are the
/// same as the unwrapped ones.
#[test]
fn values_serialize_unwrapped() {
    let args = parse(json!({"goal": "g", "who": "w-1", "priority": 2, "ids": ["a"]})).unwrap();
    assert_eq!(
        serde_json::to_value(&args).unwrap(),
        json!({"goal": "g", "who": "w-1", "priority": 2, "ids": ["a"]})
    );
    assert_eq!(args.goal.as_str(), "g");
    assert_eq!(args.priority.unwrap().get(), 2);
    assert_eq!(args.ids.unwrap().len(), 1);
}

#[test]
fn a_failed_check_names_its_argument() {
    let e = crate::domain::tools::parse_args::<Args>("t", json!({"goal": "g", "ids": ["a", "!"]}))
        .unwrap_err();
    assert_eq!(e.error, "invalid_arguments");
    assert_eq!(e.extra["field"], "ids");
    assert!(
        e.message.starts_with("t: ids[1]: \"!\" must be 1 to 6"),
        "{}",
        e.message
    );
    let e =
        crate::domain::tools::parse_args::<Args>("t", json!({"goal": "g", "x": 1})).unwrap_err();
    assert_eq!(e.extra["field"], "x", "{e:?}");
    // A failure of the arguments as a whole names no argument.
    let e = crate::domain::tools::parse_args::<Args>("t", json!({})).unwrap_err();
    assert!(!e.extra.contains_key("field"), "{e:?}");
    assert!(e.message.contains("missing field `goal`"), "{e:?}");
}
