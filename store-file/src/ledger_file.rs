//! The ledger file `.sdd/ledger/ledger.jsonl`: positional appends (made durable by the store's
//! group commit), and the incremental fold of whatever was appended after the already-verified
//! prefix.
//!
//! Folding reads only the bytes after [`Folded::offset`], verifies each record (canonical
//! form, hash, MAC, seq, ledger and stream chains, transaction framing, with the same rules as
//! `bernstein audit verify`) and applies whole transactions to the snapshot. The bytes after
//! the last whole transaction are a torn tail only if they are an unfinished append: a last line
//! without `\n`, a last line that is not a valid record, or an incomplete last transaction.
//! Anything bad before that is corruption and is reported, never cut. This module never cuts
//! anything at or before [`Folded::offset`].

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bernstein_ledger::digest::Digest;
use bernstein_ledger::line::{RecordKey, RecordLine, SealError};
use bernstein_ledger::verify::{TxnFraming, chain_error};
use bernstein_ledger::{Fold, LedgerPosition, Record, RecordError, Snapshot, StoreError};

use super::layout::sync_dir;

/// The verified, folded prefix of the ledger.
#[derive(Clone, Debug)]
pub struct Folded<F: Fold> {
    pub snapshot: Arc<Snapshot<F>>,
    /// Byte offset just past the last folded record (always a transaction boundary).
    pub offset: u64,
    /// Byte offset where the last folded record's line starts (0 when nothing is folded).
    pub last_line_start: u64,
    /// Lines of the file folded so far.
    pub lines: u64,
}

impl<F: Fold> Folded<F> {
    /// Nothing folded yet.
    pub fn genesis() -> Folded<F> {
        Folded {
            snapshot: Arc::new(Snapshot::genesis()),
            offset: 0,
            last_line_start: 0,
            lines: 0,
        }
    }
}

/// What to do with a torn tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailPolicy {
    /// Cut it (the caller holds the exclusive lock, so no writer is mid-append).
    Repair,
    /// Leave it and fold only up to it (the caller holds the shared lock).
    Ignore,
}

/// An unfinished append found after the last whole transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset where it starts (where the file is cut).
    pub at: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// 1-based line where it starts.
    pub line: u64,
    pub reason: String,
}

/// What one catch-up did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatchUp {
    /// Records folded.
    pub records: u64,
    /// The torn tail found (and cut, under [`TailPolicy::Repair`]).
    pub torn: Option<TornTail>,
}

/// The open ledger file.
#[derive(Debug)]
pub struct LedgerFile {
    file: File,
    /// Its path, and the device and inode it had there.
    place: Place,
}

/// Where an open file was found: its path and the device and inode it had there (they never
/// change while it is open), to tell whether the path still names it.
#[derive(Clone, Debug)]
pub struct Place {
    path: PathBuf,
    identity: (u64, u64),
}

