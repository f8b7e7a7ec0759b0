//! Finding a program on `PATH` the way `sh` would (the first directory holding an executable
//! file of that name), so a preset whose agent CLI is not installed is refused before anything
//! is claimed instead of failing every task with status 127.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// The first `dir/name` in the `:`-separated `path` that is an executable regular file. An
/// empty entry means the current directory, as for `sh`.
pub fn find_on_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path).find_map(|dir| {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(name);
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_executable_files() {
        let dir = std::env::temp_dir().join(format!("bernstein-path-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let exe = dir.join("agent-x");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::write(dir.join("plain-x"), "").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([dir.join("missing"), dir.clone()]).unwrap();
        assert_eq!(find_on_path("agent-x", &path), Some(exe));
        assert_eq!(find_on_path("plain-x", &path), None, "not executable");
        assert_eq!(find_on_path("sub", &path), None, "a directory");
        assert_eq!(find_on_path("agent-x", OsStr::new("")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
