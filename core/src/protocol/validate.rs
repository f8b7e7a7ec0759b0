//! Argument validation: the input limits every argument string obeys ([`check_limits`], on
//! every call), and a validator for the JSON Schema subset that schemars 1.x emits for plain
//! structs and enums ([`validate`]). The validator checks only the arguments of
//! `Arguments::Schema` tools, whose schemas are written by hand (the conformance fixture's):
//! Bernstein's own tools are `Arguments::Typed`, checked by the parse into their types, and
//! their tests use this validator as the oracle those types must agree with.
//!
//! Supported keywords: boolean schemas, `type` (one name or a list, e.g. `["string","null"]`),
//! `enum`, `const`, `minLength`/`maxLength` (characters), `minimum`/`maximum`/
//! `exclusiveMinimum`/`exclusiveMaximum`, `properties`, `required`, `additionalProperties`
//! (boolean or schema), `minProperties`/`maxProperties`, `items` (schema, or the draft-07 tuple
//! form), `prefixItems`, `minItems`/`maxItems`, `uniqueItems`, `anyOf`/`oneOf`/`allOf`/`not`,
//! and local `$ref`s (`#`, `#/$defs/..`, `#/definitions/..`, any JSON pointer into the
//! document). Every other keyword (`format`, `pattern`, `description`, `default`, ...) is
//! ignored. `integer` means a JSON integer literal: `1.0` is refused, because the handlers'
//! serde types would refuse it too.
//!
//! An explicit `null` for a declared, optional property (one not in `required`) counts as the
//! property left out, whatever its schema: advertised schemas never say "or null"
//! (`domain::schema`), yet clients that fill every field send `null` for "not given", and the
//! typed tools read both the same way (`Option` fields, and `args::null_is_default` for
//! defaulted ones).
//!
//! A violation is the peer's fault and becomes a message naming the argument path and the rule
//! (`arguments.goal: must be at least 1 character`). A schema the validator cannot follow
//! (dangling `$ref`, a `$ref` cycle, runaway composition) is the server's fault
//! ([`SchemaFault`]). This module must never panic and never recurse without bound.

use serde_json::{Map, Value};

use crate::config::Limits;

use super::jsonrpc::{brief, kind_of, shorten};

/// Upper bound on subschema evaluations per validation (guards against exponential schemas).
const EVALUATION_BUDGET: usize = 200_000;
/// Upper bound on `$ref` hops that consume no data (guards against `$ref` cycles).
const MAX_REF_CHAIN: usize = 64;

/// One broken rule at one place in the arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where, e.g. `arguments.items[2].name`.
    pub path: String,
    /// What, e.g. `must be at least 1 character`.
    pub rule: String,
    /// The value has the wrong JSON type here (used to pick the relevant `anyOf` branch).
    type_mismatch: bool,
}

impl Violation {
    /// `rule` broken at `path` (`arguments.goal`, `must be at least 1 character`).
    pub fn new(path: &str, rule: impl Into<String>) -> Violation {
        Violation {
            path: path.to_string(),
            rule: rule.into(),
            type_mismatch: false,
        }
    }
}

impl Violation {
    /// The message refusing a call of `tool` for `violations`: the first of them.
    pub fn message(tool: &str, violations: &[Violation]) -> String {
        match violations.first() {
            Some(v) => format!("Invalid arguments for tool {tool}: {v}"),
            None => format!("Invalid arguments for tool {tool}"),
        }
    }

    /// What a refusal lists of `violations`: the first 20, as `{path, rule}`.
    pub fn listed(violations: &[Violation]) -> Vec<Value> {
        violations
            .iter()
            .take(20)
            .map(|v| serde_json::json!({"path": v.path, "rule": v.rule}))
            .collect()
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.rule)
    }
}

/// A schema the validator cannot apply: a server bug, never the peer's fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unusable input schema: {0}")]
pub struct SchemaFault(pub String);

