//! `completion/complete`: completion candidates for a prompt argument (`ref/prompt`) or a
//! resource template variable (`ref/resource`), from the catalogue's pure completers.
//!
//! The reply holds at most [`MAX_VALUES`] values, with `total` and `hasMore` saying how many
//! the completer offered. An argument without a completer, or a static resource URI, gets an
//! empty list; an unknown prompt, resource or argument is `-32602`. The dispatcher serves the
//! method only when the catalogue has a completer (the `completions` capability).
//!
//! This module never appends records and never keeps state.

use serde_json::{Map, Value};

use super::Server;
use super::call::CallInput;
use super::jsonrpc::{RpcError, names_or_none, shorten};
use super::model::results::{CompleteResult, Completion, to_value};
use super::model::{CompleteParams, CompleteRef};
use super::registry::{Candidates, ResourceContext};
use super::resource_templates::variables;
use crate::ledger::Fold;

/// Most values one reply carries (the schema's `maxItems`).
pub const MAX_VALUES: usize = 100;

/// Serves `completion/complete`.
pub fn complete<F: Fold>(server: &Server<F>, input: &CallInput<'_, F>) -> Result<Value, RpcError> {
    let CompleteParams {
        reference,
        name,
        value,
        context,
    } = CompleteParams::read(input.params)?;
    let empty = Map::new();
    let context = context.unwrap_or(&empty);
    let candidates = match reference {
        CompleteRef::Prompt { name: prompt_name } => {
            let Some(prompt) = server.catalog.prompt(prompt_name) else {
                return Err(RpcError::invalid_params(format!(
                    "Unknown prompt: {}",
                    shorten(prompt_name, 100)
                )));
            };
            let Some(arg) = prompt.arguments.iter().find(|a| a.name == name) else {
                let known: Vec<&str> = prompt.arguments.iter().map(|a| a.name).collect();
                return Err(no_such_argument(name, prompt.name, &known));
            };
            Candidates::all(arg.complete.map(|f| f(value, context)).unwrap_or_default())
        }
        CompleteRef::Resource { uri } => {
            let template = server
                .catalog
                .resource_templates
                .iter()
                .find(|t| t.uri_template == uri);
            match template {
                Some(t) => {
                    let known =
                        variables(t.uri_template).map_err(|e| RpcError::internal(e.to_string()))?;
                    if !known.contains(&name) {
                        return Err(no_such_argument(name, t.uri_template, &known));
                    }
                    let ctx = ResourceContext {
                        snapshot: input.snapshot,
                        config: &server.config,
                        now: input.now,
                        spec_revision: input.revision.as_str(),
                    };
                    t.complete
                        .map(|f| f(&ctx, name, value, context))
                        .unwrap_or_default()
                }
                None if server.catalog.resource(uri).is_some() => Candidates::default(),
                None => {
                    return Err(RpcError::invalid_params(format!(
                        "Unknown resource or resource template: {}",
                        shorten(uri, 200)
                    )));
                }
            }
        }
    };
    let Candidates { values, total } = candidates;
    let total = total.max(values.len());
    let values: Vec<String> = values.into_iter().take(MAX_VALUES).collect();
    Ok(to_value(&CompleteResult {
        completion: Completion {
            has_more: total > values.len(),
            values,
            total,
        },
    }))
}

fn no_such_argument(name: &str, owner: &str, known: &[&str]) -> RpcError {
    RpcError::invalid_params(format!(
        "{owner} takes no argument {} (expected one of: {})",
        shorten(name, 100),
        names_or_none(known)
    ))
}

/// Candidates from a fixed list: those starting with `typed`, in list order.
pub fn starting_with(options: &[&str], typed: &str) -> Vec<String> {
    options
        .iter()
        .filter(|o| o.starts_with(typed))
        .map(|o| (*o).to_string())
        .collect()
}

#[cfg(test)]
mod tests;
