//! The engine's requests: each one's state machine ([`Request`]) driven through the outputs the
//! engine performs itself (the turn, pauses, the stop question, wait slots, naps and looks at
//! the head) and the ones it hands to the runtime (snapshots, appends, settles, host
//! requests), and its answer delivered where it goes.

use core::net::SocketAddr;
use core::time::Duration;

use super::timers::{self, Due};
use super::{Answer, Conn, ConnId, Engine, JobId, Nap, Output, Park, Req, ReqId, syncs};
use crate::engine::job::{OwnedMessage, Submitted, Work};
use crate::engine::request::{self, Finished, Request};
use crate::engine::shared::Notice;
use crate::engine::span::RequestSpan;
use crate::engine::turns::Grant;
use crate::engine::{Served, Stop};
use crate::ledger::{AppendResult, Fold, Snapshot, StoreError};
use crate::protocol::StorageFailure;
use crate::protocol::era::Revision;
use crate::protocol::input::ClientCaps;
use crate::protocol::tally::Tally;
use crate::time::Timestamp;
use crate::transport::http::exchange::{ServedParts, StreamedReply, body_span_id};
use crate::transport::http::session::{self, Session};

impl<F: Fold> Engine<F> {
    /// Starts a request running `job` and announces its span to a runtime that traces: a
    /// message a connection framed (read once, by whoever framed it; `conn`, its `peer` and
    /// the request's `traceparent` say where from) or a job submitted by a caller that is not
    /// a connection (no `conn`). Its answer goes to `answer`. A message's
    /// `notifications/cancelled` first cancels the requests it names, and a message's id is
    /// entered for cancellation.
    pub(super) fn start_request(
        &mut self,
        mut job: Work<F>,
        conn: Option<ConnId>,
        answer: Answer,
        peer: Option<SocketAddr>,
        traceparent: Option<&str>,
    ) -> ReqId {
        let (mut entered, mut span) = (None, None);
        if let Work::Message(m) = &mut job {
            if let Some(named) = m.message.cancelled_request() {
                self.cancel(&named);
                let origin = peer.map(|p| p.ip());
                if let Some(conn) = conn {
                    self.cancel_listens(Some(conn), origin, &named);
                }
                self.tell(Notice::Cancelled {
                    id: named,
                    from: origin,
                });
            }
            if let Some(conn) = conn {
                // The client's answer to a question the server put to it, whichever connection
                // it came on: the asking request resumes (the message itself is answered as
                // any response).
                if let Some((question, answer)) = m.message.client_reply() {
                    let from = m.facts.principal.as_ref();
                    if self.asked(&question) || !self.has_peers() {
                        self.client_answered(&question, answer, from);
                    } else {
                        let from = from.cloned();
                        self.tell(Notice::Answered {
                            question,
                            answer,
                            from,
                        });
                    }
                }
                m.caps = self.declared_caps(conn, &answer);
            }
            span = self
                .traced
                .then(|| Box::new(RequestSpan::of(&m.message, traceparent)));
            entered = m.message.request_id().map(|id| self.cancels.enter(id));
        }
        let mut machine = Request::new(job, self.wait, self.entropy.request_seed());
        machine.start(self.now);
        let id = self.next_req_id();
        self.reqs.insert(
            id,
            Req {
                machine,
                conn,
                answer,
                peer: super::peer_ip(peer),
                ticket: None,
                counted: false,
                entered,
                slot: false,
                waited: false,
                appending: Vec::new(),
                committed: None,
                read: 0,
                park: Park::Running,
                armed: None,
            },
        );
        self.ready.push_back(id);
        if let Some(span) = span {
            self.push(Output::Began { req: id, span });
        }
        id
    }

