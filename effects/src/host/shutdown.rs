//! The shutdown signal behind its containment barrier: `<workdir>/.sdd/runtime/signals/SHUTDOWN`
//! is written only when `workdir` resolves to an existing project (it already holds `.sdd`)
//! and no entry on the way (`.sdd`, `runtime`, `signals`, `SHUTDOWN`) is a symlink that points
//! outside that resolved root. Every check runs before anything is created, so a refused call
//! creates nothing; the file is written to a temporary name and renamed into place, which
//! replaces a `SHUTDOWN` entry without following it. Workers poll for this file.
//!
//! Hardening beyond the walk: a `workdir` with a `..` segment is refused by shape (as the core
//! does), a `SHUTDOWN` entry that is a directory is refused, the whole chain is checked again
//! after any missing directory was created (a swap in between is caught before the write), and
//! every call writes through its own temporary name, so concurrent calls never disturb each
//! other. Nothing here follows a symlink out of the project.

use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bernstein_core::protocol::host::{HostFailure, MAX_PATH_BYTES};

/// The signal file, relative to the project root: where the core's
/// `HostRequest::SignalShutdown` writes (the tool that asks names the same path; a test holds
/// them together).
pub const SIGNAL_FILE: &str = ".sdd/runtime/signals/SHUTDOWN";

/// Why the barrier refused, as the stable code `HostFailure::Refused` carries (the domain
/// reads each as its refusal of the same name; a test holds them together).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    InvalidWorkdir,
    WorkdirNotFound,
    NotAProject,
    SymlinkEscape,
    NotADirectory,
    NotAFile,
    IoError,
}

impl Reason {
    pub const ALL: [Reason; 7] = [
        Reason::InvalidWorkdir,
        Reason::WorkdirNotFound,
        Reason::NotAProject,
        Reason::SymlinkEscape,
        Reason::NotADirectory,
        Reason::NotAFile,
        Reason::IoError,
    ];

    /// The code on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InvalidWorkdir => "invalid_workdir",
            Reason::WorkdirNotFound => "workdir_not_found",
            Reason::NotAProject => "not_a_project",
            Reason::SymlinkEscape => "symlink_escape",
            Reason::NotADirectory => "not_a_directory",
            Reason::NotAFile => "not_a_file",
            Reason::IoError => "io_error",
        }
    }
}

/// Why the barrier refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// One of the domain's codes: `invalid_workdir`, `workdir_not_found`, `not_a_project`,
    /// `symlink_escape`, `not_a_directory`, `not_a_file`, `io_error`.
    pub reason: Reason,
    pub detail: String,
}

impl From<Refusal> for HostFailure {
    fn from(r: Refusal) -> HostFailure {
        HostFailure::Refused {
            reason: r.reason.as_str().to_string(),
            detail: r.detail,
        }
    }
}

fn refuse(reason: Reason, detail: impl Into<String>) -> Refusal {
    Refusal {
        reason,
        detail: detail.into(),
    }
}

