//! Timing of the core's strict JSON parse (duplicate keys refused) against serde_json's on a
//! typical `tools/call` message; it lives here because the core may not read a clock:
//! `cargo test -p bernstein-runtime-std --release --test strict_json_timing -- --ignored --nocapture`.

use bernstein_core::protocol::strict_json::parse;
use serde_json::Value;

#[test]
#[ignore]
fn timing_against_serde_json() {
    let text = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"bernstein_post_artifact","arguments":{"task_id":"t-0123456789","key":"docs/report.md","kind":"report","title":"Nightly","content":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.","tags":["a","b","c"]},"_meta":{"progressToken":"p-1","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#;
    let n = 200_000;
    let time = |f: &dyn Fn() -> Value| {
        let start = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(f());
        }
        start.elapsed().as_nanos() as f64 / f64::from(n)
    };
    for _ in 0..2 {
        let plain = time(&|| serde_json::from_str::<Value>(std::hint::black_box(text)).unwrap());
        let strict = time(&|| parse(std::hint::black_box(text)).unwrap());
        println!(
            "{} bytes: serde_json {plain:.0} ns, strict {strict:.0} ns ({:+.1}%)",
            text.len(),
            (strict / plain - 1.0) * 100.0
        );
    }
}
