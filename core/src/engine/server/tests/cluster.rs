//! N engines of one process over one in-memory ledger, interleaved by a seeded scheduler: every
//! store output of every engine waits in one queue and a seeded choice performs them in any
//! order (snapshots, appends placed by the stores' one rule, fake fsyncs that make everything
//! written so far durable), and what one engine tells the others is delivered the same way.
//! Clients on every engine send reads and writes, one at a time per connection. Checked for
//! every seed: no answer leaves before the records it acknowledges are durable, the ledger is
//! one chain, every acknowledged write landed exactly once and every refused one not at all,
//! every request is answered (none starves, at N = 8 with half of them writes racing for one
//! stream), and each read's answer is the bytes one engine alone gives.

use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::engine::shared::{HOME, Shared, Sharing};
use crate::engine::sim::{BOUND, World, post, responses};
use crate::engine::{ConnId, Engine, EngineConfig, Input, Moment, Output, Peer};
use crate::ledger::{AppendResult, Draft, Record, Snapshot};
use crate::protocol::Server;
use crate::protocol::registry::ToolOutput;
use crate::protocol::unit_fold::{ToolContext, plain_tool, tools_only};
use crate::transport::http::{HttpOptions, HttpPolicy};

const HEADERS: [&str; 2] = [
    "Accept: application/json, text/event-stream",
    "MCP-Protocol-Version: 2025-11-25",
];

/// Records `n` on stream `marks`; decided on nothing it read.
fn mark(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    let n = args["n"].clone();
    let mut out = ToolOutput::ok(json!({ "n": n }));
    out.drafts = vec![Draft::new("marks", "marked", json!({ "n": n }))];
    out.reads = Some(Vec::new());
    out
}

/// Records `n` on stream `counter`, decided on that stream's head: every two of them race.
fn bump(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    let n = args["n"].clone();
    let mut out = ToolOutput::ok(json!({ "n": n }));
    out.drafts = vec![Draft::new("counter", "bumped", json!({ "n": n }))];
    out.reads = Some(vec!["counter".into()]);
    out
}

fn server() -> Arc<Server<()>> {
    let mut m = plain_tool("mark");
    m.call = mark;
    let mut b = plain_tool("bump");
    b.call = bump;
    let config = crate::config::Config::new(b"k".to_vec());
    Arc::new(Server::with_catalog(
        config,
        tools_only(vec![plain_tool("t"), m, b]),
    ))
}

/// What the scheduler may do next.
enum Work {
    /// A store output of engine `.0`.
    Store(usize, Output),
    /// A notice for engine `.0`.
    Told(usize, crate::engine::shared::Notice),
}

/// One client connection: the calls it still has to make, and the one out.
struct Client {
    engine: usize,
    conn: ConnId,
    calls: VecDeque<(String, u64)>,
    out: Option<(String, u64)>,
}

struct Cluster {
    server: Arc<Server<()>>,
    engines: Vec<Engine<()>>,
    /// Everything written, in order (durable up to `durable`).
    ledger: Snapshot<()>,
    records: Vec<Record>,
    durable: u64,
    queue: Vec<Work>,
    clients: Vec<Client>,
    rng: u64,
    mono: Duration,
    /// Per `n`: how its call was answered (`true`: a result).
    answered: BTreeMap<u64, bool>,
    reads: Vec<Vec<u8>>,
    /// Appends placed after a later head than they were decided on, and refused.
    moved: usize,
    conflicts: usize,
}

impl Cluster {
    fn new(engines: usize, seed: u64) -> Cluster {
        let server = server();
        let shared = Arc::new(Shared::new(engines));
        let options = HttpOptions::default();
        let policy = HttpPolicy::new(&server.config, &options, BOUND, true).unwrap();
        let now = Moment {
            mono: Duration::ZERO,
            wall: crate::engine::sim::WALL,
        };
        let engines = (0..engines)
            .map(|index| {
                let mut config = EngineConfig::http(policy.clone(), options.clone(), [3; 32]);
                let shared = shared.clone();
                config.sharing = Sharing { index, shared };
                Engine::new(server.clone(), config, now)
            })
            .collect();
        Cluster {
            server,
            engines,
            ledger: Snapshot::genesis(),
            records: Vec::new(),
            durable: 0,
            queue: Vec::new(),
            clients: Vec::new(),
            rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            mono: Duration::ZERO,
            answered: BTreeMap::new(),
            reads: Vec::new(),
            moved: 0,
            conflicts: 0,
        }
    }

    fn random(&mut self, below: usize) -> usize {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % below
    }

    fn now(&self) -> Moment {
        Moment {
            mono: self.mono,
            wall: crate::engine::sim::WALL,
        }
    }

