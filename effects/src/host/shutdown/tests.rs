//! The barrier matrix on a real filesystem: every refusal creates nothing anywhere (the
//! project and the outside directory are compared entry by entry, symlink targets and file
//! bytes included, before and after), and symlinks that stay inside the project are allowed.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;

use bernstein_core::protocol::host::{HostReply, HostRequest};

use super::*;
use crate::host::{HostIo, ProjectHost};
use bernstein_store_file::test_dir::TestDir;

const BODY: &str =
    r#"{"call_id":"call_1","requested_at":1,"tool":"bernstein_shutdown_orchestrator"}"#;

/// Every entry under `dir`: relative path → what it is (file bytes, link target, or a dir).
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, at: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = fs::read_dir(at).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = path.strip_prefix(base).unwrap().display().to_string();
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.insert(
                    rel,
                    format!("link:{}", fs::read_link(&path).unwrap().display()),
                );
            } else if ft.is_dir() {
                out.insert(rel, "dir".into());
                walk(base, &path, out);
            } else {
                out.insert(
                    rel,
                    format!("file:{}", fs::read_to_string(&path).unwrap_or_default()),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A project (holding `.sdd`) and a directory outside it.
struct World {
    project: TestDir,
    outside: TestDir,
}

impl World {
    fn new() -> World {
        let project = TestDir::new("shutdown-project");
        fs::create_dir(project.path().join(".sdd")).unwrap();
        fs::write(project.path().join(".sdd/ledger.jsonl"), "").unwrap();
        let outside = TestDir::new("shutdown-outside");
        fs::write(outside.path().join("keep"), "outside").unwrap();
        World { project, outside }
    }

    fn root(&self) -> &Path {
        self.project.path()
    }

    fn out(&self) -> &Path {
        self.outside.path()
    }

    fn workdir(&self) -> String {
        self.root().display().to_string()
    }

    /// Runs the barrier with `workdir` and asserts it refuses with `reason`, changing nothing.
    fn refuses(&self, workdir: &str, reason: &str) {
        let before = (tree(self.root()), tree(self.out()));
        let got = signal_shutdown(self.root(), workdir, BODY);
        let refusal = got.expect_err("the barrier must refuse");
        assert_eq!(refusal.reason.as_str(), reason, "{refusal:?}");
        assert_eq!(
            (tree(self.root()), tree(self.out())),
            before,
            "a refused call created or changed something"
        );
    }

    /// Runs the barrier and asserts it wrote the signal file; answers its resolved path.
    fn signals(&self, workdir: &str) -> PathBuf {
        let path = signal_shutdown(self.root(), workdir, BODY).expect("signalled");
        assert_eq!(fs::read_to_string(&path).unwrap(), BODY);
        assert!(
            path.starts_with(fs::canonicalize(self.root()).unwrap()),
            "{path:?}"
        );
        assert_eq!(
            fs::read_to_string(self.out().join("keep")).unwrap(),
            "outside"
        );
        path
    }
}

#[test]
fn a_project_gets_its_signal_file() {
    let w = World::new();
    let path = w.signals(&w.workdir());
    assert_eq!(path, fs::canonicalize(w.root()).unwrap().join(SIGNAL_FILE));
    // Again: the file is replaced, no temporary file is left behind.
    w.signals(&w.workdir());
    let names: Vec<String> = fs::read_dir(w.root().join(".sdd/runtime/signals"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["SHUTDOWN"]);
}

#[test]
fn relative_workdirs_resolve_against_the_server_project() {
    let w = World::new();
    w.signals(".");
    let inner = w.root().join("sub");
    fs::create_dir_all(inner.join(".sdd")).unwrap();
    let path = w.signals("sub");
    assert!(path.ends_with("sub/.sdd/runtime/signals/SHUTDOWN"));
    w.signals("./sub/");
}

#[test]
fn symlinked_chain_entries_pointing_outside_are_refused() {
    // `.sdd` itself.
    let w = World::new();
    fs::remove_dir_all(w.root().join(".sdd")).unwrap();
    fs::create_dir(w.out().join("sdd")).unwrap();
    symlink(w.out().join("sdd"), w.root().join(".sdd")).unwrap();
    w.refuses(&w.workdir(), "symlink_escape");

    // `runtime`.
    let w = World::new();
    fs::create_dir(w.out().join("rt")).unwrap();
    symlink(w.out().join("rt"), w.root().join(".sdd/runtime")).unwrap();
    w.refuses(&w.workdir(), "symlink_escape");

    // `signals`, through a relative link.
    let w = World::new();
    fs::create_dir(w.root().join(".sdd/runtime")).unwrap();
    fs::create_dir(w.out().join("sig")).unwrap();
    // From `.sdd/runtime` up to `/`, then down to the outside directory.
    let up = "../".repeat(w.root().join(".sdd/runtime").components().count() - 1);
    let rel = PathBuf::from(up).join(w.out().join("sig").strip_prefix("/").unwrap());
    symlink(&rel, w.root().join(".sdd/runtime/signals")).unwrap();
    assert!(
        fs::canonicalize(w.root().join(".sdd/runtime/signals"))
            .unwrap()
            .starts_with(w.out())
    );
    w.refuses(&w.workdir(), "symlink_escape");

    // `SHUTDOWN` to an existing file outside.
    let w = World::new();
    fs::create_dir_all(w.root().join(".sdd/runtime/signals")).unwrap();
    symlink(
        w.out().join("keep"),
        w.root().join(".sdd/runtime/signals/SHUTDOWN"),
    )
    .unwrap();
    w.refuses(&w.workdir(), "symlink_escape");

    // `SHUTDOWN` dangling to a file outside that does not exist yet.
    let w = World::new();
    fs::create_dir_all(w.root().join(".sdd/runtime/signals")).unwrap();
    symlink(
        w.out().join("planted"),
        w.root().join(".sdd/runtime/signals/SHUTDOWN"),
    )
    .unwrap();
    w.refuses(&w.workdir(), "symlink_escape");
    assert!(!w.out().join("planted").exists());
}

#[test]
fn symlinks_that_stay_inside_the_project_are_allowed() {
    // `.sdd` → a directory of the project.
    let w = World::new();
    fs::rename(w.root().join(".sdd"), w.root().join("real-sdd")).unwrap();
    symlink("real-sdd", w.root().join(".sdd")).unwrap();
    let path = w.signals(&w.workdir());
    assert!(
        path.ends_with("real-sdd/runtime/signals/SHUTDOWN"),
        "{path:?}"
    );

    // `runtime` and `signals` → directories elsewhere in the project, `SHUTDOWN` → a file in it.
    let w = World::new();
    fs::create_dir_all(w.root().join("state/rt")).unwrap();
    fs::create_dir_all(w.root().join("state/sig")).unwrap();
    symlink(w.root().join("state/rt"), w.root().join(".sdd/runtime")).unwrap();
    symlink(
        w.root().join("state/sig"),
        w.root().join("state/rt/signals"),
    )
    .unwrap();
    fs::write(w.root().join("state/old"), "old").unwrap();
    symlink(
        w.root().join("state/old"),
        w.root().join("state/sig/SHUTDOWN"),
    )
    .unwrap();
    let path = w.signals(&w.workdir());
    assert!(path.ends_with("state/sig/SHUTDOWN"), "{path:?}");
    // The link was replaced, never followed: its old target is untouched.
    assert_eq!(
        fs::read_to_string(w.root().join("state/old")).unwrap(),
        "old"
    );
}

#[test]
fn malformed_workdirs_are_refused_by_shape() {
    let w = World::new();
    w.refuses("", "invalid_workdir");
    w.refuses(&format!("{}\0x", w.workdir()), "invalid_workdir");
    // 4,097 bytes: longer than PATH_MAX allows.
    let long = format!("/{}", "a".repeat(4096));
    assert_eq!(long.len(), 4097);
    w.refuses(&long, "invalid_workdir");
    // `..`, even when it would land back in a project.
    let sub = w.root().join("sub");
    fs::create_dir(&sub).unwrap();
    w.refuses(&format!("{}/sub/..", w.workdir()), "invalid_workdir");
    w.refuses("sub/..", "invalid_workdir");
    w.refuses(
        &format!("../{}", w.root().file_name().unwrap().to_str().unwrap()),
        "invalid_workdir",
    );
}

#[test]
fn places_that_are_not_projects_get_nothing() {
    let w = World::new();
    // A directory without .sdd (the outside directory itself).
    w.refuses(&w.out().display().to_string(), "not_a_project");
    assert!(!w.out().join(".sdd").exists());
    // A directory inside the project without its own .sdd.
    fs::create_dir(w.root().join("plain")).unwrap();
    w.refuses("plain", "not_a_project");
    // Missing, a file, and a .sdd that is a file.
    w.refuses("missing", "workdir_not_found");
    fs::write(w.root().join("file"), "x").unwrap();
    w.refuses("file", "not_a_directory");
    let fake = w.root().join("fake");
    fs::create_dir(&fake).unwrap();
    fs::write(fake.join(".sdd"), "x").unwrap();
    w.refuses("fake", "not_a_directory");
    // A SHUTDOWN entry that is a directory.
    fs::create_dir_all(w.root().join(".sdd/runtime/signals/SHUTDOWN")).unwrap();
    w.refuses(".", "not_a_file");
}

#[test]
fn the_project_host_maps_the_barrier_to_replies() {
    let w = World::new();
    let host = ProjectHost::new(w.root());
    let reply = host.perform(&HostRequest::SignalShutdown {
        workdir: ".".into(),
        body: BODY.into(),
    });
    let HostReply::Signalled { path } = reply else {
        panic!("signalled: {reply:?}");
    };
    assert_eq!(fs::read_to_string(path).unwrap(), BODY);
    let reply = host.perform(&HostRequest::SignalShutdown {
        workdir: w.out().display().to_string(),
        body: BODY.into(),
    });
    assert!(
        matches!(reply, HostReply::Failed(HostFailure::Refused { ref reason, .. }) if reason == "not_a_project"),
        "{reply:?}"
    );
}

#[test]
fn the_chain_spells_the_signal_file() {
    assert_eq!(CHAIN.join("/"), SIGNAL_FILE);
}

#[test]
fn concurrent_signals_all_succeed() {
    let w = World::new();
    let root = w.root().to_path_buf();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let root = root.clone();
            std::thread::spawn(move || signal_shutdown(&root, ".", BODY))
        })
        .collect();
    for t in threads {
        t.join()
            .unwrap()
            .expect("every concurrent call writes the signal");
    }
    assert_eq!(
        fs::read_to_string(w.root().join(SIGNAL_FILE)).unwrap(),
        BODY
    );
}

#[test]
fn the_barrier_speaks_the_domain_s_codes_and_path() {
    use bernstein_domain::refusal::Refusal as Domain;
    for reason in Reason::ALL {
        let theirs = Domain::from_code(reason.as_str());
        assert_eq!(theirs.map(|r| r.as_str()), Some(reason.as_str()));
    }
    assert_eq!(SIGNAL_FILE, bernstein_domain::tools::shutdown::SIGNAL_FILE);
}
