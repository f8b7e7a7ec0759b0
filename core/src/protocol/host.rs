//! Host operations: the few things a tool needs from the machine it runs on (a listing or a
//! file under the project, the shutdown signal), asked for as values and answered as values.
//!
//! The core never touches the filesystem. A handler that needs the host returns
//! [`ToolOutput::host`](super::registry::ToolOutput) with a [`HostRequest`]; the engine hands it
//! out in [`Outcome::host`](super::Outcome) with nothing appended and no response; the runtime
//! performs it (confined to the project root, see `effects/src/host/`) and handles the same
//! message again with every reply so far, in order, through
//! [`Server::handle_round`](super::Server::handle_round). A handler therefore sees its
//! earlier answers in [`ToolContext::host`](super::registry::ToolContext) and either asks for
//! the next thing or answers. Replaying the message with the same replies gives the same answer.
//!
//! Paths in requests are relative to the project root (the directory holding `.sdd`), use `/`
//! as separator and never contain `..`, a NUL or a leading `/`: [`check_relative`] screens them
//! before they leave the core. The runtime resolves every symlink of the path and refuses it
//! when it lands outside the root (or the request's `within` folder), [`HostFailure::Escapes`],
//! or anywhere inside `.sdd`, [`HostFailure::Private`]. This module must never perform IO.

use serde::{Deserialize, Serialize};

/// How many host round trips one call may make before the engine refuses it.
pub const MAX_HOST_ROUNDS: usize = 16;

/// The longest file a host read returns (bytes). Larger files answer [`HostFailure::TooLarge`].
pub const MAX_HOST_READ_BYTES: u64 = 1 << 20;

/// Something a tool asks the runtime to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum HostRequest {
    /// The entries of a directory under the project root, sorted by name.
    List {
        path: String,
        /// When set, a project-relative folder the resolved path must stay inside (a symlink
        /// out of it is refused, and a listed link's `target` says only what stays inside).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        within: Option<String>,
    },
    /// A regular file under the project root, at most `max_bytes` long.
    Read {
        path: String,
        max_bytes: u64,
        /// As for `List`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        within: Option<String>,
    },
    /// Write `<workdir>/.sdd/runtime/signals/SHUTDOWN` behind the containment barrier.
    /// `workdir` is the caller's value, already screened for shape; the runtime resolves it.
    SignalShutdown { workdir: String, body: String },
}

/// The kind of a directory entry (a symlink is reported as such, never followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// One entry of a [`HostReply::Listing`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    pub name: String,
    pub kind: EntryKind,
    pub size: u64,
    /// For a symlink: what it resolves to (`file` or `dir`) when that is a regular file or a
    /// directory inside the request's folder (`within`, else the project) and outside `.sdd`;
    /// absent when it dangles, leaves that folder, enters `.sdd` or is anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<EntryKind>,
}

/// Why a host request was not carried out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "failure", rename_all = "snake_case")]
pub enum HostFailure {
    /// Nothing exists at the path.
    NotFound,
    /// The file is longer than the request allowed.
    TooLarge { size: u64 },
    /// The path resolves outside the root (or the request's `within` folder), through a
    /// symlink or otherwise.
    Escapes,
    /// The path resolves into the project's `.sdd` directory (ledger, keys), which no tool
    /// reads, hashes or lists.
    Private,
    /// The file is not UTF-8 text.
    NotText,
    /// The shutdown barrier refused (`reason` is a stable code, `detail` says what it saw).
    Refused { reason: String, detail: String },
    /// This runtime does not serve host requests (e.g. inside a batch).
    Unsupported,
    /// Any other IO error, described.
    Io { detail: String },
}

/// The runtime's answer to one [`HostRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum HostReply {
    Listing {
        entries: Vec<DirEntry>,
    },
    File {
        text: String,
    },
    /// The signal file was written; `path` is the resolved absolute path.
    Signalled {
        path: String,
    },
    Failed(HostFailure),
}

/// Why a relative path was refused before any host call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    #[error("the path is empty")]
    Empty,
    #[error("the path is longer than {0} bytes")]
    TooLong(usize),
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("the path is absolute; give it relative to the project root")]
    Absolute,
    #[error("the path contains a `..` or `.` segment, an empty segment or a backslash")]
    Traversal,
}

/// The longest path (bytes) a host request may carry: Linux's `PATH_MAX` less the NUL.
pub const MAX_PATH_BYTES: usize = 4095;

/// Screens a relative path for shape, without any filesystem call: non-empty, at most
/// [`MAX_PATH_BYTES`], no NUL, not absolute, no `.`/`..`/empty segment, no backslash.
pub fn check_relative(path: &str) -> Result<(), PathRefusal> {
    if path.is_empty() {
        return Err(PathRefusal::Empty);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathRefusal::TooLong(MAX_PATH_BYTES));
    }
    if path.contains('\0') {
        return Err(PathRefusal::Nul);
    }
    if path.starts_with('/') {
        return Err(PathRefusal::Absolute);
    }
    if path.contains('\\')
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(PathRefusal::Traversal);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_screened_for_shape() {
        assert!(check_relative("skills/review/SKILL.md").is_ok());
        assert_eq!(check_relative(""), Err(PathRefusal::Empty));
        assert_eq!(check_relative("/etc/passwd"), Err(PathRefusal::Absolute));
        assert_eq!(check_relative("a/../b"), Err(PathRefusal::Traversal));
        assert_eq!(check_relative("a//b"), Err(PathRefusal::Traversal));
        assert_eq!(check_relative("./a"), Err(PathRefusal::Traversal));
        assert_eq!(check_relative("a\\b"), Err(PathRefusal::Traversal));
        assert_eq!(check_relative("a\0b"), Err(PathRefusal::Nul));
        let long = "a".repeat(MAX_PATH_BYTES + 1);
        assert_eq!(
            check_relative(&long),
            Err(PathRefusal::TooLong(MAX_PATH_BYTES))
        );
    }

    #[test]
    fn requests_and_replies_round_trip_as_json() {
        let r = HostRequest::Read {
            path: "a".into(),
            max_bytes: 3,
            within: None,
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["op"], "read");
        assert!(v.get("within").is_none());
        assert_eq!(serde_json::from_value::<HostRequest>(v).unwrap(), r);
        let f = HostReply::Failed(HostFailure::TooLarge { size: 9 });
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(serde_json::from_value::<HostReply>(v).unwrap(), f);
    }
}