impl Place {
    /// The file's size when the path still names the open file, `None` when it was replaced or
    /// removed behind the store's back (one `stat` of the path answers both).
    pub fn size_if_still_here(&self) -> io::Result<Option<u64>> {
        match std::fs::metadata(&self.path) {
            Ok(there) if self.identity == (there.dev(), there.ino()) => Ok(Some(there.len())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl LedgerFile {
    /// Opens the ledger, creating it (mode 0600, directory fsynced) if it does not exist.
    pub fn open(path: &Path) -> io::Result<LedgerFile> {
        let created = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        let file = match created {
            Ok(file) => {
                if let Some(dir) = path.parent() {
                    sync_dir(dir)?;
                }
                file
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                OpenOptions::new().read(true).write(true).open(path)?
            }
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        Ok(LedgerFile {
            place: Place {
                path: path.to_path_buf(),
                identity: (meta.dev(), meta.ino()),
            },
            file,
        })
    }

    /// The path as named in errors.
    pub fn name(&self) -> String {
        self.place.path.display().to_string()
    }

    pub fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// Where the file was opened, to tell later whether its path still names it.
    pub fn place(&self) -> Place {
        self.place.clone()
    }

    /// Reads `len` bytes at `offset`.
    pub fn read_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0; len];
        self.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    /// Writes `bytes` at `offset`, not yet durable (the store's group commit fsyncs them). On
    /// failure it tries to cut the file back to `offset`, so that a half-written append does
    /// not linger.
    pub fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if let Err(e) = self.file.write_all_at(bytes, offset) {
            let _ = self.truncate(offset);
            return Err(e);
        }
        Ok(())
    }

    /// A second descriptor of the file, for reading it from the start without moving the
    /// store's own.
    pub fn reader(&self) -> io::Result<File> {
        File::open(&self.place.path).and_then(|f| {
            // The same file as the one the store holds, not one put in its place.
            let (a, b) = (f.metadata()?, self.file.metadata()?);
            if a.dev() == b.dev() && a.ino() == b.ino() {
                Ok(f)
            } else {
                Err(io::Error::other(
                    "the ledger file was replaced while being opened",
                ))
            }
        })
    }

    /// A second descriptor of the file, for fsyncs made without the store's mutex.
    pub fn sync_handle(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// Makes everything written so far durable.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Cuts the file to `len` bytes, durably.
    pub fn truncate(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.file.sync_data()
    }

    /// Folds the complete transactions after `folded.offset` up to `len` (the file's size, just
    /// read) into `folded`, verifying every record under `key`. A torn tail is cut or left
    /// according to `policy`. On `Err` the snapshot in `folded` may be partly updated and must
    /// be discarded.
    pub fn catch_up<F: Fold>(
        &self,
        folded: &mut Folded<F>,
        key: &RecordKey,
        policy: TailPolicy,
        len: u64,
    ) -> Result<CatchUp, StoreError> {
        if len < folded.offset {
            return Err(StoreError::Corrupt {
                file: self.name(),
                line: folded.lines,
                seq: folded.snapshot.position.seq,
                reason: format!(
                    "the ledger shrank to {len} bytes, below the {} bytes already verified: records were removed",
                    folded.offset
                ),
            });
        }
        if len == folded.offset {
            return Ok(CatchUp::default());
        }
        let mut region = &self.file;
        region
            .seek(SeekFrom::Start(folded.offset))
            .map_err(|e| self.io_error("seek", &e))?;
        let mut reader = BufReader::with_capacity(1 << 20, region.take(len - folded.offset));
        let start = folded.offset;
        let mut scan = Scan::new(folded, key);
        if len - start >= PIPELINE_BYTES {
            self.scan_pipelined(&mut reader, &mut scan, start, len)?;
        } else {
            let mut buf = Vec::new();
            loop {
                buf.clear();
                let n = reader
                    .read_until(b'\n', &mut buf)
                    .map_err(|e| self.io_error("read", &e))?;
                if n == 0 {
                    break;
                }
                let is_last = scan.pos + n as u64 == len;
                let read = ReadLine::of(&buf, key);
                if let Some(reason) = scan.line(read, is_last).map_err(|c| self.corrupt(c))? {
                    scan.torn = Some(reason);
                    break;
                }
            }
        }
        let (records, torn_reason) = scan.finish();
        let torn = torn_reason.map(|reason| TornTail {
            at: folded.offset,
            bytes: len - folded.offset,
            line: folded.lines + 1,
            reason,
        });
        if let (Some(t), TailPolicy::Repair) = (&torn, policy) {
            self.truncate(t.at)
                .map_err(|e| self.io_error("truncate", &e))?;
            bernstein_os::log_line!(
                "bernstein: ledger {}: cut a torn tail of {} bytes at line {} (seq {}): {}",
                self.name(),
                t.bytes,
                t.line,
                folded.snapshot.position.seq + 1,
                t.reason
            );
        }
        Ok(CatchUp { records, torn })
    }

    /// The scan of a long region (a first open without a checkpoint): one thread reads lines
    /// and checks each one's hash and tag (the larger part of the work), the calling thread
    /// checks the chains and folds, in order. Same verdicts as the one-thread scan.
    fn scan_pipelined<F: Fold>(
        &self,
        reader: &mut (impl BufRead + Send),
        scan: &mut Scan<'_, F>,
        start: u64,
        len: u64,
    ) -> Result<(), StoreError> {
        let key = scan.key;
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<io::Result<Vec<(ReadLine, bool)>>>(4);
            let reading = s.spawn(move || {
                let mut pos = start;
                let mut buf = Vec::new();
                loop {
                    let mut batch = Vec::with_capacity(PIPELINE_BATCH);
                    let mut ended = false;
                    while batch.len() < PIPELINE_BATCH {
                        buf.clear();
                        match reader.read_until(b'\n', &mut buf) {
                            Ok(0) => {
                                ended = true;
                                break;
                            }
                            Ok(n) => {
                                pos += n as u64;
                                batch.push((ReadLine::of(&buf, key), pos == len));
                            }
                            Err(e) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                        }
                    }
                    if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
                        return; // the folding side stopped at a bad or torn line
                    }
                    if ended {
                        return;
                    }
                }
            });
            let mut outcome = Ok(());
            'batches: for batch in rx.iter() {
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        outcome = Err(self.io_error("read", &e));
                        break;
                    }
                };
                for (read, is_last) in batch {
                    match scan.line(read, is_last) {
                        Ok(None) => {}
                        Ok(Some(reason)) => {
                            scan.torn = Some(reason);
                            break 'batches;
                        }
                        Err(c) => {
                            outcome = Err(self.corrupt(c));
                            break 'batches;
                        }
                    }
                }
            }
            drop(rx);
            let _ = reading.join();
            outcome
        })
    }

    fn corrupt(&self, c: Corruption) -> StoreError {
        if let Some(error) = c.whole {
            return error(self.name());
        }
        StoreError::Corrupt {
            file: self.name(),
            line: c.line,
            seq: c.seq,
            reason: c.reason,
        }
    }

    fn io_error(&self, what: &str, e: &io::Error) -> StoreError {
        StoreError::Io(format!("{what} {}: {e}", self.name()))
    }
}

