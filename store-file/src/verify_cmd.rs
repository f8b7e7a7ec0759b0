//! `bernstein audit verify`: verifies `.sdd/ledger/ledger.jsonl` offline and reconstructs the
//! recorded call order.
//!
//! It streams the file through the core's pure verifier (so memory does not grow with the
//! ledger), checks HMAC tags with `.sdd/keys/audit.key` (a missing key is an error unless the
//! caller asked for the chains only, [`KeyUse`]), and uses the store's checkpoint as an anchor:
//! a ledger that ends before the position the store once checkpointed as durable has lost
//! records, which hash chains alone cannot see. Once a ledger failed, [`audit_findings`] reads
//! it again to list every bad line, not only the first. It only reads: it never creates,
//! repairs or locks out a running server for longer than one `stat` under the shared lock.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use bernstein_ledger::digest::Digest;
use bernstein_ledger::verify::{
    FindingsReport, FindingsVerifier, LedgerVerifier, VerifyFailure, VerifyReport,
};

use crate::checkpoint;
use crate::keys::{KeyError, load_audit_key};
use crate::layout::{Layout, SDD_DIR};
use crate::lock::LedgerLock;

/// Why `audit verify` did not produce a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The ledger is not intact: the first bad entry.
    #[error("{0}")]
    Failure(#[from] VerifyFailure),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("audit key: {0}")]
    Key(#[from] KeyError),
    /// [`KeyUse::Required`] and the `.sdd` directory holds no audit key.
    #[error(
        "cannot check the HMAC tags: there is no audit key at {} (the tags are what shows that a record was not rewritten with its hash recomputed); point --dir at the .sdd directory whose keys/audit.key wrote this ledger (copy the project's .sdd/keys/ beside a copied ledger, or export with `bernstein ledger export --with-keys`), or pass --no-keys to check the hash chains only",
        key_file.display()
    )]
    NoKey { key_file: PathBuf },
}

/// Whether the audit key is needed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyUse {
    /// Check the tags when the key is there, report them unchecked otherwise.
    #[default]
    IfPresent,
    /// Check the tags; a missing key is [`AuditError::NoKey`].
    Required,
    /// Check the chains only, even when the key is there.
    Ignore,
}

/// What `audit verify` checks beyond the ledger itself.
#[derive(Debug, Default)]
pub struct AuditOptions {
    /// List every recorded call in the report (memory grows with the ledger).
    pub calls: bool,
    /// Record hashes the report must say whether the ledger holds (a saved witness's: the
    /// caller then checks the witness against the report).
    pub watch: Vec<Digest>,
    /// Whether the audit key is needed (by default the tags are checked when it is there).
    pub keys: KeyUse,
}

/// The audit key of the `.sdd` directory `sdd`, as `keys` asks for it.
pub fn audit_key(sdd: &Path, keys: KeyUse) -> Result<Option<Vec<u8>>, AuditError> {
    if keys == KeyUse::Ignore {
        return Ok(None);
    }
    let key = load_audit_key(sdd)?;
    if key.is_none() && keys == KeyUse::Required {
        return Err(AuditError::NoKey {
            key_file: Layout::at(sdd).audit_key_file(),
        });
    }
    Ok(key)
}

/// [`audit_key`] for verifying the ledger file of `layout`: a missing ledger is named as such
/// rather than as a missing key.
fn file_key(layout: &Layout, keys: KeyUse) -> Result<Option<Vec<u8>>, AuditError> {
    let key = audit_key(&layout.sdd, keys);
    if let Err(AuditError::NoKey { .. }) = key {
        let path = layout.ledger_file();
        std::fs::metadata(&path).map_err(|source| AuditError::Io { path, source })?;
    }
    key
}

