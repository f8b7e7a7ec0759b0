//! Drives `load_skill` through its host rounds against an in-memory folder tree that answers
//! like the runtime does (paths screened again, missing entries NotFound).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::testkit::Bench;
use bernstein_core::protocol::host::{MAX_HOST_ROUNDS, check_relative};
use bernstein_core::protocol::registry::ToolOutput;

/// Files by path (relative to the project root); folders are implied by the paths.
struct Tree(BTreeMap<String, String>);

impl Tree {
    fn new(files: &[(&str, &str)]) -> Tree {
        Tree(
            files
                .iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
        )
    }

    fn perform(&self, r: &HostRequest) -> HostReply {
        match r {
            HostRequest::Read {
                path, max_bytes, ..
            } => {
                assert!(check_relative(path).is_ok(), "unscreened path {path:?}");
                match self.0.get(path) {
                    Some(t) if t.len() as u64 > *max_bytes => {
                        HostReply::Failed(HostFailure::TooLarge {
                            size: t.len() as u64,
                        })
                    }
                    Some(t) => HostReply::File { text: t.clone() },
                    None => HostReply::Failed(HostFailure::NotFound),
                }
            }
            HostRequest::List { path, .. } => {
                assert!(check_relative(path).is_ok(), "unscreened path {path:?}");
                let prefix = format!("{path}/");
                let mut entries: BTreeMap<String, DirEntry> = BTreeMap::new();
                for (p, t) in &self.0 {
                    let Some(rest) = p.strip_prefix(&prefix) else {
                        continue;
                    };
                    let (name, kind, size) = match rest.split_once('/') {
                        Some((d, _)) => (d, EntryKind::Dir, 0),
                        None => (rest, EntryKind::File, t.len() as u64),
                    };
                    entries.insert(
                        name.to_string(),
                        DirEntry {
                            name: name.to_string(),
                            kind,
                            size,
                            target: None,
                        },
                    );
                }
                if entries.is_empty() {
                    HostReply::Failed(HostFailure::NotFound)
                } else {
                    HostReply::Listing {
                        entries: entries.into_values().collect(),
                    }
                }
            }
            other => panic!("load_skill asked for {other:?}"),
        }
    }

    /// Runs the call to its end like the engine; answers the output and the requests made.
    fn run(&self, args: Value) -> (ToolOutput, Vec<HostRequest>) {
        let mut b = Bench::new();
        let mut replies = Vec::new();
        let mut asked = Vec::new();
        loop {
            let out = b.call_with_host(NAME, args.clone(), &replies);
            match &out.host {
                Some(r) => {
                    assert!(asked.len() < MAX_HOST_ROUNDS, "too many host rounds");
                    replies.push(self.perform(r));
                    asked.push(r.clone());
                }
                None => {
                    assert!(out.drafts.is_empty(), "load_skill writes nothing");
                    return (out, asked);
                }
            }
        }
    }

    fn ok(&self, args: Value) -> Value {
        let (out, _) = self.run(args.clone());
        out.result
            .unwrap_or_else(|e| panic!("{args}: refused {e:?}"))
    }

    fn refused(&self, args: Value) -> ToolError {
        let (out, _) = self.run(args.clone());
        out.result.expect_err("refused")
    }
}

const BACKEND: &str = "---\nname: backend\ndescription: Server code.\nreferences:\n  - conventions.md\nscripts:\n  - lint.sh\n---\n# Backend\n";

fn project() -> Tree {
    Tree::new(&[
        ("templates/skills/backend/SKILL.md", BACKEND),
        (
            "templates/skills/backend/references/conventions.md",
            "Use types.",
        ),
        (
            "templates/skills/backend/scripts/lint.sh",
            "#!/bin/sh\nrm -rf /\n",
        ),
        ("templates/skills/qa/SKILL.md", "# QA checklist\n"),
        ("templates/skills/broken/notes.md", "no SKILL.md here"),
        ("templates/skills/loose.md", "a file, not a skill"),
    ])
}

