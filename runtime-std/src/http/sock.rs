//! One client socket of the loop: the bytes the engine asked to send that the kernel has not
//! taken yet (encrypted first when the socket speaks TLS), and how the socket ends (closed
//! once written, or half-closed and drained briefly, so that closing does not reset a
//! connection whose response the peer has not read).

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use bernstein_os::tls::TlsSession;
use mio::net::TcpStream;

/// Where a socket stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// Serving.
    Open,
    /// The engine asked to close it once its bytes are written (`finish`: half-close and
    /// drain first).
    AfterWrite { finish: bool },
    /// Half-closed: read and dropped until the peer closes, the linger passes or its bytes
    /// were read (`HttpLimits::linger`, `HttpLimits::linger_bytes`).
    Draining { until: Instant, budget: usize },
}

#[derive(Debug)]
pub(super) struct Sock {
    pub(super) stream: TcpStream,
    /// The connection's TLS, when the server speaks HTTPS (dropped once it failed: what is
    /// written then is already in `out`).
    pub(super) tls: Option<TlsSession>,
    /// How long, and for how many bytes, it lingers once finished.
    linger: (Duration, usize),
    out: Vec<u8>,
    sent: usize,
    /// Since when the bytes that wait for the kernel made no progress (the write timeout runs
    /// from then: a peer that reads slowly but steadily is not dropped).
    pub(super) stalled: Option<Instant>,
    pub(super) ending: Ending,
    /// The peer sent its end (no more reads).
    pub(super) eof: bool,
    /// The kernel had nothing more when last read (a read took less than asked) and no
    /// readiness was reported since: reading now would only say `WouldBlock`. The poll is
    /// edge-triggered, so bytes that arrive later are reported as a new event, which clears
    /// it. Never set once the peer's end was reported, so that its end is read to the EOF.
    pub(super) drained: bool,
    /// The poll reported the peer's end, or an error, on this socket.
    pub(super) hung_up: bool,
    /// Reading was paused: the engine wants no more bytes from it for now.
    pub(super) paused: bool,
    /// Whether the registration asks for writability too.
    pub(super) wants_write: bool,
}

/// What became of a socket after something was done to it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fate {
    Alive,
    /// Drop it (closed, finished draining, or broken).
    Gone,
}

impl Sock {
    pub(super) fn new(
        stream: TcpStream,
        tls: Option<TlsSession>,
        linger: (Duration, usize),
    ) -> Sock {
        Sock {
            stream,
            tls,
            linger,
            out: Vec::new(),
            sent: 0,
            stalled: None,
            ending: Ending::Open,
            eof: false,
            drained: false,
            hung_up: false,
            paused: false,
            wants_write: false,
        }
    }

    /// Queues `bytes` (encrypted on a TLS socket) and writes what the kernel takes now.
    pub(super) fn send(&mut self, bytes: &[u8], now: Instant) -> Fate {
        match self.tls.as_mut() {
            Some(tls) => {
                let mut sealed = Vec::with_capacity(bytes.len() + 64);
                tls.send(bytes, &mut sealed);
                self.send_raw(&sealed, now)
            }
            None => self.send_raw(bytes, now),
        }
    }

    /// Queues bytes as they go on the wire and writes what the kernel takes now.
    pub(super) fn send_raw(&mut self, bytes: &[u8], now: Instant) -> Fate {
        if matches!(self.ending, Ending::Draining { .. }) {
            return Fate::Alive;
        }
        if self.out.is_empty() {
            // The common case: written straight from the engine's buffer.
            match write_some(&mut self.stream, bytes) {
                Ok(n) if n == bytes.len() => return Fate::Alive,
                Ok(n) => self.out.extend_from_slice(&bytes[n..]),
                Err(_) => return Fate::Gone,
            }
            self.stalled = Some(now);
            return Fate::Alive;
        }
        self.out.extend_from_slice(bytes);
        self.flush(now)
    }

    /// Writes what waits; once nothing does, carries out a pending close.
    pub(super) fn flush(&mut self, now: Instant) -> Fate {
        let mut progress = false;
        if self.sent < self.out.len() {
            match write_some(&mut self.stream, &self.out[self.sent..]) {
                Ok(n) => {
                    self.sent += n;
                    progress = n > 0;
                }
                Err(_) => return Fate::Gone,
            }
        }
        if self.sent < self.out.len() {
            if progress || self.stalled.is_none() {
                self.stalled = Some(now);
            }
            return Fate::Alive;
        }
        self.out.clear();
        self.sent = 0;
        self.stalled = None;
        match self.ending {
            Ending::AfterWrite { finish: false } => Fate::Gone,
            Ending::AfterWrite { finish: true } => {
                let _ = self.stream.shutdown(Shutdown::Write);
                self.ending = Ending::Draining {
                    until: now + self.linger.0,
                    budget: self.linger.1,
                };
                self.drain(now)
            }
            Ending::Open | Ending::Draining { .. } => Fate::Alive,
        }
    }

    /// Whether bytes wait for the kernel.
    pub(super) fn has_pending(&self) -> bool {
        self.sent < self.out.len()
    }

    /// How many bytes wait for the kernel.
    pub(super) fn unsent(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Closes once what was queued is written.
    pub(super) fn close(&mut self, finish: bool, now: Instant) -> Fate {
        if self.ending == Ending::Open {
            if let Some(tls) = self.tls.as_mut() {
                let mut notify = Vec::new();
                tls.close(&mut notify);
                self.out.extend_from_slice(&notify);
            }
            self.ending = Ending::AfterWrite { finish };
        }
        self.flush(now)
    }

    /// Reads and drops what a half-closed peer still sends.
    pub(super) fn drain(&mut self, now: Instant) -> Fate {
        let Ending::Draining { until, budget } = &mut self.ending else {
            return Fate::Alive;
        };
        let mut scratch = [0u8; 8192];
        loop {
            if now >= *until || *budget == 0 {
                return Fate::Gone;
            }
            match self.stream.read(&mut scratch) {
                Ok(0) => return Fate::Gone,
                Ok(n) => *budget = budget.saturating_sub(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Fate::Alive,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Fate::Gone,
            }
        }
    }

    /// The instant by which something must happen to this socket, if any: its write runs out
    /// `write_timeout` after its last progress, its drain ends.
    pub(super) fn deadline(&self, write_timeout: Duration) -> Option<Instant> {
        match self.ending {
            Ending::Draining { until, .. } => Some(until),
            _ => self.stalled.map(|s| s + write_timeout),
        }
    }
}

/// Writes as much of `bytes` as the kernel takes now.
fn write_some(stream: &mut TcpStream, bytes: &[u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < bytes.len() {
        match stream.write(&bytes[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
