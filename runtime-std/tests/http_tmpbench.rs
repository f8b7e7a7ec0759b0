mod http_support;
use std::sync::Arc;
use std::time::Instant;
use bernstein_core::ledger::Store;
use bernstein_core::transport::http::HttpOptions;
use bernstein_core::Server;
use bernstein_runtime_std::clock::Clock;
use http_support::{Running, client::Conn};
use serde_json::json;
struct Std(bernstein_runtime_std::http::HttpServerHandle);
impl Running for Std { fn addr(&self) -> std::net::SocketAddr { self.0.local_addr() } }
fn launch(server: Arc<Server>, store: Arc<dyn Store>, clock: Arc<dyn Clock>, opts: HttpOptions) -> std::io::Result<Box<dyn Running>> {
    Ok(Box::new(Std(bernstein_runtime_std::http::bind(server, store, clock, opts)?)))
}
#[test]
#[ignore]
fn bench() {
    let f = http_support::start(launch, http_support::test_config(), http_support::test_options());
    for tool in ["ping", "bernstein_status", "bernstein_run"] {
        let mut c = Conn::open(f.addr());
        let n = 2000;
        let t = Instant::now();
        for i in 0..n {
            let body = if tool == "ping" { json!({"jsonrpc":"2.0","id":i,"method":"ping"}) } else { json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":tool,"arguments": if tool=="bernstein_run" {json!({"goal":format!("g{i}")})} else {json!({})}}}) };
            let r = c.post_mcp(&body, &[]);
            assert_eq!(r.status, 200);
        }
        let el = t.elapsed();
        eprintln!("{tool}: {:.1} us/call, {:.0} calls/s", el.as_micros() as f64 / n as f64, n as f64 / el.as_secs_f64());
    }
}
