//! HTTPS scenarios shared by both runtimes (runtime-smol includes this file by path), over
//! real sockets with certificates made at test time: a call and the probes over HTTPS, plain
//! HTTP refused with a clear 400, an unfinished handshake closed by the read timeout, and a
//! certificate reload under load. Generated as `#[test]`s for a runtime by [`tls_scenarios!`].
#![allow(dead_code)]

pub mod certs;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bernstein_core::transport::http::HttpOptions;
use bernstein_domain::{Projection, Server};
use bernstein_effects::host::ProjectHost;
use bernstein_effects::perform::Backend;
use bernstein_os::clock::SystemClock;
use bernstein_os::tls::ServerTls;
use bernstein_store_file::test_dir::TestDir;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

use super::http_support::{Running, test_config, test_options};

/// Starts a server of one runtime, speaking HTTPS with the certificate given.
pub type TlsLauncher = fn(
    Arc<Server>,
    Backend<Projection>,
    HttpOptions,
    Option<Arc<ServerTls>>,
) -> std::io::Result<Box<dyn Running>>;

/// An HTTPS server over a fresh store; its certificate files are `server-cert.pem` and
/// `server-key.pem` (copies of CA `a`'s leaf) under `dir`, so a test can replace them.
pub struct TlsFixture {
    pub running: Box<dyn Running>,
    pub tls: Arc<ServerTls>,
    pub a: certs::Certs,
    pub dir: TestDir,
}

impl TlsFixture {
    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr().port())
    }

    /// Installs `certs`' leaf as the server's files (not reloaded yet).
    pub fn install(&self, certs: &certs::Certs) {
        std::fs::copy(&certs.cert, self.dir.path().join("server-cert.pem")).unwrap();
        std::fs::copy(&certs.key, self.dir.path().join("server-key.pem")).unwrap();
    }
}

pub fn start(launch: TlsLauncher) -> TlsFixture {
    let dir = TestDir::new("tls");
    let a = certs::make(dir.path(), "a");
    std::fs::copy(&a.cert, dir.path().join("server-cert.pem")).unwrap();
    std::fs::copy(&a.key, dir.path().join("server-key.pem")).unwrap();
    let tls = Arc::new(
        ServerTls::load(
            &dir.path().join("server-cert.pem"),
            &dir.path().join("server-key.pem"),
        )
        .unwrap(),
    );
    let config = test_config();
    let sdd = dir.path().join("project");
    std::fs::create_dir_all(&sdd).unwrap();
    let store = bernstein_store_file::FileStore::<Projection>::open(&sdd, config.audit_key.clone())
        .expect("store opens");
    let backend = Backend::new(
        Arc::new(store),
        Arc::new(SystemClock),
        Arc::new(ProjectHost::new(&sdd)),
    );
    let running = launch(
        Arc::new(Server::new(config)),
        backend,
        test_options(),
        Some(tls.clone()),
    )
    .expect("server starts");
    TlsFixture {
        running,
        tls,
        a,
        dir,
    }
}

/// An HTTPS agent trusting the CAs in `ca` (besides the system's).
fn agent(ca: &Path) -> ureq::Agent {
    bernstein_os::https::agent(Some(ca), Duration::from_secs(30)).unwrap()
}

/// A stateless `tools/call` of `bernstein_status`: its JSON-RPC response, or why it failed.
fn status_call(agent: &ureq::Agent, url: &str, id: u64) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "bernstein_status", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "bernstein_status")
        .send(body.to_string().as_bytes())
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    if status != 200 {
        return Err(format!("HTTP {status}: {text}"));
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    if v["id"] != id || v["result"]["isError"] != false {
        return Err(format!("not the answer to call {id}: {v}"));
    }
    Ok(v)
}