    /// What the client of a message arriving on `conn` (answered at `answer`) declared in
    /// `initialize` it can be asked: carried by its session id over streamable HTTP, else kept
    /// by its stdio connection, legacy stream or HTTP connection.
    fn declared_caps(&self, conn: ConnId, answer: &Answer) -> ClientCaps {
        let holder = match answer {
            Answer::Legacy { stream, .. } => *stream,
            Answer::Job { .. } => return ClientCaps::NONE,
            Answer::Mcp { x, .. } if x.session.is_some() => {
                return x.session.map_or(ClientCaps::NONE, |s| s.caps);
            }
            Answer::Stdio | Answer::Mcp { .. } => conn,
        };
        match self.conns.get(&holder) {
            Some(Conn::Stdio(s)) => s.caps,
            Some(Conn::Http(h)) => h.caps,
            Some(Conn::Legacy(l)) => l.caps,
            _ => ClientCaps::NONE,
        }
    }

    /// Ends a request's span for a runtime that traces.
    fn ended(&mut self, req: ReqId, error: Option<i64>, failed: bool) {
        if self.traced {
            self.push(Output::Ended { req, error, failed });
        }
    }

    /// Serves `job` for a caller that is not a connection (an operator's command, an
    /// in-process client) through the same request state machine as every message: decided
    /// on a fresh snapshot, re-run on a lost race, durable before it ends. Its end is
    /// [`Output::Finished`] with the id returned; a pending answer waits for the ledger until
    /// its deadline or until the caller stops it ([`super::Input::StopJob`]).
    pub fn submit(&mut self, now: super::Moment, job: Submitted<F>) -> JobId {
        self.submit_work(now, Work::Submitted(job))
    }

    /// [`Engine::submit`] for a message of an in-process client: cancellable by its id as a
    /// connection's request is, by a `notifications/cancelled` submitted the same way.
    pub fn submit_message(&mut self, now: super::Moment, message: OwnedMessage<F>) -> JobId {
        self.submit_work(now, Work::Message(message))
    }

    fn submit_work(&mut self, now: super::Moment, work: Work<F>) -> JobId {
        self.now = now;
        let answer = Answer::Job {
            notes: Vec::new(),
            stop: None,
        };
        let id = self.start_request(work, None, answer, None, None);
        self.after_input();
        JobId(id.0)
    }

    /// The caller of a submitted job says how its wait ends; a napping one is woken to ask.
    pub(super) fn stop_job(&mut self, job: JobId, why: Stop) {
        let id = ReqId(job.0);
        if let Some(Req {
            answer: Answer::Job { stop, .. },
            ..
        }) = self.reqs.get_mut(&id)
        {
            *stop = Some(why);
            self.wake(id);
        }
    }

    /// Cancels every request in flight with this id (the JSON text of a request id) and
    /// wakes those that wait, so that they answer at once.
    pub(super) fn cancel(&mut self, id: &str) {
        if self.cancels.cancel(id) == 0 {
            return;
        }
        let named: Vec<ReqId> = self
            .reqs
            .iter()
            .filter(|(_, r)| r.entered.is_some_and(|e| self.cancels.is_cancelled(e)))
            .map(|(id, _)| *id)
            .collect();
        for req in named {
            self.wake(req);
        }
    }

    /// Takes every ready request's outputs until each waits for an input.
    pub(super) fn run_ready(&mut self) {
        while let Some(id) = self.ready.pop_front() {
            self.pump(id, None);
        }
    }

    /// Asks the store for something on a request's behalf. A request that goes on after an
    /// input (its snapshot arrived, its append committed) is served depth first: its next
    /// store output goes before those of requests that have not started, so that a runtime
    /// performing them in order reads, appends and settles one request before it reads for
    /// the next (whose snapshot then holds the first one's records: no lost race, no
    /// re-sealed audit record). Socket outputs keep their order.
    fn ask_store(&mut self, output: Output) {
        if matches!(
            output,
            Output::ReadSnapshot { .. } | Output::Append { .. } | Output::Host { .. }
        ) {
            self.working += 1;
        }
        if self.continuing {
            self.out.push_front(output);
        } else {
            self.out.push_back(output);
        }
    }

