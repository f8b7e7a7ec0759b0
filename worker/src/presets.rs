//! Agent presets: documented command templates for common agent CLIs. Each is just a shell
//! command line run with `sh -c` in the project directory; the task arrives as JSON on stdin
//! and in `BERNSTEIN_TASK_ID`, `BERNSTEIN_TASK_GOAL`, `BERNSTEIN_TASK_ROLE`,
//! `BERNSTEIN_RUN_ID`. `--exec` overrides any preset with any program. A preset's
//! command line can be overridden by setting `BERNSTEIN_AGENT_<NAME>` (e.g.
//! `BERNSTEIN_AGENT_CLAUDE`).
//!
//! This module holds text only; it never runs anything.

/// One preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub command: &'static str,
    pub note: &'static str,
}

/// The presets, by name.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "claude",
        command: r#"claude --print "$BERNSTEIN_TASK_GOAL""#,
        note: "Claude Code in non-interactive print mode; add --dangerously-skip-permissions only in a sandbox",
    },
    Preset {
        name: "codex",
        command: r#"codex exec "$BERNSTEIN_TASK_GOAL""#,
        note: "OpenAI Codex CLI, non-interactive exec",
    },
    Preset {
        name: "gemini",
        command: r#"gemini --prompt "$BERNSTEIN_TASK_GOAL""#,
        note: "Gemini CLI, one prompt",
    },
    Preset {
        name: "aider",
        command: r#"aider --yes --message "$BERNSTEIN_TASK_GOAL""#,
        note: "aider, one message, auto-confirm",
    },
];

impl Preset {
    /// The program the command line runs (its first word), which must be on `PATH`.
    pub fn program(&self) -> &'static str {
        self.command
            .split_whitespace()
            .next()
            .unwrap_or(self.command)
    }
}

/// The preset `name`, if there is one.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The environment variable that overrides preset `name`'s command line.
pub fn override_var(name: &str) -> String {
    format!("BERNSTEIN_AGENT_{}", name.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_reads_the_goal_from_the_environment() {
        for p in PRESETS {
            assert!(p.command.contains("$BERNSTEIN_TASK_GOAL"), "{}", p.name);
            assert_eq!(preset(p.name), Some(p));
        }
        assert!(preset("nope").is_none());
        assert_eq!(preset("claude").map(Preset::program), Some("claude"));
        assert_eq!(preset("aider").map(Preset::program), Some("aider"));
        // docs/WORKER.md's table documents the same command lines.
        let doc = include_str!("../../docs/WORKER.md");
        for p in PRESETS {
            let row = format!("| `{}` | `{}` |", p.name, p.command);
            assert!(doc.contains(&row), "docs/WORKER.md lacks {row}");
        }
        assert_eq!(override_var("claude"), "BERNSTEIN_AGENT_CLAUDE");
    }
}
