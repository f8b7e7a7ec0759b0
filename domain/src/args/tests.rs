use serde_json::json;

use super::*;
use crate::schema::input_schema;

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<TaskId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<ArtifactKey>,
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
        json!({"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,6}$"})
    );
    assert_eq!(
        p["task"],
        json!({"type": "string", "pattern": "^T-[0-9a-f]{16}$"})
    );
    assert_eq!(
        p["key"],
        json!({"type": "string", "pattern": "^[A-Za-z0-9_./-]{1,256}$"})
    );
    assert_eq!(
        p["priority"],
        json!({"type": "integer", "minimum": 1, "maximum": 3})
    );
    assert_eq!(
        p["ids"],
        json!({"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,6}$"}, "maxItems": 2})
    );
    assert_eq!(schema["required"], json!(["goal"]));
}

#[test]
fn each_type_checks_its_limits_on_parse() {
    assert!(parse(json!({"goal": "ship it"})).is_ok());
    for (bad, says) in [
        (json!({"goal": "   "}), "non-blank"),
        (json!({"goal": ""}), "must be at least 1 character"),
        (
            json!({"goal": "x".repeat(21)}),
            "must be at most 20 characters (got 21)",
        ),
        (
            json!({"goal": "g", "reason": "123456"}),
            "must be at most 5 characters (got 6)",
        ),
        (
            json!({"goal": "g", "label": "a\u{7}b"}),
            "control characters",
        ),
        (json!({"goal": "g", "label": " "}), "without control"),
        (json!({"goal": "g", "who": "a b"}), "letters, digits"),
        (json!({"goal": "g", "who": "abcdefg"}), "1 to 6 characters"),
        (
            json!({"goal": "g", "priority": 0}),
            "must be at least 1 (got 0)",
        ),
        (
            json!({"goal": "g", "priority": 4}),
            "must be at most 3 (got 4)",
        ),
        (
            json!({"goal": "g", "priority": -1}),
            "must be at least 1 (got -1)",
        ),
        (
            json!({"goal": "g", "priority": 256}),
            "must be at most 3 (got 256)",
        ),
        (
            json!({"goal": "g", "ids": ["a", "b", "c"]}),
            "must have at most 2 items (got 3)",
        ),
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
    let e = crate::tools::parse_args::<Args>(json!({"goal": "g", "ids": ["a", "!"]})).unwrap_err();
    assert_eq!(e.path, "arguments.ids[1]");
    assert!(e.rule.starts_with("\"!\" must be 1 to 6"), "{}", e.rule);
    let e = crate::tools::parse_args::<Args>(json!({"goal": "g", "x": 1})).unwrap_err();
    assert_eq!(e.path, "arguments.x", "{e:?}");
    assert!(
        e.rule
            .starts_with("is not accepted here (expected one of: goal, reason,"),
        "{e:?}"
    );
    // A missing argument is named by the path, as the schema validator names it.
    let e = crate::tools::parse_args::<Args>(json!({})).unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.rule.as_str()),
        ("arguments.goal", "is required")
    );
    let e = crate::tools::parse_args::<Args>(json!({"goal": 5})).unwrap_err();
    assert_eq!(
        (e.path.as_str(), e.rule.as_str()),
        ("arguments.goal", "must be a string, got an integer")
    );
    let e = crate::tools::parse_args::<Args>(json!({"goal": "g", "priority": 1.5})).unwrap_err();
    assert_eq!(e.rule, "must be an integer, got a number");
    let e = crate::tools::parse_args::<Args>(json!({"goal": "g", "ids": "a"})).unwrap_err();
    assert_eq!(e.rule, "must be an array, got a string");
    let e = crate::tools::parse_args::<Args>(json!({"goal": null})).unwrap_err();
    assert_eq!(e.rule, "must be a string, got null");
    // An explicit null for an optional argument is the argument left out.
    assert!(crate::tools::parse_args::<Args>(json!({"goal": "g", "who": null})).is_ok());
}

/// The shapes the identifier patterns state are the shapes their checks accept: each pattern,
/// read as a regex over a sample of values, agrees with the check on every one.
#[test]
fn identifier_patterns_and_checks_agree() {
    let samples = [
        "",
        "w",
        "worker-1",
        "a b",
        "é",
        "x".repeat(6).as_str(),
        "x".repeat(7).as_str(),
        "T-0123456789abcdef",
        "T-0123456789ABCDEF",
        "T-0123456789abcde",
        "T-0123456789abcdef0",
        "t-0123456789abcdef",
        "reports/summary.md",
        "a/b_c-d.e",
        "a:b",
        "a\nb",
    ]
    .map(str::to_string);
    let matches = |pattern: &str, v: &str| -> bool {
        // The three pattern shapes used: ^[class]{1,N}$ and ^T-[0-9a-f]{16}$.
        if let Some(rest) = pattern.strip_prefix("^T-[0-9a-f]{16}$") {
            assert!(rest.is_empty());
            return v.len() == 18
                && v.starts_with("T-")
                && v[2..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        }
        let class = pattern
            .strip_prefix("^[A-Za-z0-9")
            .and_then(|r| r.split_once("]{1,"))
            .expect("a class pattern");
        let max: usize = class.1.strip_suffix("}$").unwrap().parse().unwrap();
        let extra = class.0;
        !v.is_empty()
            && v.len() <= max
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || extra.as_bytes().contains(&b))
    };
    let schema = input_schema::<Args>();
    for (field, check) in [
        ("who", Ident::<6>::check as fn(&str) -> Result<(), String>),
        ("task", TaskId::check),
        ("key", ArtifactKey::check),
    ] {
        let pattern = schema["properties"][field]["pattern"].as_str().unwrap();
        for v in &samples {
            // The key's check also refuses what a pattern cannot say (`.`/`..` segments, a
            // leading `/`), none of which is in the sample.
            assert_eq!(matches(pattern, v), check(v).is_ok(), "{field} {v:?}");
        }
    }
}

/// An identifier is recorded as given, so one a DLP pattern matches is refused without being
/// repeated, whatever its alphabet says.
#[test]
fn identifiers_that_look_like_secrets_are_refused_unrepeated() {
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    for (args, field) in [
        (json!({"goal": "g", "who": token}), "who"),
        (json!({"goal": "g", "ids": ["a", token]}), "ids"),
        (json!({"goal": "g", "task": token}), "task"),
        (
            json!({"goal": "g", "key": format!("reports/{token}")}),
            "key",
        ),
        (json!({"goal": "g", "who": "password:hunter2x"}), "who"),
        (json!({"goal": "g", "task": "Bearer abcdefgh0123"}), "task"),
    ] {
        let e = crate::tools::parse_args::<Args>(args.clone()).unwrap_err();
        assert!(
            e.path.starts_with(&format!("arguments.{field}")),
            "{args}: {e:?}"
        );
        assert!(e.rule.contains("looks like a secret"), "{}", e.rule);
        for secret in [token, "hunter2x", "abcdefgh0123"] {
            assert!(!e.to_string().contains(secret), "{e}");
        }
    }
    // A name that merely mentions a secret's kind is fine.
    assert!(parse(json!({"goal": "g", "who": "token"})).is_ok());
    assert!(parse(json!({"goal": "g", "task": "T-0123456789abcdef"})).is_ok());
}
