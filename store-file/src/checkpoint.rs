//! The projection checkpoint `.sdd/ledger/checkpoint.json`: a serialized [`Snapshot`] (of
//! the store's fold) with the file offset it reflects, so that opening a large ledger folds only what came after it.
//!
//! File form (one line): `{"checkpoint":<body>,"mac":"hmac-sha256:<hex>"}` where `<body>` is
//! the JSON of [`Body`] and the tag is HMAC-SHA256 of exactly those body bytes under the audit
//! key. It is written atomically (temp file, fsync, rename, directory fsync); the writer holds
//! an advisory lock on its temp file until the rename, so a temp file nobody holds the lock of
//! was left by a writer that died mid-write, and [`sweep_stale`] removes it. On open its tag
//! must verify (else the store refuses to open: [`read`]), and the store checks that the
//! ledger verified from its first byte reaches exactly the position and stream heads it
//! records; its projection is reused only when this software and format wrote it. It never
//! lets the store trust bytes it has not verified: it only saves re-folding them.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

use bernstein_ledger::digest::HmacCheck;
use bernstein_ledger::{LedgerPosition, Snapshot};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::Checkpointed;
use super::layout::{CHECKPOINT_FILE, Layout, sync_dir};
use super::ledger_file::Folded;

/// The ledger format the checkpoint's records were read in (3: every record tags its hash). A
/// checkpoint of another format is not reused: its ledger is read from the start, and a
/// ledger of an older format is refused there with a message naming `bernstein ledger upgrade`.
pub const FORMAT: u32 = 3;
/// The software that wrote a checkpoint; another version's projection may differ, so its
/// checkpoints are ignored. The name is the crate's that first wrote checkpoints, kept so that
/// checkpoints written before the store had a crate of its own stay reusable.
pub const SOFTWARE: &str = concat!("bernstein-runtime-std ", env!("CARGO_PKG_VERSION"));

const PREFIX: &[u8] = b"{\"checkpoint\":";
const MAC_FIELD: &[u8] = b",\"mac\":\"";
const SUFFIX: &[u8] = b"\"}\n";
/// `hmac-sha256:` and 64 hex digits.
const TAG_LEN: usize = "hmac-sha256:".len() + 64;

/// What a checkpoint records.
#[derive(Debug, Serialize)]
#[serde(bound = "F: Checkpointed")]
struct BodyRef<'a, F> {
    format: u32,
    software: &'a str,
    offset: u64,
    last_line_start: u64,
    lines: u64,
    snapshot: &'a Snapshot<F>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, bound = "F: Checkpointed")]
struct Body<F> {
    format: u32,
    software: String,
    offset: u64,
    last_line_start: u64,
    lines: u64,
    snapshot: Snapshot<F>,
}

