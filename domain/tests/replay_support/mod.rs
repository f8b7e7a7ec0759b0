//! The recorded journals of `tests/fixtures/` as the core's integration tests see them: the
//! files of each fixture, the configuration it was recorded with, its ledger folded with
//! `Snapshot::apply`, and a replay of its recorded requests through `Server::handle`.
//!
//! The replay rebuilds everything from the requests alone: each request is served against the
//! snapshot the replay has folded so far, at the clock value the recording's audit record of
//! that call carries (the only input a recording does not otherwise hold), and its records are
//! folded next. What it produces must equal the recording byte for byte; any difference names
//! the first request, record or reply that moved.
#![allow(dead_code)]
// Test support: reads fixture files. The purity rules bind domain/src, not its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

use bernstein_core::config::{Config, Tier};
use bernstein_core::ledger::audit::CALL_KIND;
use bernstein_core::ledger::{AUDIT_STREAM, Record};
use bernstein_core::protocol::TransportFacts;
use bernstein_core::time::Timestamp;
use bernstein_core::transport::{Line, LineFramer};
use bernstein_domain::Snapshot;
use bernstein_domain::bound::{Input, Server};
use serde_json::Value;

/// One recorded journal.
#[derive(Debug)]
pub struct Fixture {
    pub name: String,
    pub dir: PathBuf,
    /// `fixture.json`: how it was recorded (command, environment, runs, tools).
    pub meta: Value,
    /// `requests.jsonl`, as the client wrote it.
    pub requests: Vec<u8>,
    /// `responses.jsonl`: the server's stdout lines, without their `\n`.
    pub responses: Vec<Vec<u8>>,
    /// `ledger.jsonl`.
    pub ledger: Vec<u8>,
    pub audit_key: Vec<u8>,
    pub signing_seed: Option<[u8; 32]>,
    /// `status.json`: `bernstein status --json` on a copy of the recorded store.
    pub status_json: String,
    /// `verify.txt`: `bernstein audit verify --verbose` on a copy of the recorded store.
    pub verify_txt: String,
}

/// `tests/fixtures/` of the repository.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// Decodes a key file (64 lowercase hex digits and a newline).
pub fn hex_key(text: &str) -> Vec<u8> {
    let hex = text.trim();
    assert!(
        hex.len().is_multiple_of(2) && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "not a hex key"
    );
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex digits"))
        .collect()
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

/// Splits `bytes` into lines without their `\n` (a final unterminated part counts as a line).
pub fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() {
        return Vec::new();
    }
    body.split(|&b| b == b'\n').collect()
}

impl Fixture {
    pub fn load(dir: &Path) -> Fixture {
        let meta: Value =
            serde_json::from_slice(&read(dir, "fixture.json")).expect("fixture.json is JSON");
        let signing = dir.join("keys/signing.ed25519");
        let signing_seed = signing.exists().then(|| {
            let key = hex_key(&std::fs::read_to_string(&signing).expect("signing key readable"));
            key.try_into().expect("a 32-byte signing seed")
        });
        Fixture {
            name: dir
                .file_name()
                .expect("a fixture dir name")
                .to_string_lossy()
                .into_owned(),
            dir: dir.to_path_buf(),
            requests: read(dir, "requests.jsonl"),
            responses: split_lines(&read(dir, "responses.jsonl"))
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect(),
            ledger: read(dir, "ledger.jsonl"),
            audit_key: hex_key(
                &String::from_utf8(read(dir, "keys/audit.key")).expect("key is text"),
            ),
            signing_seed,
            status_json: String::from_utf8(read(dir, "status.json")).expect("status.json is UTF-8"),
            verify_txt: String::from_utf8(read(dir, "verify.txt")).expect("verify.txt is UTF-8"),
            meta,
        }
    }

    pub fn ledger_lines(&self) -> Vec<&[u8]> {
        split_lines(&self.ledger)
    }

    /// The ledger's records, each checked under the audit key.
    pub fn records(&self) -> Vec<Record> {
        self.ledger_lines()
            .iter()
            .enumerate()
            .map(|(i, l)| {
                Record::parse_line(l, Some(&self.audit_key))
                    .unwrap_or_else(|e| panic!("{}: ledger line {}: {e}", self.name, i + 1))
            })
            .collect()
    }

    /// The whole ledger folded with `Snapshot::apply`.
    pub fn fold(&self) -> Snapshot {
        let mut snap = Snapshot::genesis();
        for rec in self.records() {
            snap.apply(&rec)
                .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        }
        snap
    }

    /// The value of a `BERNSTEIN_*` variable the recording set.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.meta
            .get("env")
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
    }

    /// The configuration `bernstein mcp` ran with when this was recorded.
    pub fn config(&self) -> Config {
        let mut config = Config::new(self.audit_key.clone());
        let command: Vec<&str> = self.meta["command"]
            .as_array()
            .expect("fixture.json names its command")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        config.tier = match command.iter().position(|a| *a == "--mcp-tier") {
            Some(i) => command[i + 1].parse::<Tier>().expect("a tier"),
            None => Tier::default(),
        };
        config.cost_meter = self.env("BERNSTEIN_MCP_COST_METER") != Some("0");
        if let Some(seed) = &self.signing_seed {
            config = config.with_signing_seed(seed);
        }
        config
    }

    pub fn server(&self) -> Server {
        Server::new(self.config())
    }

    /// The run ids the recording started.
    pub fn runs(&self) -> Vec<String> {
        self.meta["runs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Every fixture under `tests/fixtures/` (a directory holding `ledger.jsonl`). Panics when
/// there is none: the replay tests must not pass vacuously.
pub fn all() -> Vec<Fixture> {
    let dir = fixtures_dir();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("ledger.jsonl").is_file())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "no recorded journals under {}",
        dir.display()
    );
    dirs.iter().map(|d| Fixture::load(d)).collect()
}