/// Writes the signal file of the project at `workdir` (relative paths resolve against
/// `base`, the server's project directory) with `body`; returns its path.
pub fn signal_shutdown(base: &Path, workdir: &str, body: &str) -> Result<PathBuf, Refusal> {
    // Shape first, with no filesystem call.
    if workdir.is_empty() || workdir.len() > MAX_PATH_BYTES || workdir.contains('\0') {
        return Err(refuse(
            Reason::InvalidWorkdir,
            "workdir must be a non-empty path without NUL bytes, at most 4095 bytes",
        ));
    }
    let given = Path::new(workdir);
    if given.components().any(|c| c == Component::ParentDir) {
        return Err(refuse(
            Reason::InvalidWorkdir,
            "workdir must not contain a `..` segment",
        ));
    }
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        base.join(given)
    };
    let root = fs::canonicalize(&joined).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            refuse(Reason::WorkdirNotFound, format!("{workdir} does not exist"))
        }
        _ => refuse(Reason::IoError, format!("{workdir}: {e}")),
    })?;
    if !root.is_dir() {
        return Err(refuse(
            Reason::NotADirectory,
            format!("{} is not a directory", root.display()),
        ));
    }
    let missing_from = check_chain(&root)?;
    // Every check passed: create what is missing, one level at a time, then check again (an
    // entry swapped for a symlink in between is refused before anything is written).
    if let Some(first) = missing_from {
        let mut dir = root.clone();
        for (i, part) in CHAIN[..3].iter().enumerate() {
            dir.push(part);
            if i >= first {
                match fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => {
                        return Err(refuse(Reason::IoError, format!("{}: {e}", dir.display())));
                    }
                }
            }
        }
        if let Some(i) = check_chain(&root)?.filter(|i| *i < 3) {
            return Err(refuse(
                Reason::IoError,
                format!("{} vanished while it was created", CHAIN[i]),
            ));
        }
    }
    let signals = root.join(".sdd/runtime/signals");
    // The directory may have been swapped since the checks: resolve it once more.
    let resolved = fs::canonicalize(&signals)
        .map_err(|e| refuse(Reason::IoError, format!("{}: {e}", signals.display())))?;
    if !resolved.starts_with(&root) {
        return Err(refuse(
            Reason::SymlinkEscape,
            format!("{} resolves outside {}", signals.display(), root.display()),
        ));
    }
    write_atomically(&resolved, body)
        .map_err(|e| refuse(Reason::IoError, format!("{}: {e}", resolved.display())))
}

/// The entries from the project root to the signal file.
const CHAIN: [&str; 4] = [".sdd", "runtime", "signals", "SHUTDOWN"];

/// Walks `.sdd` → `runtime` → `signals` → `SHUTDOWN` under the resolved `root`, checking every
/// entry that exists; answers the index of the first missing one (`None`: all exist).
fn check_chain(root: &Path) -> Result<Option<usize>, Refusal> {
    let mut at = root.to_path_buf();
    for (i, part) in CHAIN.iter().enumerate() {
        at.push(part);
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if i == 0 {
                    return Err(refuse(
                        Reason::NotAProject,
                        format!("{} holds no .sdd directory", root.display()),
                    ));
                }
                return Ok(Some(i));
            }
            Err(e) => return Err(refuse(Reason::IoError, format!("{}: {e}", at.display()))),
        };
        if meta.file_type().is_symlink() {
            let target = link_target(&at)
                .map_err(|e| refuse(Reason::IoError, format!("{}: {e}", at.display())))?;
            if !target.starts_with(root) {
                return Err(refuse(
                    Reason::SymlinkEscape,
                    format!(
                        "{} is a symlink to {}, outside {}",
                        at.display(),
                        target.display(),
                        root.display()
                    ),
                ));
            }
        }
        let is_last = i + 1 == CHAIN.len();
        if !is_last && !at.is_dir() {
            return Err(refuse(
                Reason::NotADirectory,
                format!("{} is not a directory", at.display()),
            ));
        }
        if is_last && at.is_dir() {
            return Err(refuse(
                Reason::NotAFile,
                format!("{} is a directory, not a signal file", at.display()),
            ));
        }
    }
    Ok(None)
}

/// Where the symlink at `link` points, resolved when the target exists and normalised
/// lexically (against the link's directory) when it dangles.
fn link_target(link: &Path) -> io::Result<PathBuf> {
    if let Ok(t) = fs::canonicalize(link) {
        return Ok(t);
    }
    let raw = fs::read_link(link)?;
    let parent = link.parent().unwrap_or(Path::new("/"));
    let joined = if raw.is_absolute() {
        raw
    } else {
        parent.join(raw)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Writes `signals/SHUTDOWN` through a fresh temporary file and a rename.
fn write_atomically(signals: &Path, body: &str) -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = signals.join(format!(".SHUTDOWN.tmp-{}-{n}", std::process::id()));
    // A leftover entry of that name (even a symlink) is removed, never followed.
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    f.write_all(body.as_bytes())?;
    f.sync_all()?;
    let target = signals.join("SHUTDOWN");
    fs::rename(&tmp, &target)?;
    fs::File::open(signals)?.sync_all()?;
    Ok(target)
}

#[cfg(test)]
mod tests;
