//! The project's secret keys, each 32 random bytes stored as 64 lowercase hex digits and a
//! newline, mode 0600, created on first use:
//! - `.sdd/keys/audit.key`: the HMAC-SHA256 key of the audit and mailbox chains;
//! - `.sdd/keys/signing.ed25519`: the Ed25519 seed (RFC 8032 secret key) that signs claim
//!   receipts and mailbox entries. Its public half travels inside what it signs.
//!
//! Creation is atomic and never widens permissions after the fact: the key is written to a
//! temp file created with mode 0600 (`create_new`) and locked, synced, then hard-linked into
//! place, which fails if another process got there first (its key is then used); loading or
//! creating a key removes the temp files of writers that died mid-way ([`crate::temp_files`]).
//! A key file that group or
//! others may access, that is not a regular file, that another uid owns, or that is
//! unreadable is refused with an error that says how to fix it; so is a `.sdd/keys` that is
//! not a directory of mode 0700 owned by this process's effective uid (a symlink included).
//! The directory is created 0700. The key's bytes are never printed or put in an error.

use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::layout::{AUDIT_KEY_FILE, Layout, create_private_dir_all, sync_dir};
use crate::temp_files;

/// Length of the audit key in bytes.
pub const AUDIT_KEY_LEN: usize = 32;
/// Length of the Ed25519 signing seed in bytes.
pub const SIGNING_SEED_LEN: usize = 32;
/// File name of the signing seed in `.sdd/keys/`.
pub const SIGNING_KEY_FILE: &str = "signing.ed25519";

/// The path of the signing seed of the `.sdd` directory `sdd`.
pub fn signing_key_file(sdd: &Path) -> PathBuf {
    Layout::at(sdd).keys_dir().join(SIGNING_KEY_FILE)
}

/// Why the audit key cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{} is accessible by group or others (mode {mode:03o}); run `chmod 600 {}`", path.display(), path.display())]
    TooOpen { path: PathBuf, mode: u32 },
    #[error("{} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("{} is accessible by group or others (mode {mode:03o}); run `chmod 700 {}`", path.display(), path.display())]
    DirTooOpen { path: PathBuf, mode: u32 },
    #[error("{} is not a directory (a symlink is not accepted); remove it and let the server create it", path.display())]
    NotADir { path: PathBuf },
    #[error("{} is owned by uid {owner}, not by this server's uid {euid}; run `chown {euid} {}` (or start the server as its owner)", path.display(), path.display())]
    WrongOwner {
        path: PathBuf,
        owner: u32,
        euid: u32,
    },
    #[error("{} does not hold a key of 64 lowercase hex digits", path.display())]
    Malformed { path: PathBuf },
    #[error("no random bytes for a new key: {0}")]
    Random(String),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> KeyError + '_ {
    move |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Loads the audit key of the `.sdd` directory `sdd`, creating it (and the directories) if it
/// does not exist yet.
pub fn load_or_create_audit_key(sdd: &Path) -> Result<Vec<u8>, KeyError> {
    load_or_create_secret(sdd, &Layout::at(sdd).audit_key_file(), AUDIT_KEY_LEN)
}

/// Loads the audit key if the file exists (`None` if it does not); refuses an unsafe file.
pub fn load_audit_key(sdd: &Path) -> Result<Option<Vec<u8>>, KeyError> {
    load_secret(&Layout::at(sdd).audit_key_file(), AUDIT_KEY_LEN)
}

/// Loads the Ed25519 signing seed of the `.sdd` directory `sdd`, creating it (and the
/// directories) if it does not exist yet.
pub fn load_or_create_signing_key(sdd: &Path) -> Result<[u8; SIGNING_SEED_LEN], KeyError> {
    let path = signing_key_file(sdd);
    let bytes = load_or_create_secret(sdd, &path, SIGNING_SEED_LEN)?;
    bytes.try_into().map_err(|_| KeyError::Malformed { path })
}

/// Loads the signing seed if the file exists (`None` if it does not); refuses an unsafe file.
pub fn load_signing_key(sdd: &Path) -> Result<Option<[u8; SIGNING_SEED_LEN]>, KeyError> {
    let path = signing_key_file(sdd);
    match load_secret(&path, SIGNING_SEED_LEN)? {
        None => Ok(None),
        Some(bytes) => bytes
            .try_into()
            .map(Some)
            .map_err(|_| KeyError::Malformed { path }),
    }
}