/// Writes a checkpoint of `folded` (nothing when nothing is folded). The ledger (`ledger`, a
/// handle of the ledger file) is synced first so that a checkpoint never points past durable
/// records.
pub fn write<F: Checkpointed>(
    layout: &Layout,
    key: &[u8],
    folded: &Folded<F>,
    ledger: &File,
) -> io::Result<()> {
    if folded.lines == 0 {
        return Ok(());
    }
    ledger.sync_data()?;
    let dir = layout.ledger_dir();
    let (mut file, tmp) = crate::temp_files::create_locked(&dir, CHECKPOINT_FILE)?;
    let written = (|| {
        // Streamed: the body (the projection, hundreds of MiB at a million records) is never
        // held in memory whole; its tag is computed over the bytes as they are written. The
        // serializer's many small writes are buffered before the tag and the file see them:
        // tagging token by token took a quarter of a checkpoint's CPU.
        file.write_all(PREFIX)?;
        let mut out = io::BufWriter::with_capacity(
            1 << 16,
            Tagged {
                file,
                mac: HmacCheck::new(key),
            },
        );
        serde_json::to_writer(
            &mut out,
            &BodyRef {
                format: FORMAT,
                software: SOFTWARE,
                offset: folded.offset,
                last_line_start: folded.last_line_start,
                lines: folded.lines,
                snapshot: &folded.snapshot,
            },
        )
        .map_err(io::Error::other)?;
        let Tagged { mut file, mac } = out.into_inner().map_err(|e| e.into_error())?;
        file.write_all(MAC_FIELD)?;
        file.write_all(mac.tag().as_bytes())?;
        file.write_all(SUFFIX)?;
        file.sync_all()?;
        std::fs::rename(&tmp, layout.checkpoint_file())?;
        sync_dir(&dir)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Removes the checkpoint temp files that writers which died mid-write left in the ledger
/// directory (a killed server would otherwise leave up to a checkpoint's size behind each
/// time); returns how many. See [`crate::temp_files::sweep_stale`].
pub fn sweep_stale(layout: &Layout) -> io::Result<usize> {
    crate::temp_files::sweep_stale(&layout.ledger_dir(), &[CHECKPOINT_FILE])
}

/// The checkpoint file being written, with the HMAC of the body bytes written through it.
struct Tagged<W> {
    file: W,
    mac: HmacCheck,
}

impl<W: Write> Write for Tagged<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.mac.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Reads and authenticates the checkpoint at `path` in one streaming pass: the bytes parsed are
/// the bytes tagged, and the file is never held in memory whole (at a million records it is
/// hundreds of MiB, which an allocator may keep after they are freed).
fn read_body<F: Checkpointed>(path: &Path, key: Option<&[u8]>) -> Result<Option<Body<F>>, String> {
    let unreadable = |e: io::Error| format!("unreadable: {e}");
    let Some((file, len)) = open_file(path).map_err(unreadable)? else {
        return Ok(None);
    };
    let (body_len, tag) = read_frame(&file, len)?;
    let body_at = PREFIX.len() as u64;
    let mut tagging = Tagging {
        at: 0,
        region: body_at..body_at + body_len,
        mac: key.map(HmacCheck::new),
    };
    let parsed = {
        let mut reader = BufReader::with_capacity(
            1 << 20,
            TagRegion {
                inner: (&file).take(body_at + body_len),
                state: &mut tagging,
            },
        );
        // The prefix was checked by `read_frame` (and is outside the tagged region).
        reader
            .read_exact(&mut [0u8; PREFIX.len()])
            .map_err(unreadable)?;
        let mut stream = serde_json::Deserializer::from_reader(reader).into_iter::<Body<F>>();
        match stream.next() {
            Some(Ok(body)) if stream.byte_offset() as u64 == body_len => Ok(body),
            Some(Ok(_)) => Err("unreadable body: not exactly one JSON value".to_string()),
            Some(Err(e)) => Err(format!("unreadable body: {e}")),
            None => Err("unreadable body: empty".to_string()),
        }
    };
    // The file's offset is where the reader stopped; a body the parse stopped inside is still
    // tagged whole, so that a forged checkpoint is named as one whatever else is wrong with it.
    let left = tagging.region.end.saturating_sub(tagging.at);
    io::copy(
        &mut TagRegion {
            inner: (&file).take(left),
            state: &mut tagging,
        },
        &mut io::sink(),
    )
    .map_err(unreadable)?;
    if tagging.at < tagging.region.end {
        return Err("unreadable: the checkpoint shrank while it was read".into());
    }
    if let Some(mac) = tagging.mac
        && !mac.verify(&tag)
    {
        return Err("its HMAC tag does not verify under this audit key".into());
    }
    parsed.map(Some)
}

/// The checkpoint file and its length; `None` when there is none. Opened without blocking, and
/// refused unless it is a regular file: a FIFO put in its place must not hang the open.
fn open_file(path: &Path) -> io::Result<Option<(File, u64)>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(Some((file, meta.len())))
}

/// The body's length and the tag of a checkpoint file of `len` bytes, after checking the
/// bytes around the body (`{"checkpoint":` and `,"mac":"<tag>"}` and a newline).
fn read_frame(file: &File, len: u64) -> Result<(u64, String), String> {
    let tail_len = (MAC_FIELD.len() + TAG_LEN + SUFFIX.len()) as u64;
    let body_len = len
        .checked_sub(PREFIX.len() as u64 + tail_len)
        .ok_or("not in checkpoint form")?;
    let mut head = [0u8; PREFIX.len()];
    let mut tail = vec![0u8; tail_len as usize];
    file.read_exact_at(&mut head, 0)
        .and_then(|()| file.read_exact_at(&mut tail, PREFIX.len() as u64 + body_len))
        .map_err(|e| format!("unreadable: {e}"))?;
    let tag = tail
        .strip_prefix(MAC_FIELD)
        .and_then(|t| t.strip_suffix(SUFFIX))
        .and_then(|t| std::str::from_utf8(t).ok())
        .filter(|_| head == PREFIX)
        .ok_or("not in checkpoint form")?;
    Ok((body_len, tag.to_string()))
}

/// Where a read of the checkpoint file stands, and the tag of its body region so far.
struct Tagging {
    /// The file offset of the next byte read.
    at: u64,
    /// The body's bytes, the ones the tag covers.
    region: std::ops::Range<u64>,
    mac: Option<HmacCheck>,
}

/// A reader of the checkpoint file that feeds what it reads to [`Tagging`].
struct TagRegion<'a, R> {
    inner: R,
    state: &'a mut Tagging,
}

impl<R: Read> Read for TagRegion<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let s = &mut *self.state;
        let end = s.at + n as u64;
        if let Some(mac) = s.mac.as_mut() {
            let from = s.at.max(s.region.start);
            let to = end.min(s.region.end);
            if from < to {
                mac.update(&buf[(from - s.at) as usize..(to - s.at) as usize]);
            }
        }
        s.at = end;
        Ok(n)
    }
}

