//! Which `.sdd` directory `verify-claim` reads, from the flags that may name it: `--dir`
//! (the `.sdd` directory or the project holding it), `--audit-dir` (`<.sdd>/audit`) and
//! `--backlog` (`<.sdd>/runtime/task-backlog.json`). The last two are the paths of the layout
//! other Bernstein servers use; here both map onto the one ledger of the `.sdd` directory they
//! sit in, so neither needs to exist itself. Flags that name different projects are a usage
//! error.

use std::path::{Path, PathBuf};

use bernstein_store_file::layout::Layout;
use bernstein_store_file::verify_cmd::resolve_sdd;

/// The flags as given.
pub struct SddFlags {
    pub dir: Option<PathBuf>,
    pub audit_dir: Option<PathBuf>,
    pub backlog: Option<PathBuf>,
}

fn holds_ledger(dir: &Path) -> bool {
    Layout::at(dir).ledger_dir().is_dir()
}

/// The `.sdd` directory among `candidates` (nearest first) that holds a ledger.
fn find(flag: &str, given: &Path, candidates: &[Option<&Path>]) -> Result<PathBuf, String> {
    candidates
        .iter()
        .flatten()
        .map(|c| resolve_sdd(c))
        .find(|c| holds_ledger(c))
        .ok_or_else(|| {
            format!(
                "{flag} {}: no .sdd directory with a ledger there (expected {}); \
                 run `bernstein init DIR` to create a project, or pass --dir DIR",
                given.display(),
                match flag {
                    "--audit-dir" => "<project>/.sdd/audit",
                    _ => "<project>/.sdd/runtime/task-backlog.json",
                }
            )
        })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The `.sdd` directory the flags name (`<workdir>/.sdd` when none does).
pub fn sdd_of(workdir: &Path, flags: SddFlags) -> Result<PathBuf, String> {
    let mut named: Vec<(&str, PathBuf)> = Vec::new();
    if let Some(d) = &flags.dir {
        named.push(("--dir", resolve_sdd(d)));
    }
    if let Some(a) = &flags.audit_dir {
        named.push((
            "--audit-dir",
            find("--audit-dir", a, &[Some(a), a.parent()])?,
        ));
    }
    if let Some(b) = &flags.backlog {
        let runtime = b.parent();
        let candidates = [runtime.and_then(Path::parent), runtime];
        named.push(("--backlog", find("--backlog", b, &candidates)?));
    }
    let Some((first_flag, first)) = named.first().cloned() else {
        return Ok(resolve_sdd(&workdir.join(".sdd")));
    };
    if let Some((flag, other)) = named.iter().find(|(_, d)| !same_dir(d, &first)) {
        return Err(format!(
            "{first_flag} names {} but {flag} names {}: give the paths of one project",
            first.display(),
            other.display()
        ));
    }
    Ok(first)
}
