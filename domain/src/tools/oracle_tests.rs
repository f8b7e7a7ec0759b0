//! The typed parse against the schema validator: the engine checks a typed tool's arguments
//! only by parsing them (`Arguments::Typed`), so every `Args` type must refuse whatever its
//! advertised inputSchema refuses. For every registered tool, argument objects are made from
//! its advertised schema (a valid one, then one broken rule at a time: wrong type, below the
//! minimum, above the maximum, too short, too long, too many items, pattern mismatch, enum
//! miss, unknown property, missing or null required property, at every depth), and each one
//! the validator (`protocol::validate`, kept here as the oracle) refuses must fail to parse;
//! the valid ones must parse. The parse may refuse more (what no schema says: a pattern, blank
//! text, a secret-shaped identifier), never less.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use bernstein_core::protocol::validate::validate;

use super::*;

/// A value the schema accepts (the first branch of an `anyOf`, the least of each bound).
fn valid(schema: &Value) -> Value {
    if let Some(Value::Array(branches)) = schema.get("anyOf").or_else(|| schema.get("oneOf")) {
        return valid(&branches[0]);
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        return options[0].clone();
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    match schema["type"].as_str() {
        Some("string") => {
            if let Some(p) = schema["pattern"].as_str() {
                return json!(if p.starts_with("^T-") {
                    "T-0123456789abcdef"
                } else {
                    "a"
                });
            }
            let min = schema["minLength"].as_u64().unwrap_or(1).max(1);
            json!("x".repeat(min as usize))
        }
        Some("integer") => json!(schema["minimum"].as_i64().unwrap_or(1)),
        Some("boolean") => json!(true),
        Some("array") => match schema.get("items") {
            Some(items) if schema["maxItems"].as_u64() != Some(0) => json!([valid(items)]),
            _ => json!([]),
        },
        Some("object") => Value::Object(
            required(schema)
                .into_iter()
                .map(|k| (k.to_string(), valid(&schema["properties"][k])))
                .collect(),
        ),
        other => panic!("no valid value made for type {other:?} in {schema}"),
    }
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// An object with every declared property given a valid value.
fn full(schema: &Value) -> Value {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    Value::Object(props.iter().map(|(k, s)| (k.clone(), valid(s))).collect())
}

/// Values that break one rule of `schema` each (and a few that keep them, which the
/// comparison reads the same way).
fn broken(schema: &Value, value: &Value) -> Vec<Value> {
    let mut out = vec![
        json!(5),
        json!(1.5),
        json!("x"),
        json!(true),
        json!([]),
        json!({}),
    ];
    out.push(Value::Null);
    if let Some(Value::Array(branches)) = schema.get("anyOf").or_else(|| schema.get("oneOf")) {
        for b in branches {
            let v = valid(b);
            out.extend(broken(b, &v));
        }
        return out;
    }
    if schema.get("enum").is_some() {
        out.push(json!("not-one-of-them"));
    }
    if let Some(p) = schema["pattern"].as_str() {
        out.push(json!("no such shape!"));
        out.push(json!(""));
        if p.starts_with("^T-") {
            out.push(json!("T-0123456789ABCDEF"));
        }
    }
    if let Some(min) = schema["minLength"].as_u64() {
        out.push(json!("x".repeat(min.saturating_sub(1) as usize)));
        out.push(json!(" ".repeat(min as usize)));
    }
    if let Some(max) = schema["maxLength"].as_u64() {
        out.push(json!("x".repeat(max as usize + 1)));
        out.push(json!("x".repeat(max as usize)));
    }
    if let Some(min) = schema["minimum"].as_i64() {
        out.extend([json!(min - 1), json!(min), json!(-1)]);
    }
    if let Some(max) = schema["maximum"].as_i64() {
        out.extend([json!(max), json!(max + 1), json!(u64::MAX)]);
    }
    if schema["type"] == "integer" {
        out.push(json!(4_294_967_296u64));
    }
    if let (Some(items), Value::Array(list)) = (schema.get("items"), value) {
        if let Some(max) = schema["maxItems"].as_u64() {
            let item = valid(items);
            out.push(Value::Array(vec![item; max as usize + 1]));
        }
        if let Some(first) = list.first() {
            for b in broken(items, first) {
                out.push(json!([b]));
            }
        }
    }
    if let Value::Object(map) = value {
        out.extend(broken_object(schema, map));
    }
    out
}

/// `map` (valid for `schema`) with one property broken, missing, null or unknown.
fn broken_object(schema: &Value, map: &Map<String, Value>) -> Vec<Value> {
    let with = |k: &str, v: Value| {
        let mut m = map.clone();
        m.insert(k.to_string(), v);
        Value::Object(m)
    };
    let mut out = vec![
        with("zz_unknown", json!(1)),
        with("zz_unknown", Value::Null),
    ];
    for k in required(schema) {
        let mut m = map.clone();
        m.remove(k);
        out.push(Value::Object(m));
    }
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (k, s) in &props {
        let v = map.get(k).cloned().unwrap_or_else(|| valid(s));
        out.push(with(k, Value::Null));
        for b in broken(s, &v) {
            out.push(with(k, b));
        }
    }
    out
}

/// Compares the parse of `A` with the validator over `schema` on every value made from it.
fn agree<A: DeserializeOwned>(tool: &str, schema: &Value) -> usize {
    let valid_ones = [valid(schema), full(schema)];
    let mut cases: Vec<Value> = valid_ones.to_vec();
    for v in &valid_ones {
        cases.extend(broken_object(schema, v.as_object().unwrap()));
    }
    let mut refused = 0;
    for args in &cases {
        let oracle = validate(schema, args, "arguments").expect("a usable schema");
        let parsed = parse_args::<A>(args.clone());
        if !oracle.is_empty() {
            refused += 1;
            let shown: String = args.to_string().chars().take(200).collect();
            assert!(
                parsed.is_err(),
                "{tool}: the schema refuses {shown} ({}) but the type parses it",
                oracle[0]
            );
        }
    }
    for args in &valid_ones {
        assert!(
            validate(schema, args, "arguments").unwrap().is_empty(),
            "{tool}: {args} was made valid"
        );
        if let Err(e) = parse_args::<A>(args.clone()) {
            panic!("{tool}: {args} matches the schema but does not parse: {e}");
        }
    }
    refused
}

macro_rules! each_tool {
    ($($t:ty),* $(,)?) => {
        fn checked() -> Vec<(&'static str, usize)> {
            let registered = registered();
            let schema = |name: &str| {
                let spec = registered.iter().find(|t| t.name == name).expect("registered");
                (spec.input_schema)()
            };
            vec![$((<$t>::NAME, agree::<<$t as Tool>::Args>(<$t>::NAME, &schema(<$t>::NAME)))),*]
        }
    };
}

each_tool!(
    approve::Approve,
    cancel::Cancel,
    claim::Claim,
    complete::Complete,
    load_skill::LoadSkill,
    post_artifact::PostArtifact,
    post_message::PostMessage,
    run::Run,
    run_status::PollRun,
    scenario::ScenarioTool,
    shutdown::Shutdown,
    status::Status,
    task_capsule::TaskCapsuleTool,
    verify_lineage::VerifyLineage,
);

#[test]
fn every_typed_tool_refuses_what_its_schema_refuses() {
    let checked = checked();
    let mut names: Vec<&str> = checked.iter().map(|(n, _)| *n).collect();
    names.sort_unstable();
    let registered: Vec<&str> = registered()
        .iter()
        .filter(|t| t.arguments == Arguments::Typed)
        .map(|t| t.name)
        .collect();
    assert_eq!(names, registered, "every typed tool is compared");
    for (name, refused) in checked {
        // Each tool's schema refuses something (at least the unknown property).
        assert!(refused > 1, "{name}: {refused}");
    }
}

/// Every registered tool's arguments are typed: the schema validator serves only catalogues
/// without Rust types (the conformance fixture's tools).
#[test]
fn every_registered_tool_is_typed() {
    for t in registered() {
        assert_eq!(t.arguments, Arguments::Typed, "{}", t.name);
    }
}