/// The offset the checkpoint file claims, read from its first bytes without authenticating
/// it: only a hint, so that the ledger before it can be verified while the (large) checkpoint
/// is read and authenticated; the caller compares it with the authenticated offset.
pub fn peek_offset(layout: &Layout) -> Option<u64> {
    let mut head = [0u8; 512];
    let (mut file, _) = open_file(&layout.checkpoint_file()).ok()??;
    let n = file.read(&mut head).ok()?;
    let text = head[..n].strip_prefix(PREFIX)?;
    const KEY: &[u8] = b"\"offset\":";
    let at = text.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let digits = text[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&text[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

/// An authenticated checkpoint.
#[derive(Debug)]
pub struct Checkpoint<F: Checkpointed> {
    /// What it records; its projection is usable only when [`Checkpoint::reusable`].
    pub folded: Folded<F>,
    /// Written by this software and format, so its projection is what this software's fold
    /// would give (another version's checkpoint still pins the position).
    pub reusable: bool,
}

/// The checkpoint, authenticated under `key`: `Ok(None)` when there is none, `Err` naming why
/// one that is there cannot be trusted (never silently ignored: the server refuses to open).
pub fn read<F: Checkpointed>(layout: &Layout, key: &[u8]) -> Result<Option<Checkpoint<F>>, String> {
    let Some(b) = read_body(&layout.checkpoint_file(), Some(key))? else {
        return Ok(None);
    };
    let reusable = b.format == FORMAT && b.software == SOFTWARE;
    if !reusable {
        bernstein_os::log_line!(
            "bernstein: checkpoint {} was written by {} (format {}), this is {SOFTWARE} (format {FORMAT}): folding the ledger from the start",
            layout.checkpoint_file().display(),
            b.software,
            b.format
        );
    }
    Ok(Some(Checkpoint {
        folded: Folded {
            snapshot: Arc::new(b.snapshot),
            offset: b.offset,
            last_line_start: b.last_line_start,
            lines: b.lines,
        },
        reusable,
    }))
}

/// The position a checkpoint records as durable, for the offline verifier (which checks the
/// ledger against it). The tag is checked when the key is known. Streams the file (the
/// checkpoint of a large ledger is large): memory stays small whatever its size, and only the
/// position is decoded.
pub fn anchor(layout: &Layout, key: Option<&[u8]>) -> Result<Option<LedgerPosition>, String> {
    let unreadable = |e: io::Error| format!("unreadable: {e}");
    let Some((mut file, len)) = open_file(&layout.checkpoint_file()).map_err(unreadable)? else {
        return Ok(None);
    };
    let (body_len, tag) = read_frame(&file, len)?;
    fn body(file: &mut File, len: u64) -> io::Result<BufReader<io::Take<&mut File>>> {
        file.seek(SeekFrom::Start(PREFIX.len() as u64))?;
        Ok(BufReader::with_capacity(1 << 20, file.take(len)))
    }
    if let Some(key) = key {
        let mut check = HmacCheck::new(key);
        let mut reader = body(&mut file, body_len).map_err(unreadable)?;
        loop {
            let chunk = reader.fill_buf().map_err(unreadable)?;
            if chunk.is_empty() {
                break;
            }
            check.update(chunk);
            let n = chunk.len();
            reader.consume(n);
        }
        if !check.verify(&tag) {
            return Err("its HMAC tag does not verify under this audit key".into());
        }
    }
    // The position is the snapshot's first field, a few hundred bytes into the body as this
    // writer lays it out: read from there, not by walking the whole body (a fifth of
    // `audit verify`'s time at a million records). The tag, checked above over every byte,
    // is what vouches for the rest; a body laid out otherwise is read whole.
    let mut head = Vec::with_capacity(HEAD);
    body(&mut file, body_len)
        .and_then(|r| r.take(HEAD as u64).read_to_end(&mut head))
        .map_err(unreadable)?;
    if let Some(position) = position_in_head(&head) {
        return Ok(Some(position));
    }
    #[derive(Deserialize)]
    struct Anchor {
        snapshot: AnchorSnapshot,
    }
    #[derive(Deserialize)]
    struct AnchorSnapshot {
        position: LedgerPosition,
    }
    let reader = body(&mut file, body_len).map_err(unreadable)?;
    serde_json::from_reader::<_, Anchor>(reader)
        .map(|a| Some(a.snapshot.position))
        .map_err(|e| format!("unreadable body: {e}"))
}

/// How much of a body's start is searched for the snapshot's position.
const HEAD: usize = 4096;

/// The snapshot's position when the body starts as [`write`] lays it out: the scalar fields of
/// [`BodyRef`], then the snapshot, whose first field is its position.
fn position_in_head(head: &[u8]) -> Option<LedgerPosition> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "read only to check the body's layout")]
    struct Scalars {
        format: IgnoredAny,
        software: IgnoredAny,
        offset: IgnoredAny,
        last_line_start: IgnoredAny,
        lines: IgnoredAny,
    }
    const SNAPSHOT: &[u8] = b",\"snapshot\":{\"position\":";
    let at = head.windows(SNAPSHOT.len()).position(|w| w == SNAPSHOT)?;
    // Everything before the snapshot must be exactly the scalar fields, so the match above is
    // the body's own key and not the same bytes inside another field.
    let mut scalars = head[..at].to_vec();
    scalars.push(b'}');
    serde_json::from_slice::<Scalars>(&scalars).ok()?;
    let rest = &head[at + SNAPSHOT.len()..];
    serde_json::Deserializer::from_slice(rest)
        .into_iter::<LedgerPosition>()
        .next()?
        .ok()
}