/// A region at least this long is scanned on two threads ([`LedgerFile::scan_pipelined`]).
/// The unit tests lower it so that their ledgers (torn, cut, edited) take both paths.
const PIPELINE_BYTES: u64 = if cfg!(test) { 1 << 10 } else { 8 << 20 };
/// Lines handed from the reading thread to the folding one at a time.
const PIPELINE_BATCH: usize = 256;

/// One line as read: its length (with its `\n`), and, when it ends with one, the record it
/// holds checked under the key (or why it is none).
struct ReadLine {
    len: usize,
    record: Option<Result<Record, RecordError>>,
}

impl ReadLine {
    fn of(buf: &[u8], key: &RecordKey) -> ReadLine {
        ReadLine {
            len: buf.len(),
            record: buf.strip_suffix(b"\n").map(|body| read_line(body, key)),
        }
    }
}

/// Reads and checks one line (without its `\n`) under `key`.
pub fn read_line(line: &[u8], key: &RecordKey) -> Result<Record, RecordError> {
    Record::from_checked(&checked_line(line, key)?)
}

/// [`read_line`]'s verdict without building the record: what an append checks of its own
/// lines before writing them.
pub fn check_line(line: &[u8], key: &RecordKey) -> Result<(), RecordError> {
    let raw = checked_line(line, key)?;
    // The one step of building the record that can still fail is parsing its body (the scan
    // checked the syntax, serde's nesting limit is checked here); nothing is built.
    serde_json::from_slice::<serde::de::IgnoredAny>(raw.body)
        .map(drop)
        .map_err(|e| RecordError::Malformed(e.to_string()))
}

fn checked_line<'a>(line: &'a [u8], key: &RecordKey) -> Result<RecordLine<'a>, RecordError> {
    let raw = RecordLine::scan(line).ok_or_else(|| Record::scan_refusal(line))?;
    raw.check(Some(key))
        .map_err(|e: SealError| RecordError::from(e))?;
    Ok(raw)
}

/// A bad entry before the tail.
#[derive(Debug)]
struct Corruption {
    line: u64,
    seq: u64,
    reason: String,
    /// The first record names the whole ledger, not damage: it does not verify under the key
    /// (a key mismatch), or it carries an older format's tag.
    whole: Option<fn(String) -> StoreError>,
}

impl Corruption {
    fn whole(error: fn(String) -> StoreError) -> Corruption {
        Corruption {
            line: 1,
            seq: 1,
            reason: String::new(),
            whole: Some(error),
        }
    }
}