/// Loads the secret at `path`, or creates it with `len` random bytes if it does not exist.
fn load_or_create_secret(sdd: &Path, path: &Path, len: usize) -> Result<Vec<u8>, KeyError> {
    let dir = Layout::at(sdd).keys_dir();
    if let Some(key) = load_secret(path, len)? {
        // `load_secret` checked the directory.
        sweep_key_temps(&dir);
        return Ok(key);
    }
    create_private_dir_all(&dir).map_err(io_err(&dir))?;
    check_keys_dir(&dir)?;
    sweep_key_temps(&dir);
    let mut key = vec![0u8; len];
    getrandom::fill(&mut key).map_err(|e| KeyError::Random(e.to_string()))?;
    let mut text = hex::encode(&key);
    text.push('\n');

    let name = path
        .file_name()
        .map_or_else(|| "key".into(), |n| n.to_string_lossy().into_owned());
    let publish = || {
        let (mut f, tmp) = temp_files::create_locked(&dir, &name)?;
        let published = (|| {
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::hard_link(&tmp, path)
        })();
        let _ = std::fs::remove_file(&tmp);
        published
    };
    // A sweep by another process can take a temp file for a dead writer's in the moment
    // between its creation and its lock (`temp_files`): the link then finds it gone.
    let mut published = publish();
    for _ in 0..3 {
        match &published {
            Err(e) if e.kind() == io::ErrorKind::NotFound => published = publish(),
            _ => break,
        }
    }
    match published {
        Ok(()) => {
            sync_dir(&dir).map_err(io_err(&dir))?;
            Ok(key)
        }
        // Another process created the key first: use theirs.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            load_secret(path, len)?.ok_or_else(|| KeyError::Io {
                path: path.to_path_buf(),
                source: e,
            })
        }
        Err(e) => Err(KeyError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// Removes the temp files of key writers that died before they removed them (secret bytes,
/// mode 0600: a key that was never published, or a second link to the published one). Only
/// reported: a key can still be created beside them.
fn sweep_key_temps(dir: &Path) {
    match temp_files::sweep_stale(dir, &[AUDIT_KEY_FILE, SIGNING_KEY_FILE]) {
        Ok(0) => {}
        Ok(n) => bernstein_os::log_line!(
            "bernstein: removed {n} key temp file(s) left in {} by a writer stopped mid-write",
            dir.display()
        ),
        Err(e) => bernstein_os::log_line!(
            "bernstein: cannot look for stale key temp files in {}: {e}",
            dir.display()
        ),
    }
}

/// Refuses a keys directory that is not a real directory of mode 0700 (no group or other bit)
/// owned by this process's effective uid: anyone else who can list, enter or write it could
/// read or replace a key.
fn check_keys_dir(dir: &Path) -> Result<(), KeyError> {
    let path = dir.to_path_buf();
    let meta = std::fs::symlink_metadata(&path).map_err(io_err(dir))?;
    if !meta.file_type().is_dir() {
        return Err(KeyError::NotADir { path });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyError::DirTooOpen { path, mode });
    }
    check_owner(&path, &meta)
}

/// Refuses a key file or directory another uid owns.
fn check_owner(path: &Path, meta: &std::fs::Metadata) -> Result<(), KeyError> {
    let euid = rustix::process::geteuid().as_raw();
    if meta.uid() != euid {
        return Err(KeyError::WrongOwner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            euid,
        });
    }
    Ok(())
}

