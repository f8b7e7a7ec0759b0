//! The prompt catalogue: `orchestrate_goal`, `triage_failed_tasks`, `cost_recap`.
//!
//! Each prompt renders deterministically from its arguments alone: no task, ledger or clock
//! access, so a prompt is cheap and safe to serve in every tier. Prompts name only core-tier
//! tools (available in every tier); a test checks that every `bernstein_*` name in a rendering
//! is a registered tool. Argument values arrive as strings (MCP prompt arguments); a missing
//! required argument or an unusable value is an `Err` the engine turns into invalid params.
//! This module must never read state.

use serde_json::{Map, Value, json};

use bernstein_core::protocol::completion::starting_with;
use bernstein_core::protocol::registry::{PromptArgument, PromptSpec, PromptTurn};

/// Longest accepted prompt argument, in characters.
pub const MAX_ARGUMENT_CHARS: usize = 8192;
/// Default and bounds of `triage_failed_tasks.limit`.
pub const DEFAULT_TRIAGE_LIMIT: u32 = 5;
pub const MAX_TRIAGE_LIMIT: u32 = 200;

/// The values of `orchestrate_goal.scope`.
pub const SCOPES: [&str; 3] = ["small", "medium", "large"];

/// Every prompt, sorted by name.
pub fn registered() -> Vec<PromptSpec> {
    vec![
        PromptSpec {
            name: "cost_recap",
            title: "Cost recap",
            description: "Summarise what Bernstein work cost, by role, for a stated window.",
            arguments: vec![PromptArgument {
                name: "window",
                description: "The period to cover, in words (default: today).",
                required: false,
                complete: None,
            }],
            render: |args, _| cost_recap(args).map(PromptTurn::Messages),
        },
        PromptSpec {
            name: "orchestrate_goal",
            title: "Orchestrate a goal",
            description: "Drive one goal through a Bernstein run: start it, poll it, report the outcome.",
            arguments: vec![
                PromptArgument {
                    name: "goal",
                    description: "What the run should accomplish.",
                    required: true,
                    complete: None,
                },
                PromptArgument {
                    name: "role",
                    description: "Specialist role to assign (default: backend).",
                    required: false,
                    complete: None,
                },
                PromptArgument {
                    name: "scope",
                    description: "small, medium or large (default: medium).",
                    required: false,
                    complete: Some(complete_scope),
                },
            ],
            render: |args, _| orchestrate_goal(args).map(PromptTurn::Messages),
        },
        PromptSpec {
            name: "triage_failed_tasks",
            title: "Triage failed tasks",
            description: "Review the most recent failed tasks and propose one next step per cause.",
            arguments: vec![PromptArgument {
                name: "limit",
                description: "How many failed tasks to review, 1 to 200 (default: 5).",
                required: false,
                complete: None,
            }],
            render: |args, _| triage_failed_tasks(args).map(PromptTurn::Messages),
        },
    ]
}

/// One user message holding `text`.
fn user_text(text: String) -> Vec<Value> {
    vec![json!({"role": "user", "content": {"type": "text", "text": text}})]
}

/// Completions of `orchestrate_goal.scope`: the scopes starting with what was typed.
fn complete_scope(typed: &str, _: &Map<String, Value>) -> Vec<String> {
    starting_with(&SCOPES, typed.trim())
}

/// The string value of argument `name`: `Ok(None)` when absent or null; an error when it is
/// not a string, is blank or is too long.
fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(format!("argument {name} is blank")),
        Some(Value::String(s)) if s.chars().count() > MAX_ARGUMENT_CHARS => Err(format!(
            "argument {name} is longer than {MAX_ARGUMENT_CHARS} characters"
        )),
        Some(Value::String(s)) => Ok(Some(s.trim())),
        Some(_) => Err(format!("argument {name} must be a string")),
    }
}