/// Where the `.sdd` directory is, given either it or the project directory holding it.
pub fn resolve_sdd(dir: &Path) -> PathBuf {
    let nested = dir.join(SDD_DIR);
    if !Layout::at(dir).ledger_dir().is_dir() && Layout::at(&nested).ledger_dir().is_dir() {
        return nested;
    }
    dir.to_path_buf()
}

/// Verifies the ledger of the `.sdd` directory `dir` (a project directory holding `.sdd/` is
/// accepted too), listing its calls.
pub fn audit_verify(dir: &Path) -> Result<VerifyReport, AuditError> {
    audit_verify_with(
        dir,
        AuditOptions {
            calls: true,
            ..AuditOptions::default()
        },
    )
}

/// [`audit_verify`] with options: the record hashes to look for, and whether to list calls.
pub fn audit_verify_with(dir: &Path, options: AuditOptions) -> Result<VerifyReport, AuditError> {
    let layout = Layout::at(&resolve_sdd(dir));
    let key = file_key(&layout, options.keys)?;
    // Read the anchor before the ledger: the ledger only grows, so a checkpoint written after
    // this point cannot point past what is read below. A checkpoint that does not
    // authenticate is a failure, as it is for the server.
    let anchor = checkpoint::anchor(&layout, key.as_deref()).map_err(|reason| {
        AuditError::Failure(VerifyFailure {
            file: layout.checkpoint_file().display().to_string(),
            line: 1,
            seq: 0,
            reason: format!("the checkpoint cannot be trusted: {reason}"),
        })
    })?;
    let (mut ledger, name, io_err) = open_ledger(&layout)?;
    let verifier = LedgerVerifier::new(&name, key.as_deref())
        .with_anchor(anchor)
        .collect_calls(options.calls)
        .watch(options.watch);
    feed(&mut ledger, verifier, io_err)
}

/// The ledger file of `layout`, limited to the length it had with no append under way; its
/// name; how an I/O error reading it is reported.
#[allow(clippy::type_complexity)]
fn open_ledger(
    layout: &Layout,
) -> Result<
    (
        io::Take<File>,
        String,
        impl Fn(io::Error) -> AuditError + use<>,
    ),
    AuditError,
> {
    let path = layout.ledger_file();
    let named = path.clone();
    let io_err = move |source| AuditError::Io {
        path: named.clone(),
        source,
    };
    let file = File::open(&path).map_err(&io_err)?;
    let len = stable_len(layout, &file).map_err(&io_err)?;
    Ok((file.take(len), path.display().to_string(), io_err))
}

/// Every finding of the ledger of `dir` (see [`FindingsVerifier`]): what `audit verify` reports
/// once [`audit_verify_with`] failed. A checkpoint that cannot be read or trusted (that failure
/// is the caller's already) does not anchor it.
pub fn audit_findings(dir: &Path, options: AuditOptions) -> Result<FindingsReport, AuditError> {
    let layout = Layout::at(&resolve_sdd(dir));
    let key = file_key(&layout, options.keys)?;
    let anchor = checkpoint::anchor(&layout, key.as_deref()).unwrap_or(None);
    let (ledger, name, io_err) = open_ledger(&layout)?;
    let verifier = FindingsVerifier::new(&name, key.as_deref())
        .with_anchor(anchor)
        .watch(options.watch);
    find_in(ledger, verifier).map_err(io_err)
}

/// Reads `reader` line by line into `verifier`; its report.
pub fn find_in(reader: impl Read, mut verifier: FindingsVerifier) -> io::Result<FindingsReport> {
    let mut reader = BufReader::with_capacity(CHUNK, reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(verifier.finish(&[]));
        }
        match line.strip_suffix(b"\n") {
            Some(whole) => verifier.push_line(whole),
            None => return Ok(verifier.finish(&line)),
        }
    }
}

/// Bytes read at a time. Small enough that the buffer stays in the CPU's cache between the
/// kernel's copy into it and the scan (1 MiB reads cost ~4× the CPU of 64 KiB ones).
const CHUNK: usize = 64 << 10;