/// Checks the limits every argument string obeys (values and object keys): at most
/// `max_string_bytes` bytes, and no control characters except tab, line feed and carriage
/// return. Returns the first violation.
pub fn check_limits(value: &Value, limits: &Limits, root: &str) -> Result<(), Violation> {
    let mut stack: Vec<(&Value, String)> = vec![(value, root.to_string())];
    while let Some((v, path)) = stack.pop() {
        match v {
            Value::String(s) => check_string(s, limits, &path)?,
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, format!("{path}[{i}]")));
                }
            }
            Value::Object(map) => {
                let mut children = Vec::with_capacity(map.len());
                for (k, item) in map {
                    let child = child_path(&path, k);
                    check_string(k, limits, &format!("{child} (the property name)"))?;
                    children.push((item, child));
                }
                stack.extend(children.into_iter().rev());
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_string(s: &str, limits: &Limits, path: &str) -> Result<(), Violation> {
    if s.len() > limits.max_string_bytes {
        return Err(Violation::new(
            path,
            format!(
                "is {} bytes long; strings may be at most {} bytes",
                s.len(),
                limits.max_string_bytes
            ),
        ));
    }
    if let Some((pos, c)) = s
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err(Violation::new(
            path,
            format!(
                "contains the control character U+{:04X} at character {pos}; only tab, line feed and carriage return \
                 are allowed",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// Validates `value` against `schema`; `root` names the value in messages (`arguments`).
/// `Ok(violations)` is empty when the value is valid.
pub fn validate(schema: &Value, value: &Value, root: &str) -> Result<Vec<Violation>, SchemaFault> {
    let mut v = Validator {
        root: schema,
        budget: EVALUATION_BUDGET,
    };
    let mut out = Vec::new();
    v.check(schema, value, root, 0, &mut out)?;
    Ok(out)
}

struct Validator<'s> {
    root: &'s Value,
    budget: usize,
}

impl<'s> Validator<'s> {
    fn check(
        &mut self,
        schema: &'s Value,
        value: &Value,
        path: &str,
        ref_chain: usize,
        out: &mut Vec<Violation>,
    ) -> Result<(), SchemaFault> {
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or_else(|| SchemaFault("schema is too complex to evaluate".into()))?;
        let obj = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                out.push(Violation::new(path, "is not allowed"));
                return Ok(());
            }
            Value::Object(obj) => obj,
            other => {
                return Err(SchemaFault(format!(
                    "a schema must be an object or a boolean, found {}",
                    kind_of(other)
                )));
            }
        };
        if let Some(r) = obj.get("$ref") {
            if ref_chain >= MAX_REF_CHAIN {
                return Err(SchemaFault("$ref chain too long (a cycle?)".into()));
            }
            let target = self.resolve(r)?;
            self.check(target, value, path, ref_chain + 1, out)?;
        }
        if let Some(t) = obj.get("type")
            && !type_matches(t, value)?
        {
            out.push(Violation {
                path: path.to_string(),
                rule: format!("must be {}, got {}", describe_type(t), kind_of(value)),
                type_mismatch: true,
            });
            return Ok(());
        }
        if let Some(Value::Array(options)) = obj.get("enum")
            && !options.contains(value)
        {
            let listed: Vec<String> = options.iter().map(brief).collect();
            out.push(Violation::new(
                path,
                format!("must be one of {}; got {}", listed.join(", "), brief(value)),
            ));
        }
        if let Some(c) = obj.get("const")
            && c != value
        {
            out.push(Violation::new(
                path,
                format!("must be {}; got {}", brief(c), brief(value)),
            ));
        }
        match value {
            Value::String(s) => check_string_rules(obj, s, path, out),
            Value::Number(_) => check_number_rules(obj, value, path, out),
            Value::Array(items) => self.check_array(obj, items, path, out)?,
            Value::Object(map) => self.check_object(obj, map, path, out)?,
            _ => {}
        }
        if let Some(Value::Array(all)) = obj.get("allOf") {
            for s in all {
                self.check(s, value, path, ref_chain + 1, out)?;
            }
        }
        if let Some(Value::Array(any)) = obj.get("anyOf") {
            self.check_alternatives(any, value, path, ref_chain, false, out)?;
        }
        if let Some(Value::Array(one)) = obj.get("oneOf") {
            self.check_alternatives(one, value, path, ref_chain, true, out)?;
        }
        if let Some(not) = obj.get("not") {
            let mut inner = Vec::new();
            self.check(not, value, path, ref_chain + 1, &mut inner)?;
            if inner.is_empty() {
                out.push(Violation::new(path, "must not match the excluded form"));
            }
        }
        Ok(())
    }

    fn resolve(&self, reference: &Value) -> Result<&'s Value, SchemaFault> {
        let Some(r) = reference.as_str() else {
            return Err(SchemaFault("$ref must be a string".into()));
        };
        let Some(pointer) = r.strip_prefix('#') else {
            return Err(SchemaFault(format!(
                "only local $refs are followed, found {r:?}"
            )));
        };
        let decoded = percent_decode(pointer);
        self.root
            .pointer(&decoded)
            .ok_or_else(|| SchemaFault(format!("$ref {r:?} does not resolve")))
    }

    fn check_array(
        &mut self,
        obj: &'s Map<String, Value>,
        items: &[Value],
        path: &str,
        out: &mut Vec<Violation>,
    ) -> Result<(), SchemaFault> {
        if let Some(min) = obj.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            out.push(Violation::new(
                path,
                format!("must have at least {min} item{}", plural(min)),
            ));
        }
        if let Some(max) = obj.get("maxItems").and_then(Value::as_u64)
            && (items.len() as u64) > max
        {
            out.push(Violation::new(
                path,
                format!(
                    "must have at most {max} item{} (got {})",
                    plural(max),
                    items.len()
                ),
            ));
        }
        if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
            let dup = items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].contains(a));
            if dup {
                out.push(Violation::new(path, "must not contain duplicate items"));
            }
        }
        // Tuple forms: 2020-12 `prefixItems` + `items`, draft-07 `items: [..]` + `additionalItems`.
        let (prefix, rest): (&[Value], Option<&Value>) =
            match (obj.get("prefixItems"), obj.get("items")) {
                (Some(Value::Array(p)), rest) => (p.as_slice(), rest),
                (None, Some(Value::Array(p))) => (p.as_slice(), obj.get("additionalItems")),
                (_, rest) => (&[], rest),
            };
        for (i, item) in items.iter().enumerate() {
            let schema = prefix.get(i).or(rest);
            if let Some(s) = schema {
                self.check(s, item, &format!("{path}[{i}]"), 0, out)?;
            }
        }
        Ok(())
    }

    fn check_object(
        &mut self,
        obj: &'s Map<String, Value>,
        map: &Map<String, Value>,
        path: &str,
        out: &mut Vec<Violation>,
    ) -> Result<(), SchemaFault> {
        let props = obj.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = match obj.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for name in &required {
            if !map.contains_key(*name) {
                out.push(Violation::new(&child_path(path, name), "is required"));
            }
        }
        if let Some(min) = obj.get("minProperties").and_then(Value::as_u64)
            && (map.len() as u64) < min
        {
            out.push(Violation::new(
                path,
                format!(
                    "must have at least {min} propert{}",
                    if min == 1 { "y" } else { "ies" }
                ),
            ));
        }
        if let Some(max) = obj.get("maxProperties").and_then(Value::as_u64)
            && (map.len() as u64) > max
        {
            out.push(Violation::new(
                path,
                format!(
                    "must have at most {max} propert{}",
                    if max == 1 { "y" } else { "ies" }
                ),
            ));
        }
        for (k, v) in map {
            let child = child_path(path, k);
            let declared = props.and_then(|p| p.get(k));
            if v.is_null() && declared.is_some() && !required.contains(&k.as_str()) {
                // An explicit null for an optional property is the property left out.
                continue;
            }
            if let Some(s) = declared {
                self.check(s, v, &child, 0, out)?;
                continue;
            }
            if obj.contains_key("patternProperties") {
                // Patterns are not evaluated: accept rather than refuse what a pattern may allow.
                continue;
            }
            match obj.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = props
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    let rule = if known.is_empty() {
                        "is not accepted here (no properties are)".to_string()
                    } else {
                        format!(
                            "is not accepted here (expected one of: {})",
                            known.join(", ")
                        )
                    };
                    out.push(Violation::new(&child, rule));
                }
                Some(s @ Value::Object(_)) => self.check(s, v, &child, 0, out)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// `anyOf` (`exactly_one` false) or `oneOf` (true).
    fn check_alternatives(
        &mut self,
        branches: &'s [Value],
        value: &Value,
        path: &str,
        ref_chain: usize,
        exactly_one: bool,
        out: &mut Vec<Violation>,
    ) -> Result<(), SchemaFault> {
        let mut failures: Vec<Vec<Violation>> = Vec::with_capacity(branches.len());
        let mut matched = 0usize;
        for b in branches {
            let mut inner = Vec::new();
            self.check(b, value, path, ref_chain + 1, &mut inner)?;
            if inner.is_empty() {
                matched += 1;
                if !exactly_one {
                    return Ok(());
                }
            }
            failures.push(inner);
        }
        if matched == 1 || (matched > 1 && !exactly_one) {
            return Ok(());
        }
        if matched > 1 {
            out.push(Violation::new(
                path,
                "matches more than one of the allowed forms",
            ));
            return Ok(());
        }
        // Report the one branch whose type fitted, when there is exactly one.
        let fitting: Vec<&Vec<Violation>> = failures
            .iter()
            .filter(|f| !f.iter().any(|v| v.type_mismatch && v.path == path))
            .collect();
        if let [only] = fitting.as_slice() {
            out.extend(only.iter().cloned());
            return Ok(());
        }
        let forms: Vec<String> = branches.iter().map(|b| self.describe(b)).collect();
        out.push(Violation {
            path: path.to_string(),
            rule: format!("must be one of: {}; got {}", forms.join(", "), brief(value)),
            type_mismatch: fitting.is_empty(),
        });
        Ok(())
    }

    /// A short human description of what a schema accepts.
    fn describe(&self, schema: &'s Value) -> String {
        let mut s = schema;
        for _ in 0..MAX_REF_CHAIN {
            match s.get("$ref").and_then(|r| self.resolve(r).ok()) {
                Some(target) => s = target,
                None => break,
            }
        }
        if let Some(c) = s.get("const") {
            return brief(c);
        }
        if let Some(Value::Array(options)) = s.get("enum") {
            return options.iter().map(brief).collect::<Vec<_>>().join(", ");
        }
        if let Some(t) = s.get("type") {
            return describe_type(t);
        }
        "a value of another form".into()
    }
}