    /// `per_engine` clients on each engine, each making `calls` calls, `writes` percent of
    /// them writes (half `bump`, half `mark`).
    fn clients(&mut self, per_engine: usize, calls: usize, writes: usize) {
        let mut n = 0;
        for engine in 0..self.engines.len() {
            for c in 0..per_engine {
                let conn = ConnId(100 + c as u64);
                let mut list = VecDeque::new();
                for _ in 0..calls {
                    n += 1;
                    let tool = match self.random(100) {
                        r if r < writes / 2 => "bump",
                        r if r < writes => "mark",
                        _ => "t",
                    };
                    list.push_back((tool.to_string(), n));
                }
                let peer = Peer::Http(format!("127.0.0.1:{}", 20_000 + n).parse().unwrap());
                let now = self.now();
                self.engines[engine].handle_input(now, Input::Opened { conn, peer });
                self.clients.push(Client {
                    engine,
                    conn,
                    calls: list,
                    out: None,
                });
            }
        }
    }

    /// Each idle client sends its next call.
    fn send_next(&mut self) {
        for i in 0..self.clients.len() {
            let c = &mut self.clients[i];
            if c.out.is_some() {
                continue;
            }
            let Some((tool, n)) = c.calls.pop_front() else {
                continue;
            };
            let body = call(&tool, n);
            let (engine, conn) = (c.engine, c.conn);
            c.out = Some((tool, n));
            let now = self.now();
            let bytes = &post("/mcp", &body, &HEADERS);
            self.engines[engine].handle_input(now, Input::Received { conn, bytes });
            self.drain(engine);
        }
    }

    /// Takes engine `e`'s outputs: socket ones at once, the rest into the queue.
    fn drain(&mut self, e: usize) {
        while let Some(output) = self.engines[e].poll_output() {
            match output {
                Output::Send { conn, bytes } => self.answer(e, conn, &bytes),
                Output::Tell(notice) => {
                    for other in (0..self.engines.len()).filter(|o| *o != e) {
                        self.queue.push(Work::Told(other, notice.clone()));
                    }
                }
                Output::HandOff { .. } => panic!("nothing here belongs to engine {HOME} alone"),
                Output::Log(line) => panic!("engine {e} logged: {line}"),
                Output::Close { .. } | Output::Began { .. } | Output::Ended { .. } => {}
                other => self.queue.push(Work::Store(e, other)),
            }
        }
    }

    /// Engine `e` answered on `conn`: the checks of an answer.
    fn answer(&mut self, e: usize, conn: ConnId, bytes: &[u8]) {
        let (status, body) = responses(bytes).remove(0);
        assert_eq!(status, 200);
        let client = self
            .clients
            .iter_mut()
            .find(|c| c.engine == e && c.conn == conn)
            .expect("an answer to a client");
        let (tool, n) = client.out.take().expect("an answer to a call out");
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], n, "{v}");
        if tool == "t" {
            self.reads.push(body);
            return;
        }
        let ok = v["result"]["isError"] != true && v.get("error").is_none();
        assert!(ok, "a write failed: {v}");
        self.answered.insert(n, ok);
        // Acknowledged only once durable.
        let landed: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.stream != "audit" && r.body["n"] == n)
            .collect();
        assert_eq!(landed.len(), 1, "write {n} landed once");
        // Its whole transaction (the call's audit record last).
        let [index, count] = landed[0].txn;
        let end = landed[0].seq + u64::from(count - index);
        assert!(end <= self.durable, "write {n} answered before durable");
    }

    /// Performs one queued item, chosen by the seed; `false` when nothing is queued.
    fn step(&mut self) -> bool {
        if self.queue.is_empty() {
            return false;
        }
        let i = self.random(self.queue.len());
        let work = self.queue.swap_remove(i);
        let now = self.now();
        let e = match work {
            Work::Told(e, notice) => {
                self.engines[e].handle_input(now, Input::Told(notice));
                e
            }
            Work::Store(e, output) => {
                self.perform(e, output);
                e
            }
        };
        self.drain(e);
        true
    }

    fn perform(&mut self, e: usize, output: Output) {
        let now = self.now();
        let engine = &mut self.engines[e];
        match output {
            Output::ReadSnapshot { req } => {
                let snapshot = &self.ledger;
                engine.handle_input(now, Input::Snapshot { req, snapshot });
            }
            Output::Append { req, append } => {
                let key = &self.server.config.audit_key;
                let ledger = &self.ledger;
                let at = ledger.position;
                let placed =
                    crate::ledger::sequence::place_one(&append, at, |s| ledger.stream_head(s), key);
                let result = match placed {
                    None => {
                        self.conflicts += 1;
                        AppendResult::Conflict { current: at }
                    }
                    Some(placed) => {
                        self.moved += usize::from(placed.expected != append.expected);
                        for r in &placed.records {
                            self.ledger.apply(r).expect("one chain");
                            self.records.push(r.clone());
                        }
                        AppendResult::Committed(self.ledger.position)
                    }
                };
                engine.handle_input(now, Input::Appended { req, result });
            }
            Output::Sync { upto, .. } => {
                // A fake fsync, beginning now: it covers the ledger as it is, which may be past
                // what the engine asked for (another engine's records, or its own written since
                // it asked), and says so; the engine answers only what that covers.
                assert!(upto <= self.ledger.position.seq, "a sync past the head");
                self.durable = self.ledger.position.seq;
                let durable = self.durable;
                engine.handle_input(now, Input::Synced { durable });
            }
            Output::Look => {
                let head = &self.ledger;
                engine.handle_input(now, Input::Head(head));
            }
            other => panic!("engine {e} asked for {other:?}"),
        }
    }

    /// Runs until every client is done; the steps it took.
    fn run(&mut self, budget: usize) -> usize {
        let mut steps = 0;
        loop {
            self.send_next();
            if self.step() {
                steps += 1;
                assert!(steps < budget, "a request starved");
                continue;
            }
            // Nothing queued: time passes to the next timer (a sync held for more clients).
            let next = self.engines.iter().filter_map(|e| e.poll_timeout()).min();
            let done = self
                .clients
                .iter()
                .all(|c| c.out.is_none() && c.calls.is_empty());
            match next {
                _ if done => return steps,
                Some(at) => {
                    self.mono = self.mono.max(at);
                    let now = self.now();
                    for e in 0..self.engines.len() {
                        if self.engines[e].poll_timeout().is_some_and(|t| t <= at) {
                            self.engines[e].handle_input(now, Input::Tick);
                            self.drain(e);
                        }
                    }
                }
                None => panic!("stuck: nothing queued, no timer, clients waiting"),
            }
        }
    }
}

