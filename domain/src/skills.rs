//! Skills as files: where a project keeps them, which names may address them, and what a
//! `SKILL.md` says about itself (its front matter).
//!
//! Layout (the same as the Python project's): `templates/skills/<name>/SKILL.md`, with optional
//! `references/` and `scripts/` folders beside it. `SKILL.md` may open with a front matter block
//! between two `---` lines holding `name:`, `description:` and the lists `references:` and
//! `scripts:` (`- item` lines); without one, the description is the first heading or line.
//!
//! Names (a skill, a reference, a script) are screened here before any host request is built:
//! one path segment of ASCII letters, digits and `._-`, not `.` or `..`, at most
//! [`MAX_NAME_BYTES`]; the runtime still refuses anything that resolves outside the project
//! root. This module must never perform IO, and never execute or interpret a script.

use bernstein_core::digest::Digest;

/// The skills folder, relative to the project root.
pub const SKILLS_DIR: &str = "templates/skills";
/// The file that defines a skill, inside its folder.
pub const SKILL_FILE: &str = "SKILL.md";
/// The folder of a skill's reference documents.
pub const REFERENCES_DIR: &str = "references";
/// The folder of a skill's scripts (returned as text, never run).
pub const SCRIPTS_DIR: &str = "scripts";
/// The longest name of a skill, reference or script (bytes).
pub const MAX_NAME_BYTES: usize = 128;
/// The longest skill file, reference or script returned (bytes).
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;
/// The longest description kept in an index entry (characters).
pub const MAX_DESCRIPTION_CHARS: usize = 300;

/// Why a name was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("is empty")]
    Empty,
    #[error("is longer than {MAX_NAME_BYTES} bytes")]
    TooLong,
    #[error("is `.` or `..`")]
    Dots,
    #[error("may hold only letters, digits and ._- (one path segment)")]
    Characters,
}

/// Screens a skill, reference or script name: one safe path segment.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong);
    }
    if name == "." || name == ".." {
        return Err(NameError::Dots);
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(NameError::Characters);
    }
    Ok(())
}

/// The path of a skill's `SKILL.md`, relative to the project root (`name` already screened).
pub fn skill_file(name: &str) -> String {
    format!("{SKILLS_DIR}/{name}/{SKILL_FILE}")
}

/// The path of one of a skill's folders (`references`, `scripts`).
pub fn skill_folder(name: &str, folder: &str) -> String {
    format!("{SKILLS_DIR}/{name}/{folder}")
}

/// What a `SKILL.md` says about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillHeader {
    pub name: Option<String>,
    pub description: String,
    pub references: Vec<String>,
    pub scripts: Vec<String>,
    /// `sha256:` + hex SHA-256 of the file's bytes.
    pub sha256: String,
}

/// Reads the front matter (or, without one, the first heading) of a `SKILL.md`.
pub fn parse_header(text: &str) -> SkillHeader {
    let mut header = SkillHeader {
        sha256: Digest::of(text.as_bytes()).to_string(),
        ..SkillHeader::default()
    };
    let (front, body) = split_front_matter(text);
    let mut list: Option<&str> = None;
    for line in front.lines() {
        let trimmed = line.trim();
        if let Some(item) = trimmed.strip_prefix("- ") {
            let item = unquote(item).to_string();
            match list {
                Some("references") => header.references.push(item),
                Some("scripts") => header.scripts.push(item),
                _ => {}
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let value = unquote(value.trim());
        list = None;
        match key.trim() {
            "name" if !value.is_empty() => header.name = Some(value.to_string()),
            "description" => header.description = value.to_string(),
            "references" if value.is_empty() => list = Some("references"),
            "scripts" if value.is_empty() => list = Some("scripts"),
            _ => {}
        }
    }
    if header.description.is_empty() {
        header.description = body
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .unwrap_or_default()
            .to_string();
    }
    header.description = header
        .description
        .chars()
        .take(MAX_DESCRIPTION_CHARS)
        .collect();
    header
}

/// (front matter, body): the front matter is empty when the file does not open with `---`.
fn split_front_matter(text: &str) -> (&str, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return ("", text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (&rest[..offset], &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    ("", text)
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_safe_segments() {
        for ok in [
            "backend",
            "ci-fixer",
            "python_conventions.md",
            "lint.sh",
            "a",
        ] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name("."), Err(NameError::Dots));
        assert_eq!(check_name(".."), Err(NameError::Dots));
        for bad in ["a/b", "../x", "a\\b", "a\0", "/etc", "a b", "ü", "a:b"] {
            assert_eq!(check_name(bad), Err(NameError::Characters), "{bad:?}");
        }
        assert_eq!(check_name(&"a".repeat(129)), Err(NameError::TooLong));
        assert_eq!(check_name(&"a".repeat(128)), Ok(()));
    }

    #[test]
    fn front_matter_gives_name_description_and_files() {
        let text = "---\nname: backend\ndescription: \"Server code, APIs.\"\ntrigger_keywords:\n  - python\nreferences:\n  - conventions.md\n  - 'errors.md'\nscripts:\n  - lint.sh\n---\n# Backend\n\nBody.\n";
        let h = parse_header(text);
        assert_eq!(h.name.as_deref(), Some("backend"));
        assert_eq!(h.description, "Server code, APIs.");
        assert_eq!(h.references, ["conventions.md", "errors.md"]);
        assert_eq!(h.scripts, ["lint.sh"]);
        assert_eq!(h.sha256, Digest::of(text.as_bytes()).to_string());
    }

    #[test]
    fn without_front_matter_the_first_heading_describes() {
        let h = parse_header("\n# Review checklist\n\nText.\n");
        assert_eq!(h.name, None);
        assert_eq!(h.description, "Review checklist");
        assert!(h.references.is_empty());
        // An unterminated front matter is body text.
        let h = parse_header("---\nname: x\n");
        assert_eq!(h.name, None);
        assert_eq!(h.description, "---");
        let long = format!("# {}", "x".repeat(1000));
        assert_eq!(
            parse_header(&long).description.chars().count(),
            MAX_DESCRIPTION_CHARS
        );
    }
}