/// Loads a `len`-byte secret stored as hex if the file exists; refuses an unsafe file.
fn load_secret(path: &Path, len: usize) -> Result<Option<Vec<u8>>, KeyError> {
    if let Some(dir) = path.parent() {
        match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            _ => check_keys_dir(dir)?,
        }
    }
    let path = path.to_path_buf();
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(KeyError::Io { path, source: e }),
    };
    if !meta.file_type().is_file() {
        return Err(KeyError::NotAFile { path });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::TooOpen { path, mode });
    }
    check_owner(&path, &meta)?;
    let text = std::fs::read(&path).map_err(io_err(&path))?;
    let digits = text.strip_suffix(b"\n").unwrap_or(&text);
    if digits.len() != 2 * len
        || digits
            .iter()
            .any(|b| !matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(KeyError::Malformed { path });
    }
    let key = hex::decode(digits).map_err(|_| KeyError::Malformed { path: path.clone() })?;
    Ok(Some(key))
}

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

    use super::*;
    use crate::test_dir::TestDir;

    #[test]
    fn created_once_with_mode_0600_and_reloaded() {
        let tmp = TestDir::new("keys");
        let sdd = tmp.path().join(".sdd");
        assert!(load_audit_key(&sdd).unwrap().is_none());
        let key = load_or_create_audit_key(&sdd).unwrap();
        assert_eq!(key.len(), AUDIT_KEY_LEN);
        let path = Layout::at(&sdd).audit_key_file();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(sdd.join("keys"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{}\n", hex::encode(&key)));
        assert_eq!(load_or_create_audit_key(&sdd).unwrap(), key);
        // No temp files are left behind.
        assert_eq!(std::fs::read_dir(sdd.join("keys")).unwrap().count(), 1);
    }

    /// What a writer killed mid-way leaves (a temp file nobody locks) is removed when a key is
    /// loaded or created; a temp file a live writer holds, a link's target and other files
    /// are not touched.
    #[test]
    fn temp_files_of_dead_key_writers_are_swept() {
        let tmp = TestDir::new("keys-sweep");
        let sdd = tmp.path().join(".sdd");
        let key = load_or_create_audit_key(&sdd).unwrap();
        let dir = Layout::at(&sdd).keys_dir();
        let stale = |name: &str| {
            let path = dir.join(name);
            std::fs::write(&path, b"0123\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        };
        stale("audit.key.tmp.4242.0");
        stale("signing.ed25519.tmp.4242.1");
        let (_live, live_path) = temp_files::create_locked(&dir, AUDIT_KEY_FILE).unwrap();
        let target = tmp.path().join("precious.txt");
        std::fs::write(&target, b"keep me").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("audit.key.tmp.link")).unwrap();
        stale("notes.tmp.1");

        // Loading an existing key sweeps.
        assert_eq!(load_or_create_audit_key(&sdd).unwrap(), key);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let live_name = live_path.file_name().unwrap().to_str().unwrap();
        assert_eq!(left, ["audit.key", live_name, "notes.tmp.1"]);
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");

        // So does creating one.
        stale("signing.ed25519.tmp.4242.2");
        load_or_create_signing_key(&sdd).unwrap();
        assert!(!dir.join("signing.ed25519.tmp.4242.2").exists());
        assert!(live_path.exists());
    }

    #[test]
    fn refuses_open_permissions_without_printing_the_key() {
        let tmp = TestDir::new("keys-open");
        let sdd = tmp.path().join(".sdd");
        let key = load_or_create_audit_key(&sdd).unwrap();
        let path = Layout::at(&sdd).audit_key_file();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = load_or_create_audit_key(&sdd).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, KeyError::TooOpen { mode: 0o640, .. }),
            "{msg}"
        );
        assert!(msg.contains("chmod 600"), "{msg}");
        assert!(!msg.contains(&hex::encode(&key)));
    }

    #[test]
    fn refuses_malformed_and_non_files() {
        let tmp = TestDir::new("keys-bad");
        let sdd = tmp.path().join(".sdd");
        let path = Layout::at(&sdd).audit_key_file();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::set_permissions(
            path.parent().unwrap(),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .unwrap();
        f.write_all(b"ABCD\n").unwrap();
        assert!(matches!(
            load_audit_key(&sdd),
            Err(KeyError::Malformed { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(matches!(
            load_audit_key(&sdd),
            Err(KeyError::NotAFile { .. })
        ));
    }

    #[test]
    fn concurrent_creators_agree_on_one_key() {
        let tmp = TestDir::new("keys-race");
        let sdd = tmp.path().join(".sdd");
        let keys: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| load_or_create_audit_key(&sdd).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.windows(2).all(|w| w[0] == w[1]));
    }

    #[test]
    fn the_signing_key_is_created_once_with_mode_0600_and_refused_when_open() {
        let tmp = TestDir::new("keys-signing");
        let sdd = tmp.path().join(".sdd");
        assert!(load_signing_key(&sdd).unwrap().is_none());
        let seed = load_or_create_signing_key(&sdd).unwrap();
        let path = signing_key_file(&sdd);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(load_or_create_signing_key(&sdd).unwrap(), seed);
        assert_eq!(load_signing_key(&sdd).unwrap(), Some(seed));
        assert_ne!(
            load_or_create_audit_key(&sdd).unwrap(),
            seed.to_vec(),
            "independent keys"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create_signing_key(&sdd).unwrap_err();
        assert!(
            matches!(err, KeyError::TooOpen { mode: 0o644, .. }),
            "{err}"
        );
        assert!(!err.to_string().contains(&hex::encode(seed)));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "short\n").unwrap();
        assert!(matches!(
            load_signing_key(&sdd),
            Err(KeyError::Malformed { .. })
        ));
    }
}

#[cfg(test)]
mod dir_tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::test_dir::TestDir;

    #[test]
    fn a_keys_dir_open_to_group_or_others_is_refused_with_the_chmod_fix() {
        for mode in [0o777, 0o750, 0o740, 0o701, 0o710, 0o1700 | 0o007] {
            let tmp = TestDir::new("keys-dir-open");
            let sdd = tmp.path().join(".sdd");
            load_or_create_audit_key(&sdd).unwrap();
            let dir = sdd.join("keys");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            for err in [
                load_or_create_audit_key(&sdd).unwrap_err(),
                load_audit_key(&sdd).unwrap_err(),
                load_or_create_signing_key(&sdd).unwrap_err(),
            ] {
                let msg = err.to_string();
                assert!(
                    matches!(err, KeyError::DirTooOpen { .. }),
                    "{mode:o}: {msg}"
                );
                assert!(
                    msg.contains(&format!("chmod 700 {}", dir.display())),
                    "{msg}"
                );
            }
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            assert!(load_audit_key(&sdd).unwrap().is_some());
        }
    }

    #[test]
    fn an_empty_open_keys_dir_is_refused_before_a_key_is_written_into_it() {
        let tmp = TestDir::new("keys-dir-empty");
        let sdd = tmp.path().join(".sdd");
        let dir = sdd.join("keys");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            load_or_create_signing_key(&sdd),
            Err(KeyError::DirTooOpen { mode: 0o777, .. })
        ));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn a_symlinked_keys_dir_is_refused() {
        let tmp = TestDir::new("keys-dir-link");
        let real = tmp.path().join("elsewhere");
        std::fs::create_dir(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
        let sdd = tmp.path().join(".sdd");
        std::fs::create_dir(&sdd).unwrap();
        std::os::unix::fs::symlink(&real, sdd.join("keys")).unwrap();
        assert!(matches!(
            load_or_create_audit_key(&sdd),
            Err(KeyError::NotADir { .. })
        ));
    }

    #[test]
    fn a_key_or_dir_owned_by_another_uid_is_refused_with_the_chown_fix() {
        let euid = rustix::process::geteuid().as_raw();
        let tmp = TestDir::new("keys-owner");
        let sdd = tmp.path().join(".sdd");
        load_or_create_audit_key(&sdd).unwrap();
        let meta = std::fs::metadata(sdd.join("keys")).unwrap();
        let err = check_owner(&sdd.join("keys"), &meta).map(|()| "ok");
        assert_eq!(err.unwrap(), "ok");
        // Ownership cannot be changed without privilege; the check itself is exercised on a
        // file we know another uid owns when one exists (root owns `/`).
        let root_meta = std::fs::metadata("/").unwrap();
        if root_meta.uid() != euid {
            let err = check_owner(Path::new("/"), &root_meta).unwrap_err();
            assert!(
                err.to_string().contains(&format!("chown {euid} /")),
                "{err}"
            );
        } else {
            // Running as root: chown the key to nobody and see it refused.
            let key = Layout::at(&sdd).audit_key_file();
            std::process::Command::new("chown")
                .args(["65534", &key.display().to_string()])
                .status()
                .unwrap();
            let err = load_audit_key(&sdd).unwrap_err();
            assert!(
                matches!(err, KeyError::WrongOwner { owner: 65534, .. }),
                "{err}"
            );
            assert!(err.to_string().contains(&format!("chown {euid} ")), "{err}");
            std::process::Command::new("chown")
                .args(["65534", &sdd.join("keys").display().to_string()])
                .status()
                .unwrap();
            let err = load_audit_key(&sdd).unwrap_err();
            assert!(matches!(err, KeyError::WrongOwner { .. }), "{err}");
        }
    }
}
