//! The handshake era's `Mcp-Session-Id` over streamable HTTP: a sealed, stateless token that
//! carries what `initialize` declared, so a call on another pooled connection is served as
//! the client that initialized. The server keeps no session: the token is its memory.
//!
//! Token: base64url (no padding) of 61 bytes, 82 visible-ASCII characters:
//!
//! | bytes | what |
//! |---|---|
//! | 0 | format version, `1` |
//! | 1 | the declared capabilities ([`ClientCaps`]): bit 0 elicitation (form), 1 sampling, 2 roots |
//! | 2..5 | the negotiated revision: year − 2000, month, day |
//! | 5..13 | issued at, ms since the epoch, big-endian |
//! | 13..29 | a nonce from the engine's entropy: the session's identity |
//! | 29..61 | HMAC-SHA256 under [`Config::session_key`](crate::Config) of `bernstein.session.v1:` and bytes 0..29 |
//!
//! [`open`] checks the tag in constant time before it reads anything else, then the expiry
//! ([`EXPIRY_MS`]). No token is issued from [`Timestamp::LEGACY_SESSION_CUTOFF`] on. The
//! token names no principal and carries no credential: it only says what the client can be
//! asked, and every request is still authorized on its own.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::digest::HmacCheck;
use crate::protocol::era::Revision;
use crate::protocol::input::ClientCaps;
use crate::time::Timestamp;

/// The header, as the router reads it (lower case).
pub const HEADER: &str = "mcp-session-id";
/// How long a session id is accepted after its `initialize`: 24 hours.
pub const EXPIRY_MS: u64 = 24 * 3_600_000;
/// The longest header value [`open`] reads (a token is 82 bytes); anything longer is refused
/// unread.
pub const MAX_TOKEN_BYTES: usize = 200;

const VERSION: u8 = 1;
const LABEL: &[u8] = b"bernstein.session.v1:";
const SEALED: usize = 29;
const TOKEN_BYTES: usize = SEALED + 32;

/// A session's identity: its nonce (unguessable, and covered by the tag).
pub type SessionId = u128;

/// What a session id carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: SessionId,
    /// What the client declared in `initialize` it can be asked.
    pub caps: ClientCaps,
    /// The revision `initialize` negotiated.
    pub revision: Revision,
    pub issued: Timestamp,
}

/// Why a session id was refused: `404` for each (the client starts a new session), but
/// [`Refusal::Characters`], which is a malformed header (`400`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not visible ASCII (0x21–0x7E).
    Characters,
    /// Not a token this server issues (length, encoding, version, fields).
    Malformed,
    /// The tag does not match: changed, or sealed under another server key.
    Forged,
    /// Issued more than [`EXPIRY_MS`] ago.
    Expired,
}

impl Refusal {
    /// The stable code in `error.data.reason`.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Characters => "session_id_invalid_characters",
            Refusal::Malformed => "session_malformed",
            Refusal::Forged => "session_forged",
            Refusal::Expired => "session_expired",
        }
    }

    /// What the error message says.
    pub fn explain(self) -> &'static str {
        match self {
            Refusal::Characters => "Mcp-Session-Id must be visible ASCII (0x21-0x7E)",
            Refusal::Malformed => "Mcp-Session-Id is not a session this server issued",
            Refusal::Forged => "Mcp-Session-Id failed its integrity check",
            Refusal::Expired => "Mcp-Session-Id has expired",
        }
    }
}

fn caps_byte(caps: ClientCaps) -> u8 {
    u8::from(caps.elicitation) | u8::from(caps.sampling) << 1 | u8::from(caps.roots) << 2
}

fn revision_bytes(revision: Revision) -> [u8; 3] {
    // Revisions are `YYYY-MM-DD` constants of this crate.
    let mut parts = revision
        .as_str()
        .split('-')
        .map(|p| p.parse::<u16>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    let (year, month, day) = (next().saturating_sub(2000), next(), next());
    [year, month, day].map(|n| u8::try_from(n).unwrap_or(u8::MAX))
}

fn revision_of(b: [u8; 3]) -> Option<Revision> {
    Revision::parse(&format!(
        "{:04}-{:02}-{:02}",
        2000 + u16::from(b[0]),
        b[1],
        b[2]
    ))
}

fn tag(key: &[u8], sealed: &[u8]) -> HmacCheck {
    let mut mac = HmacCheck::new(key);
    mac.update(LABEL);
    mac.update(sealed);
    mac
}

/// The session id of `session` under `key`, or `None` from the legacy-session cut-off on
/// (`now`: the `initialize` being answered), and for a stateless-era revision.
pub fn issue(key: &[u8], session: &Session, now: Timestamp) -> Option<String> {
    if now >= Timestamp::LEGACY_SESSION_CUTOFF || session.revision.is_modern() {
        return None;
    }
    let mut bytes = Vec::with_capacity(TOKEN_BYTES);
    bytes.push(VERSION);
    bytes.push(caps_byte(session.caps));
    bytes.extend(revision_bytes(session.revision));
    bytes.extend(session.issued.0.to_be_bytes());
    bytes.extend(session.id.to_be_bytes());
    let rendered = tag(key, &bytes).tag();
    let hex = rendered.strip_prefix("hmac-sha256:").unwrap_or(&rendered);
    bytes.extend(hex::decode(hex).ok()?);
    Some(URL_SAFE_NO_PAD.encode(bytes))
}

/// The session of the header value `raw` when it was issued under `key` and has not expired
/// at `now`.
pub fn open(key: &[u8], raw: &[u8], now: Timestamp) -> Result<Session, Refusal> {
    if !raw.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(Refusal::Characters);
    }
    if raw.len() > MAX_TOKEN_BYTES {
        return Err(Refusal::Malformed);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(raw)
        .map_err(|_| Refusal::Malformed)?;
    if bytes.len() != TOKEN_BYTES {
        return Err(Refusal::Malformed);
    }
    let (sealed, mac) = bytes.split_at(SEALED);
    // Checked before anything in the token is read.
    if !tag(key, sealed).verify(&format!("hmac-sha256:{}", hex::encode(mac))) {
        return Err(Refusal::Forged);
    }
    if sealed[0] != VERSION || sealed[1] & !0b111 != 0 {
        return Err(Refusal::Malformed);
    }
    let revision = revision_of([sealed[2], sealed[3], sealed[4]])
        .filter(|r| !r.is_modern())
        .ok_or(Refusal::Malformed)?;
    let mut issued = [0; 8];
    issued.copy_from_slice(&sealed[5..13]);
    let issued = Timestamp(u64::from_be_bytes(issued));
    let mut nonce = [0; 16];
    nonce.copy_from_slice(&sealed[13..SEALED]);
    if now.0 >= issued.0.saturating_add(EXPIRY_MS) {
        return Err(Refusal::Expired);
    }
    let flags = sealed[1];
    Ok(Session {
        id: u128::from_be_bytes(nonce),
        caps: ClientCaps {
            elicitation: flags & 1 != 0,
            sampling: flags & 2 != 0,
            roots: flags & 4 != 0,
        },
        revision,
        issued,
    })
}

#[cfg(test)]
mod tests;
