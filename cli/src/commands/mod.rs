//! One module per subcommand. Each returns `Ok(exit code)` or `Err(message)` (exit 2).

pub mod audit;
pub mod backlog;
pub mod capsule;
pub mod dashboard;
pub mod handles;
pub mod http_serve;
pub mod init;
pub mod ledger;
pub mod lines;
pub mod mailbox;
pub mod mcp;
pub mod plan;
pub mod run;
pub mod status;
pub mod stop_signals;
pub mod store;
pub mod task;
pub mod tls;
pub mod tools;
pub mod verdict;
pub mod worker;

use std::path::Path;
use std::sync::Arc;

use bernstein_domain::Projection;
use bernstein_os::scrub::ScrubPolicy;
use bernstein_store_file::{FailedStore, FileStore, OpeningStore};

/// A store the commands open, whichever kind it is.
type SharedStore = Arc<dyn bernstein_core::ledger::Store<bernstein_domain::Projection>>;

/// The workdir's audit key. A missing key is created only while the ledger is empty: a new
/// key could never verify records written under another, so none is made (or left behind)
/// for a ledger that has records.
fn audit_key_for(
    workdir: &Path,
    ledger_has_records: impl FnOnce() -> Result<bool, String>,
) -> Result<Vec<u8>, String> {
    let sdd = workdir.join(".sdd");
    let key_err = |e| format!("audit key: {e}");
    if let Some(key) = bernstein_store_file::keys::load_audit_key(&sdd).map_err(key_err)? {
        return Ok(key);
    }
    if ledger_has_records()? {
        return Err(format!(
            "{} has no audit key, but the ledger already has records: this instance cannot authenticate them; copy .sdd/keys from an instance that wrote it (a new key is not created)",
            sdd.display()
        ));
    }
    bernstein_store_file::keys::load_or_create_audit_key(&sdd).map_err(key_err)
}

/// Opens the project's store (creating `.sdd/` on first use) and its audit key.
pub fn open_store(workdir: &Path) -> Result<(Arc<FileStore<Projection>>, Vec<u8>), String> {
    let key = project_audit_key(workdir)?;
    let store = FileStore::open(workdir, key.clone()).map_err(|e| e.to_string())?;
    Ok((Arc::new(store), key))
}

/// The project's audit key (created on first use while the ledger is empty).
fn project_audit_key(workdir: &Path) -> Result<Vec<u8>, String> {
    audit_key_for(workdir, || {
        let ledger = workdir.join(".sdd/ledger/ledger.jsonl");
        match std::fs::metadata(&ledger) {
            Ok(m) => Ok(m.len() > 0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("{}: {e}", ledger.display())),
        }
    })
}

/// Whether a store's open failed because its ledger does not verify (corrupt, or written under
/// another audit key): what an HTTP server reports as not ready instead of exiting. A store
/// it cannot reach or whose schema it does not serve is a deployment error and stays fatal.
fn does_not_verify(e: &bernstein_core::ledger::StoreError) -> bool {
    use bernstein_core::ledger::StoreError;
    matches!(
        e,
        StoreError::Corrupt { .. } | StoreError::KeyMismatch { .. } | StoreError::OldFormat { .. }
    )
}

/// What an HTTP server serves when its ledger does not verify: a [`FailedStore`] with the
/// reason, so that `/healthz` answers, `/readyz` says why it is not ready (503), the dashboard
/// shows it, and every MCP request is refused with it. Said on stderr once.
fn failed_store(reason: &str) -> SharedStore {
    bernstein_os::log_line!(
        "bernstein: NOT READY: the ledger cannot be served: {reason}. Answering /healthz, /readyz (503 with this reason) and the dashboard only; every MCP request is refused until the ledger is repaired and the server restarted."
    );
    Arc::new(FailedStore::new(reason))
}

/// Refuses a workdir that does not exist (or is not a directory): a mistyped path must not
/// become a new, empty project. `bernstein init DIR` is the command that creates one.
pub fn check_workdir(workdir: &Path) -> Result<(), String> {
    match std::fs::metadata(workdir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!("--workdir {}: not a directory", workdir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "--workdir {}: no such directory (nothing was created); create a project there with `bernstein init {}`",
            workdir.display(),
            workdir.display()
        )),
        Err(e) => Err(format!("--workdir {}: {e}", workdir.display())),
    }
}

