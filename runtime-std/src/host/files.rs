//! Listings and reads under the project root. The path is screened for shape again (the core
//! did it already; this module trusts nothing), resolved with every symlink followed, and
//! refused unless the resolved path is still inside the resolved root.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use bernstein_core::protocol::host::{DirEntry, EntryKind, HostFailure, HostReply, check_relative};

/// The resolved `root/path`, or why it is refused.
fn resolve(root: &Path, path: &str) -> Result<PathBuf, HostFailure> {
    check_relative(path).map_err(|_| HostFailure::Escapes)?;
    let root = fs::canonicalize(root).map_err(io_failure)?;
    let target = fs::canonicalize(root.join(path)).map_err(io_failure)?;
    if target.starts_with(&root) {
        Ok(target)
    } else {
        Err(HostFailure::Escapes)
    }
}

fn io_failure(e: io::Error) -> HostFailure {
    match e.kind() {
        io::ErrorKind::NotFound => HostFailure::NotFound,
        _ => HostFailure::Io {
            detail: e.to_string(),
        },
    }
}

/// The entries of the directory `root/path`, sorted by name; names that are not UTF-8 are
/// left out (no request could name them).
pub(super) fn list(root: &Path, path: &str) -> HostReply {
    let dir = match resolve(root, path) {
        Ok(d) => d,
        Err(f) => return HostReply::Failed(f),
    };
    let read = match fs::read_dir(&dir) {
        Ok(r) => r,
        Err(e) => return HostReply::Failed(io_failure(e)),
    };
    let mut entries = Vec::new();
    for entry in read {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => return HostReply::Failed(io_failure(e)),
        };
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        // `DirEntry::metadata` does not follow symlinks: a link is reported as a link.
        let (kind, size) = match entry.metadata() {
            Ok(m) if m.file_type().is_symlink() => (EntryKind::Symlink, 0),
            Ok(m) if m.is_dir() => (EntryKind::Dir, 0),
            Ok(m) if m.is_file() => (EntryKind::File, m.len()),
            Ok(_) => (EntryKind::Other, 0),
            Err(e) => return HostReply::Failed(io_failure(e)),
        };
        entries.push(DirEntry { name, kind, size });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    HostReply::Listing { entries }
}

/// The UTF-8 text of the file `root/path`, when it is at most `max_bytes` long.
pub(super) fn read(root: &Path, path: &str, max_bytes: u64) -> HostReply {
    let file = match resolve(root, path) {
        Ok(f) => f,
        Err(f) => return HostReply::Failed(f),
    };
    let reply = (|| {
        let f = fs::File::open(&file).map_err(io_failure)?;
        let meta = f.metadata().map_err(io_failure)?;
        if !meta.is_file() {
            return Err(HostFailure::Io {
                detail: "not a regular file".into(),
            });
        }
        if meta.len() > max_bytes {
            return Err(HostFailure::TooLarge { size: meta.len() });
        }
        // Read at most one byte past the limit: the file may grow between stat and read.
        let mut bytes = Vec::new();
        f.take(max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(io_failure)?;
        if bytes.len() as u64 > max_bytes {
            return Err(HostFailure::TooLarge {
                size: bytes.len() as u64,
            });
        }
        String::from_utf8(bytes).map_err(|_| HostFailure::NotText)
    })();
    match reply {
        Ok(text) => HostReply::File { text },
        Err(f) => HostReply::Failed(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_dir::TestDir;

    #[test]
    fn reads_and_lists_inside_the_root_only() {
        let dir = TestDir::new("host-files");
        let root = dir.path();
        fs::create_dir_all(root.join("skills/a")).unwrap();
        fs::write(root.join("skills/a/SKILL.md"), "# A\n").unwrap();
        fs::write(root.join("bin.dat"), [0xff, 0xfe]).unwrap();
        let outside = TestDir::new("host-outside");
        fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("skills/leak"))
            .unwrap();

        assert_eq!(
            read(root, "skills/a/SKILL.md", 100),
            HostReply::File {
                text: "# A\n".into()
            }
        );
        assert_eq!(
            read(root, "skills/a/SKILL.md", 2),
            HostReply::Failed(HostFailure::TooLarge { size: 4 })
        );
        assert_eq!(
            read(root, "skills/leak", 100),
            HostReply::Failed(HostFailure::Escapes)
        );
        assert_eq!(
            read(root, "../x", 100),
            HostReply::Failed(HostFailure::Escapes)
        );
        assert_eq!(
            read(root, "nope", 100),
            HostReply::Failed(HostFailure::NotFound)
        );
        assert_eq!(
            read(root, "bin.dat", 100),
            HostReply::Failed(HostFailure::NotText)
        );
        let HostReply::Listing { entries } = list(root, "skills") else {
            panic!("a listing");
        };
        let seen: Vec<(&str, EntryKind)> =
            entries.iter().map(|e| (e.name.as_str(), e.kind)).collect();
        assert_eq!(seen, [("a", EntryKind::Dir), ("leak", EntryKind::Symlink)]);
    }
}