/// Why [`feed_lines`] stopped early.
#[derive(Debug)]
pub(crate) enum FeedError {
    Io(io::Error),
    Bad(VerifyFailure),
}

/// Streams `reader` through `verifier` in [`CHUNK`]s, handing it whole lines only (a line
/// longer than the buffer grows it); returns the bytes after the last `\n` (an unfinished
/// line, empty when the input ends with one).
pub(crate) fn feed_lines(
    reader: &mut impl Read,
    verifier: &mut LedgerVerifier,
) -> Result<Vec<u8>, FeedError> {
    let mut buf = vec![0u8; CHUNK];
    // `buf[..filled]` holds bytes read and not yet verified: the start of one line.
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = match reader.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FeedError::Io(e)),
        };
        if n == 0 {
            buf.truncate(filled);
            return Ok(buf);
        }
        let new = filled..filled + n;
        filled += n;
        // Only the new bytes can hold the first `\n` after the pending line's start.
        let Some(last_nl) = buf[new.clone()].iter().rposition(|&b| b == b'\n') else {
            continue;
        };
        let used = verifier
            .push_bytes(&buf[..new.start + last_nl + 1])
            .map_err(FeedError::Bad)?;
        buf.copy_within(used..filled, 0);
        filled -= used;
    }
}

/// [`feed_lines`], then the verifier's verdict on what it was fed (an unfinished last line
/// included).
fn feed(
    reader: &mut impl Read,
    mut verifier: LedgerVerifier,
    io_err: impl Fn(io::Error) -> AuditError,
) -> Result<VerifyReport, AuditError> {
    match feed_lines(reader, &mut verifier) {
        Ok(tail) => Ok(verifier.finish(&tail)?),
        Err(FeedError::Io(e)) => Err(io_err(e)),
        Err(FeedError::Bad(f)) => Err(AuditError::Failure(f)),
    }
}

/// The ledger's length, read while no writer is mid-append (under the shared lock, if the
/// store's lock file exists). Bytes before it are never rewritten by a running server.
fn stable_len(layout: &Layout, file: &File) -> io::Result<u64> {
    let lock = LedgerLock::open_existing(&layout.lock_file())?;
    let _guard = lock.as_ref().map(LedgerLock::shared).transpose()?;
    Ok(file.metadata()?.len())
}

#[cfg(test)]
mod tests {
    use bernstein_ledger::{Append, Draft, Store, seal};
    use serde_json::json;

    use super::*;
    use crate::keys::load_or_create_audit_key;
    use crate::test_dir::TestDir;

    type FileStore = crate::FileStore<bernstein_domain::Projection>;

    /// A project with `n` one-call transactions, its store closed (checkpoint written).
    fn project(n: u64) -> (TestDir, Vec<u8>) {
        let tmp = TestDir::new("audit-verify");
        let key = load_or_create_audit_key(&tmp.path().join(SDD_DIR)).unwrap();
        let store = FileStore::open(tmp.path(), key.clone()).unwrap();
        for i in 0..n {
            let snap = store.snapshot().unwrap();
            let body = json!({"tool": "bernstein_status", "call_id": format!("c{i}"), "ok": true});
            let drafts = vec![Draft::new(
                "audit",
                bernstein_ledger::audit::CALL_KIND,
                body,
            )];
            let records = seal(&snap.position, |s| snap.stream_head(s), drafts, &key);
            store
                .compare_and_append(&Append {
                    expected: snap.position,
                    read_heads: None,
                    records,
                })
                .unwrap();
        }
        (tmp, key)
    }

    #[test]
    fn clean_ledger_with_key_and_anchor() {
        let (tmp, _) = project(3);
        // The project directory is accepted as well as `.sdd`.
        for dir in [tmp.path().to_path_buf(), tmp.path().join(SDD_DIR)] {
            let report = audit_verify(&dir).unwrap();
            assert!(report.macs_checked);
            assert_eq!(report.calls.len(), 3);
            assert_eq!(report.anchor.map(|a| a.seq), Some(3));
        }
    }