/// A PEM file holding every CA of `cas`.
fn bundle(dir: &Path, name: &str, cas: &[&Path]) -> std::path::PathBuf {
    let text: String = cas
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// One kept-alive TLS connection of a rustls client trusting `ca`.
struct KeptAlive(rustls::StreamOwned<rustls::ClientConnection, TcpStream>);

impl KeptAlive {
    fn open(addr: SocketAddr, ca: &Path) -> KeptAlive {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(bernstein_os::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        KeptAlive(rustls::StreamOwned::new(conn, sock))
    }

    /// `GET /healthz` on this connection: the status and the body.
    fn healthz(&mut self) -> (u16, String) {
        let port = self.0.sock.peer_addr().unwrap().port();
        let request = format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        self.0.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(&mut self.0);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status = line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut len = None;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h == "\r\n" {
                break;
            }
            if let Some((n, v)) = h.split_once(':')
                && n.eq_ignore_ascii_case("content-length")
            {
                len = Some(v.trim().parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; len.expect("a Content-Length")];
        reader.read_exact(&mut body).unwrap();
        (status, String::from_utf8(body).unwrap())
    }

    /// The certificate the server presented on this connection.
    fn peer_leaf(&self) -> Vec<u8> {
        self.0.conn.peer_certificates().unwrap()[0].to_vec()
    }
}

/// The DER of the first certificate of a PEM file.
fn leaf_der(path: &Path) -> Vec<u8> {
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

pub fn a_call_and_the_probes_answer_over_https(launch: TlsLauncher) {
    let f = start(launch);
    let trusting = agent(&f.a.ca);
    let v = status_call(&trusting, &f.url("/mcp"), 1).unwrap();
    assert!(v["result"]["structuredContent"].is_object(), "{v}");
    let mut probe = trusting.get(&f.url("/healthz")).call().unwrap();
    assert_eq!(probe.status().as_u16(), 200);
    assert!(probe.body_mut().read_to_string().unwrap().contains("ok"));
    // A client that does not trust the CA refuses the server: nothing is answered.
    let other = certs::make(f.dir.path(), "other");
    let e = status_call(&agent(&other.ca), &f.url("/mcp"), 2).unwrap_err();
    assert!(e.contains("certificate"), "{e}");
}

pub fn plain_http_is_refused_with_a_clear_400(launch: TlsLauncher) {
    let f = start(launch);
    let port = f.addr().port();
    let mut s = TcpStream::connect(f.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let request =
        format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 2\r\n\r\n{{}}");
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(
        answer.contains(&format!("https://127.0.0.1:{port}/")),
        "{answer}"
    );
    // The server goes on serving HTTPS.
    status_call(&agent(&f.a.ca), &f.url("/mcp"), 1).unwrap();
}

pub fn unfinished_or_foreign_handshakes_are_closed(launch: TlsLauncher) {
    let f = start(launch);
    // A TLS record header promising a ClientHello that never comes: the read timeout ends it.
    // A first byte that is neither TLS nor an HTTP method: closed at once.
    for first in [
        &[0x16u8, 0x03, 0x01, 0x02, 0x00][..],
        &[0x00, 0x01, 0x02][..],
    ] {
        let mut s = TcpStream::connect(f.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(first).unwrap();
        let mut rest = Vec::new();
        match s.read_to_end(&mut rest) {
            Ok(_) => {}
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
    }
    status_call(&agent(&f.a.ca), &f.url("/mcp"), 1).unwrap();
}

pub fn a_reload_under_load_loses_no_request(launch: TlsLauncher) {
    let f = start(launch);
    let b = certs::make(f.dir.path(), "b");
    let both = bundle(f.dir.path(), "both.pem", &[&f.a.ca, &b.ca]);
    let mut kept = KeptAlive::open(f.addr(), &f.a.ca);
    assert_eq!(kept.healthz().0, 200);
    assert_eq!(kept.peer_leaf(), leaf_der(&f.a.cert));

    // A client keeps calling, each call on a new connection, while the certificate changes.
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let (stop, calls, failures) = (stop.clone(), calls.clone(), failures.clone());
        let (url, agent) = (f.url("/mcp"), agent(&both));
        std::thread::spawn(move || {
            let mut id = 0;
            while !stop.load(Ordering::SeqCst) || id < 20 {
                id += 1;
                if let Err(e) = status_call(&agent, &url, id) {
                    eprintln!("call {id} failed: {e}");
                    failures.fetch_add(1, Ordering::SeqCst);
                }
                calls.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    while calls.load(Ordering::SeqCst) < 5 {
        std::thread::yield_now();
    }
    f.install(&b);
    f.tls.reload().unwrap();
    // New connections see the new certificate: a client trusting only the old CA refuses it.
    status_call(&agent(&b.ca), &f.url("/mcp"), 1).unwrap();
    let e = status_call(&agent(&f.a.ca), &f.url("/mcp"), 2).unwrap_err();
    assert!(e.contains("certificate"), "{e}");
    // The connection opened before the reload carries on with its certificate.
    assert_eq!(kept.healthz().0, 200);
    assert_eq!(kept.peer_leaf(), leaf_der(&f.a.cert));
    let fresh = KeptAlive::open(f.addr(), &b.ca);
    let mut fresh = fresh;
    assert_eq!(fresh.healthz().0, 200);
    assert_eq!(fresh.peer_leaf(), leaf_der(&b.cert));

    // A reload from a bad file fails, says why, and keeps the certificate in use.
    std::fs::write(f.dir.path().join("server-cert.pem"), "not a certificate").unwrap();
    let e = f.tls.reload().unwrap_err();
    assert!(
        e.contains("server-cert.pem") && e.contains("no PEM certificate"),
        "{e}"
    );
    status_call(&agent(&b.ca), &f.url("/mcp"), 3).unwrap();

    let before = calls.load(Ordering::SeqCst);
    while calls.load(Ordering::SeqCst) < before + 5 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::SeqCst);
    load.join().unwrap();
    assert_eq!(
        failures.load(Ordering::SeqCst),
        0,
        "calls lost across the reload"
    );
}

/// Generates one `#[test]` per HTTPS scenario for a launcher.
#[macro_export]
macro_rules! tls_scenarios {
    ($launch:expr) => {
        $crate::tls_scenarios!(@tests $launch;
            a_call_and_the_probes_answer_over_https,
            plain_http_is_refused_with_a_clear_400,
            unfinished_or_foreign_handshakes_are_closed,
            a_reload_under_load_loses_no_request,
        );
    };
    (@tests $launch:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                tls_support::$name($launch);
            }
        )*
    };
}
