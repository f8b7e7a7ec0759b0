//! Simulations of whole request lifecycles: the engine driven by a fake clock, an in-memory
//! ledger and scripted peers (other writers, a host, a stop hook), without threads or sleeps.

use core::time::Duration;
use std::collections::VecDeque;

use serde_json::{Value, json};

use bernstein_core::Timestamp;
use bernstein_core::config::{Config, Tier};
use bernstein_core::engine::request::{Input, Output};
use bernstein_core::engine::turns::{Grant, Ticket, Turns};
use bernstein_core::engine::{
    DEFAULT_WAIT, Finished, Job, MAX_ATTEMPTS, Message, Moment, Request, Round, Stop, WaitPolicy,
};
use bernstein_core::ledger::{AppendResult, StoreError};
use bernstein_core::protocol::TransportFacts;
use bernstein_core::protocol::host::HostReply;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::Server;

const KEY: &[u8] = &[7; 32];
const WALL: Timestamp = Timestamp(1_780_000_000_000);

/// The world around requests: one ledger, one clock, one turn, and scripts.
struct Sim {
    server: Server,
    ledger: Snapshot,
    mono: Duration,
    turns: Turns,
    /// Messages other writers serve before the next append of the request under test.
    racers: VecDeque<Vec<u8>>,
    /// Another writer moves the head before every append of the request under test.
    endless_racers: bool,
    /// The pauses asked for.
    pauses: Vec<Duration>,
    /// Messages other writers serve once the clock reaches their instant.
    later: VecDeque<(Duration, Vec<u8>)>,
    /// What the host answers, in order.
    host: VecDeque<HostReply>,
    /// Every output performed for the request under test, by name.
    trace: Vec<String>,
    /// How long an fsync takes.
    fsync: Duration,
    /// The server's free wait slots.
    wait_slots: usize,
}

impl Sim {
    fn new(tier: Tier) -> Sim {
        let mut config = Config::new(KEY.to_vec());
        config.tier = tier;
        Sim::over(Server::new(config), Snapshot::genesis(), Duration::ZERO)
    }

    fn over(server: Server, ledger: Snapshot, mono: Duration) -> Sim {
        Sim {
            server,
            ledger,
            mono,
            turns: Turns::new(),
            racers: VecDeque::new(),
            endless_racers: false,
            pauses: Vec::new(),
            later: VecDeque::new(),
            host: VecDeque::new(),
            trace: Vec::new(),
            fsync: Duration::from_millis(2),
            wait_slots: 64,
        }
    }

    fn now(&self) -> Moment {
        Moment {
            mono: self.mono,
            wall: WALL,
        }
    }

    /// Serves `bytes` to the end, answering every output; `stop` answers [`Output::AskStop`].
    fn serve(
        &mut self,
        bytes: &[u8],
        wait: WaitPolicy,
        stop: &mut dyn FnMut(&Sim) -> Option<Stop>,
    ) -> Result<Finished, StoreError> {
        let server = self.server.clone();
        let facts = TransportFacts::stdio(None);
        let message = server.read_message(bytes);
        let job = Message {
            server: &server,
            message: &message,
            facts: &facts,
            caps: Default::default(),
        };
        self.serve_job(job, wait, stop)
    }