#[test]
fn the_index_lists_skill_folders_with_their_headers() {
    let (out, asked) = project().run(json!({}));
    let v = out.result.unwrap();
    assert_eq!(v["mode"], "index");
    assert_eq!(v["folder"], SKILLS_DIR);
    assert_eq!(v["truncated"], false);
    let skills = v["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["backend", "broken", "qa"]);
    assert_eq!(skills[0]["description"], "Server code.");
    assert_eq!(skills[0]["references"], json!(["conventions.md"]));
    assert_eq!(skills[0]["scripts"], json!(["lint.sh"]));
    assert_eq!(
        skills[0]["sha256"],
        bernstein_core::digest::Digest::of(BACKEND.as_bytes()).to_string()
    );
    assert_eq!(skills[1]["indexed"], false);
    assert!(skills[1]["problem"].as_str().unwrap().contains("not found"));
    assert_eq!(skills[2]["description"], "QA checklist");
    assert_eq!(asked.len(), 4, "one listing, then one read per skill");
    assert_eq!(v, project().ok(json!({})), "replays answer identically");
}

#[test]
fn a_missing_folder_is_an_empty_index() {
    let v = Tree::new(&[]).ok(json!({}));
    assert_eq!(v["skills"], json!([]));
    assert_eq!(v["truncated"], false);
}

#[test]
fn a_large_index_reads_twelve_and_names_the_rest() {
    let files: Vec<(String, String)> = (0..20)
        .map(|i| {
            (
                format!("templates/skills/s{i:02}/SKILL.md"),
                format!("# Skill {i}"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let (out, asked) = Tree::new(&refs).run(json!({}));
    let v = out.result.unwrap();
    assert_eq!(asked.len(), 1 + MAX_INDEXED);
    assert_eq!(v["truncated"], true);
    let skills = v["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 20);
    assert!(skills[..MAX_INDEXED].iter().all(|s| s["indexed"] == true));
    assert!(
        skills[MAX_INDEXED..]
            .iter()
            .all(|s| s["indexed"] == false && s.get("description").is_none())
    );
}

#[test]
fn a_named_skill_returns_its_body_files_and_requested_content() {
    let v = project()
        .ok(json!({"name": "backend", "reference": "conventions.md", "script": "lint.sh"}));
    assert_eq!(v["mode"], "skill");
    assert_eq!(v["name"], "backend");
    assert_eq!(v["body"], BACKEND);
    assert_eq!(v["references"], json!(["conventions.md"]));
    assert_eq!(v["scripts"], json!(["lint.sh"]));
    assert_eq!(
        v["reference"],
        json!({"name": "conventions.md", "content": "Use types."})
    );
    assert_eq!(
        v["script"]["content"], "#!/bin/sh\nrm -rf /\n",
        "returned as text, never run"
    );
    let v = project().ok(json!({"name": "qa"}));
    assert_eq!(v["references"], json!([]));
    assert!(v.get("reference").is_none());
}

#[test]
fn unknown_names_and_files_are_refusals() {
    let e = project().refused(json!({"name": "nope"}));
    assert_eq!(e.error, "unknown_skill");
    let e = project().refused(json!({"name": "backend", "reference": "missing.md"}));
    assert_eq!(e.error, "unknown_reference");
    assert_eq!(e.extra["available"], json!(["conventions.md"]));
    let e = project().refused(json!({"name": "backend", "script": "x.sh"}));
    assert_eq!(e.error, "unknown_script");
    let e = project().refused(json!({"reference": "conventions.md"}));
    assert_eq!(e.error, "invalid_arguments");
}

#[test]
fn names_that_could_escape_are_refused_before_any_host_call() {
    let mut b = Bench::new();
    for args in [
        json!({"name": ".."}),
        json!({"name": "."}),
        json!({"name": "../../etc"}),
        json!({"name": "/etc/passwd"}),
        json!({"name": "a/b"}),
        json!({"name": "a\u{0}"}),
        json!({"name": "backend", "reference": "../SKILL.md"}),
        json!({"name": "backend", "script": ".."}),
        json!({"name": "backend", "script": "..\\x"}),
    ] {
        let out = b.call_with_host(NAME, args.clone(), &[]);
        assert!(out.host.is_none(), "{args}: asked the host");
        assert_eq!(out.result.unwrap_err().error, "invalid_name", "{args}");
    }
}

#[test]
fn host_failures_become_structured_refusals() {
    let mut b = Bench::new();
    let escapes = [HostReply::Failed(HostFailure::Escapes)];
    let e = b
        .call_with_host(NAME, json!({"name": "x"}), &escapes)
        .result
        .unwrap_err();
    assert_eq!(e.error, "path_escapes");
    let e = b
        .call_with_host(
            NAME,
            json!({}),
            &[HostReply::Failed(HostFailure::Unsupported)],
        )
        .result
        .unwrap_err();
    assert_eq!(e.error, "host_unavailable");
    let big = "x".repeat(MAX_SKILL_FILE_BYTES as usize + 1);
    let e = Tree::new(&[("templates/skills/big/SKILL.md", big.as_str())])
        .refused(json!({"name": "big"}));
    assert_eq!(e.error, "file_too_large");
}

fn entry(name: &str, kind: EntryKind, target: Option<EntryKind>) -> DirEntry {
    DirEntry {
        name: name.into(),
        kind,
        size: 0,
        target,
    }
}

#[test]
fn links_that_leave_the_skills_folder_are_skipped_in_the_index() {
    let mut b = Bench::new();
    let listing = HostReply::Listing {
        entries: vec![
            entry("inside", EntryKind::Symlink, Some(EntryKind::Dir)),
            entry("keys", EntryKind::Symlink, None),
            entry("keyfile", EntryKind::Symlink, Some(EntryKind::File)),
            entry("real", EntryKind::Dir, None),
        ],
    };
    let first = b.call_with_host(NAME, json!({}), std::slice::from_ref(&listing));
    assert_eq!(
        first.host,
        Some(read("templates/skills/inside/SKILL.md".into()))
    );
    let skill = HostReply::File {
        text: "# S\n".into(),
    };
    let done = b.call_with_host(NAME, json!({}), &[listing, skill.clone(), skill]);
    let answer: SkillAnswer = serde_json::from_value(done.result.unwrap()).unwrap();
    let names: Vec<&str> = answer
        .skills
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["inside", "real"]);
    // Every request is confined to the skills folder.
    assert!(
        matches!(first.host, Some(HostRequest::Read { within: Some(ref w), .. }) if w == SKILLS_DIR)
    );
}

#[test]
fn a_link_into_sdd_is_refused_by_name_and_left_out_of_a_folder() {
    let mut b = Bench::new();
    let e = b
        .call_with_host(
            NAME,
            json!({"name": "keys"}),
            &[HostReply::Failed(HostFailure::Private)],
        )
        .result
        .unwrap_err();
    assert_eq!(e.error, "private_path");
    assert!(e.message.contains(".sdd"), "{}", e.message);
    let refs = HostReply::Listing {
        entries: vec![
            entry("ok.md", EntryKind::File, None),
            entry("key.md", EntryKind::Symlink, None),
            entry("dir.md", EntryKind::Symlink, Some(EntryKind::Dir)),
        ],
    };
    let none = HostReply::Failed(HostFailure::NotFound);
    let replies = [
        HostReply::File {
            text: "# S\n".into(),
        },
        refs,
        none.clone(),
        HostReply::Failed(HostFailure::Private),
    ];
    let e = b
        .call_with_host(NAME, json!({"name": "s", "reference": "key.md"}), &replies)
        .result
        .unwrap_err();
    assert_eq!(e.error, "private_path");
    let done = b.call_with_host(NAME, json!({"name": "s"}), &replies[..3]);
    let answer: SkillAnswer = serde_json::from_value(done.result.unwrap()).unwrap();
    assert_eq!(answer.references.unwrap(), ["ok.md"]);
}