/// The state of one catch-up: the records of the transaction being read, checked against the
/// folded prefix plus themselves, applied when the transaction is complete.
struct Scan<'a, F: Fold> {
    folded: &'a mut Folded<F>,
    key: &'a RecordKey,
    /// Byte offset of the next line.
    pos: u64,
    /// (line start offset, record) of the open transaction.
    pending: Vec<(u64, Record)>,
    /// Stream heads as moved by `pending`.
    pending_heads: std::collections::HashMap<String, Digest>,
    framing: TxnFraming,
    folded_records: u64,
    torn: Option<String>,
}

impl<'a, F: Fold> Scan<'a, F> {
    fn new(folded: &'a mut Folded<F>, key: &'a RecordKey) -> Scan<'a, F> {
        let pos = folded.offset;
        Scan {
            folded,
            key,
            pos,
            pending: Vec::new(),
            pending_heads: Default::default(),
            framing: TxnFraming::default(),
            folded_records: 0,
            torn: None,
        }
    }

    fn position(&self) -> LedgerPosition {
        self.pending
            .last()
            .map_or(self.folded.snapshot.position, |(_, r)| LedgerPosition {
                seq: r.seq,
                head: r.hash,
            })
    }

    /// Handles one line as read. `Ok(Some(reason))`: the tail from the open transaction's
    /// start is torn.
    fn line(&mut self, read: ReadLine, is_last: bool) -> Result<Option<String>, Corruption> {
        let line_no = self.folded.lines + self.pending.len() as u64 + 1;
        let at = self.position();
        let fail = |reason: String| Corruption {
            line: line_no,
            seq: at.seq + 1,
            reason,
            whole: None,
        };
        let Some(record) = read.record else {
            return Ok(Some(format!(
                "the last line has no newline ({} bytes)",
                read.len
            )));
        };
        let rec = match record {
            Ok(rec) => rec,
            // A crash mid-append leaves a prefix of what was written: an unterminated line, or
            // bytes that are no record at all. A line whose hash is right but whose MAC is
            // missing or wrong is no accident of a crash: it was made without the key.
            Err(RecordError::BadMac) if line_no == 1 => {
                return Err(Corruption::whole(|file| StoreError::KeyMismatch { file }));
            }
            Err(RecordError::Format2Mac) if line_no == 1 => {
                return Err(Corruption::whole(|file| StoreError::OldFormat { file }));
            }
            Err(e @ (RecordError::MissingMac | RecordError::BadMac | RecordError::Format2Mac)) => {
                return Err(fail(format!("bad record: {e}")));
            }
            Err(e) if is_last => {
                return Ok(Some(format!("the last line is not a valid record: {e}")));
            }
            Err(e) => return Err(fail(format!("bad record: {e}"))),
        };
        let stream_head = self
            .pending_heads
            .get(&rec.stream)
            .copied()
            .unwrap_or_else(|| self.folded.snapshot.stream_head(&rec.stream));
        if let Some(reason) = chain_error(&at, stream_head, &rec) {
            return Err(fail(reason));
        }
        let completes = self.framing.check(rec.txn).map_err(fail)?;
        let start = self.pos;
        self.pos += read.len as u64;
        self.pending_heads.insert(rec.stream.clone(), rec.hash);
        self.pending.push((start, rec));
        if completes {
            self.apply_pending().map_err(fail)?;
        }
        Ok(None)
    }

    fn apply_pending(&mut self) -> Result<(), String> {
        let snapshot = Arc::make_mut(&mut self.folded.snapshot);
        for (start, rec) in self.pending.drain(..) {
            // The chain was checked above; `apply` checks it again and cannot disagree.
            snapshot.apply(&rec).map_err(|e| e.to_string())?;
            self.folded.last_line_start = start;
            self.folded.lines += 1;
            self.folded_records += 1;
        }
        self.pending_heads.clear();
        self.folded.offset = self.pos;
        Ok(())
    }

    /// Records folded, and the torn tail's reason if the scan ended inside a transaction.
    fn finish(self) -> (u64, Option<String>) {
        let torn = self.torn.or_else(|| {
            self.framing.expected().map(|[index, count]| {
                format!(
                    "the ledger ends inside a transaction (record {index} of {count} is missing)"
                )
            })
        });
        (self.folded_records, torn)
    }
}