    /// Feeds a request the input it waits for (`None`: one just started), then performs what
    /// it asks for until it waits for another. A request that goes on after an input is
    /// served depth first ([`Engine::ask_store`]).
    pub(super) fn pump(&mut self, id: ReqId, mut input: Option<request::Input<'_, F>>) {
        use request::Input as In;
        use request::Output as Out;
        let outer = self.continuing;
        self.continuing |= input.is_some();
        loop {
            let now = self.now;
            let Some(r) = self.reqs.get_mut(&id) else {
                break;
            };
            if let Some(input) = input.take() {
                r.machine.handle_input(now, input);
            }
            let Some(output) = r.machine.poll_output() else {
                break;
            };
            input = Some(match output {
                Out::ReadSnapshot => {
                    self.ask_store(Output::ReadSnapshot { req: id });
                    continue;
                }
                Out::Append(append) => {
                    if let Some(r) = self.reqs.get_mut(&id) {
                        r.appending = append
                            .records
                            .iter()
                            .map(|rec| rec.stream.clone())
                            .collect();
                    }
                    self.ask_store(Output::Append { req: id, append });
                    continue;
                }
                Out::Host(request) => {
                    self.ask_store(Output::Host { req: id, request });
                    continue;
                }
                Out::AskClient(needed) => {
                    self.ask_client(id, needed);
                    break;
                }
                Out::Settle => {
                    let Some(r) = self.reqs.get(&id) else { break };
                    let need = r.committed.map_or(r.read, |p| p.seq);
                    match self.syncs.ask(id, need, now.mono) {
                        syncs::Durable::Now => {
                            if self.subs_due.remove(&id) {
                                self.ask_look();
                            }
                            In::Settled
                        }
                        syncs::Durable::Wait => {
                            self.maybe_sync();
                            break;
                        }
                    }
                }
                Out::TakeTurn {
                    only_if_contended,
                    contend,
                } => match self.take_turn(id, only_if_contended, contend) {
                    Some(held) => In::Turn { held },
                    None => break,
                },
                Out::LeaveTurn { uncount } => {
                    let ticket = self.reqs.get_mut(&id).and_then(|r| {
                        r.counted &= !uncount;
                        r.ticket
                    });
                    if let Some(ticket) = ticket {
                        self.leave_turn(ticket, uncount);
                    }
                    continue;
                }
                Out::Pause(d) => {
                    let at = now.mono + d;
                    if let Some(r) = self.reqs.get_mut(&id) {
                        r.park = Park::Pause(at);
                        self.timers.arm(&mut r.armed, at, Due::Req(id));
                    }
                    break;
                }
                Out::Notify(n) => {
                    self.notify(id, n);
                    continue;
                }
                Out::AskStop => {
                    if let Some(r) = self.reqs.get_mut(&id)
                        && !r.waited
                    {
                        r.waited = true;
                        self.counters_mut().waits += 1;
                    }
                    In::Stop(self.stop_rule(id))
                }
                Out::ClaimWaitSlot => {
                    let Some(r) = self.reqs.get_mut(&id) else {
                        break;
                    };
                    let granted = self.sharing.shared.claim_wait(r.peer);
                    r.slot = granted;
                    if !granted {
                        self.counters_mut().waits_refused += 1;
                    }
                    In::WaitSlot { granted }
                }
                Out::ReleaseWaitSlot => {
                    if let Some(r) = self.reqs.get_mut(&id)
                        && std::mem::take(&mut r.slot)
                    {
                        self.sharing.shared.release_wait(r.peer);
                    }
                    continue;
                }
                Out::WaitForHead { until, nap } => {
                    let wake = now.mono + nap;
                    if let Some(w) = &until.watch {
                        self.watching
                            .entry(w.stream.clone())
                            .or_default()
                            .insert(id);
                    }
                    if let Some(r) = self.reqs.get_mut(&id) {
                        r.park = Park::Nap(Nap { until, wake });
                        self.timers.arm(&mut r.armed, wake, Due::Req(id));
                    }
                    self.listen(true);
                    self.detach(id);
                    break;
                }
                Out::Failed(e) => {
                    self.answer_failure(id, e);
                    break;
                }
                Out::Done(finished) => {
                    self.deliver(id, finished, true);
                    break;
                }
            });
        }
        self.continuing = outer;
    }