/// Refuses arguments the prompt does not declare.
fn only(args: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "unknown argument {k:?}; this prompt takes {}",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

fn orchestrate_goal(args: &Map<String, Value>) -> Result<Vec<Value>, String> {
    only(args, &["goal", "role", "scope"])?;
    let goal = arg(args, "goal")?.ok_or("missing required argument: goal")?;
    let role = arg(args, "role")?.unwrap_or("backend");
    let scope = arg(args, "scope")?.unwrap_or("medium");
    if !SCOPES.contains(&scope) {
        return Err(format!(
            "argument scope must be small, medium or large, not {scope:?}"
        ));
    }
    Ok(user_text(format!(
        "Drive this goal through a Bernstein run.\n\
         \n\
         Goal: {goal}\n\
         Role: {role}\n\
         Scope: {scope}\n\
         \n\
         1. Call bernstein_run once with the goal, role and scope above. Keep the task_id it \
         returns: it is the run id.\n\
         2. Wait poll_after_ms, then call bernstein_run_status with run_id set to that id. \
         Repeat tens of seconds apart while the status is working; a run takes minutes to hours, \
         and a working status is progress, not a stall. Do not start the goal a second time.\n\
         3. If the status is input_required, tell the user the run waits on a decision and which \
         task ids are involved (bernstein_status with detail=true lists them).\n\
         4. Stop at completed, failed or cancelled, and report the run id, the final status and \
         the handle's receiptHash so the result can be checked later."
    )))
}

fn triage_failed_tasks(args: &Map<String, Value>) -> Result<Vec<Value>, String> {
    only(args, &["limit"])?;
    // Prompt arguments are strings on the wire; a host that sends a JSON integer is accepted.
    let raw = match args.get("limit") {
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => arg(args, "limit")?.map(str::to_string),
    };
    let limit = match raw {
        None => DEFAULT_TRIAGE_LIMIT,
        Some(s) => match s.parse::<u32>() {
            Ok(n) if (1..=MAX_TRIAGE_LIMIT).contains(&n) => n,
            _ => {
                return Err(format!(
                    "argument limit must be a whole number from 1 to {MAX_TRIAGE_LIMIT}, not {s:?}"
                ));
            }
        },
    };
    Ok(user_text(format!(
        "Triage the most recent failed Bernstein tasks.\n\
         \n\
         1. Call bernstein_status with status set to \"failed\"; rows come newest first.\n\
         2. Take at most {limit} of them. For each, note the task id, its role, its title and \
         the run it belongs to.\n\
         3. Sort them by likely cause: the environment, a flaky check, a real defect, or a goal \
         that was unclear.\n\
         4. Propose one concrete next step per cause, such as a narrower goal to start again \
         with bernstein_run.\n\
         \n\
         Answer with a table of task_id, role, cause and next step, then one sentence of summary."
    )))
}

fn cost_recap(args: &Map<String, Value>) -> Result<Vec<Value>, String> {
    only(args, &["window"])?;
    let window = arg(args, "window")?.unwrap_or("today");
    Ok(user_text(format!(
        "Recap what Bernstein work cost over this window: {window}.\n\
         \n\
         1. Call bernstein_status and read cost.total_cost_usd and cost.per_role.\n\
         2. List the roles from most to least expensive with their task counts; merge roles \
         under one cent into a single row.\n\
         3. Point out any role that accounts for more than half of the total.\n\
         \n\
         The figures are totals recorded so far; say so if the window is narrower than that. \
         Answer with a short paragraph and a table of role, tasks and cost in USD."
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn args(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    }

    #[test]
    fn scope_completes_from_its_allowed_values_and_nothing_else_completes() {
        let prompts = registered();
        let goal = prompts
            .iter()
            .find(|p| p.name == "orchestrate_goal")
            .unwrap();
        let scope = goal.arguments.iter().find(|a| a.name == "scope").unwrap();
        let complete = scope.complete.unwrap();
        assert_eq!(complete("", &Map::new()), SCOPES);
        assert_eq!(complete("m", &Map::new()), ["medium"]);
        assert!(complete("huge", &Map::new()).is_empty());
        // Every completion is a value the prompt accepts.
        for value in complete("", &Map::new()) {
            assert!(orchestrate_goal(&args(&[("goal", "g"), ("scope", &value)])).is_ok());
        }
        let with_completer: Vec<&str> = prompts
            .iter()
            .flat_map(|p| p.arguments.iter())
            .filter(|a| a.complete.is_some())
            .map(|a| a.name)
            .collect();
        assert_eq!(with_completer, ["scope"]);
    }

    /// A prompt rendered with no input from the client (these prompts ask for none).
    fn call(
        render: bernstein_core::protocol::registry::PromptRenderer,
        args: &Map<String, Value>,
    ) -> Result<Vec<Value>, String> {
        match render(args, &bernstein_core::protocol::input::NO_INPUT)? {
            PromptTurn::Messages(messages) => Ok(messages),
            PromptTurn::NeedInput(_) => Err("asked for input".into()),
        }
    }

    fn text(messages: &[Value]) -> &str {
        messages[0]["content"]["text"].as_str().unwrap()
    }

    fn rendered_samples() -> Vec<String> {
        let mut out = Vec::new();
        for p in registered() {
            let mut a = Map::new();
            for arg in &p.arguments {
                if arg.required {
                    a.insert(arg.name.into(), json!("sample value"));
                }
            }
            let msgs = call(p.render, &a).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(msgs.len(), 1);
            assert_eq!(msgs[0]["role"], "user");
            assert_eq!(msgs[0]["content"]["type"], "text");
            out.push(text(&msgs).to_string());
        }
        out
    }

    #[test]
    fn every_tool_a_prompt_names_is_registered_in_every_tier() {
        let core: BTreeSet<&str> = crate::tiers::tools_in(bernstein_core::config::Tier::Core)
            .into_iter()
            .collect();
        for t in rendered_samples() {
            let mut rest = t.as_str();
            while let Some(i) = rest.find("bernstein_") {
                let name: String = rest[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                assert!(
                    core.contains(name.as_str()),
                    "prompt names {name}, not a core tool"
                );
                rest = &rest[i + name.len()..];
            }
        }
    }

    #[test]
    fn rendering_is_deterministic_and_uses_arguments() {
        let p = registered();
        let og = p.iter().find(|p| p.name == "orchestrate_goal").unwrap();
        let a = args(&[
            ("goal", "Ship the parser"),
            ("role", "qa"),
            ("scope", "small"),
        ]);
        let first = call(og.render, &a).unwrap();
        assert_eq!(first, call(og.render, &a).unwrap());
        assert!(text(&first).contains("Goal: Ship the parser\nRole: qa\nScope: small"));
        let defaults = call(og.render, &args(&[("goal", "x")])).unwrap();
        assert!(text(&defaults).contains("Role: backend\nScope: medium"));

        let tr = p.iter().find(|p| p.name == "triage_failed_tasks").unwrap();
        assert!(text(&call(tr.render, &Map::new()).unwrap()).contains("at most 5 of them"));
        assert!(
            text(&call(tr.render, &args(&[("limit", "12")])).unwrap())
                .contains("at most 12 of them")
        );
        let mut numeric = Map::new();
        numeric.insert("limit".into(), json!(7));
        assert!(text(&call(tr.render, &numeric).unwrap()).contains("at most 7 of them"));

        let cr = p.iter().find(|p| p.name == "cost_recap").unwrap();
        assert!(text(&call(cr.render, &Map::new()).unwrap()).contains("window: today."));
        assert!(
            text(&call(cr.render, &args(&[("window", "this week")])).unwrap())
                .contains("window: this week.")
        );
    }

    #[test]
    fn bad_arguments_are_errors() {
        let p = registered();
        let by = |n: &str| p.iter().find(|s| s.name == n).unwrap().render;
        assert_eq!(
            call(by("orchestrate_goal"), &Map::new()).unwrap_err(),
            "missing required argument: goal"
        );
        assert!(call(by("orchestrate_goal"), &args(&[("goal", "  ")])).is_err());
        assert!(
            call(
                by("orchestrate_goal"),
                &args(&[("goal", "x"), ("scope", "huge")])
            )
            .is_err()
        );
        assert!(
            call(
                by("orchestrate_goal"),
                &args(&[("goal", "x"), ("colour", "red")])
            )
            .is_err()
        );
        let mut not_string = Map::new();
        not_string.insert("goal".into(), json!(5));
        assert!(call(by("orchestrate_goal"), &not_string).is_err());
        for bad in ["0", "201", "-1", "five", "2.5"] {
            assert!(
                call(by("triage_failed_tasks"), &args(&[("limit", bad)])).is_err(),
                "{bad}"
            );
        }
        let long = "x".repeat(MAX_ARGUMENT_CHARS + 1);
        assert!(call(by("cost_recap"), &args(&[("window", &long)])).is_err());
    }

    #[test]
    fn catalogue_is_sorted_and_described() {
        let names: Vec<&str> = registered().iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            ["cost_recap", "orchestrate_goal", "triage_failed_tasks"]
        );
        for p in registered() {
            assert!(!p.description.is_empty() && !p.title.is_empty());
        }
    }
}