fn check_string_rules(obj: &Map<String, Value>, s: &str, path: &str, out: &mut Vec<Violation>) {
    let min = obj.get("minLength").and_then(Value::as_u64);
    let max = obj.get("maxLength").and_then(Value::as_u64);
    if min.is_none() && max.is_none() {
        return;
    }
    let len = s.chars().count() as u64;
    if let Some(min) = min
        && len < min
    {
        out.push(Violation::new(
            path,
            format!("must be at least {min} character{}", plural(min)),
        ));
    }
    if let Some(max) = max
        && len > max
    {
        out.push(Violation::new(
            path,
            format!("must be at most {max} character{} (got {len})", plural(max)),
        ));
    }
}

fn check_number_rules(
    obj: &Map<String, Value>,
    value: &Value,
    path: &str,
    out: &mut Vec<Violation>,
) {
    use std::cmp::Ordering::{Greater, Less};
    let rules: [(&str, &[std::cmp::Ordering], &str); 4] = [
        ("minimum", &[Less], "at least"),
        ("maximum", &[Greater], "at most"),
        (
            "exclusiveMinimum",
            &[Less, std::cmp::Ordering::Equal],
            "greater than",
        ),
        (
            "exclusiveMaximum",
            &[Greater, std::cmp::Ordering::Equal],
            "less than",
        ),
    ];
    for (key, refused, words) in rules {
        let Some(bound) = obj.get(key).filter(|b| b.is_number()) else {
            continue;
        };
        if let Some(ord) = compare_numbers(value, bound)
            && refused.contains(&ord)
        {
            out.push(Violation::new(
                path,
                format!("must be {words} {bound} (got {value})"),
            ));
        }
    }
}

