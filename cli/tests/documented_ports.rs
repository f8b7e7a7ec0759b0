//! The ports the documentation tells people to use never collide with each other or with a
//! default: a reader who starts what one page shows and then `bernstein dashboard` (or a second
//! instance) must not meet "address already in use". The defaults are read from the binary's
//! own help, so a changed default is checked against the documents as they stand.
//!
//! Checked in README.md and docs/*.md: an MCP server (`bernstein mcp … --port N`, or a URL
//! ending in `:N/mcp` or `:N/sse`) never uses the dashboard's default port, the dashboard never
//! uses MCP's, and the servers one code block starts in the background (`… &`), side by side,
//! are on distinct ports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Collisions still in documents this change could not edit, each `(file, line text)`. One
/// that no longer occurs fails the test, so that the exception goes with the fix.
const PENDING: &[(&str, &str)] = &[];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Mcp,
    Dashboard,
}

/// The `[default: N]` of `--port` in `bernstein ARGS --help`.
fn default_port(args: &[&str]) -> u16 {
    let out = Command::new(env!("CARGO_BIN_EXE_bernstein"))
        .args(args)
        .arg("--help")
        .output()
        .expect("bernstein runs");
    let help = String::from_utf8(out.stdout).expect("UTF-8 help");
    let at = help.find("--port <PORT>").expect("a --port option");
    let rest = &help[at..];
    let d = rest.find("[default: ").expect("--port has a default") + "[default: ".len();
    let end = rest[d..].find(']').expect("closing bracket") + d;
    rest[d..end].parse().expect("a port number")
}

fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The number after `--port` (or `--port=`) in `segment`, if any.
fn port_flag(segment: &str) -> Option<u16> {
    let at = segment.find("--port")? + "--port".len();
    let digits: String = segment[at..]
        .trim_start_matches(['=', ' '])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The servers a line starts: each `bernstein mcp` / `bernstein dashboard` command on it (up to
/// a comment, a table cell's end or an inline-code end), with its port (the default when none
/// is given; `None` for stdio, `mcp tools` and anything else that binds no port).
fn servers_on(line: &str, mcp_default: u16, dash_default: u16) -> Vec<(Kind, u16)> {
    let mut found = Vec::new();
    for (kind, word) in [
        (Kind::Mcp, "bernstein mcp"),
        (Kind::Dashboard, "bernstein dashboard"),
    ] {
        for (at, _) in line.match_indices(word) {
            let tail = &line[at + word.len()..];
            let end = tail.find(['#', '|', '`']).unwrap_or(tail.len());
            let segment = &tail[..end];
            let port = match kind {
                Kind::Mcp if segment.trim_start().starts_with("tools") => continue,
                Kind::Mcp if !segment.contains("--transport http") => port_flag(segment),
                Kind::Mcp => Some(port_flag(segment).unwrap_or(mcp_default)),
                Kind::Dashboard => Some(port_flag(segment).unwrap_or(dash_default)),
            };
            if let Some(p) = port {
                found.push((kind, p));
            }
        }
    }
    found
}

/// The ports of MCP endpoints a line gives as URLs (`…:N/mcp`, `…:N/sse`).
fn mcp_url_ports(line: &str) -> Vec<u16> {
    let mut ports = Vec::new();
    for suffix in ["/mcp", "/sse"] {
        for (at, _) in line.match_indices(suffix) {
            let before = &line[..at];
            let digits: String = before
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if !digits.is_empty() && before[..before.len() - digits.len()].ends_with(':') {
                ports.extend(digits.parse::<u16>().ok());
            }
        }
    }
    ports
}

#[test]
fn the_default_ports_differ() {
    let mcp = default_port(&["mcp"]);
    let dash = default_port(&["dashboard"]);
    assert_ne!(
        mcp, dash,
        "bernstein mcp and bernstein dashboard default to one port"
    );
}

#[test]
fn documented_ports_do_not_collide() {
    let mcp_default = default_port(&["mcp"]);
    let dash_default = default_port(&["dashboard"]);
    let mut collisions = Vec::new();
    let mut pending_seen = vec![false; PENDING.len()];
    for file in documents() {
        let name = file
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .unwrap_or(&file)
            .display()
            .to_string();
        let text = std::fs::read_to_string(&file).expect("a document");
        let mut block: Option<BTreeMap<u16, usize>> = None;
        for (n, line) in text.lines().enumerate() {
            let lineno = n + 1;
            if line.trim_start().starts_with("```") {
                block = match block {
                    Some(_) => None,
                    None => Some(BTreeMap::new()),
                };
                continue;
            }
            let mut problems = Vec::new();
            for (kind, port) in servers_on(line, mcp_default, dash_default) {
                match kind {
                    Kind::Mcp if port == dash_default => problems.push(format!(
                        "an MCP server on {port}, the default port of `bernstein dashboard`"
                    )),
                    Kind::Dashboard if port == mcp_default => problems.push(format!(
                        "the dashboard on {port}, the default port of `bernstein mcp --transport http`"
                    )),
                    _ => {}
                }
                let together = line.trim_end().ends_with('&');
                if let Some(ports) = block.as_mut().filter(|_| together && port != 0)
                    && let Some(first) = ports.insert(port, lineno)
                {
                    problems.push(format!(
                        "port {port} is already taken by line {first} of the same block"
                    ));
                }
            }
            for port in mcp_url_ports(line) {
                if port == dash_default {
                    problems.push(format!(
                        "an MCP endpoint on {port}, the default port of `bernstein dashboard`"
                    ));
                }
            }
            if problems.is_empty() {
                continue;
            }
            if let Some(i) = PENDING
                .iter()
                .position(|(f, l)| *f == name && line.contains(l))
            {
                pending_seen[i] = true;
                continue;
            }
            for p in problems {
                collisions.push(format!("{name}:{lineno}: {p}: {}", line.trim()));
            }
        }
    }
    assert!(
        collisions.is_empty(),
        "documented ports collide:\n{}",
        collisions.join("\n")
    );
    for (seen, (file, line)) in pending_seen.iter().zip(PENDING) {
        assert!(
            *seen,
            "{file} no longer has the pending collision {line:?}: remove it from PENDING"
        );
    }
}

#[test]
fn the_line_parser_finds_ports_and_defaults() {
    let servers = |l: &str| servers_on(l, 8053, 8054);
    assert_eq!(
        servers("bernstein mcp --transport http --port 8054 &"),
        [(Kind::Mcp, 8054)]
    );
    assert_eq!(
        servers("bernstein mcp --transport http --store postgres://x   # instance 1"),
        [(Kind::Mcp, 8053)]
    );
    assert_eq!(servers("| `bernstein mcp tools [--tier T]` | …"), []);
    assert_eq!(
        servers("claude mcp add bernstein -- bernstein mcp --workdir /p"),
        []
    );
    assert_eq!(
        servers("bernstein dashboard --workdir ~/proj            # http://127.0.0.1:8054/"),
        [(Kind::Dashboard, 8054)]
    );
    assert_eq!(
        mcp_url_ports("point the host at `http://127.0.0.1:8053/mcp`; … `http://h:9/sse`"),
        [8053, 9]
    );
}
