//! One connection task: it owns its socket (and on an HTTPS server its [`TlsSession`]), reads
//! a chunk when its engine asks for it, writes what it is sent, and ends when told to close or
//! when a read or write fails.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bernstein_os::tls::{Received, TlsSession};
use smol::channel::{Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::{Async, Timer, future};

use super::Event;
use super::crossing::{Hubs, Tie};

/// A connection task as its engine task sees it: where to send what to write, and what the
/// two share (what it has not written yet, whom it reports to).
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) tx: Sender<ToConn>,
    pub(crate) tie: Arc<Tie>,
}

/// What an engine task tells a connection task.
#[derive(Debug)]
pub(crate) enum ToConn {
    Send(Vec<u8>),
    /// Read the next chunk.
    More,
    Close {
        finish: bool,
    },
}

/// How connection tasks write: the write timeout, and the bound on what a connection may have
/// unsent (the engine's; crossing back under it wakes the engine's task).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Writes {
    pub(crate) timeout: Duration,
    pub(crate) bound: usize,
    /// How long, and for how many bytes, a finished connection lingers.
    pub(crate) linger: (Duration, usize),
}

/// One running connection task, counted on its thread while it lives; its end tells that
/// thread's engine task (a shutdown waits for them to write their last bytes).
pub(crate) struct Live {
    pub(crate) hubs: Arc<Hubs>,
    pub(crate) thread: usize,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.hubs.ended(self.thread);
        let _ = self.hubs.door(self.thread).try_send(Event::Ended);
    }
}

/// The connection task's side of its [`Tie`]: whom it reports to, and what it has not
/// written of what it was sent, counted down as it writes.
pub(crate) struct Owner {
    pub(crate) hubs: Arc<Hubs>,
    pub(crate) tie: Arc<Tie>,
    pub(crate) bound: usize,
}

impl Owner {
    /// The engine task this connection reports to now.
    fn events(&self) -> &Sender<Event> {
        self.hubs.door(self.tie.owner.load(Ordering::Acquire))
    }

    async fn tell(&self, event: Event) -> bool {
        self.events().send(event).await.is_ok()
    }

    /// The peer is gone (or the connection failed).
    async fn closed(&self, id: u64) {
        self.tie.ended.store(true, Ordering::Release);
        let _ = self.tell(Event::Closed(id)).await;
    }

    /// `n` bytes were written: falling back to the bound wakes the engine's task, which may
    /// wait for that.
    fn written(&self, n: usize) {
        let before = self.tie.unsent.fetch_sub(n, Ordering::AcqRel);
        if before > self.bound && before - n <= self.bound {
            let _ = self.events().try_send(Event::Drained);
        }
    }
}

/// What a connection task does next.
enum Step {
    Told(Option<ToConn>),
    Read(io::Result<Vec<u8>>),
}

/// Most bytes one read takes.
const CHUNK: usize = 16 * 1024;