/// The `_meter.latency_ms` a recorded reply carries (0 when it has none), found in the
/// structured content or, escaped, in the text block (revisions before structured content).
pub fn recorded_latency(line: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(line);
    text.split("latency_ms")
        .skip(1)
        .find_map(|rest| {
            let rest = rest.trim_start_matches(['\\', '"']).strip_prefix(':')?;
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// The clock value of the next `tools/call` at or after record index `from`: the `ts` of the
/// first `mcp.stateless_call` audit record there.
pub fn next_call_time(records: &[Record], from: usize) -> Timestamp {
    records[from.min(records.len())..]
        .iter()
        .find(|r| r.stream == AUDIT_STREAM && r.kind == CALL_KIND)
        .and_then(|r| r.body.get("ts").and_then(Value::as_u64))
        .map_or(Timestamp(0), Timestamp)
}

/// What a replay produced.
#[derive(Debug)]
pub struct Replay {
    pub ledger: Vec<u8>,
    /// Server lines (notifications and replies), rendered with the recorded latencies.
    pub lines: Vec<Vec<u8>>,
    pub snapshot: Snapshot,
    /// The snapshot each request was served against, by request index.
    pub served_at: Vec<Snapshot>,
}

/// Describes the first difference between two byte strings.
pub fn first_difference(what: &str, got: &[u8], want: &[u8]) -> String {
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let window = |b: &[u8]| {
        let start = at.saturating_sub(60);
        String::from_utf8_lossy(&b[start..(at + 60).min(b.len())]).into_owned()
    };
    format!(
        "{what} differs at byte {at} (lengths {} vs {}):\n  replayed: …{}…\n  recorded: …{}…",
        got.len(),
        want.len(),
        window(got),
        window(want)
    )
}

/// Replays `fx.requests` through the core and compares as it goes; `Err` names the first
/// difference from the recording.
pub fn replay(fx: &Fixture) -> Result<Replay, String> {
    let server = fx.server();
    let recorded = fx.records();
    let mut framer = LineFramer::new(server.config.limits.max_message_bytes);
    framer.handle_bytes(&fx.requests);
    framer.handle_eof();
    let mut facts = TransportFacts::stdio(None);
    let mut snapshot = Snapshot::genesis();
    let mut ledger = Vec::new();
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut served_at = Vec::new();
    let mut cursor = 0usize;
    let mut index = 0usize;
    while let Some(line) = framer.poll_line() {
        index += 1;
        let bytes = match line {
            Line::Message(b) if b.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Message(b) => b,
            Line::Oversize(n) => {
                lines.push(server.oversize_reply(n));
                continue;
            }
        };
        served_at.push(snapshot.clone());
        let now = next_call_time(&recorded, cursor);
        let outcome = server.handle(&Input {
            bytes: &bytes,
            snapshot: &snapshot,
            now,
            transport: &facts,
        });
        if let Some(v) = &outcome.negotiated_version {
            facts.protocol_version = Some(v.clone());
        }
        if let Some(append) = &outcome.append {
            if append.expected != snapshot.position {
                return Err(format!(
                    "request {index}: append expects {:?}, head is {:?}",
                    append.expected, snapshot.position
                ));
            }
            for rec in &append.records {
                let Some(want) = recorded.get(cursor) else {
                    return Err(format!(
                        "request {index}: replay appends seq {} beyond the recording",
                        rec.seq
                    ));
                };
                let (got_line, want_line) = (rec.to_line(), want.to_line());
                if got_line != want_line {
                    return Err(first_difference(
                        &format!("request {index}: record seq {}", rec.seq),
                        &got_line,
                        &want_line,
                    ));
                }
                snapshot
                    .apply(rec)
                    .map_err(|e| format!("request {index}: {e}"))?;
                ledger.extend_from_slice(&got_line);
                cursor += 1;
            }
        }
        lines.extend(outcome.notifications.iter().cloned());
        if let Some(response) = &outcome.response {
            let latency = fx
                .responses
                .get(lines.len())
                .map_or(0, |l| recorded_latency(l));
            lines.push(response.render(latency));
        }
        let upto = lines.len().min(fx.responses.len());
        if let Some(i) = (0..upto).find(|&i| lines[i] != fx.responses[i]) {
            return Err(first_difference(
                &format!("request {index}: server line {}", i + 1),
                &lines[i],
                &fx.responses[i],
            ));
        }
    }
    if cursor != recorded.len() {
        return Err(format!(
            "replay produced {cursor} records, the recording holds {}",
            recorded.len()
        ));
    }
    if lines.len() != fx.responses.len() {
        return Err(format!(
            "replay produced {} server lines, the recording holds {}",
            lines.len(),
            fx.responses.len()
        ));
    }
    Ok(Replay {
        ledger,
        lines,
        snapshot,
        served_at,
    })
}

/// The JSON value of a snapshot (maps sorted, so two equal projections compare equal whatever
/// their hash maps' iteration order).
pub fn snapshot_value(s: &Snapshot) -> Value {
    serde_json::to_value(s).expect("a snapshot serializes")
}