/// The flags a command that reads a project takes besides `--workdir`, so that its refusal of
/// a directory that is no project names the ones it can use.
#[derive(Clone, Copy, Debug)]
pub struct Hints {
    /// `--dir`: the `.sdd` directory (or the project holding it) of an offline verifier.
    pub dir: bool,
    /// `--store URL`: a PostgreSQL ledger instead of the `.sdd/` file.
    pub store: bool,
}

impl Hints {
    /// `status`, `plan`, `task`, `dashboard`, `worker`: `--workdir` and `--store`.
    pub const OPERATOR: Hints = Hints {
        dir: false,
        store: true,
    };
    /// `audit verify`, `mailbox verify`, `backlog verify-claim`: `--dir` and `--store`.
    pub const VERIFIER_STORE: Hints = Hints {
        dir: true,
        store: true,
    };
    /// `capsule verify`, `audit verify-handle`, `ledger upgrade`: `--dir`, the file only.
    pub const VERIFIER: Hints = Hints {
        dir: true,
        store: false,
    };
}

/// What every command that needs a project says of a directory without `.sdd/`: which
/// flags name one, and the command that creates it.
pub fn not_a_project(dir: &Path, hints: Hints) -> String {
    format!(
        "{d} is not a Bernstein project (no .sdd/): pass the --workdir of one{dir}{store}, or create it with `bernstein init {d}`",
        d = dir.display(),
        dir = if hints.dir {
            " (or --dir DIR/.sdd)"
        } else {
            ""
        },
        store = if hints.store {
            ", `--store URL` for a PostgreSQL ledger"
        } else {
            ""
        },
    )
}

/// What every command that reads the `.sdd/` ledger file says when the project has none (a
/// PostgreSQL instance's workdir holds only the keys).
pub fn no_ledger(sdd: &Path, hints: Hints) -> String {
    let ledger = bernstein_store_file::layout::Layout::at(sdd).ledger_file();
    let how = if hints.store {
        "pass --store URL (or set BERNSTEIN_STORE_URL)"
    } else {
        "export its ledger with `bernstein ledger export --store URL --out DIR --with-keys` and pass --workdir DIR"
    };
    format!(
        "{} does not exist: {} has no ledger file (in a PostgreSQL instance's workdir, which holds only the keys, {how})",
        ledger.display(),
        sdd.display()
    )
}

/// The project a `.sdd` path belongs to, for the messages: its parent when it is named `.sdd`.
fn project_of(sdd: &Path) -> &Path {
    match (sdd.file_name(), sdd.parent()) {
        (Some(name), Some(parent)) if name == ".sdd" => {
            if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            }
        }
        _ => sdd,
    }
}

/// Refuses, with the messages every command gives ([`not_a_project`], [`no_ledger`]), to read
/// the ledger file of `sdd` (a resolved `.sdd` directory) when there is none. With a database
/// `url` the ledger is the database's and the directory only lends its keys, if it has any:
/// nothing is required of it here.
pub fn require_ledger(sdd: &Path, url: Option<&str>, hints: Hints) -> Result<(), String> {
    if url.is_some() {
        return Ok(());
    }
    let layout = bernstein_store_file::layout::Layout::at(sdd);
    if !(layout.ledger_dir().is_dir() || layout.keys_dir().is_dir()) {
        return Err(not_a_project(project_of(sdd), hints));
    }
    if !layout.ledger_file().is_file() {
        return Err(no_ledger(sdd, hints));
    }
    Ok(())
}

/// The store an operator command (status, plan, task) works on: the database that `--store`
/// (else `BERNSTEIN_STORE_URL`) names, else the project's `.sdd/` store. It never creates
/// anything: a workdir without `.sdd/`, or without the audit key, is refused.
pub fn open_operator_store(
    workdir: &Path,
    store_flag: Option<&str>,
) -> Result<(SharedStore, Vec<u8>), String> {
    open_operator_store_with(workdir, store_flag, false)
}

