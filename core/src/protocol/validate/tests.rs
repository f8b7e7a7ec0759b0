use super::*;
use schemars::JsonSchema;
use serde_json::json;

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Complexity {
    Low,
    Medium,
    High,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
enum Documented {
    /// The first.
    #[serde(rename = "one")]
    One,
    /// The second.
    #[serde(rename = "two")]
    Two,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Inner {
    name: String,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// The goal.
    #[schemars(length(min = 1, max = 10))]
    goal: String,
    role: Option<String>,
    priority: Option<u8>,
    complexity: Option<Complexity>,
    documented: Option<Documented>,
    #[schemars(length(max = 2))]
    tags: Option<Vec<String>>,
    inner: Option<Inner>,
    ratio: Option<f64>,
}

fn run_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(RunArgs)).unwrap()
}

fn violations(args: Value) -> Vec<String> {
    validate(&run_schema(), &args, "arguments")
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn valid_arguments_pass() {
    assert_eq!(violations(json!({"goal": "ship it"})), Vec::<String>::new());
    let full = json!({
        "goal": "é".repeat(10), "role": null, "priority": 255, "complexity": "high", "documented": "two",
        "tags": ["a", "b"], "inner": {"name": "x"}, "ratio": 0.5
    });
    assert_eq!(violations(full), Vec::<String>::new());
}

#[test]
fn each_rule_is_named_with_its_path() {
    assert_eq!(violations(json!({})), vec!["arguments.goal: is required"]);
    assert_eq!(
        violations(json!({"goal": ""})),
        vec!["arguments.goal: must be at least 1 character"]
    );
    assert_eq!(
        violations(json!({"goal": "x".repeat(11)})),
        vec!["arguments.goal: must be at most 10 characters (got 11)"]
    );
    assert_eq!(
        violations(json!({"goal": 5})),
        vec!["arguments.goal: must be a string, got an integer"]
    );
    assert_eq!(
        violations(json!({"goal": "g", "role": 1})),
        vec!["arguments.role: must be a string or null, got an integer"]
    );
    assert_eq!(
        violations(json!({"goal": "g", "priority": 256})),
        vec!["arguments.priority: must be at most 255 (got 256)"]
    );
    assert_eq!(
        violations(json!({"goal": "g", "priority": -1})),
        vec!["arguments.priority: must be at least 0 (got -1)"]
    );
    assert_eq!(
        violations(json!({"goal": "g", "priority": 1.0})),
        vec!["arguments.priority: must be an integer or null, got a number"]
    );
    assert_eq!(
        violations(json!({"goal": "g", "tags": ["a", "b", "c"]})),
        vec!["arguments.tags: must have at most 2 items (got 3)"]
    );
    assert_eq!(
        violations(json!({"goal": "g", "tags": ["a", 3]})),
        vec!["arguments.tags[1]: must be a string, got an integer"]
    );
    assert_eq!(
        violations(json!({"goal": "g", "inner": {}})),
        vec!["arguments.inner.name: is required"]
    );
    let extra = violations(json!({"goal": "g", "bogus": 1}));
    assert_eq!(extra.len(), 1);
    assert!(
        extra[0].starts_with("arguments.bogus: is not accepted here (expected one of: "),
        "{extra:?}"
    );
    assert!(extra[0].contains("goal"));
}

#[test]
fn enums_and_alternatives_explain_themselves() {
    assert_eq!(
        violations(json!({"goal": "g", "complexity": "huge"})),
        vec![r#"arguments.complexity: must be one of "low", "medium", "high"; got "huge""#]
    );
    assert_eq!(
        violations(json!({"goal": "g", "documented": "three"})),
        vec![r#"arguments.documented: must be one of: "one", "two"; got "three""#]
    );
    assert_eq!(
        violations(json!({"goal": "g", "complexity": 3})),
        vec![r#"arguments.complexity: must be one of: "low", "medium", "high", null; got 3"#]
    );
}

#[test]
fn keyword_coverage() {
    let s = json!({
        "type": "object",
        "properties": {
            "c": {"const": "x"},
            "n": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "u": {"type": "array", "uniqueItems": true, "minItems": 1},
            "t": {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
            "one": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            "not": {"not": {"type": "boolean"}},
            "all": {"allOf": [{"type": "string"}, {"maxLength": 1}]},
            "m": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "boolean"}},
            "strange key": true,
            "f": false
        }
    });
    let check = |v: Value| -> Vec<String> {
        validate(&s, &v, "arguments")
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        check(json!({"c": "y"})),
        vec![r#"arguments.c: must be "x"; got "y""#]
    );
    assert_eq!(
        check(json!({"n": 0})),
        vec!["arguments.n: must be greater than 0 (got 0)"]
    );
    assert_eq!(
        check(json!({"n": 1})),
        vec!["arguments.n: must be less than 1 (got 1)"]
    );
    assert_eq!(check(json!({"n": 0.5})), Vec::<String>::new());
    assert_eq!(
        check(json!({"u": [1, 1]})),
        vec!["arguments.u: must not contain duplicate items"]
    );
    assert_eq!(
        check(json!({"u": []})),
        vec!["arguments.u: must have at least 1 item"]
    );
    assert_eq!(
        check(json!({"t": [1, "a", 2]})),
        vec!["arguments.t[2]: must be a string, got an integer"]
    );
    assert_eq!(
        check(json!({"t": ["a"]})),
        vec!["arguments.t[0]: must be an integer, got a string"]
    );
    assert_eq!(
        check(json!({"one": 1})),
        vec!["arguments.one: matches more than one of the allowed forms"]
    );
    assert_eq!(check(json!({"one": 1.5})), Vec::<String>::new());
    assert_eq!(
        // (A null would be the optional property left out, so a boolean stands for the form.)
        check(json!({"not": true})),
        vec!["arguments.not: must not match the excluded form"]
    );
    assert_eq!(
        check(json!({"all": "ab"})),
        vec!["arguments.all: must be at most 1 character (got 2)"]
    );
    assert_eq!(
        check(json!({"m": {}})),
        vec!["arguments.m: must have at least 1 property"]
    );
    assert_eq!(
        check(json!({"m": {"k": 1}})),
        vec!["arguments.m.k: must be a boolean, got an integer"]
    );
    assert_eq!(
        check(json!({"strange key": 1, "f": 1})),
        vec!["arguments.f: is not allowed"]
    );
    assert_eq!(child_path("a", "strange key"), r#"a["strange key"]"#);
}

#[test]
fn draft07_definitions_and_encoded_pointers_resolve() {
    let s = json!({
        "definitions": {"a/b": {"type": "integer"}, "sp ace": {"type": "string"}},
        "properties": {"x": {"$ref": "#/definitions/a~1b"}, "y": {"$ref": "#/definitions/sp%20ace"}}
    });
    let v = validate(&s, &json!({"x": "no", "y": 1}), "arguments").unwrap();
    assert_eq!(v.len(), 2);
}

#[test]
fn broken_schemas_are_server_faults() {
    let dangling = json!({"properties": {"x": {"$ref": "#/$defs/Nope"}}});
    assert!(validate(&dangling, &json!({"x": 1}), "arguments").is_err());
    let cycle = json!({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"});
    assert!(validate(&cycle, &json!(1), "arguments").is_err());
    let remote = json!({"$ref": "https://example.invalid/schema"});
    assert!(validate(&remote, &json!(1), "arguments").is_err());
    let bad_type = json!({"type": 5});
    assert!(validate(&bad_type, &json!(1), "arguments").is_err());
    // Exponential composition runs out of budget instead of hanging.
    let mut defs = Map::new();
    defs.insert("D40".into(), json!({"type": "integer", "maximum": 0}));
    for i in 0..40 {
        let next = format!("#/$defs/D{}", i + 1);
        defs.insert(
            format!("D{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    let s = json!({"$defs": defs, "$ref": "#/$defs/D0"});
    assert!(validate(&s, &json!(1), "arguments").is_err());
}

#[test]
fn recursive_schemas_follow_the_data() {
    let s = json!({
        "$defs": {"Node": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}, "additionalProperties": false}},
        "$ref": "#/$defs/Node"
    });
    let ok = json!({"next": {"next": {"next": null}}});
    assert!(validate(&s, &ok, "arguments").unwrap().is_empty());
    let bad = json!({"next": {"next": {"oops": 1}}});
    let v = validate(&s, &bad, "arguments").unwrap();
    assert_eq!(
        v[0].to_string(),
        "arguments.next.next.oops: is not accepted here (expected one of: next)"
    );
}

#[test]
fn limits_refuse_control_characters_and_long_strings() {
    let limits = Limits {
        max_message_bytes: 1 << 20,
        max_json_depth: 32,
        max_string_bytes: 8,
    };
    assert!(
        check_limits(
            &json!({"a": "tab\there", "b": ["\r\n"]}),
            &limits,
            "arguments"
        )
        .is_ok()
    );
    let e = check_limits(&json!({"a": ["ok", "nul\u{0}"]}), &limits, "arguments").unwrap_err();
    assert_eq!(
        e.to_string(),
        "arguments.a[1]: contains the control character U+0000 at character 3; only tab, line feed and carriage \
         return are allowed"
    );
    let e = check_limits(&json!({"a": "\u{7f}"}), &limits, "arguments").unwrap_err();
    assert!(e.rule.contains("U+007F"));
    let e = check_limits(&json!({"a": "123456789"}), &limits, "arguments").unwrap_err();
    assert_eq!(
        e.to_string(),
        "arguments.a: is 9 bytes long; strings may be at most 8 bytes"
    );
    let e = check_limits(&json!({"k\u{1b}": 1}), &limits, "arguments").unwrap_err();
    assert!(e.path.ends_with("(the property name)"), "{e}");
}

#[test]
fn an_explicit_null_for_an_optional_property_is_the_property_left_out() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
        "required": ["a"],
        "additionalProperties": false
    });
    let ok = serde_json::json!({"a": "x", "b": null});
    assert!(validate(&schema, &ok, "arguments").unwrap().is_empty());
    let required_null = serde_json::json!({"a": null});
    assert_eq!(
        validate(&schema, &required_null, "arguments")
            .unwrap()
            .len(),
        1
    );
    let undeclared_null = serde_json::json!({"a": "x", "c": null});
    assert_eq!(
        validate(&schema, &undeclared_null, "arguments")
            .unwrap()
            .len(),
        1
    );
}
