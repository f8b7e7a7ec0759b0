//! `load_skill`: the project's skills as text. Without `name`: an index of the
//! skills folder ([`SKILLS_DIR`]); with `name`: that skill's `SKILL.md`, the files of its
//! `references/` and `scripts/` folders, and the content of the `reference` or `script` asked
//! for. It returns file contents only and never runs anything.
//!
//! Host rounds (see `protocol::host`), each a pure function of the replies so far:
//! - index: list the folder, then read the `SKILL.md` of the first [`MAX_INDEXED`] skill
//!   folders (by name); further skills are listed by name only (`indexed: false`) and the
//!   answer says `truncated: true`. At most 1 + 12 rounds, under `MAX_HOST_ROUNDS`.
//! - one skill: read its `SKILL.md`, list `references/`, list `scripts/`, then read the
//!   requested reference and script (at most 5 rounds).
//!
//! Names are screened by [`skills::check_name`] before any request is built. Every request is
//! confined to the skills folder (`within`): the runtime refuses whatever resolves outside it
//! or into `.sdd`, and a listed symlink counts only when it resolves to a file or folder
//! inside it, so the index skips links that leave it and a call by name is refused. This handler must never build a
//! host path from an unscreened name, and never write records.

use serde::{Deserialize, Serialize};

use crate::bound::{ToolContext, ToolSpec};
use crate::refusal::Refusal;
use bernstein_core::config::Tier;
use bernstein_core::protocol::host::{DirEntry, EntryKind, HostFailure, HostReply, HostRequest};
use bernstein_core::protocol::refusal::{Code, Common};
use bernstein_core::protocol::registry::{Effects, ToolError};

use super::super::args::Chars;
use super::super::ids::quote_for_message;
use super::super::skills::{
    self, MAX_SKILL_FILE_BYTES, REFERENCES_DIR, SCRIPTS_DIR, SKILLS_DIR, SkillHeader,
};
use super::{Called, Tool};

pub const NAME: &str = "load_skill";

/// How many skills an index reads (`SKILL.md` each); the rest are listed by name only.
pub const MAX_INDEXED: usize = 12;

const EFFECTS: Effects = Effects {
    reads_files: true,
    writes_files: false,
    spawns_processes: false,
    network: false,
};

const DESCRIPTION: &str = "The index of templates/skills/, or one skill's files as text (never \
run).";

/// Arguments of `load_skill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadSkillArgs {
    /// Omit for the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Chars<1, 128>>,
    /// A file in its references/.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Chars<1, 128>>,
    /// A file in its scripts/.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Chars<1, 128>>,
}

/// One skill of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillSummary {
    pub name: String,
    /// Whether its SKILL.md was read for this index (false beyond the first 12, or when it
    /// could not be read: see `problem`).
    pub indexed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `sha256:` + hex SHA-256 of SKILL.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// References its front matter declares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Scripts its front matter declares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<String>,
    /// Why SKILL.md could not be read (missing, too large, outside the project, not text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A file returned with a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillFile {
    pub name: String,
    pub content: String,
}

/// Payload of `load_skill`: `mode` says which fields are present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillAnswer {
    /// `index` (no name given) or `skill`.
    pub mode: String,
    /// The skills folder, relative to the project root.
    pub folder: String,
    /// Index: the skills, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<SkillSummary>>,
    /// Index: whether some skills are listed by name only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Skill: its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Skill: the text of SKILL.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Skill: the files of its references/ folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<Vec<String>>,
    /// Skill: the files of its scripts/ folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripts: Option<Vec<String>>,
    /// The requested reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<SkillFile>,
    /// The requested script (text only; never run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<SkillFile>,
}

/// `load_skill`, declared once (see [`Tool`]).
pub struct LoadSkill;

impl Tool for LoadSkill {
    const NAME: &'static str = NAME;
    const TITLE: &'static str = "Load a skill";
    const DESCRIPTION: &'static str = DESCRIPTION;
    const TIER: Tier = Tier::Standard;
    const EFFECTS: Effects = EFFECTS;
    type Args = LoadSkillArgs;
    type Answer = SkillAnswer;

    fn call(ctx: &ToolContext<'_>, args: LoadSkillArgs) -> Called<SkillAnswer> {
        load(ctx, args)
    }
}

pub fn spec() -> ToolSpec {
    super::spec::<LoadSkill>()
}

/// Either the next host request or the finished answer.
enum Step {
    Ask(HostRequest),
    Done(Box<SkillAnswer>),
}