    /// Asks for the server's turn: whether it is held now (`false`: not needed), or `None`
    /// when the request queued for it (it runs on once the turn is handed to it).
    fn take_turn(&mut self, id: ReqId, only_if_contended: bool, contend: bool) -> Option<bool> {
        let r = self.reqs.get_mut(&id)?;
        let ticket = *r.ticket.get_or_insert_with(|| self.turns.ticket());
        r.counted |= contend;
        match self.turns.request(ticket, only_if_contended, contend) {
            Grant::NotNeeded => Some(false),
            Grant::Granted => Some(true),
            Grant::Queued => {
                r.park = Park::Turn;
                self.queued.insert(ticket, id);
                None
            }
        }
    }

    /// Gives up a turn and hands it to the request next in line.
    fn leave_turn(&mut self, ticket: crate::engine::turns::Ticket, uncount: bool) {
        self.turns.leave(ticket, uncount);
        let next = self.queued.keys().copied().find(|t| self.turns.holds(*t));
        if let Some(t) = next
            && let Some(id) = self.queued.remove(&t)
        {
            if let Some(r) = self.reqs.get_mut(&id) {
                r.park = Park::Running;
                r.machine
                    .handle_input(self.now, request::Input::Turn { held: true });
            }
            self.ready.push_back(id);
        }
    }

    /// A waiting stdio request lets the lines behind it through.
    pub(super) fn detach(&mut self, id: ReqId) {
        let Some(conn) = self.reqs.get(&id).and_then(|r| r.conn) else {
            return;
        };
        if let Some(Conn::Stdio(s)) = self.conns.get_mut(&conn)
            && s.foreground == Some(id)
        {
            s.foreground = None;
            self.advance_stdio(conn);
        }
    }

    /// Why a waiting request must stop now, if it must: shutdown or end of input settle it;
    /// a cancellation naming it, or its peer (or its stream) gone, cancels it.
    fn stop_rule(&self, id: ReqId) -> Option<Stop> {
        if self.shutting_down {
            return Some(Stop::Settle);
        }
        let r = self.reqs.get(&id)?;
        if r.entered.is_some_and(|e| self.cancels.is_cancelled(e)) {
            return Some(Stop::Cancel);
        }
        let conn = r.conn.and_then(|c| self.conns.get(&c));
        let gone = match &r.answer {
            Answer::Stdio => {
                return match conn {
                    Some(Conn::Stdio(s)) if !s.eof => None,
                    _ => Some(Stop::Settle),
                };
            }
            Answer::Mcp { .. } => match conn {
                Some(Conn::Http(h)) => h.eof,
                _ => true,
            },
            Answer::Legacy { stream, .. } => !self.conns.contains_key(stream),
            Answer::Job { stop, .. } => return *stop,
        };
        gone.then_some(Stop::Cancel)
    }

