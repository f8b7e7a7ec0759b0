//! Listings and reads under the project root: the one place a tool's request touches project
//! files. The path is screened for shape again (the core did it already; this module trusts
//! nothing), resolved with every symlink followed, and refused unless the resolved path is
//! inside the resolved root (or the request's `within` folder) and outside the resolved
//! `.sdd` (ledger and keys: no tool reads, hashes or lists them). Reads open regular files
//! only, without following a final link and without blocking on a FIFO, and refuse a file
//! with several names one of which is under `.sdd` (device and inode compared).

use std::fs;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use bernstein_core::protocol::host::{DirEntry, EntryKind, HostFailure, HostReply, check_relative};

/// The most entries [`Fence::is_under_sdd`] walks before it gives up and refuses.
const MAX_SDD_ENTRIES: usize = 100_000;

/// Where a request may land, every symlink resolved: inside `scope` (the root, or the
/// request's `within` folder) and outside the project's `.sdd`.
struct Fence {
    scope: PathBuf,
    sdd: PathBuf,
}

impl Fence {
    /// The fence of a request rooted at `root`, confined to `within` when given.
    fn new(root: &Path, within: Option<&str>) -> Result<Fence, HostFailure> {
        let root = fs::canonicalize(root).map_err(io_failure)?;
        // `.sdd` may itself be a symlink: what counts is where it resolves.
        let sdd = fs::canonicalize(root.join(".sdd")).unwrap_or_else(|_| root.join(".sdd"));
        let fence = Fence {
            scope: root.clone(),
            sdd,
        };
        let Some(within) = within else {
            return Ok(fence);
        };
        check_relative(within).map_err(|_| HostFailure::Escapes)?;
        let scope = fence.resolve(&root.join(within))?;
        Ok(Fence { scope, ..fence })
    }

    /// Why the resolved path `p` may not be served, if it may not.
    fn check(&self, p: &Path) -> Result<(), HostFailure> {
        if p.starts_with(&self.sdd) {
            Err(HostFailure::Private)
        } else if !p.starts_with(&self.scope) {
            Err(HostFailure::Escapes)
        } else {
            Ok(())
        }
    }

    /// `p` with every symlink resolved, when it exists and is inside the fence. When it does
    /// not exist, its deepest existing ancestor is still checked, so a missing file under a
    /// link into `.sdd` (or out of the scope) is refused, never reported absent.
    fn resolve(&self, p: &Path) -> Result<PathBuf, HostFailure> {
        match fs::canonicalize(p) {
            Ok(target) => self.check(&target).map(|()| target),
            Err(e) => {
                if let Some(ancestor) = p.ancestors().skip(1).find_map(|a| fs::canonicalize(a).ok())
                {
                    self.check(&ancestor)?;
                }
                Err(io_failure(e))
            }
        }
    }

    /// Whether the file of `meta` is also a file under `.sdd` (a hard link: same device and
    /// inode, any name, any depth). Symlinks under `.sdd` are not followed (where they lead is
    /// not `.sdd`'s). A `.sdd` too large to walk ([`MAX_SDD_ENTRIES`]) or unreadable in part
    /// counts as holding it: the check fails closed.
    fn is_under_sdd(&self, meta: &fs::Metadata) -> bool {
        let mut dirs = vec![self.sdd.clone()];
        let mut seen = 0usize;
        while let Some(dir) = dirs.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(_) => return true,
            };
            for entry in entries {
                seen += 1;
                let Ok(m) = entry.and_then(|e| {
                    let m = e.metadata()?;
                    if m.is_dir() {
                        dirs.push(e.path());
                    }
                    Ok(m)
                }) else {
                    return true;
                };
                if seen > MAX_SDD_ENTRIES || (m.dev() == meta.dev() && m.ino() == meta.ino()) {
                    return true;
                }
            }
        }
        false
    }

    /// What the symlink `link` resolves to, when that is a file or directory inside the fence.
    fn link_target(&self, link: &Path) -> Option<EntryKind> {
        let target = self.resolve(link).ok()?;
        let meta = fs::metadata(target).ok()?;
        if meta.is_file() {
            Some(EntryKind::File)
        } else if meta.is_dir() {
            Some(EntryKind::Dir)
        } else {
            None
        }
    }
}