/// [`open_operator_store`]; with `degrade`, a ledger that does not verify is served as a
/// [`FailedStore`] (see [`open_serving_store`]).
pub fn open_operator_store_with(
    workdir: &Path,
    store_flag: Option<&str>,
    degrade: bool,
) -> Result<(SharedStore, Vec<u8>), String> {
    let url = crate::settings::store_url(store_flag)?;
    let sdd = workdir.join(".sdd");
    if url.is_none() && !sdd.is_dir() {
        return Err(not_a_project(workdir, Hints::OPERATOR));
    }
    let key = bernstein_store_file::keys::load_audit_key(&sdd)
        .map_err(|e| format!("audit key: {e}"))?
        .ok_or_else(|| match url {
            Some(_) => format!(
                "no audit key in {}/keys: pass the --workdir of an instance serving this database (the instances share its keys)",
                sdd.display()
            ),
            None => format!(
                "no audit key in {}/keys: the ledger cannot be authenticated (copy .sdd/keys from the instance that wrote it)",
                sdd.display()
            ),
        })?;
    let Some(url) = url else {
        if !sdd.join("ledger/ledger.jsonl").is_file() {
            return Err(no_ledger(&sdd, Hints::OPERATOR));
        }
        return match FileStore::open(workdir, key.clone()) {
            Ok(store) => Ok((Arc::new(store), key)),
            Err(e) if degrade && does_not_verify(&e) => Ok((failed_store(&e.to_string()), key)),
            Err(e) => Err(e.to_string()),
        };
    };
    let mut options = crate::settings::pg_options()?;
    // A one-shot command needs no notifications; a dashboard hears of new heads by them.
    options.listen = degrade;
    match bernstein_store_postgres::PgStore::open(&url, key.clone(), options) {
        Ok(store) => Ok((Arc::new(store), key)),
        Err(e) if degrade && does_not_verify(&e) => Ok((failed_store(&e.to_string()), key)),
        Err(e) => Err(at_database(&url)(e.to_string())),
    }
}

/// Opens the store `url` names (see `settings::store_url`), else the project's `.sdd/` store,
/// with the audit key of the workdir (`.sdd/keys/audit.key`, created on first use; several
/// instances on one database must share it, see docs/POSTGRES.md). With `migrate` the
/// database's schema is brought up to date first; without it a schema this software does not
/// serve is refused.
///
/// With `degrade`, a ledger that does not verify is served as a [`FailedStore`] instead of an
/// error (an HTTP server still answers its probes, `/readyz` says why); a store that cannot be
/// reached, a schema not served and key problems are errors either way. With `degrade` the
/// file store is opened on a thread of its own, so that a large ledger does not keep the port
/// unbound while it is verified (see [`open_file_store_early`]).
pub fn open_serving_store(
    workdir: &Path,
    url: Option<&str>,
    migrate: bool,
    degrade: bool,
) -> Result<(SharedStore, Vec<u8>), String> {
    let Some(url) = url else {
        let key = project_audit_key(workdir)?;
        let scrub = crate::settings::scrub_policy()?;
        if !degrade {
            return match FileStore::open(workdir, key.clone()) {
                Ok(store) => Ok((scrubbed(store, scrub)?, key)),
                Err(e) => Err(e.to_string()),
            };
        }
        return Ok((open_file_store_early(workdir, &key, scrub)?, key));
    };
    if migrate {
        let applied = bernstein_store_postgres::migrate(url).map_err(at_database(url))?;
        if !applied.is_empty() {
            bernstein_os::log_line!("bernstein: applied schema migrations {applied:?}");
        }
    }
    let key = audit_key_for(workdir, || {
        bernstein_store_postgres::has_records(url).map_err(at_database(url))
    })?;
    let scrub = crate::settings::scrub_policy()?;
    match bernstein_store_postgres::PgStore::open(url, key.clone(), crate::settings::pg_options()?)
    {
        Ok(store) => Ok((scrubbed(store, scrub)?, key)),
        Err(e) if degrade && does_not_verify(&e) => Ok((failed_store(&e.to_string()), key)),
        Err(e) => Err(at_database(url)(e.to_string())),
    }
}