fn load(ctx: &ToolContext<'_>, args: LoadSkillArgs) -> Called<SkillAnswer> {
    let step = match &args.name {
        None => {
            if args.reference.is_some() || args.script.is_some() {
                return Called::refused(
                    ToolError::new(
                        Common::InvalidArguments,
                        "reference and script need name: the skill they belong to",
                        "Call load_skill without arguments for the index, then pass name.",
                    )
                    .with("field", "name"),
                );
            }
            index(ctx.host)
        }
        Some(name) => one_skill(ctx.host, name, &args),
    };
    match step {
        Ok(Step::Ask(request)) => Called::ask(request),
        Ok(Step::Done(answer)) => Called::ok(*answer),
        Err(e) => Called::refused(e),
    }
}

fn empty_answer(mode: &str) -> SkillAnswer {
    SkillAnswer {
        mode: mode.into(),
        folder: SKILLS_DIR.into(),
        skills: None,
        truncated: None,
        name: None,
        description: None,
        sha256: None,
        body: None,
        references: None,
        scripts: None,
        reference: None,
        script: None,
    }
}

fn read(path: String) -> HostRequest {
    HostRequest::Read {
        path,
        max_bytes: MAX_SKILL_FILE_BYTES,
        within: Some(SKILLS_DIR.into()),
    }
}

/// A listing confined to the skills folder.
fn list(path: String) -> HostRequest {
    HostRequest::List {
        path,
        within: Some(SKILLS_DIR.into()),
    }
}

/// The index: list the folder, read the first skills' SKILL.md, answer.
fn index(replies: &[HostReply]) -> Result<Step, ToolError> {
    let Some(listing) = replies.first() else {
        return Ok(Step::Ask(list(SKILLS_DIR.into())));
    };
    let candidates: Vec<String> = match listing {
        HostReply::Listing { entries } => skill_folders(entries),
        HostReply::Failed(HostFailure::NotFound) => Vec::new(),
        other => return Err(host_refusal(SKILLS_DIR, other)),
    };
    let reads = &replies[1..];
    let wanted = candidates.len().min(MAX_INDEXED);
    if reads.len() < wanted {
        return Ok(Step::Ask(read(skills::skill_file(
            &candidates[reads.len()],
        ))));
    }
    let skills = candidates
        .iter()
        .enumerate()
        .map(|(i, name)| summary(name, reads.get(i)))
        .collect();
    let mut answer = empty_answer("index");
    answer.skills = Some(skills);
    answer.truncated = Some(candidates.len() > MAX_INDEXED);
    Ok(Step::Done(Box::new(answer)))
}

/// Whether a listed entry is (or links, inside the skills folder and outside `.sdd`, to) a
/// `kind`: a link anywhere else, or to anything else, is left out.
fn is(entry: &DirEntry, kind: EntryKind) -> bool {
    entry.kind == kind || (entry.kind == EntryKind::Symlink && entry.target == Some(kind))
}

/// Folders (or links to folders inside the skills folder) whose names are usable skill
/// names, sorted.
fn skill_folders(entries: &[DirEntry]) -> Vec<String> {
    let mut names: Vec<String> = entries
        .iter()
        .filter(|e| is(e, EntryKind::Dir))
        .filter(|e| skills::check_name(&e.name).is_ok())
        .map(|e| e.name.clone())
        .collect();
    names.sort();
    names
}

fn summary(name: &str, reply: Option<&HostReply>) -> SkillSummary {
    let mut s = SkillSummary {
        name: name.to_string(),
        indexed: false,
        description: None,
        sha256: None,
        references: Vec::new(),
        scripts: Vec::new(),
        problem: None,
    };
    match reply {
        None => {}
        Some(HostReply::File { text }) => {
            let h = skills::parse_header(text);
            s.indexed = true;
            s.description = Some(h.description);
            s.sha256 = Some(h.sha256);
            s.references = h.references;
            s.scripts = h.scripts;
        }
        Some(other) => s.problem = Some(format!("SKILL.md: {}", failure_text(other))),
    }
    s
}

