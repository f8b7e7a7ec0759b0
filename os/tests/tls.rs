//! Loading a server's certificate (every bad input named, the good one served) and one TLS
//! session driven in memory against a rustls client: handshake, data both ways, close.

#[path = "../../runtime-std/tests/tls_support/certs.rs"]
mod certs;

use std::io::{Read, Write};
use std::sync::Arc;

use bernstein_os::tls::{Received, ServerTls};
use temp::TempDir;

mod temp {
    //! A temporary directory removed on drop (this crate's tests depend on no workspace crate).
    pub struct TempDir(pub std::path::PathBuf);
    impl TempDir {
        pub fn new(label: &str) -> TempDir {
            let n = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let dir = std::env::temp_dir()
                .join(format!("bernstein-os-{label}-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn every_bad_file_is_named_with_what_is_wrong() {
    let tmp = TempDir::new("tls-load");
    let a = certs::make(&tmp.0, "a");
    let b = certs::make(&tmp.0, "b");
    let missing = tmp.0.join("missing.pem");
    let cases = [
        (&missing, &a.key, "missing.pem: cannot read it"),
        (&a.key, &a.key, "a-key.pem: no PEM certificate in it"),
        (&a.cert, &a.cert, "a-cert.pem: no PEM private key"),
        (
            &a.cert,
            &b.key,
            "b-key.pem: it is not the key of the certificate in",
        ),
    ];
    for (cert, key, expected) in cases {
        let e = ServerTls::load(cert, key).unwrap_err();
        assert!(e.contains(expected), "{e} lacks {expected:?}");
    }
    assert!(ServerTls::load(&a.cert, &a.key).is_ok());
}

/// Moves what one side has to write into the other until neither has anything.
fn pump(
    client: &mut rustls::ClientConnection,
    server: &mut bernstein_os::tls::TlsSession,
    plain: &mut Vec<u8>,
) -> Received {
    let mut last = Received::Open;
    for _ in 0..10 {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        let mut back = Vec::new();
        if !wire.is_empty() {
            last = server.receive(&wire, plain, &mut back);
        }
        if back.is_empty() && wire.is_empty() {
            break;
        }
        let mut rest = &back[..];
        while !rest.is_empty() {
            client.read_tls(&mut rest).unwrap();
            client.process_new_packets().unwrap();
        }
    }
    last
}

#[test]
fn a_session_handshakes_carries_data_both_ways_and_closes() {
    let tmp = TempDir::new("tls-session");
    let a = certs::make(&tmp.0, "a");
    let tls = ServerTls::load(&a.cert, &a.key).unwrap();
    let mut server = tls.session(None).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for c in rustls::pki_types::CertificateDer::pem_file_iter(&a.ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(bernstein_os::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut client = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut plain = Vec::new();
    assert_eq!(pump(&mut client, &mut server, &mut plain), Received::Open);
    assert!(!client.is_handshaking() && !server.is_handshaking());

    client
        .writer()
        .write_all(b"GET / HTTP/1.1\r\n\r\n")
        .unwrap();
    pump(&mut client, &mut server, &mut plain);
    assert_eq!(plain, b"GET / HTTP/1.1\r\n\r\n");

    let mut sealed = Vec::new();
    server.send(b"HTTP/1.1 200 OK\r\n\r\n", &mut sealed);
    assert!(!sealed.windows(6).any(|w| w == b"200 OK"), "sent in clear");
    let mut rest = &sealed[..];
    while !rest.is_empty() {
        client.read_tls(&mut rest).unwrap();
    }
    client.process_new_packets().unwrap();
    let mut answer = [0u8; 19];
    client.reader().read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200 OK\r\n\r\n");

    client.send_close_notify();
    assert_eq!(
        pump(&mut client, &mut server, &mut plain),
        Received::PeerClosed
    );
}