    /// Wakes a napping request so that it asks at once whether to stop.
    pub(super) fn wake(&mut self, id: ReqId) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if let Park::Nap(nap) = &r.park {
            let nap = nap.clone();
            r.park = Park::Running;
            self.unwatch(id, &nap);
            self.pump(id, Some(request::Input::Looked { moved: false }));
        }
    }

    /// Wakes the requests of `conn`, or answering to it (a legacy stream).
    pub(super) fn wake_requests_of(&mut self, conn: ConnId) {
        let of: Vec<ReqId> = self
            .reqs
            .iter()
            .filter(|(_, r)| {
                r.conn == Some(conn)
                    || matches!(&r.answer, Answer::Legacy { stream, .. } if *stream == conn)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in of {
            self.wake(id);
        }
    }

    fn unwatch(&mut self, id: ReqId, nap: &Nap) {
        if let Some(w) = &nap.until.watch
            && let Some(set) = self.watching.get_mut(&w.stream)
        {
            set.remove(&id);
            if set.is_empty() {
                self.watching.remove(&w.stream);
            }
        }
    }

    pub(super) fn req_timer(&mut self, id: ReqId, at: Duration) {
        let now = self.now.mono;
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        timers::fired(&mut r.armed, at);
        match r.park.clone() {
            Park::Pause(until) if until <= now => {
                r.park = Park::Running;
                self.pump(id, Some(request::Input::Paused));
            }
            Park::Nap(nap) if nap.wake <= now => {
                r.park = Park::Look(nap.until.clone());
                self.unwatch(id, &nap);
                self.looking.push(id);
                self.ask_look();
            }
            Park::Pause(at) | Park::Nap(super::Nap { wake: at, .. }) => {
                self.timers.arm(&mut r.armed, at, Due::Req(id));
            }
            Park::Running | Park::Turn | Park::Look(_) => {}
        }
    }

    /// Asks for one look at the head for every request whose nap ended meanwhile.
    pub(super) fn ask_look(&mut self) {
        if !self.look_asked {
            self.look_asked = true;
            self.push(Output::Look);
        }
    }

    /// The store heard of a head past ours: look now if anything waits for one.
    pub(super) fn head_moved(&mut self) {
        let napping = self.reqs.values().any(|r| matches!(r.park, Park::Nap(_)));
        self.listen(napping);
        if napping || !self.feeds.is_empty() || !self.subs.is_empty() {
            self.heard_move |= napping;
            self.ask_look();
        }
    }

    /// The head, looked at: the requests whose nap ended see whether their answer may differ
    /// now, and the feeds are told it.
    pub(super) fn head(&mut self, head: Result<&Snapshot<F>, StoreError>) {
        self.look_asked = false;
        let mut looking = std::mem::take(&mut self.looking);
        if let Ok(s) = head {
            self.tell_feeds(s.position);
            self.tell_subscribers(s);
            if std::mem::take(&mut self.heard_move) {
                looking.extend(self.naps_answered_by(s));
            }
        }
        if let Err(e) = &head {
            self.log(format!("bernstein: a look at the ledger head failed: {e}"));
        }
        for id in looking {
            let Some(r) = self.reqs.get_mut(&id) else {
                continue;
            };
            let Park::Look(until) = std::mem::replace(&mut r.park, Park::Running) else {
                continue;
            };
            // A failed look lets the request run again: it reads the store and reports.
            let moved = head.as_ref().map_or(true, |s| until.moved(s));
            self.pump(id, Some(request::Input::Looked { moved }));
        }
    }

    /// The napping requests whose wait `s` answers, each parked to look at it (and no longer
    /// napping): a head heard of early wakes only the waits it concerns.
    fn naps_answered_by(&mut self, s: &Snapshot<F>) -> Vec<ReqId> {
        let mut woken = Vec::new();
        let mut ended = Vec::new();
        for (id, r) in &mut self.reqs {
            if let Park::Nap(nap) = &r.park
                && nap.until.moved(s)
            {
                let nap = nap.clone();
                r.park = Park::Look(nap.until.clone());
                ended.push((*id, nap));
                woken.push(*id);
            }
        }
        for (id, nap) in ended {
            self.unwatch(id, &nap);
        }
        woken
    }

    pub(super) fn appended(&mut self, id: ReqId, result: AppendResult) {
        if let AppendResult::Committed(p) = &result {
            self.syncs.saw(p.seq);
        }
        let woken = match (&result, self.reqs.get_mut(&id)) {
            (AppendResult::Committed(p), Some(r)) => {
                r.committed = Some(*p);
                std::mem::take(&mut r.appending)
            }
            _ => Vec::new(),
        };
        if self.subs.watches_any(woken.iter()) && !woken.is_empty() {
            self.subs_due.insert(id);
        }
        self.pump(id, Some(request::Input::Appended(result)));
        // Long polls watching a stream this request wrote wake now, not at their next look.
        for stream in woken {
            let ids: Vec<ReqId> = self
                .watching
                .get(&stream)
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default();
            for w in ids {
                let Some(r) = self.reqs.get_mut(&w) else {
                    continue;
                };
                if let Park::Nap(nap) = &r.park {
                    let nap = nap.clone();
                    r.park = Park::Running;
                    self.unwatch(w, &nap);
                    self.pump(w, Some(request::Input::Looked { moved: true }));
                }
            }
        }
    }

    /// Asks for the next sync when group commit says so, else arms its hold.
    pub(super) fn maybe_sync(&mut self) {
        let now = self.now.mono;
        match self.syncs.due(now, self.working) {
            Ok(()) => {
                let (waiting, upto) = self.syncs.start(now);
                self.ask_store(Output::Sync { waiting, upto });
            }
            Err(Some(at)) => self.timers.arm(&mut self.syncs.armed, at, Due::Sync),
            Err(None) => {}
        }
    }

    /// The sync completed: every request it covers goes on.
    pub(super) fn synced(&mut self, durable: u64) {
        let finished = self.syncs.finished(self.now.mono, durable);
        let committed = |r: &Req<F>| r.committed.is_some();
        if finished
            .iter()
            .any(|id| self.reqs.get(id).is_some_and(committed))
        {
            self.tell(Notice::Committed);
        }
        for id in finished {
            self.settled(id);
        }
        self.maybe_sync();
    }

    /// The sync failed: every request waiting for one is answered with the failure.
    pub(super) fn sync_failed(&mut self, error: StoreError) {
        for id in self.syncs.failed() {
            self.answer_failure(id, error.clone());
        }
    }

    fn settled(&mut self, id: ReqId) {
        if let Some(p) = self.reqs.get_mut(&id).and_then(|r| r.committed.take()) {
            self.tell_feeds(p);
        }
        // Its records are durable: the subscriptions see them at the head.
        if self.subs_due.remove(&id) {
            self.ask_look();
        }
        self.pump(id, Some(request::Input::Settled));
    }

    pub(super) fn failed(&mut self, id: ReqId, error: StoreError) {
        self.answer_failure(id, error);
    }

    /// Sends a notification of a request being served where its answer goes: a stdio line,
    /// an event on its SSE answer (opened by the first one; a client that takes JSON only
    /// gets none), an event on its legacy stream.
    pub(super) fn notify(&mut self, id: ReqId, n: Vec<u8>) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if let Answer::Job { notes, .. } = &mut r.answer {
            return notes.push(n);
        }
        let Some(conn) = r.conn else { return };
        match &mut r.answer {
            Answer::Job { .. } => {}
            Answer::Stdio => {
                let mut line = n;
                line.push(b'\n');
                self.send(conn, line);
            }
            Answer::Mcp { x, stream } => {
                if !self.conns.contains_key(&conn) {
                    return;
                }
                let mut head = None;
                if stream.is_none() {
                    let span = x
                        .message
                        .request_span_id()
                        .map_or_else(|| body_span_id(x.message.bytes()), String::from);
                    let Some(s) = StreamedReply::open(x, &span) else {
                        return;
                    };
                    head = Some(s.head());
                    *stream = Some(s);
                }
                let event = stream.as_mut().map(|s| s.event(&n));
                for bytes in head.into_iter().chain(event) {
                    self.send(conn, bytes);
                }
            }
            Answer::Legacy {
                m, stream, span, ..
            } => {
                let stream = *stream;
                let Some(Conn::Legacy(l)) = self.conns.get_mut(&stream) else {
                    return;
                };
                l.last_event = self.now.mono;
                let served = ServedParts {
                    notifications: std::slice::from_ref(&n),
                    response: None,
                    kind: Default::default(),
                    span_id: Some(span),
                };
                let events = m.events(&mut l.ids, served);
                self.send(stream, events);
            }
        }
    }

    /// Ends a request the store failed: answered with the failure (nothing it ran was
    /// acknowledged).
    fn answer_failure(&mut self, id: ReqId, e: StoreError) {
        let Some(r) = self.reqs.get(&id) else {
            return;
        };
        let prefix = match r.answer {
            Answer::Stdio => "bernstein",
            // Its caller reports the failure.
            Answer::Job { .. } => return self.end_job(id, Err(e)),
            _ => "bernstein http",
        };
        // A request whose append committed failed at its sync: its records are written, but
        // whether they are durable is unknown.
        let crate::engine::job::Work::Message(m) = r.machine.job() else {
            return self.end_job(id, Err(e));
        };
        let reply = self.server.storage_failure(
            &m.message,
            &StorageFailure {
                reason: &e.to_string(),
                retryable: e.retryable(),
                written: r.committed.is_some(),
            },
        );
        let took = self.now.mono.saturating_sub(r.machine.started());
        self.log(format!("{prefix}: ledger error: {e}"));
        let finished = Finished {
            served: Served {
                kind: reply.kind(),
                response: Some(reply.render(0)),
                ..Served::default()
            },
            tally: Tally::default(),
            took,
        };
        self.deliver(id, finished, false);
    }

    /// Takes a finished request out of the engine and writes its answer where it goes.
    fn deliver(&mut self, id: ReqId, finished: Finished, count: bool) {
        let Some(mut r) = self.reqs.remove(&id) else {
            return;
        };
        self.release(&r, id);
        let error = finished.served.kind.error().map(|e| e.code);
        self.ended(id, error, !count);
        if count {
            self.counters_mut().served(&finished.tally, finished.took);
        }
        if let Answer::Job { notes, .. } = &mut r.answer {
            // Its notifications, then the response, to the caller at once.
            let mut finished = finished;
            notes.append(&mut finished.served.notifications);
            finished.served.notifications = std::mem::take(notes);
            let job = JobId(id.0);
            return self.push(Output::Finished {
                job,
                result: Ok(Box::new(finished)),
            });
        }
        let Some(conn) = r.conn else { return };
        let mut served = finished.served;
        if let Some(order) = served.subscription.take()
            && self.hold(&mut r, conn, order, &mut served)
        {
            // The connection became the listen stream.
            return;
        }
        match r.answer {
            Answer::Stdio => {
                let Some(Conn::Stdio(s)) = self.conns.get_mut(&conn) else {
                    return;
                };
                if let Some(v) = &served.negotiated_version {
                    s.facts.protocol_version = Some(v.clone());
                }
                if let Some(level) = served.log_level {
                    s.facts.log_level = Some(level);
                }
                if let Some(caps) = served.declared_caps {
                    s.caps = caps;
                }
                s.open = s.open.saturating_sub(1);
                if s.foreground == Some(id) {
                    s.foreground = None;
                }
                let mut lines = Vec::new();
                for m in served.notifications.iter().chain(served.response.iter()) {
                    lines.extend_from_slice(m);
                    lines.push(b'\n');
                }
                self.send(conn, lines);
                self.advance_stdio(conn);
            }
            Answer::Mcp { x, stream } => match stream {
                None => {
                    // A session's level is the session's, whichever connection carries it;
                    // without one, the level and what `initialize` declared hold for the
                    // connection (a client that ignores the session id).
                    match (x.session, served.log_level) {
                        (Some(s), Some(level)) => {
                            self.session_levels.set(s.id, level);
                            let session = s.id;
                            self.tell(Notice::SessionLevel { session, level });
                        }
                        (None, Some(level)) => {
                            if let Some(Conn::Http(h)) = self.conns.get_mut(&conn) {
                                h.log_level = Some(level);
                            }
                        }
                        (_, None) => {}
                    }
                    if let Some(caps) = served.declared_caps
                        && let Some(Conn::Http(h)) = self.conns.get_mut(&conn)
                    {
                        h.caps = caps;
                    }
                    let mut response = x.reply(parts(&served));
                    if let Some(token) = self.session_id(&served) {
                        response = response.with_header("Mcp-Session-Id", token);
                    }
                    let close = response.close;
                    self.respond(conn, response);
                    if !close {
                        self.set_busy(conn, None);
                    }
                }
                // The answer was streamed: its last event ends the body, and the connection.
                Some(mut s) => {
                    if let Some(reply) = &served.response
                        && self.conns.contains_key(&conn)
                    {
                        let event = s.event(reply);
                        self.send(conn, event);
                    }
                    self.close(conn, true);
                }
            },
            Answer::Job { .. } => {}
            Answer::Legacy {
                m,
                stream,
                released,
                ..
            } => {
                let now = self.now.mono;
                let response = match self.conns.get_mut(&stream) {
                    Some(Conn::Legacy(l)) => {
                        l.clock.message_finished(now);
                        l.last_event = now;
                        if let Some(v) = &served.negotiated_version {
                            l.version = Some(v.clone());
                        }
                        if let Some(level) = served.log_level {
                            l.log_level = Some(level);
                        }
                        if let Some(caps) = served.declared_caps {
                            l.caps = caps;
                        }
                        let events = m.events(&mut l.ids, parts(&served));
                        self.send(stream, events);
                        m.accepted(served.span_id.as_deref())
                    }
                    _ => m.stream_gone(),
                };
                if released {
                    return;
                }
                let close = response.close;
                self.respond(conn, response);
                if !close {
                    self.set_busy(conn, None);
                }
            }
        }
    }

    /// The session id of a handshake-era `initialize` answered over streamable HTTP: what it
    /// declared and negotiated, sealed (`transport::http::session`); none from the legacy
    /// sessions' cut-off on.
    fn session_id(&mut self, served: &Served) -> Option<String> {
        let caps = served.declared_caps?;
        let revision = served
            .negotiated_version
            .as_deref()
            .and_then(Revision::parse)?;
        let now = self.now.wall;
        if now >= Timestamp::LEGACY_SESSION_CUTOFF {
            return None;
        }
        let session = Session {
            id: self.entropy.session_nonce(),
            caps,
            revision,
            issued: now,
        };
        session::issue(&self.server.config.session_key, &session, now)
    }

    /// Ends a submitted job with `result` (a store failure: nothing counted).
    fn end_job(&mut self, id: ReqId, result: Result<Box<Finished>, StoreError>) {
        if let Some(r) = self.reqs.remove(&id) {
            self.release(&r, id);
            self.ended(id, None, result.is_err());
            self.push(Output::Finished {
                job: JobId(id.0),
                result,
            });
        }
    }

    /// Gives back what a request held: its wait slot, its turn or place in line, its
    /// cancellation entry, its watch, its count in the waits gauge.
    fn release(&mut self, r: &Req<F>, id: ReqId) {
        self.forget_asks(id);
        if r.slot {
            self.sharing.shared.release_wait(r.peer);
        }
        if let Some(ticket) = r.ticket {
            self.queued.remove(&ticket);
            self.leave_turn(ticket, r.counted);
        }
        if let Some(e) = r.entered {
            self.cancels.leave(e);
        }
        self.syncs.forget(id);
        if let Park::Nap(nap) = &r.park {
            self.unwatch(id, nap);
        }
        self.looking.retain(|l| *l != id);
        self.subs_due.remove(&id);
        if r.waited {
            let mut counters = self.counters_mut();
            counters.waits = counters.waits.saturating_sub(1);
        }
    }
}

fn parts(served: &Served) -> ServedParts<'_> {
    ServedParts {
        notifications: &served.notifications,
        response: served.response.as_deref(),
        kind: served.kind,
        span_id: served.span_id.as_deref(),
    }
}