fn call(tool: &str, n: u64) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": tool, "arguments": {"n": n}}})
    .to_string()
    .into_bytes()
}

/// What one engine alone answers to the read `n`.
fn alone(n: u64) -> Vec<u8> {
    let mut w = World::http(server(), HttpOptions::default());
    w.connect(1, "127.0.0.1:30000");
    w.bytes(1, &post("/mcp", &call("t", n), &HEADERS));
    responses(&w.take(1)).remove(0).1
}

/// Runs `engines` engines under `seed` and checks every guarantee; how many appends moved and
/// how many were refused (a run that raced nothing would prove little).
fn check(engines: usize, seed: u64) -> (usize, usize) {
    let mut c = Cluster::new(engines, seed);
    c.clients(3, 12, 50);
    c.run(200_000);
    // Every write answered landed exactly once, and nothing else did.
    let written: Vec<u64> = c
        .records
        .iter()
        .filter(|r| r.stream != "audit")
        .map(|r| r.body["n"].as_u64().unwrap())
        .collect();
    let mut sorted = written.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), written.len(), "a write landed twice");
    assert_eq!(sorted, c.answered.keys().copied().collect::<Vec<_>>());
    // One chain: every record extends the one before (`apply` checked it as it was placed).
    assert_eq!(c.ledger.position.seq, c.records.len() as u64);
    // Each read's bytes are one engine's, the time it took aside.
    for body in &c.reads {
        let n = serde_json::from_slice::<Value>(body).unwrap()["id"]
            .as_u64()
            .unwrap();
        assert_eq!(untimed(body), untimed(&alone(n)), "seed {seed}");
    }
    (c.moved, c.conflicts)
}

/// An answer without its `_meter.latency_ms` (the one figure that depends on when it ran).
fn untimed(body: &[u8]) -> Value {
    let mut v: Value = serde_json::from_slice(body).unwrap();
    let text = &mut v["result"]["content"][0]["text"];
    let mut inner: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
    let meter = inner["_meter"].as_object_mut().expect("a meter");
    assert!(meter.remove("latency_ms").is_some());
    *text = Value::String(inner.to_string());
    v
}

#[test]
fn two_engines_interleaved_every_way_a_seed_picks_keep_every_guarantee() {
    let (mut moved, mut refused) = (0, 0);
    for seed in 0..40 {
        let (m, r) = check(2, seed);
        (moved, refused) = (moved + m, refused + r);
    }
    assert!(moved > 0 && refused > 0, "{moved} moved, {refused} refused");
}

#[test]
fn eight_engines_with_half_writes_racing_for_one_stream_starve_no_request() {
    let (mut moved, mut refused) = (0, 0);
    for seed in 0..10 {
        let (m, r) = check(8, seed);
        (moved, refused) = (moved + m, refused + r);
    }
    assert!(moved > 0 && refused > 0, "{moved} moved, {refused} refused");
}
