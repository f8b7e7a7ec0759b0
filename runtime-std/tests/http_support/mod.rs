//! Shared by the HTTP integration tests of both runtimes (runtime-smol includes this file by
//! path): a raw HTTP/1.1 client over `TcpStream`, fixtures over a real `FileStore` in a temp
//! dir, and the scenarios themselves, generated as `#[test]`s for a runtime by
//! [`http_scenarios!`]. Each scenario starts its own server on 127.0.0.1 port 0.
#![allow(dead_code)]

pub mod client;
pub mod scenarios;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bernstein_core::time::{Clock, FixedClock};
use bernstein_core::transport::http::HttpOptions;
use bernstein_core::{Config, Timestamp};
use bernstein_domain::{Projection, Server};
use bernstein_effects::host::ProjectHost;
use bernstein_effects::perform::Backend;
type FileStore = bernstein_store_file::FileStore<bernstein_domain::Projection>;
use bernstein_os::clock::SystemClock;
use bernstein_store_file::test_dir::TestDir;

/// A running server of either runtime; dropping it stops the server.
pub trait Running {
    fn addr(&self) -> SocketAddr;
}

/// Starts a server of one runtime.
pub type Launcher =
    fn(Arc<Server>, Backend<Projection>, HttpOptions) -> std::io::Result<Box<dyn Running>>;

/// A server over a fresh `.sdd/` in a temp dir. Field order: the server stops before the
/// directory goes.
pub struct Fixture {
    pub running: Box<dyn Running>,
    pub dir: TestDir,
}

impl Fixture {
    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }
}

/// Options for tests: port 0 and limits small enough to hit quickly.
pub fn test_options() -> HttpOptions {
    let mut o = HttpOptions {
        port: 0,
        ..HttpOptions::default()
    };
    o.limits.max_body_bytes = 64 * 1024;
    o.limits.read_timeout = Duration::from_millis(1500);
    o.limits.workers = 4;
    o.limits.sse_keepalive = Duration::from_millis(300);
    o
}

/// A test configuration (fixed audit key, HTTP transports advertised).
pub fn test_config() -> Config {
    let mut c = Config::new(vec![7u8; 32]);
    c.transports = vec!["streamable-http".into(), "sse".into()];
    c
}

/// Starts `launch` over a fresh store with the system clock.
pub fn start(launch: Launcher, config: Config, options: HttpOptions) -> Fixture {
    start_at(launch, config, options, None)
}

/// Starts `launch` with a clock stopped at `now` (or the system clock).
pub fn start_at(
    launch: Launcher,
    config: Config,
    options: HttpOptions,
    now: Option<Timestamp>,
) -> Fixture {
    let dir = TestDir::new("srv");
    let store = FileStore::open(dir.path(), config.audit_key.clone()).expect("store opens");
    let clock: Arc<dyn Clock> = match now {
        Some(t) => Arc::new(FixedClock(t)),
        None => Arc::new(SystemClock),
    };
    let host = Arc::new(ProjectHost::new(dir.path()));
    let backend = Backend::new(Arc::new(store), clock, host);
    let running = launch(Arc::new(Server::new(config)), backend, options).expect("server starts");
    Fixture { running, dir }
}

/// Generates one `#[test]` per scenario for a launcher; with `two engines in MODULE`, every
/// scenario again in `MODULE` on a server of two engines (`HttpOptions::engines`).
#[macro_export]
macro_rules! http_scenarios {
    ($launch:ident, two engines in $module:ident) => {
        $crate::http_scenarios!($launch);

        mod $module {
            use super::*;

            fn launch_two(
                server: std::sync::Arc<bernstein_domain::Server>,
                backend: bernstein_effects::perform::Backend<bernstein_domain::Projection>,
                mut opts: bernstein_core::transport::http::HttpOptions,
            ) -> std::io::Result<Box<dyn http_support::Running>> {
                opts.engines = 2;
                $launch(server, backend, opts)
            }

            $crate::http_scenarios!(launch_two);
        }
    };
    ($launch:expr) => {
        $crate::http_scenarios!(@tests $launch;
            handshake_round_trip_on_one_keep_alive_connection,
            json_or_sse_by_accept,
            pipelined_requests_are_answered_in_order,
            pipelined_answers_over_the_bound_reach_a_late_reader_in_order,
            streams_and_feeds_at_the_cap_close_the_idle_longest,
            oversize_body_gets_413,
            oversize_headers_get_431,
            bad_bodies_get_structured_errors,
            truncated_body_then_close_leaves_the_server_serving,
            request_then_half_close_is_answered_and_ends,
            expect_continue_and_chunked_bodies,
            slowloris_connections_do_not_starve_others,
            connection_cap_answers_503,
            legacy_sse_round_trip,
            bearer_auth_over_the_wire,
            legacy_session_header_after_the_cutoff,
            handshake_session_ids_across_connections,
            stateless_era_headers,
            get_and_unknown_paths,
            foreign_hosts_are_refused_on_every_route,
            idle_legacy_streams_close_and_free_the_cap,
            waits_beyond_the_workers_are_woken_by_a_write,
        );
    };
    (@tests $launch:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                http_support::scenarios::$name($launch);
            }
        )*
    };
}
