//! Questions put to handshake-era clients: a request whose handler needs the client's input
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) sends each question as a
//! JSON-RPC request on its own stream (a stdio line, an event of the POST's SSE answer, an
//! event of the legacy stream) and parks in memory, holding no thread; it resumes with the
//! answers when the client's responses arrive, on whatever connection they arrive: a response
//! is matched by its id, 128 bits the engine drew from its secret seed (as a legacy stream's
//! token), and counts only from the principal the question was put to (the OAuth `{iss,
//! sub}`, or none). Unanswered questions expire after
//! `Config::input_expiry_ms`; then, as when the client answers with an error or an answer that
//! does not fit, the request ends with an error and records nothing.

use std::collections::HashMap;

use core::time::Duration;

use serde_json::Value;

use super::timers::{self, Due};
use super::{Answer, Engine, ReqId};
use crate::engine::job::Work;
use crate::engine::request::Input as ReqInput;
use crate::ledger::Fold;
use crate::protocol::input::{InputNeeded, InputRequest, Unanswered};
use crate::protocol::principal::Principal;

/// The questions out, by the id of the request that carries each.
#[derive(Debug, Default)]
pub(super) struct Asks {
    /// Question id → (asking request, key, the question).
    out: HashMap<String, (ReqId, String, InputRequest)>,
    /// Asking request → its round of questions.
    rounds: HashMap<ReqId, AskRound>,
}

/// One request's questions: the ids still unanswered, the answers so far and when they expire.
#[derive(Debug)]
struct AskRound {
    ids: Vec<String>,
    answers: Vec<(String, Value)>,
    expires: Duration,
    armed: Option<Duration>,
}

impl Asks {
    /// Forgets a request's questions (it ended).
    fn forget(&mut self, req: ReqId) -> bool {
        let Some(round) = self.rounds.remove(&req) else {
            return false;
        };
        for id in round.ids {
            self.out.remove(&id);
        }
        true
    }
}

impl<F: Fold> Engine<F> {
    /// Puts `needed` to the client of request `id` and parks the request until it answers.
    pub(super) fn ask_client(&mut self, id: ReqId, needed: InputNeeded) {
        let Some(r) = self.reqs.get(&id) else { return };
        let reachable = match &r.answer {
            Answer::Stdio | Answer::Legacy { .. } => true,
            // The questions travel as events of the POST's answer: the client must take SSE.
            Answer::Mcp { x, stream } => stream.is_some() || x.accept.sse,
            Answer::Job { .. } => false,
        };
        if !reachable {
            return self.pump(id, Some(ReqInput::Answered(Err(Unanswered::Unreachable))));
        }
        let mut ids = Vec::new();
        let related = needed.related_task;
        for (key, question) in needed.requests {
            let qid = format!("bernstein-ask-{}", self.entropy.token());
            let message = question.to_request(&qid, related.as_deref());
            self.notify(id, message.to_string().into_bytes());
            self.asks.out.insert(qid.clone(), (id, key, question));
            ids.push(qid);
        }
        let expires = self.now.mono + Duration::from_millis(self.server.config.input_expiry_ms);
        let mut round = AskRound {
            ids,
            answers: Vec::new(),
            expires,
            armed: None,
        };
        self.timers.arm(&mut round.armed, expires, Due::Ask(id));
        self.asks.rounds.insert(id, round);
        // A stdio connection serves its next lines meanwhile: the answers among them. A legacy
        // post is accepted now: its client may post one message at a time, the answers next.
        self.detach(id);
        self.release_post(id);
    }

    /// Answers the `POST /messages` of a legacy request `202` now (its answer still goes on
    /// the stream), once.
    fn release_post(&mut self, id: ReqId) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        let (Some(conn), Answer::Legacy { m, released, .. }) = (r.conn, &mut r.answer) else {
            return;
        };
        if std::mem::replace(released, true) {
            return;
        }
        let response = m.accepted(None);
        let close = response.close;
        self.respond(conn, response);
        if !close {
            self.set_busy(conn, None);
        }
    }

    /// Whether this engine put question `qid` (and it is still open).
    pub(super) fn asked(&self, qid: &str) -> bool {
        self.asks.out.contains_key(qid)
    }

    /// The client answered question `qid` (a JSON-RPC response on any connection): the request
    /// that asked resumes once every question of its round is answered, or ends now when the
    /// answer is an error or does not fit the question. An id the engine did not draw, or
    /// whose question expired, is ignored.
    pub(super) fn client_answered(
        &mut self,
        qid: &str,
        answer: Result<Value, String>,
        from: Option<&Principal>,
    ) {
        let Some((req, _, _)) = self.asks.out.get(qid) else {
            return;
        };
        // Only the principal the question was put to answers it.
        let asked = self.reqs.get(req).and_then(|r| match r.machine.job() {
            Work::Message(m) => Some(m.facts.principal.as_ref()),
            Work::Submitted(_) => None,
        });
        if asked.is_none_or(|p| p.map(|p| (&p.iss, &p.sub)) != from.map(|p| (&p.iss, &p.sub))) {
            return;
        }
        let Some((req, key, question)) = self.asks.out.remove(qid) else {
            return;
        };
        let method = question.method().to_string();
        let value = match answer {
            Ok(v) => match question.misfit(&v) {
                None => v,
                Some(why) => {
                    let message = format!("its answer {why}");
                    return self.end_asking(req, Unanswered::Refused { method, message });
                }
            },
            Err(message) => return self.end_asking(req, Unanswered::Refused { method, message }),
        };
        let Some(round) = self.asks.rounds.get_mut(&req) else {
            return;
        };
        round.ids.retain(|id| id != qid);
        round.answers.push((key, value));
        if round.ids.is_empty()
            && let Some(round) = self.asks.rounds.remove(&req)
        {
            self.pump(req, Some(ReqInput::Answered(Ok(round.answers))));
        }
    }

    /// A request's questions are due: those still unanswered expired.
    pub(super) fn ask_timer(&mut self, req: ReqId, at: Duration) {
        let now = self.now.mono;
        let Some(round) = self.asks.rounds.get_mut(&req) else {
            return;
        };
        timers::fired(&mut round.armed, at);
        if round.expires <= now {
            self.end_asking(req, Unanswered::Expired);
        } else {
            let expires = round.expires;
            self.timers.arm(&mut round.armed, expires, Due::Ask(req));
        }
    }

    /// Ends request `req`'s questions without answers: it resumes to answer why.
    fn end_asking(&mut self, req: ReqId, why: Unanswered) {
        if self.asks.forget(req) {
            self.pump(req, Some(ReqInput::Answered(Err(why))));
        }
    }

    /// Forgets the questions of a request that ended.
    pub(super) fn forget_asks(&mut self, req: ReqId) {
        self.asks.forget(req);
    }
}