    #[test]
    fn names_a_flipped_byte_and_a_cut_transaction() {
        let (tmp, _) = project(4);
        let layout = Layout::in_project(tmp.path());
        let bytes = std::fs::read(layout.ledger_file()).unwrap();
        let line3 = bytes
            .split_inclusive(|b| *b == b'\n')
            .take(2)
            .map(<[u8]>::len)
            .sum::<usize>();
        let mut flipped = bytes.clone();
        flipped[line3 + 30] ^= 0x04;
        std::fs::write(layout.ledger_file(), &flipped).unwrap();
        let Err(AuditError::Failure(f)) = audit_verify(&layout.sdd) else {
            panic!("not detected")
        };
        assert_eq!((f.line, f.seq), (3, 3));
        assert!(f.file.ends_with("ledger/ledger.jsonl"));
        // The last whole transaction removed: only the checkpoint anchor can tell.
        std::fs::write(layout.ledger_file(), &bytes[..line3]).unwrap();
        let Err(AuditError::Failure(f)) = audit_verify(&layout.sdd) else {
            panic!("not detected")
        };
        assert_eq!((f.line, f.seq), (3, 3));
        assert!(f.reason.contains("checkpointed seq 4"), "{}", f.reason);
    }

    #[test]
    fn without_the_key_macs_are_reported_unchecked() {
        let (tmp, _) = project(2);
        let layout = Layout::in_project(tmp.path());
        std::fs::remove_file(layout.audit_key_file()).unwrap();
        let report = audit_verify(&layout.sdd).unwrap();
        assert!(!report.macs_checked);
        assert!(report.summary().contains("NOT verified"));
    }

