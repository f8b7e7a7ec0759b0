//! Scenario definitions: reusable sets of tasks that `bernstein_scenario` turns into a run.
//!
//! Two sources, one format (JSON):
//! - built-in scenarios compiled into the core (`domain/src/scenarios/*.json`, pure data);
//! - the project's own, one file per scenario in [`PROJECT_DIR`] named `<id>.json`; a project
//!   scenario replaces a built-in one of the same id.
//!
//! A definition is `{id, name, description?, tags?, version?, tasks: [{title, description?,
//! role?, priority?, scope?, complexity?, estimated_minutes?}]}` (the fields of the Python
//! project's YAML scenarios, in JSON). Unknown fields are ignored, so definitions written for the
//! Python project (`artifact_spec`, ...) still load. [`parse`] checks every bound; a definition
//! that fails is reported, never half-used. This module must never perform IO.

use serde::{Deserialize, Serialize};

use super::args::Ident;
use super::records::{Complexity, Scope};
use super::skills;

/// The project's scenario folder, relative to the project root.
pub const PROJECT_DIR: &str = "templates/scenarios";
/// Most tasks one scenario may create.
pub const MAX_TASKS: usize = 32;
/// The longest definition file read (bytes).
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The built-in definitions, as compiled in.
const BUILTIN: &[(&str, &str)] = &[
    (
        "dependency-audit",
        include_str!("scenarios/dependency-audit.json"),
    ),
    ("docs-sync", include_str!("scenarios/docs-sync.json")),
    (
        "test-coverage-boost",
        include_str!("scenarios/test-coverage-boost.json"),
    ),
];

/// One task a scenario creates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioTask {
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// 1 = critical, 2 = normal, 3 = nice to have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    #[serde(default)]
    pub scope: Scope,
    #[serde(default)]
    pub complexity: Complexity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_minutes: Option<u32>,
}

/// A scenario definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scenario {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default = "default_version")]
    pub version: String,
    pub tasks: Vec<ScenarioTask>,
}

fn default_version() -> String {
    "1.0".into()
}

/// Where a definition came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Builtin,
    Project,
}

/// Parses and checks one definition; `Err` says what is wrong in words.
pub fn parse(text: &str) -> Result<Scenario, String> {
    let s: Scenario = serde_json::from_str(text).map_err(|e| format!("not a definition: {e}"))?;
    skills::check_name(&s.id).map_err(|e| format!("id {e}"))?;
    let bounded = |field: &str, v: &str, min: usize, max: usize| {
        let n = v.trim().chars().count();
        let controls = field != "description" && v.chars().any(char::is_control);
        if n < min || v.chars().count() > max || controls {
            Err(format!(
                "{field} must hold {min} to {max} characters without control characters"
            ))
        } else {
            Ok(())
        }
    };
    bounded("name", &s.name, 1, 120)?;
    bounded("description", &s.description, 0, 4000)?;
    bounded("version", &s.version, 1, 32)?;
    if s.tags.len() > 16 {
        return Err("at most 16 tags".into());
    }
    for t in &s.tags {
        bounded("tags", t, 1, 64)?;
    }
    if s.tasks.is_empty() || s.tasks.len() > MAX_TASKS {
        return Err(format!("tasks must list 1 to {MAX_TASKS} tasks"));
    }
    for (i, t) in s.tasks.iter().enumerate() {
        let at = |why: String| format!("tasks[{i}]: {why}");
        bounded("title", &t.title, 1, 200).map_err(at)?;
        bounded("description", &t.description, 0, 4000).map_err(at)?;
        if let Some(r) = &t.role {
            // Recorded as the task's role, verbatim: an identifier like `bernstein_run`'s.
            Ident::<64>::check(r).map_err(|e| at(format!("role {e}")))?;
        }
        if t.priority.is_some_and(|p| !(1..=3).contains(&p)) {
            return Err(at("priority must be 1, 2 or 3".into()));
        }
        if t.estimated_minutes
            .is_some_and(|m| !(1..=10_080).contains(&m))
        {
            return Err(at("estimated_minutes must be from 1 to 10080".into()));
        }
    }
    Ok(s)
}

/// The built-in scenarios, sorted by id.
pub fn builtin() -> Vec<Scenario> {
    BUILTIN
        .iter()
        .map(|(id, text)| {
            // Checked by `tests::builtins_parse_and_match_their_names`.
            let s = parse(text).expect("built-in scenarios are valid");
            debug_assert_eq!(&s.id, id);
            s
        })
        .collect()
}

/// The built-in scenario `id`, if any.
pub fn builtin_named(id: &str) -> Option<Scenario> {
    builtin().into_iter().find(|s| s.id == id)
}

/// The path of the project's definition of `id` (`id` already screened).
pub fn project_file(id: &str) -> String {
    format!("{PROJECT_DIR}/{id}.json")
}

/// The id a project file name stands for (`<id>.json` with a usable id), if any.
pub fn id_of_file(file: &str) -> Option<&str> {
    file.strip_suffix(".json")
        .filter(|id| skills::check_name(id).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_match_their_names() {
        let all = builtin();
        assert_eq!(all.len(), BUILTIN.len());
        for (s, (id, _)) in all.iter().zip(BUILTIN) {
            assert_eq!(&s.id, id);
        }
        let mut ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        assert!(builtin_named("docs-sync").is_some());
        assert!(builtin_named("nope").is_none());
    }

    #[test]
    fn definitions_are_checked() {
        let ok = r#"{"id":"x","name":"X","tasks":[{"title":"t","artifact_spec":{"kind":"code"}}]}"#;
        let s = parse(ok).unwrap();
        assert_eq!(s.version, "1.0");
        assert_eq!(s.tasks[0].scope, Scope::Medium);
        for bad in [
            "not json",
            r#"{"id":"../x","name":"X","tasks":[{"title":"t"}]}"#,
            r#"{"id":"x","name":"","tasks":[{"title":"t"}]}"#,
            r#"{"id":"x","name":"X","tasks":[]}"#,
            r#"{"id":"x","name":"X","tasks":[{"title":" "}]}"#,
            r#"{"id":"x","name":"X","tasks":[{"title":"t","priority":0}]}"#,
            r#"{"id":"x","name":"X","tasks":[{"title":"t","estimated_minutes":0}]}"#,
            r#"{"id":"x","name":"X","tasks":[{"title":"t","scope":"huge"}]}"#,
            // A role is recorded verbatim, so it is an identifier like bernstein_run's.
            r#"{"id":"x","name":"X","tasks":[{"title":"t","role":"qa engineer"}]}"#,
            r#"{"id":"x","name":"X","tasks":[{"title":"t","role":"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}]}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let e = parse(r#"{"id":"x","name":"X","tasks":[{"title":"t","role":"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}]}"#)
            .unwrap_err();
        assert!(
            e.contains("looks like a secret") && !e.contains("ghp_"),
            "{e}"
        );
        let many = format!(
            r#"{{"id":"x","name":"X","tasks":[{}]}}"#,
            vec![r#"{"title":"t"}"#; MAX_TASKS + 1].join(",")
        );
        assert!(parse(&many).is_err());
    }

    #[test]
    fn project_files_name_their_ids() {
        assert_eq!(id_of_file("nightly.json"), Some("nightly"));
        assert_eq!(id_of_file("nightly.yaml"), None);
        assert_eq!(id_of_file(".json"), None);
        assert_eq!(project_file("a"), "templates/scenarios/a.json");
    }
}
