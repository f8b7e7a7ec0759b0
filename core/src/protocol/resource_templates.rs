//! Resource templates: `resources/templates/list`, and `resources/read` of a URI that no static
//! resource names but a catalogue template matches.
//!
//! Templates are RFC 6570 level 1: literal text and simple `{var}` expressions. A variable
//! matches a non-empty run of unreserved characters (`A-Z a-z 0-9 - . _ ~`) and
//! percent-encoded octets, which is exactly what level-1 expansion can produce; the reader
//! receives the percent-decoded values. A template with any other expression (`{+x}`, `{a,b}`,
//! an unclosed brace) matches nothing.
//!
//! This module never appends records and never keeps state (`resource_read` audits a read).

use serde_json::{Map, Value};

use super::Server;
use super::era::Revision;
use super::jsonrpc::RpcError;
use super::listing::resource_entry;
use super::model::ListParams;
use super::model::results::{Address, ListResourceTemplatesResult, to_value};
use super::registry::{ResourceContext, ResourceTemplateSpec, TemplatedRead};
use crate::ledger::Fold;

/// One piece of a parsed template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part<'a> {
    Literal(&'a str),
    Var(&'a str),
}

/// Why a template is not RFC 6570 level 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("URI template {template:?} is not RFC 6570 level 1: {why}")]
pub struct TemplateFault {
    pub template: String,
    pub why: &'static str,
}

fn parse(template: &str) -> Result<Vec<Part<'_>>, TemplateFault> {
    let fault = |why| TemplateFault {
        template: template.to_string(),
        why,
    };
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            None => {
                parts.push(Part::Literal(rest));
                break;
            }
            Some(i) if rest.as_bytes()[i] == b'}' => return Err(fault("a '}' without '{'")),
            Some(i) => {
                if i > 0 {
                    parts.push(Part::Literal(&rest[..i]));
                }
                let after = &rest[i + 1..];
                let end = after.find('}').ok_or_else(|| fault("an unclosed '{'"))?;
                let name = &after[..end];
                let valid = !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
                if !valid {
                    return Err(fault("only simple {name} expressions are supported"));
                }
                if matches!(parts.last(), Some(Part::Var(_))) {
                    return Err(fault("two adjacent expressions cannot be told apart"));
                }
                parts.push(Part::Var(name));
                rest = &after[end + 1..];
            }
        }
    }
    Ok(parts)
}

/// The variable names of a template, in order; an error when it is not level 1.
pub fn variables(template: &str) -> Result<Vec<&str>, TemplateFault> {
    Ok(parse(template)?
        .into_iter()
        .filter_map(|p| match p {
            Part::Var(v) => Some(v),
            Part::Literal(_) => None,
        })
        .collect())
}

/// The variables of `uri` under `template` (percent-decoded strings), or `None` when it does
/// not match.
pub fn match_uri(template: &str, uri: &str) -> Option<Map<String, Value>> {
    let parts = parse(template).ok()?;
    let mut vars = Map::new();
    let mut rest = uri;
    for (i, part) in parts.iter().enumerate() {
        match part {
            Part::Literal(lit) => rest = rest.strip_prefix(lit)?,
            Part::Var(name) => {
                // The value runs to the next literal, or to the end of the URI.
                let len = match parts.get(i + 1) {
                    Some(Part::Literal(next)) => rest.find(next)?,
                    _ => rest.len(),
                };
                let value = decode(&rest[..len])?;
                vars.insert((*name).to_string(), Value::String(value));
                rest = &rest[len..];
            }
        }
    }
    rest.is_empty().then_some(vars)
}

/// Percent-decodes a non-empty level-1 expansion: unreserved characters and `%XX` only.
fn decode(raw: &str) -> Option<String> {
    if raw.is_empty() {
        return None;
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = raw.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

/// `resources/templates/list`: every template, sorted by URI template.
pub fn list_resource_templates<F: Fold>(
    server: &Server<F>,
    revision: Revision,
    params: Option<&Value>,
) -> Result<Value, RpcError> {
    ListParams::read(params)?;
    let mut templates: Vec<&ResourceTemplateSpec<F>> =
        server.catalog.resource_templates.iter().collect();
    templates.sort_by(|a, b| a.uri_template.cmp(b.uri_template));
    let resource_templates = templates
        .into_iter()
        .map(|t| {
            let names = [t.name, t.title, t.description, t.mime_type];
            resource_entry(revision, Address::Template(t.uri_template), names)
        })
        .collect();
    Ok(to_value(&ListResourceTemplatesResult {
        resource_templates,
    }))
}

/// `resources/read` through the first template (in catalogue order) that matches `uri`: the
/// template and what its reader said (`Err`: why nothing has that URI); `None` when no
/// template matches.
pub fn read_templated<'s, F: Fold>(
    server: &'s Server<F>,
    ctx: &ResourceContext<'_, F>,
    uri: &str,
) -> Option<(&'s ResourceTemplateSpec<F>, Result<TemplatedRead, String>)> {
    let (template, vars) = server
        .catalog
        .resource_templates
        .iter()
        .find_map(|t| match_uri(t.uri_template, uri).map(|v| (t, v)))?;
    Some((template, (template.read)(ctx, uri, &vars)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_one_templates_parse_and_others_are_refused() {
        assert_eq!(variables("test://template/{id}/data").unwrap(), ["id"]);
        assert_eq!(variables("a://{x}/b/{y}").unwrap(), ["x", "y"]);
        assert!(variables("static://x").unwrap().is_empty());
        for bad in [
            "a://{+x}",
            "a://{x,y}",
            "a://{x",
            "a://x}",
            "a://{}",
            "a://{x}{y}",
        ] {
            assert!(variables(bad).is_err(), "{bad}");
            assert!(match_uri(bad, "a://1").is_none(), "{bad}");
        }
    }

    #[test]
    fn uris_match_with_decoded_variables() {
        let t = "test://template/{id}/data";
        assert_eq!(
            match_uri(t, "test://template/123/data").unwrap()["id"],
            "123"
        );
        assert_eq!(
            match_uri(t, "test://template/a%20b%C3%A9/data").unwrap()["id"],
            "a bé"
        );
        for miss in [
            "test://template//data",
            "test://template/1/2/data",
            "test://template/123/data/more",
            "test://template/123",
            "test://other/123/data",
            "test://template/%zz/data",
            "test://template/%C3/data",
        ] {
            assert!(match_uri(t, miss).is_none(), "{miss}");
        }
        let two = match_uri("a://{x}-{y}.txt", "a://left-right.txt").unwrap();
        assert_eq!(
            (two["x"].as_str(), two["y"].as_str()),
            (Some("left"), Some("right"))
        );
        assert_eq!(
            match_uri("a://items/{id}", "a://items/7").unwrap()["id"],
            "7"
        );
    }
}
