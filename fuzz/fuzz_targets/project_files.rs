//! Project files a user writes and may get wrong: a skill's `SKILL.md` front matter
//! (`skills::parse_header`) and a scenario definition (`scenarios::parse`). The first input
//! byte picks the parser for the rest (as text); every input also goes through both as a
//! skill file whose front matter is built from it.
//! Invariants: no panic; a skill header's hash is the file's, its description at most
//! `MAX_DESCRIPTION_CHARS` characters, no field spans lines, and a front matter written from a
//! name, a description and reference lists reads back as written; a definition that parses
//! round-trips (serialized and parsed again it is the same definition), has 1 to `MAX_TASKS`
//! tasks, and its id names its project file.
#![no_main]

use bernstein_core::digest::Digest;
use bernstein_domain::scenarios::{self, MAX_TASKS};
use bernstein_domain::skills::{self, MAX_DESCRIPTION_CHARS};
use libfuzzer_sys::fuzz_target;

fn skill(text: &str) {
    let h = skills::parse_header(text);
    assert_eq!(h.sha256, Digest::of(text.as_bytes()).to_string());
    assert!(h.description.chars().count() <= MAX_DESCRIPTION_CHARS);
    assert!(!h.description.contains('\n'));
    if let Some(name) = &h.name {
        assert!(!name.is_empty() && !name.contains('\n'));
    }
    for item in h.references.iter().chain(&h.scripts) {
        assert!(!item.contains('\n'));
    }
}

fn scenario(text: &str) {
    let Ok(s) = scenarios::parse(text) else {
        return;
    };
    assert!((1..=MAX_TASKS).contains(&s.tasks.len()));
    assert!(skills::check_name(&s.id).is_ok());
    let file = scenarios::project_file(&s.id);
    let name = file.rsplit('/').next().expect("a file name");
    assert_eq!(scenarios::id_of_file(name), Some(s.id.as_str()));
    let again = serde_json::to_string(&s).expect("a definition serializes");
    assert_eq!(scenarios::parse(&again).as_ref(), Ok(&s), "{again}");
}

/// A front matter written from `raw`: a name, a description and two reference lists.
fn written(raw: &str) {
    let plain = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_control() && !matches!(c, '"' | '\'' | '#'))
            .collect::<String>()
            .trim()
            .to_string()
    };
    let parts: Vec<&str> = raw.splitn(4, '|').collect();
    let name: String = parts[0]
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let name = format!("s{name}");
    let description = format!("d {}", plain(parts.get(1).copied().unwrap_or("")));
    let refs: Vec<String> = parts
        .get(2)
        .map(|r| r.split(',').map(plain).filter(|r| !r.is_empty()).collect())
        .unwrap_or_default();
    let body = parts.get(3).copied().unwrap_or("");
    let mut text = format!("---\nname: {name}\ndescription: \"{description}\"\nreferences:\n");
    for r in &refs {
        text.push_str(&format!("  - {r}\n"));
    }
    text.push_str("scripts:\n  - run.sh\n---\n");
    text.push_str(body);
    let h = skills::parse_header(&text);
    assert_eq!(h.name.as_deref(), Some(name.as_str()), "{text}");
    let want: String = description.chars().take(MAX_DESCRIPTION_CHARS).collect();
    assert_eq!(h.description, want, "{text}");
    assert_eq!(h.references, refs, "{text}");
    assert_eq!(h.scripts, ["run.sh"], "{text}");
    skill(&text);
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    if selector & 1 == 0 {
        scenario(&text);
    } else {
        skill(&text);
    }
    written(&text);
});
