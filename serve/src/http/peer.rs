//! Whether an HTTP peer closed its connection (closing the response stream cancels the
//! request, too).

use std::io;
use std::net::TcpStream;

/// Whether the peer of a non-blocking socket has closed it (or reset it). Data waiting to be
/// read (a pipelined request) means it is still there.
pub fn peer_closed_nonblocking(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
        ),
    }
}

/// [`peer_closed_nonblocking`] for a blocking socket: switched to non-blocking for the look.
pub fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let closed = peer_closed_nonblocking(stream);
    let _ = stream.set_nonblocking(false);
    closed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn a_closed_peer_is_seen_and_an_open_one_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        assert!(!peer_closed(&server));
        client.write_all(b"x").unwrap();
        assert!(!peer_closed(&server), "pending data is not a close");
        drop(client);
        // The FIN may take a moment on loopback.
        let mut closed = false;
        for _ in 0..100 {
            let mut b = [0u8; 8];
            // Drain the byte, then look again.
            let _ = server.set_nonblocking(true);
            let _ = std::io::Read::read(&mut &server, &mut b);
            let _ = server.set_nonblocking(false);
            if peer_closed(&server) {
                closed = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(closed);
    }
}