/// Compares two JSON numbers exactly when both are integers, else as floats.
fn compare_numbers(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    let as_int = |v: &Value| {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
    };
    match (as_int(a), as_int(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn type_matches(t: &Value, value: &Value) -> Result<bool, SchemaFault> {
    match t {
        Value::String(name) => Ok(is_of_type(name, value)),
        Value::Array(names) => Ok(names
            .iter()
            .filter_map(Value::as_str)
            .any(|n| is_of_type(n, value))),
        _ => Err(SchemaFault(
            "`type` must be a string or an array of strings".into(),
        )),
    }
}

fn is_of_type(name: &str, value: &Value) -> bool {
    match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn describe_type(t: &Value) -> String {
    let one = |n: &str| match n {
        "string" => "a string".to_string(),
        "integer" => "an integer".to_string(),
        "number" => "a number".to_string(),
        "boolean" => "a boolean".to_string(),
        "object" => "an object".to_string(),
        "array" => "an array".to_string(),
        "null" => "null".to_string(),
        other => format!("of type {}", shorten(other, 20)),
    };
    match t {
        Value::String(n) => one(n),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "of the declared type".into(),
    }
}

/// `path` extended by an object key: `.key` for identifier-like keys, `["key"]` otherwise.
pub fn child_path(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(shorten(key, 40)))
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Decodes `%XX` escapes of a URI fragment (JSON pointers in `$ref` may be percent-encoded).
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(hex).unwrap_or("zz"), 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests;