/// Reads the next chunk once the socket is readable (empty at end of stream). The buffer lives
/// only between readiness and the read, never across an await: a connection waiting on a long
/// poll holds no buffer, and its task stays small.
async fn read_chunk(stream: &Async<TcpStream>) -> io::Result<Vec<u8>> {
    loop {
        stream.readable().await?;
        let mut buf = [0u8; CHUNK];
        match stream.get_ref().read(&mut buf) {
            Ok(n) => return Ok(buf[..n].to_vec()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// One connection: reads a chunk when the engine asks for it, writes what it is sent, ends
/// when told to close (or when a read or write fails).
pub(crate) async fn connection(
    id: u64,
    mut stream: Async<TcpStream>,
    mut tls: Option<Box<TlsSession>>,
    rx: Receiver<ToConn>,
    writes: Writes,
    owner: Owner,
) {
    // The first chunk is wanted at once; each later one when the engine says so.
    let mut wanted = true;
    let mut eof = false;
    loop {
        let step = if wanted && !eof {
            future::or(async { Step::Told(rx.recv().await.ok()) }, async {
                Step::Read(read_chunk(&stream).await)
            })
            .await
        } else {
            Step::Told(rx.recv().await.ok())
        };
        match step {
            Step::Told(None) => break,
            Step::Told(Some(ToConn::More)) => wanted = true,
            Step::Told(Some(ToConn::Send(bytes))) => {
                let written = match tls.as_mut() {
                    None => write_timed(&mut stream, &bytes, writes.timeout, Some(&owner)).await,
                    Some(tls) => {
                        let mut sealed = Vec::with_capacity(bytes.len() + 64);
                        tls.send(&bytes, &mut sealed);
                        let w = write_timed(&mut stream, &sealed, writes.timeout, None).await;
                        owner.written(bytes.len());
                        w
                    }
                };
                if written.is_err() {
                    owner.closed(id).await;
                    break;
                }
            }
            Step::Told(Some(ToConn::Close { finish })) => {
                if let Some(tls) = tls.as_mut() {
                    let mut notify = Vec::new();
                    tls.close(&mut notify);
                    let _ = write_timed(&mut stream, &notify, writes.timeout, None).await;
                }
                if finish {
                    finish_stream(stream, writes.linger).await;
                }
                break;
            }
            Step::Read(Ok(bytes)) if bytes.is_empty() => {
                eof = true;
                owner.closed(id).await;
            }
            Step::Read(Ok(raw)) if tls.is_some() => {
                let Some(session) = tls.as_mut() else {
                    break;
                };
                let (mut plain, mut out) = (Vec::new(), Vec::new());
                let received = session.receive(&raw, &mut plain, &mut out);
                let wrote = write_timed(&mut stream, &out, writes.timeout, None).await;
                if !plain.is_empty() {
                    wanted = false;
                    if !owner.tell(Event::Bytes(id, plain)).await {
                        break;
                    }
                }
                match received {
                    Received::Open if wrote.is_ok() => {}
                    Received::PeerClosed if wrote.is_ok() => {
                        eof = true;
                        owner.closed(id).await;
                    }
                    received => {
                        if let Received::Failed(why) = &received
                            && let Ok(peer) = stream.get_ref().peer_addr()
                        {
                            let _ = owner.tell(Event::TlsFailed(peer, why.clone())).await;
                        }
                        owner.closed(id).await;
                        if received == Received::PlainHttp && wrote.is_ok() {
                            finish_stream(stream, writes.linger).await;
                        }
                        break;
                    }
                }
            }
            Step::Read(Ok(bytes)) => {
                wanted = false;
                if !owner.tell(Event::Bytes(id, bytes)).await {
                    break;
                }
            }
            Step::Read(Err(_)) => {
                owner.closed(id).await;
                break;
            }
        }
    }
    owner.tie.ended.store(true, Ordering::Release);
}

/// Writes `bytes`, failing when a write makes no progress for `limit` (a peer that reads slowly
/// but steadily is not dropped), and counts down what is left to write as it goes.
async fn write_timed(
    stream: &mut Async<TcpStream>,
    bytes: &[u8],
    limit: Duration,
    owner: Option<&Owner>,
) -> io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        let n = future::or(stream.write(&bytes[done..]), async {
            Timer::after(limit).await;
            Err(io::ErrorKind::TimedOut.into())
        })
        .await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        done += n;
        if let Some(owner) = owner {
            owner.written(n);
        }
    }
    Ok(())
}

/// Ends a connection after its last response: half-close, then read and drop what the peer
/// is still sending (briefly, boundedly), so closing does not reset the connection before the
/// peer has read the response.
async fn finish_stream(mut stream: Async<TcpStream>, linger: (Duration, usize)) {
    let _ = stream.get_ref().shutdown(Shutdown::Write);
    let deadline = Instant::now() + linger.0;
    // On the heap: an array here would sit in every connection task's future.
    let mut scratch = vec![0u8; 8192];
    let mut budget: usize = linger.1;
    while budget > 0 {
        let read = future::or(async { Some(stream.read(&mut scratch).await) }, async {
            Timer::at(deadline).await;
            None
        })
        .await;
        match read {
            Some(Ok(n)) if n > 0 => budget = budget.saturating_sub(n),
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    /// A held long poll costs its connection task: that task must not carry a read buffer or
    /// a scratch array (it was ≈ 24 KiB a connection, 237 MiB at 10,000 polls).
    #[test]
    fn a_connection_task_holds_no_buffer() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let stream = Async::new(client).unwrap();
        let (events, _events_rx) = smol::channel::unbounded();
        let (_tx, rx) = smol::channel::unbounded();
        let owner = Owner {
            hubs: Hubs::new(vec![events]),
            tie: Tie::new(0),
            bound: 64 * 1024,
        };
        let writes = Writes {
            timeout: Duration::from_secs(1),
            bound: 64 * 1024,
            linger: (Duration::from_millis(500), 1 << 20),
        };
        let task = connection(1, stream, None, rx, writes, owner);
        let size = std::mem::size_of_val(&task);
        assert!(size < 1024, "a connection task's future is {size} bytes");
    }
}