/// The resolved `root/path` inside the fence of `within`, or why it is refused.
fn resolve(root: &Path, path: &str, within: Option<&str>) -> Result<(Fence, PathBuf), HostFailure> {
    check_relative(path).map_err(|_| HostFailure::Escapes)?;
    let fence = Fence::new(root, within)?;
    let target = fence.resolve(&root.join(path))?;
    Ok((fence, target))
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
pub(super) fn list(root: &Path, path: &str, within: Option<&str>) -> HostReply {
    let (fence, dir) = match resolve(root, path, within) {
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
        // `DirEntry::metadata` does not follow symlinks: a link is reported as a link, with
        // what it resolves to only when that is inside the fence.
        let (kind, size, target) = match entry.metadata() {
            Ok(m) if m.file_type().is_symlink() => {
                (EntryKind::Symlink, 0, fence.link_target(&entry.path()))
            }
            Ok(m) if m.is_dir() => (EntryKind::Dir, 0, None),
            Ok(m) if m.is_file() => (EntryKind::File, m.len(), None),
            Ok(_) => (EntryKind::Other, 0, None),
            Err(e) => return HostReply::Failed(io_failure(e)),
        };
        entries.push(DirEntry {
            name,
            kind,
            size,
            target,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    HostReply::Listing { entries }
}

/// The UTF-8 text of the regular file `root/path`, when it is at most `max_bytes` long.
pub(super) fn read(root: &Path, path: &str, max_bytes: u64, within: Option<&str>) -> HostReply {
    let (fence, file) = match resolve(root, path, within) {
        Ok(f) => f,
        Err(f) => return HostReply::Failed(f),
    };
    let reply = (|| {
        // No blocking on a FIFO, and no link swapped in since the path was resolved.
        let f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(
                (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32,
            )
            .open(&file)
            .map_err(io_failure)?;
        // What the kernel opened, when /proc can say: a directory swapped for a link between
        // the check and the open is caught here.
        if let Ok(opened) = fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())) {
            fence.check(&opened)?;
        }
        let meta = f.metadata().map_err(io_failure)?;
        if !meta.is_file() {
            return Err(HostFailure::Io {
                detail: "not a regular file".into(),
            });
        }
        // A file with one name was screened by its path; one with more may also be named
        // under `.sdd` (a hard link into the ledger or the keys).
        if meta.nlink() > 1 && fence.is_under_sdd(&meta) {
            return Err(HostFailure::Private);
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
    use bernstein_store_file::test_dir::TestDir;

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
            read(root, "skills/a/SKILL.md", 100, None),
            HostReply::File {
                text: "# A\n".into()
            }
        );
        assert_eq!(
            read(root, "skills/a/SKILL.md", 2, None),
            HostReply::Failed(HostFailure::TooLarge { size: 4 })
        );
        assert_eq!(
            read(root, "skills/leak", 100, None),
            HostReply::Failed(HostFailure::Escapes)
        );
        assert_eq!(
            read(root, "../x", 100, None),
            HostReply::Failed(HostFailure::Escapes)
        );
        assert_eq!(
            read(root, "nope", 100, None),
            HostReply::Failed(HostFailure::NotFound)
        );
        assert_eq!(
            read(root, "bin.dat", 100, None),
            HostReply::Failed(HostFailure::NotText)
        );
        let HostReply::Listing { entries } = list(root, "skills", None) else {
            panic!("a listing");
        };
        let seen: Vec<(&str, EntryKind)> =
            entries.iter().map(|e| (e.name.as_str(), e.kind)).collect();
        assert_eq!(seen, [("a", EntryKind::Dir), ("leak", EntryKind::Symlink)]);
    }
}

#[cfg(test)]
mod sdd_tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use bernstein_store_file::test_dir::TestDir;

    const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";

    /// A project with keys, a skills folder holding every kind of hostile link, and a file
    /// outside the project.
    fn project() -> (TestDir, TestDir) {
        let dir = TestDir::new("host-sdd");
        let root = dir.path();
        fs::create_dir_all(root.join(".sdd/keys")).unwrap();
        fs::write(root.join(".sdd/keys/audit.key"), KEY).unwrap();
        fs::write(root.join(".sdd/keys/signing.ed25519"), KEY).unwrap();
        fs::create_dir_all(root.join("templates/skills/good")).unwrap();
        fs::write(root.join("templates/skills/good/SKILL.md"), "# Good\n").unwrap();
        fs::write(root.join("README.md"), "readme\n").unwrap();
        let outside = TestDir::new("host-sdd-outside");
        fs::write(outside.path().join("secret"), "s\n").unwrap();
        let skills = root.join("templates/skills");
        symlink(
            root.join(".sdd/keys/signing.ed25519"),
            skills.join("keyfile"),
        )
        .unwrap();
        symlink(root.join(".sdd/keys"), skills.join("keys")).unwrap();
        symlink("../../.sdd", skills.join("sdd")).unwrap();
        symlink(outside.path(), skills.join("outside")).unwrap();
        symlink("../../README.md", skills.join("readme")).unwrap();
        symlink("good", skills.join("alias")).unwrap();
        symlink(root.join(".sdd/keys/audit.key"), root.join("audit-link")).unwrap();
        (dir, outside)
    }

    fn failed(reply: HostReply) -> HostFailure {
        match reply {
            HostReply::Failed(f) => f,
            other => panic!("served {other:?}"),
        }
    }

    #[test]
    fn nothing_under_sdd_is_read_or_listed_through_any_path() {
        let (dir, _outside) = project();
        let root = dir.path();
        for path in [
            ".sdd/keys/audit.key",
            ".sdd/keys/signing.ed25519",
            "audit-link",
            "templates/skills/keyfile",
            "templates/skills/keys/audit.key",
            "templates/skills/sdd/keys/audit.key",
            // Missing files under a link into .sdd are refused too, not reported absent.
            "templates/skills/keys/SKILL.md",
            "templates/skills/keyfile/SKILL.md",
            ".sdd/keys/nothing",
        ] {
            for within in [None, Some("templates/skills")] {
                assert_eq!(
                    failed(read(root, path, 1 << 20, within)),
                    HostFailure::Private,
                    "{path} within {within:?}"
                );
            }
        }
        for path in [
            ".sdd",
            ".sdd/keys",
            "templates/skills/keys",
            "templates/skills/sdd",
        ] {
            assert_eq!(
                failed(list(root, path, None)),
                HostFailure::Private,
                "{path}"
            );
        }
    }

    #[test]
    fn within_confines_reads_and_listed_link_targets_to_the_folder() {
        let (dir, _outside) = project();
        let root = dir.path();
        let skills = Some("templates/skills");
        assert_eq!(
            failed(read(root, "templates/skills/readme", 100, skills)),
            HostFailure::Escapes
        );
        assert_eq!(
            read(root, "templates/skills/readme", 100, None),
            HostReply::File {
                text: "readme\n".into()
            }
        );
        assert_eq!(
            failed(read(root, "templates/skills/outside/secret", 100, None)),
            HostFailure::Escapes
        );
        assert_eq!(
            read(root, "templates/skills/alias/SKILL.md", 100, skills),
            HostReply::File {
                text: "# Good\n".into()
            }
        );
        let HostReply::Listing { entries } = list(root, "templates/skills", skills) else {
            panic!("a listing");
        };
        let seen: Vec<(&str, EntryKind, Option<EntryKind>)> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind, e.target))
            .collect();
        use EntryKind::{Dir, Symlink};
        assert_eq!(
            seen,
            [
                ("alias", Symlink, Some(Dir)),
                ("good", Dir, None),
                ("keyfile", Symlink, None),
                ("keys", Symlink, None),
                ("outside", Symlink, None),
                ("readme", Symlink, None),
                ("sdd", Symlink, None),
            ]
        );
    }

    #[test]
    fn fifos_and_hard_links_to_keys_are_not_read() {
        let (dir, _outside) = project();
        let root = dir.path();
        let fifo = root.join("templates/skills/good/pipe");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        // Without O_NONBLOCK this open would hang until a writer came.
        assert!(matches!(
            failed(read(root, "templates/skills/good/pipe", 100, None)),
            HostFailure::Io { .. }
        ));
        fs::hard_link(
            root.join(".sdd/keys/audit.key"),
            root.join("templates/skills/good/hard"),
        )
        .unwrap();
        assert_eq!(
            failed(read(root, "templates/skills/good/hard", 100, None)),
            HostFailure::Private
        );
    }

    #[test]
    fn a_hard_link_to_any_file_under_sdd_is_not_read() {
        let (dir, _outside) = project();
        let root = dir.path();
        fs::create_dir_all(root.join(".sdd/ledger")).unwrap();
        fs::write(root.join(".sdd/ledger/ledger.jsonl"), "{\"seq\":1}\n").unwrap();
        fs::create_dir_all(root.join(".sdd/runtime/deep/er")).unwrap();
        fs::write(root.join(".sdd/runtime/deep/er/state.json"), "{}").unwrap();
        for (source, name) in [
            (".sdd/ledger/ledger.jsonl", "notes.md"),
            (".sdd/runtime/deep/er/state.json", "state.md"),
        ] {
            let link = format!("templates/skills/good/{name}");
            fs::hard_link(root.join(source), root.join(&link)).unwrap();
            assert_eq!(failed(read(root, &link, 1000, None)), HostFailure::Private);
        }
        // A file with two names, neither under `.sdd`, is served.
        fs::write(root.join("templates/skills/good/a.md"), "shared").unwrap();
        fs::hard_link(
            root.join("templates/skills/good/a.md"),
            root.join("templates/skills/good/b.md"),
        )
        .unwrap();
        assert!(matches!(
            read(root, "templates/skills/good/b.md", 100, None),
            HostReply::File { text } if text == "shared"
        ));
    }
}