/// One skill: SKILL.md, the two folder listings, then the requested files.
fn one_skill(replies: &[HostReply], name: &str, args: &LoadSkillArgs) -> Result<Step, ToolError> {
    screen("name", name)?;
    for (field, value) in [("reference", &args.reference), ("script", &args.script)] {
        if let Some(v) = value {
            screen(field, v)?;
        }
    }
    let mut plan = vec![
        read(skills::skill_file(name)),
        list(skills::skill_folder(name, REFERENCES_DIR)),
        list(skills::skill_folder(name, SCRIPTS_DIR)),
    ];
    if let Some(r) = &args.reference {
        plan.push(read(format!(
            "{}/{r}",
            skills::skill_folder(name, REFERENCES_DIR)
        )));
    }
    if let Some(s) = &args.script {
        plan.push(read(format!(
            "{}/{s}",
            skills::skill_folder(name, SCRIPTS_DIR)
        )));
    }
    // Refuse as soon as SKILL.md is known to be unreadable.
    if let Some(first) = replies.first()
        && !matches!(first, HostReply::File { .. })
    {
        return Err(match first {
            HostReply::Failed(HostFailure::NotFound) => ToolError::new(
                Refusal::UnknownSkill,
                format!("no skill {} in {SKILLS_DIR}", quote_for_message(name)),
                "Call load_skill without arguments for the index of skills.",
            )
            .with("name", name),
            other => host_refusal(&skills::skill_file(name), other),
        });
    }
    if replies.len() < plan.len() {
        return Ok(Step::Ask(plan[replies.len()].clone()));
    }
    let HostReply::File { text } = &replies[0] else {
        unreachable!("checked above: the first reply is the SKILL.md text");
    };
    let header: SkillHeader = skills::parse_header(text);
    let references = folder_files(&replies[1])?;
    let scripts = folder_files(&replies[2])?;
    let mut answer = empty_answer("skill");
    answer.name = Some(name.to_string());
    answer.description = Some(header.description);
    answer.sha256 = Some(header.sha256);
    answer.body = Some(text.clone());
    let mut next = 3;
    if let Some(r) = &args.reference {
        answer.reference = Some(requested("reference", r, &references, &replies[next])?);
        next += 1;
    }
    if let Some(s) = &args.script {
        answer.script = Some(requested("script", s, &scripts, &replies[next])?);
    }
    answer.references = Some(references);
    answer.scripts = Some(scripts);
    Ok(Step::Done(Box::new(answer)))
}

fn screen(field: &str, value: &str) -> Result<(), ToolError> {
    skills::check_name(value).map_err(|e| {
        ToolError::new(
            Refusal::InvalidName,
            format!("{field} {} {e}", quote_for_message(value)),
            "Pass a bare file or folder name such as backend or python-conventions.md, never a path.",
        )
        .with("field", field)
    })
}

/// The regular files of a listed folder (a missing folder has none).
fn folder_files(reply: &HostReply) -> Result<Vec<String>, ToolError> {
    match reply {
        HostReply::Listing { entries } => Ok(entries
            .iter()
            .filter(|e| is(e, EntryKind::File))
            .map(|e| e.name.clone())
            .collect()),
        HostReply::Failed(HostFailure::NotFound) => Ok(Vec::new()),
        other => Err(host_refusal("a skill folder", other)),
    }
}

fn requested(
    field: &str,
    name: &str,
    available: &[String],
    reply: &HostReply,
) -> Result<SkillFile, ToolError> {
    match reply {
        HostReply::File { text } => Ok(SkillFile {
            name: name.to_string(),
            content: text.clone(),
        }),
        HostReply::Failed(HostFailure::NotFound) => Err(ToolError::new(
            if field == "script" {
                Refusal::UnknownScript
            } else {
                Refusal::UnknownReference
            },
            format!("the skill has no {field} {}", quote_for_message(name)),
            format!("Pick one of the skill's {field}s listed in `available`."),
        )
        .with("field", field)
        .with("available", available.to_vec())),
        other => Err(host_refusal(name, other)),
    }
}

fn failure_text(reply: &HostReply) -> String {
    match reply {
        HostReply::Failed(HostFailure::NotFound) => "not found".into(),
        HostReply::Failed(HostFailure::TooLarge { size }) => {
            format!("{size} bytes, over the {MAX_SKILL_FILE_BYTES}-byte limit")
        }
        HostReply::Failed(HostFailure::Escapes) => format!("resolves outside {SKILLS_DIR}"),
        HostReply::Failed(HostFailure::Private) => {
            "resolves into the project's .sdd directory".into()
        }
        HostReply::Failed(HostFailure::NotText) => "not UTF-8 text".into(),
        other => format!("unreadable: {other:?}"),
    }
}

/// A host failure as a structured refusal.
fn host_refusal(what: &str, reply: &HostReply) -> ToolError {
    let (code, hint) = match reply {
        HostReply::Failed(HostFailure::Escapes) => (
            Code::of(Refusal::PathEscapes),
            "Skills must live inside templates/skills; a symlink out of it is not followed.",
        ),
        HostReply::Failed(HostFailure::Private) => (
            Code::of(Refusal::PrivatePath),
            "No tool reads the project's .sdd directory (ledger, keys); remove the link.",
        ),
        HostReply::Failed(HostFailure::TooLarge { .. }) => (
            Code::of(Refusal::FileTooLarge),
            "Skill files are returned up to 256 KiB; split the file.",
        ),
        HostReply::Failed(HostFailure::NotText) => (
            Code::of(Refusal::NotText),
            "Skill files must be UTF-8 text.",
        ),
        HostReply::Failed(HostFailure::Unsupported) => (
            Code::of(Common::HostUnavailable),
            "This server runtime does not serve project files.",
        ),
        _ => (
            Code::of(Refusal::IoError),
            "Check the skills folder's permissions; nothing was changed.",
        ),
    };
    ToolError::new(code, format!("{what}: {}", failure_text(reply)), hint)
}

#[cfg(test)]
mod tests;