    /// Serves any job to the end, as [`Sim::serve`] does a message.
    fn serve_job<J: Job<Fold = bernstein_domain::Projection>>(
        &mut self,
        job: J,
        wait: WaitPolicy,
        stop: &mut dyn FnMut(&Sim) -> Option<Stop>,
    ) -> Result<Finished, StoreError> {
        let mut request = Request::new(job, wait, 42);
        let ticket = self.turns.ticket();
        request.start(self.now());
        loop {
            let Some(output) = request.poll_output() else {
                panic!("the engine stalled: no output and no answer");
            };
            self.trace.push(name(&output).into());
            let input = match output {
                Output::ReadSnapshot => {
                    let snapshot = self.ledger.clone();
                    request.handle_input(self.now(), Input::Snapshot(&snapshot));
                    continue;
                }
                Output::Append(append) => {
                    while let Some(racer) = self.racers.pop_front() {
                        self.other_writer(&racer);
                    }
                    if self.endless_racers {
                        let n = self.count("append") as u64;
                        self.other_writer(&call(1000 + n, "bernstein_status", json!({})));
                    }
                    Input::Appended(self.append(&append))
                }
                Output::Host(_) => Input::Host(self.host.pop_front().expect("a scripted reply")),
                // This world's client answers no question (the engine's own tests drive those).
                Output::AskClient(_) => Input::Answered(Err(
                    bernstein_core::protocol::input::Unanswered::Unreachable,
                )),
                Output::TakeTurn {
                    only_if_contended,
                    contend,
                } => Input::Turn {
                    held: self.take_turn(ticket, only_if_contended, contend),
                },
                Output::LeaveTurn { uncount } => {
                    self.turns.leave(ticket, uncount);
                    continue;
                }
                Output::Pause(d) => {
                    self.pauses.push(d);
                    self.mono += d;
                    Input::Paused
                }
                Output::Settle => {
                    self.mono += self.fsync;
                    Input::Settled
                }
                Output::Notify(_) => continue,
                Output::AskStop => Input::Stop(stop(self)),
                Output::ClaimWaitSlot => {
                    let granted = self.wait_slots > 0;
                    self.wait_slots -= usize::from(granted);
                    Input::WaitSlot { granted }
                }
                Output::ReleaseWaitSlot => {
                    self.wait_slots += 1;
                    continue;
                }
                Output::WaitForHead {
                    until: pending,
                    nap,
                } => {
                    let until = self.mono + nap;
                    while let Some((at, _)) = self.later.front().filter(|(at, _)| *at <= until) {
                        self.mono = self.mono.max(*at);
                        let (_, msg) = self.later.pop_front().unwrap();
                        self.other_writer(&msg);
                    }
                    let moved = pending.moved(&self.ledger);
                    if !moved {
                        self.mono = until;
                    }
                    Input::Looked { moved }
                }
                Output::Failed(e) => return Err(e),
                Output::Done(finished) => return Ok(finished),
            };
            request.handle_input(self.now(), input);
        }
    }

    /// The turn, as a runtime grants it: a queued ticket would block; in a one-request
    /// simulation nobody else holds it.
    fn take_turn(&mut self, ticket: Ticket, only_if_contended: bool, contend: bool) -> bool {
        match self.turns.request(ticket, only_if_contended, contend) {
            Grant::NotNeeded => false,
            Grant::Granted => true,
            Grant::Queued => panic!("nobody else holds the turn in this simulation"),
        }
    }

    fn append(&mut self, append: &bernstein_core::ledger::Append) -> AppendResult {
        if append.expected != self.ledger.position {
            return AppendResult::Conflict {
                current: self.ledger.position,
            };
        }
        for r in &append.records {
            self.ledger
                .apply(r)
                .expect("the engine's records extend the head");
        }
        AppendResult::Committed(self.ledger.position)
    }

    /// Another writer (another process) serves `bytes` to the end on the same ledger.
    fn other_writer(&mut self, bytes: &[u8]) {
        let ledger = std::mem::take(&mut self.ledger);
        let mut other = Sim::over(self.server.clone(), ledger, self.mono);
        other.fsync = Duration::ZERO;
        let done = other
            .serve(bytes, DEFAULT_WAIT, &mut |_| None)
            .expect("the other writer is served");
        let r = reply(&done);
        assert!(
            r.get("error").is_none() && r["result"]["isError"] != true,
            "the other writer's call failed: {r}"
        );
        self.ledger = other.ledger;
    }

    fn count(&self, output: &str) -> usize {
        self.trace.iter().filter(|t| *t == output).count()
    }
}

fn name(output: &Output) -> &'static str {
    match output {
        Output::ReadSnapshot => "read",
        Output::Append(_) => "append",
        Output::Host(_) => "host",
        Output::AskClient(_) => "ask-client",
        Output::TakeTurn { .. } => "take-turn",
        Output::LeaveTurn { .. } => "leave-turn",
        Output::Pause(_) => "pause",
        Output::Settle => "settle",
        Output::Notify(_) => "notify",
        Output::AskStop => "ask-stop",
        Output::ClaimWaitSlot => "claim-slot",
        Output::ReleaseWaitSlot => "release-slot",
        Output::WaitForHead { .. } => "wait",
        Output::Failed(_) => "failed",
        Output::Done(_) => "done",
    }
}

fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    message(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn message(id: u64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

fn reply(finished: &Finished) -> Value {
    serde_json::from_slice(finished.served.response.as_ref().expect("a response")).unwrap()
}

/// A `bernstein_run_status` long poll of `run`.
fn long_poll(run: &str, wait_ms: u64) -> Vec<u8> {
    call(
        2,
        "bernstein_run_status",
        json!({"run_id": run, "wait_ms": wait_ms}),
    )
}

fn never(_: &Sim) -> Option<Stop> {
    None
}

/// A standard-tier simulation holding one open run, with an empty trace; and the run's id.
fn with_run() -> (Sim, String) {
    let mut sim = Sim::new(Tier::Standard);
    let run = start_run(&mut sim);
    sim.trace.clear();
    (sim, run)
}

/// Starts a run and returns its id.
fn start_run(sim: &mut Sim) -> String {
    let done = sim
        .serve(
            &call(1, "bernstein_run", json!({"goal": "simulate"})),
            DEFAULT_WAIT,
            &mut never,
        )
        .unwrap();
    reply(&done)["result"]["structuredContent"]["result"]["run_id"]
        .as_str()
        .expect("a run id")
        .to_string()
}

#[test]
fn a_call_commits_settles_then_answers_with_the_measured_latency() {
    let mut sim = Sim::new(Tier::Core);
    sim.fsync = Duration::from_millis(7);
    let done = sim
        .serve(
            &call(1, "bernstein_run", json!({"goal": "docs"})),
            DEFAULT_WAIT,
            &mut never,
        )
        .unwrap();
    assert_eq!(
        sim.trace,
        ["take-turn", "read", "append", "settle", "done"],
        "one round, no turn held, settled before the answer"
    );
    assert_eq!(done.took, Duration::from_millis(7));
    let r = reply(&done);
    assert_eq!(r["result"]["structuredContent"]["_meter"]["latency_ms"], 7);
    assert_eq!(done.tally.calls.len(), 1);
    assert!(sim.ledger.position.seq > 0);
}

#[test]
fn a_read_appends_its_audit_record_and_a_notification_appends_nothing() {
    let mut sim = Sim::new(Tier::Core);
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let done = sim.serve(note, DEFAULT_WAIT, &mut never).unwrap();
    assert_eq!(done.served.response, None);
    assert_eq!(sim.count("append"), 0);
    assert_eq!(sim.ledger.position.seq, 0);
}

#[test]
fn lost_races_rerun_from_a_fresh_snapshot_under_the_turn() {
    let mut sim = Sim::new(Tier::Core);
    for i in 0..4 {
        let racer = call(
            100 + i,
            "bernstein_run",
            json!({"goal": format!("racer {i}")}),
        );
        sim.racers.push_back(racer);
    }
    // The racers all land before the first append: one conflict, then a clean run.
    let done = sim
        .serve(
            &call(1, "bernstein_run", json!({"goal": "mine"})),
            DEFAULT_WAIT,
            &mut never,
        )
        .unwrap();
    assert_eq!(sim.count("read"), 2);
    assert_eq!(sim.count("append"), 2);
    assert_eq!(
        sim.count("take-turn"),
        2,
        "start of round, then after losing"
    );
    assert_eq!(sim.count("leave-turn"), 1);
    assert_eq!(sim.turns.contended(), 0, "contention ends with the round");
    assert_eq!(reply(&done)["result"]["isError"], false);
}

#[test]
fn repeated_losses_pause_with_jitter_and_endless_ones_give_up() {
    let mut sim = Sim::new(Tier::Core);
    sim.endless_racers = true;
    let failed = sim
        .serve(
            &call(1, "bernstein_run", json!({"goal": "never"})),
            DEFAULT_WAIT,
            &mut never,
        )
        .unwrap_err();
    assert!(failed.to_string().contains("gave up"), "{failed}");
    assert_eq!(sim.count("append"), MAX_ATTEMPTS);
    assert_eq!(sim.count("take-turn"), 2, "the turn is taken once and kept");
    assert_eq!(sim.count("pause"), MAX_ATTEMPTS - 3);
    assert!(
        sim.pauses
            .iter()
            .all(|d| *d <= Duration::from_micros(255 * 20 * 4))
    );
    assert!(sim.pauses.windows(2).any(|w| w[0] != w[1]), "jittered");
    assert_eq!(
        sim.count("leave-turn"),
        0,
        "a failed request leaves through its runtime"
    );
}

#[test]
fn a_long_poll_is_woken_by_another_writer_moving_the_head() {
    let (mut sim, run) = with_run();
    let cancel = call(9, "bernstein_cancel", json!({"task_id": run}));
    sim.later.push_back((Duration::from_millis(35), cancel));
    let poll = long_poll(&run, 60_000);
    let done = sim.serve(&poll, DEFAULT_WAIT, &mut never).unwrap();
    let r = reply(&done);
    assert_eq!(
        r["result"]["structuredContent"]["result"]["status"], "cancelled",
        "{r}"
    );
    // Looks at 10 and 20 ms of backoff see nothing; the one due at 40 ms is woken at 35.
    assert_eq!(sim.count("wait"), 3);
    assert_eq!(
        sim.count("read"),
        2,
        "the poll ran once before and once after the move"
    );
    assert!(done.took < Duration::from_millis(60), "{:?}", done.took);
}

#[test]
fn a_long_poll_sleeps_through_writes_to_other_runs_and_wakes_on_its_own() {
    let (mut sim, run) = with_run();
    let other = start_run(&mut sim);
    sim.trace.clear();
    // Writes to another run at 5 and 15 ms, then a cancel of the polled run at 35.
    for (at, id) in [(5, 7), (15, 8)] {
        let write = call(id, "bernstein_cancel", json!({"task_id": other}));
        sim.later.push_back((Duration::from_millis(at), write));
    }
    let cancel = call(9, "bernstein_cancel", json!({"task_id": run}));
    sim.later.push_back((Duration::from_millis(35), cancel));
    let done = sim
        .serve(&long_poll(&run, 60_000), DEFAULT_WAIT, &mut never)
        .unwrap();
    let r = reply(&done);
    assert_eq!(
        r["result"]["structuredContent"]["result"]["status"], "cancelled",
        "{r}"
    );
    assert_eq!(
        sim.count("read"),
        2,
        "the other run's writes moved the ledger but not the polled run: no re-run for them"
    );
}

#[test]
fn a_pending_answer_settles_at_the_deadline_with_doubling_looks() {
    let (mut sim, run) = with_run();
    sim.fsync = Duration::ZERO;
    let poll = long_poll(&run, 1_000);
    let done = sim.serve(&poll, DEFAULT_WAIT, &mut never).unwrap();
    // 10 + 20 + 40 + 80 + 160 + 200 + 200 + 200 + 90 (cut at the deadline) = 1,000 ms.
    assert_eq!(sim.count("wait"), 9);
    assert_eq!(done.took, Duration::from_millis(1_000));
    let r = reply(&done);
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(r["result"].get("cancelled").is_none(), "{r}");
    assert_eq!(sim.count("read"), 2, "live, then the settling round");
    assert_eq!(
        sim.count("append"),
        1,
        "audited once, by the settling round"
    );
}

#[test]
fn the_policy_caps_a_longer_wait_the_request_asked_for() {
    let (mut sim, run) = with_run();
    sim.fsync = Duration::ZERO;
    let poll = long_poll(&run, 60_000);
    let short = WaitPolicy {
        max_wait: Duration::from_millis(50),
        ..DEFAULT_WAIT
    };
    let done = sim.serve(&poll, short, &mut never).unwrap();
    assert_eq!(done.took, Duration::from_millis(50));
}

#[test]
fn a_cancelled_wait_answers_partial_and_a_settled_one_answers_as_things_stand() {
    let (mut sim, run) = with_run();
    let poll = long_poll(&run, 60_000);
    // The peer goes away after the second look.
    let mut asked = 0;
    let done = sim
        .serve(&poll, DEFAULT_WAIT, &mut |_| {
            asked += 1;
            (asked > 2).then_some(Stop::Cancel)
        })
        .unwrap();
    let r = reply(&done);
    assert_eq!(r["result"]["cancelled"], true, "{r}");
    assert_eq!(r["result"]["partial"][0]["status"], "working", "{r}");

    sim.trace.clear();
    let done = sim
        .serve(&poll, DEFAULT_WAIT, &mut |_| Some(Stop::Settle))
        .unwrap();
    assert_eq!(sim.count("wait"), 0, "settled at the first question");
    assert!(reply(&done)["result"].get("cancelled").is_none());
}

#[test]
fn without_a_free_wait_slot_a_pending_answer_is_refused_at_once() {
    let (mut sim, run) = with_run();
    sim.wait_slots = 0;
    let done = sim
        .serve(&long_poll(&run, 60_000), DEFAULT_WAIT, &mut never)
        .unwrap();
    let r = reply(&done);
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    let refusal: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(refusal["result"]["error"], "too_many_waits", "{r}");
    assert_eq!(sim.count("wait"), 0);
    assert_eq!(sim.count("read"), 2, "live, then settled at once");
    assert_eq!(done.took, sim.fsync * 2, "no time spent waiting");
}

#[test]
fn a_wait_holds_its_slot_until_it_ends_whichever_way() {
    let (mut sim, run) = with_run();
    sim.wait_slots = 1;
    sim.serve(&long_poll(&run, 100), DEFAULT_WAIT, &mut never)
        .unwrap();
    assert_eq!((sim.count("claim-slot"), sim.count("release-slot")), (1, 1));
    assert_eq!(sim.wait_slots, 1, "the deadline gave it back");
    let mut asked = 0;
    sim.serve(&long_poll(&run, 60_000), DEFAULT_WAIT, &mut |_| {
        asked += 1;
        (asked > 1).then_some(Stop::Cancel)
    })
    .unwrap();
    assert_eq!(sim.wait_slots, 1, "the cancellation gave it back");
    let cancel = call(9, "bernstein_cancel", json!({"task_id": run}));
    sim.later
        .push_back((sim.mono + Duration::from_millis(15), cancel));
    sim.serve(&long_poll(&run, 60_000), DEFAULT_WAIT, &mut never)
        .unwrap();
    assert_eq!(sim.wait_slots, 1, "the final answer gave it back");
}

/// A simulation holding one run started as an MCP task, and the task's id.
fn with_task() -> (Sim, String) {
    let mut sim = Sim::new(Tier::Standard);
    let start = message(
        1,
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": "task"}, "task": {}}),
    );
    let done = sim.serve(&start, DEFAULT_WAIT, &mut never).unwrap();
    let task = reply(&done)["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    (sim, task)
}

#[test]
fn tasks_result_waits_for_the_task_to_finish() {
    let (mut sim, task) = with_task();
    let cancel = message(3, "tasks/cancel", json!({"taskId": task}));
    sim.later.push_back((Duration::from_millis(500), cancel));
    let result = message(2, "tasks/result", json!({"taskId": task}));
    let done = sim.serve(&result, DEFAULT_WAIT, &mut never).unwrap();
    let r = reply(&done);
    assert_eq!(r["id"], 2);
    assert_eq!(
        r["result"]["structuredContent"]["result"]["status"], "cancelled",
        "{r}"
    );
}

#[test]
fn tasks_result_without_a_free_wait_slot_says_why_it_cannot_wait() {
    let (mut sim, task) = with_task();
    sim.wait_slots = 0;
    let result = message(2, "tasks/result", json!({"taskId": task}));
    let done = sim.serve(&result, DEFAULT_WAIT, &mut never).unwrap();
    let r = reply(&done);
    assert_eq!(r["error"]["data"]["reason"], "too_many_waits", "{r}");
    assert_eq!(r["error"]["data"]["taskId"], task.as_str(), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot wait"),
        "{r}"
    );
    assert_eq!(sim.count("wait"), 0);
    assert_eq!(done.took, sim.fsync * 2, "no time spent waiting");
}

#[test]
fn host_rounds_feed_every_reply_back_until_the_tool_answers() {
    let mut sim = Sim::new(Tier::Core);
    let mut config = Config::new(KEY.to_vec());
    config.cost_meter = false;
    let mut catalog = bernstein_domain::catalog();
    catalog.tools = vec![bernstein_domain::bound::ToolSpec {
        name: "read_twice",
        title: "read twice",
        description: "test tool",
        tier: Tier::Core,
        input_schema: || json!({"type": "object"}),
        output_schema: None,
        effects: Default::default(),
        task_support: bernstein_core::protocol::registry::TaskSupport::Forbidden,
        arguments: bernstein_core::protocol::registry::Arguments::Schema,
        call: |ctx, _| match ctx.host.len() {
            n @ (0 | 1) => bernstein_core::protocol::registry::ToolOutput::ask(
                bernstein_core::protocol::host::HostRequest::Read {
                    path: format!("f{n}"),
                    max_bytes: 10,
                    within: None,
                },
            ),
            _ => bernstein_core::protocol::registry::ToolOutput::ok(
                json!({"replies": ctx.host.len()}),
            ),
        },
    }];
    sim.server = Server::with_catalog(config, catalog);
    for text in ["a", "b"] {
        sim.host.push_back(HostReply::File { text: text.into() });
    }
    let done = sim
        .serve(&call(1, "read_twice", json!({})), DEFAULT_WAIT, &mut never)
        .unwrap();
    assert_eq!(sim.count("host"), 2);
    assert_eq!(sim.count("read"), 3, "one run per round");
    let r = reply(&done);
    assert_eq!(r["result"]["content"][0]["text"], r#"{"replies":2}"#, "{r}");
}

#[test]
fn an_input_the_request_is_not_waiting_for_fails_it_cleanly() {
    let sim = Sim::new(Tier::Core);
    let msg = call(1, "bernstein_status", json!({}));
    let facts = TransportFacts::stdio(None);
    let message = sim.server.read_message(msg);
    let job = Message {
        server: &sim.server,
        message: &message,
        facts: &facts,
        caps: Default::default(),
    };
    let mut request = Request::new(job, DEFAULT_WAIT, 1);
    request.start(sim.now());
    assert!(matches!(
        request.poll_output(),
        Some(Output::TakeTurn { .. })
    ));
    request.handle_input(sim.now(), Input::Settled);
    match request.poll_output() {
        Some(Output::Failed(e)) => assert!(e.to_string().contains("waiting for Turn"), "{e}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(request.poll_output().is_none());
}

/// An operator-like job: one record sealed against whatever snapshot it runs on.
struct Note {
    runs: usize,
}

impl Job for Note {
    type Fold = bernstein_domain::Projection;
    fn run(&mut self, round: Round<'_, Self::Fold>) -> bernstein_core::protocol::Outcome {
        self.runs += 1;
        let s = round.snapshot;
        let draft =
            bernstein_core::ledger::Draft::new("notes", "test.note", json!({"run": self.runs}));
        let records =
            bernstein_core::ledger::seal(&s.position, |st| s.stream_head(st), vec![draft], KEY);
        bernstein_core::protocol::Outcome {
            append: Some(bernstein_core::ledger::Append {
                expected: s.position,
                read_heads: None,
                records,
            }),
            ..Default::default()
        }
    }
}

#[test]
fn any_job_commits_through_the_same_path_and_reruns_on_a_lost_race() {
    let mut sim = Sim::new(Tier::Core);
    sim.racers
        .push_back(call(5, "bernstein_run", json!({"goal": "first"})));
    let mut note = Note { runs: 0 };
    let done = sim.serve_job(&mut note, DEFAULT_WAIT, &mut never).unwrap();
    assert_eq!(note.runs, 2, "decided again on the newer snapshot");
    assert_eq!(done.served.response, None);
    assert_eq!(sim.count("settle"), 1);
    assert_eq!(
        sim.ledger.stream_head("notes"),
        sim.ledger.position.head,
        "the committed note is the ledger's last record"
    );
}