/// How long an HTTP server waits for its file store to open before it binds its port anyway
/// and answers 503 with `Retry-After` until the ledger is verified (a million records take
/// seconds; a small ledger is open long before this).
const BIND_EARLY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Opens the file store of an HTTP server on a thread of its own ([`OpeningStore`]): the store
/// itself if it opened within [`BIND_EARLY_AFTER`], else the opening store, which refuses
/// every request with a clear reason until the ledger is verified. A ledger that does not
/// verify is served as a [`FailedStore`]; any other failure is returned (or, after binding,
/// ends the process).
fn open_file_store_early(
    workdir: &Path,
    key: &[u8],
    scrub: Option<ScrubPolicy>,
) -> Result<SharedStore, String> {
    let (dir, k) = (workdir.to_path_buf(), key.to_vec());
    let opening = OpeningStore::start(move || match FileStore::open(&dir, k) {
        Ok(store) => scrubbed(store, scrub),
        Err(e) if does_not_verify(&e) => Ok(failed_store(&e.to_string())),
        Err(e) => Err(e.to_string()),
    })
    .map_err(|e| format!("cannot start opening the ledger: {e}"))?;
    match opening.wait(BIND_EARLY_AFTER) {
        Some(Err(e)) => Err(e),
        Some(Ok(())) => Ok(opening.opened().expect("open")),
        None => {
            bernstein_os::log_line!(
                "bernstein: the ledger is still being opened and verified; serving meanwhile: /healthz answers, every other request gets 503 with Retry-After until it is ready"
            );
            Ok(opening)
        }
    }
}

/// A server's store (the file store, PostgreSQL), scrubbed in the background under `policy`
/// (none: not scrubbed).
fn scrubbed<S>(store: S, policy: Option<ScrubPolicy>) -> Result<SharedStore, String>
where
    S: bernstein_os::scrub::Scrubbed + bernstein_core::ledger::Store<Projection>,
{
    let store = Arc::new(store);
    if let Some(policy) = policy {
        bernstein_os::scrub::start(&store, policy)
            .map_err(|e| format!("cannot start the ledger scrub: {e}"))?;
    }
    Ok(store)
}

/// Which store a server serves, for its startup log: the `.sdd/` ledger file (absolute), or
/// the database's host, port, name and user (never its password: see
/// `bernstein_store_postgres::describe_url`).
pub fn store_label(workdir: &Path, url: Option<&str>) -> String {
    match url {
        Some(url) => bernstein_store_postgres::describe_url(url),
        None => {
            let dir = workdir
                .canonicalize()
                .unwrap_or_else(|_| workdir.to_path_buf());
            let ledger = bernstein_store_file::layout::Layout::at(&dir.join(".sdd")).ledger_file();
            format!("the ledger file {}", ledger.display())
        }
    }
}

/// Says on stderr, once, which store a server (`mcp`, `dashboard`, an in-process `worker`)
/// serves and how many records it holds, so that an instance started without the database
/// URL it was meant to have does not serve an empty `.sdd/` unnoticed. A store still being
/// opened, or one that does not verify, is named without a count.
pub fn announce_store(store: &SharedStore, workdir: &Path, url: Option<&str>) {
    let held = match store.snapshot() {
        Ok(snap) if snap.position.seq == 0 => ", empty".to_string(),
        Ok(snap) => format!(", {} records", snap.position.seq),
        Err(_) => String::new(),
    };
    let note = if url.is_none() {
        " (no --store URL or BERNSTEIN_STORE_URL given)"
    } else {
        ""
    };
    bernstein_os::log_line!(
        "bernstein: store: {}{held}{note}",
        store_label(workdir, url)
    );
}

/// A PostgreSQL error, prefixed with the database it came from (never its password).
fn at_database(url: &str) -> impl Fn(String) -> String + '_ {
    move |e| format!("{}: {e}", bernstein_store_postgres::describe_url(url))
}

/// Loads (creating on first use) the project's Ed25519 signing identity,
/// `.sdd/keys/signing.ed25519`. A key file that is unreadable or open to others is an error:
/// the server never signs with a key it cannot trust, and never answers unsigned.
pub fn load_signer(workdir: &Path) -> Result<bernstein_core::signing::Signer, String> {
    let seed = bernstein_store_file::keys::load_or_create_signing_key(&workdir.join(".sdd"))
        .map_err(|e| format!("signing key: {e}"))?;
    Ok(bernstein_core::signing::Signer::from_seed(&seed))
}