    #[test]
    fn a_required_key_that_is_missing_is_an_error_and_no_keys_ignores_one() {
        let (tmp, _) = project(2);
        let layout = Layout::in_project(tmp.path());
        let required = || AuditOptions {
            keys: KeyUse::Required,
            ..AuditOptions::default()
        };
        assert!(audit_verify_with(&layout.sdd, required()).is_ok());
        // Chains only, though the key is there.
        let report = audit_verify_with(
            &layout.sdd,
            AuditOptions {
                keys: KeyUse::Ignore,
                ..AuditOptions::default()
            },
        )
        .unwrap();
        assert!(!report.macs_checked);
        std::fs::remove_file(layout.audit_key_file()).unwrap();
        let err = audit_verify_with(&layout.sdd, required()).unwrap_err();
        assert!(matches!(err, AuditError::NoKey { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("keys/audit.key") && text.contains("--no-keys"),
            "{text}"
        );
        assert!(matches!(
            audit_findings(&layout.sdd, required()),
            Err(AuditError::NoKey { .. })
        ));
        // No ledger at all: named as such, not as a missing key.
        std::fs::remove_file(layout.ledger_file()).unwrap();
        assert!(matches!(
            audit_verify_with(&layout.sdd, required()),
            Err(AuditError::Io { .. })
        ));
    }

    #[test]
    fn findings_name_every_bad_line_and_use_the_checkpoint() {
        let (tmp, _) = project(6);
        let layout = Layout::in_project(tmp.path());
        let bytes = std::fs::read(layout.ledger_file()).unwrap();
        let mut lines: Vec<Vec<u8>> = bytes
            .split_inclusive(|b| *b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        for i in [1, 4] {
            let text = String::from_utf8(lines[i].clone()).unwrap();
            lines[i] = text
                .replace("bernstein_status", "bernstein_statux")
                .into_bytes();
        }
        // The last transaction cut off: only the checkpoint tells.
        lines.pop();
        std::fs::write(layout.ledger_file(), lines.concat()).unwrap();
        let Err(AuditError::Failure(first)) = audit_verify(&layout.sdd) else {
            panic!("not detected")
        };
        let report = audit_findings(&layout.sdd, AuditOptions::default()).unwrap();
        let at: Vec<(u64, u64)> = report.findings.iter().map(|f| (f.line, f.seq)).collect();
        assert_eq!(at, vec![(2, 2), (5, 5), (6, 6)]);
        assert_eq!(report.findings[0].reason, first.reason);
        assert!(report.findings[2].reason.contains("checkpointed seq 6"));
        assert!(report.macs_checked);
        assert_eq!(report.from_seq, Some(2));
    }

    /// Reading in pieces (interrupted ones too) finds what reading in memory finds.
    #[test]
    fn finding_in_pieces_is_finding_in_memory() {
        use bernstein_ledger::verify::find_all;
        let (tmp, _) = project(5);
        let layout = Layout::in_project(tmp.path());
        let mut bytes = std::fs::read(layout.ledger_file()).unwrap();
        bytes[40] ^= 1;
        // A byte in the middle of line 3.
        let line3 = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(1)
            .unwrap()
            .0;
        bytes[line3 + 40] ^= 1;
        bytes.truncate(bytes.len() - 3);
        let want = find_all(&bytes, "l", None, None);
        for step in [1, 7, 4096] {
            let reader = Trickle {
                bytes: &bytes,
                step,
                interrupt: false,
            };
            let got = find_in(reader, FindingsVerifier::new("l", None)).unwrap();
            assert_eq!(got, want, "step {step}");
        }
        assert_eq!(want.findings.len(), 3, "{want:#?}");
    }

    /// A reader handing out `step` bytes at a time, interrupted before every other read.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
        interrupt: bool,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// Chunked reading gives the in-memory verdict: lines longer than the buffer, lines cut
    /// by every read, an unterminated tail, a bad line after a long one.
    #[test]
    fn feeding_in_chunks_is_verifying_in_memory() {
        use bernstein_ledger::LedgerPosition;
        use bernstein_ledger::verify::verify_ledger;
        let key = b"feed-key";
        let mut at = LedgerPosition::GENESIS;
        let mut bytes = Vec::new();
        for pad in [10, 3 * CHUNK, 100, CHUNK - 300, 2 * CHUNK + 7, 5] {
            let draft = Draft::new("audit", "k", json!({ "pad": "x".repeat(pad) }));
            let rec = seal(&at, |_| at.head, vec![draft], key).remove(0);
            at = LedgerPosition {
                seq: rec.seq,
                head: rec.hash,
            };
            bytes.extend_from_slice(&rec.to_line());
        }
        let mut flipped = bytes.clone();
        let last_nl = flipped.len() - 1;
        flipped[last_nl - 40] ^= 1;
        let cases = [
            bytes.clone(),
            bytes[..bytes.len() - 1].to_vec(),
            flipped,
            bytes[..CHUNK + 5].to_vec(),
        ];
        for case in &cases {
            let want = verify_ledger(case, "l", Some(key));
            for step in [1 << 20, CHUNK, 4093, 777] {
                let mut reader = Trickle {
                    bytes: case,
                    step,
                    interrupt: false,
                };
                let got = feed(&mut reader, LedgerVerifier::new("l", Some(key)), |source| {
                    AuditError::Io {
                        path: PathBuf::new(),
                        source,
                    }
                });
                match (&want, got) {
                    (Ok(w), Ok(g)) => assert_eq!(w, &g),
                    (Err(w), Err(AuditError::Failure(g))) => assert_eq!(w, &g),
                    (w, g) => panic!("step {step}: {w:?} vs {g:?}"),
                }
            }
        }
    }

    #[test]
    fn a_missing_ledger_is_an_io_error() {
        let tmp = TestDir::new("audit-none");
        assert!(matches!(
            audit_verify(tmp.path()),
            Err(AuditError::Io { .. })
        ));
    }
}
