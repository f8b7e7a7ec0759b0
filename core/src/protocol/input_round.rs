//! One round of a request that may need input: what the client brought back ([`read`]) and
//! what to do with a handler's [`InputNeeded`] ([`ask`]), in either era.
//!
//! Stateless era (2026-07-28): the answers are the retry's `inputResponses`, checked against a
//! valid `requestState`, and a handler's questions end the request with an
//! `InputRequiredResult`. Answers count only with the `requestState` that asked for them: a
//! retry without one is a first round (its `inputResponses` are ignored and the handler asks
//! again), and only the keys the state names reach the handler (others are ignored). A state
//! that is malformed, forged, expired, or issued for another request or principal is refused
//! with `-32602` and `error.data.reason` naming which, before any handler runs: nothing is
//! recorded.
//!
//! Handshake era: the capabilities are those the client declared in `initialize` and the
//! answers those the engine gathered ([`ClientSide`]); a handler's questions go back to the
//! engine ([`Asked::Client`]), which sends them to the client as JSON-RPC requests and serves
//! the message again with the answers, or ends it with `-32000` when they never came.
//!
//! Either era: a handler that asks for a capability the client did not declare is refused with
//! `-32021` (MissingRequiredClientCapability).

use serde_json::{Map, Value, json};

use super::decorate::decorate;
use super::era::{META_CLIENT_CAPABILITIES, Revision};
use super::input::{
    Answers, Capability, ClientCaps, ClientSide, InputNeeded, InputRequest, Inputs, Unanswered,
};
use super::jsonrpc::{RpcError, kind_of};
use super::model::{Meta, Method};
use super::principal::Principal;
use super::request_state::{self, Claims};
use super::{Server, validate};
use crate::ledger::Fold;
use crate::time::Timestamp;

/// JSON-RPC code of MissingRequiredClientCapabilityError (2026-07-28).
pub const MISSING_CAPABILITY: i64 = -32021;
/// JSON-RPC code of a handshake-era request whose client never answered its questions (a
/// server error of JSON-RPC's implementation-defined range; `error.data.reason` says why).
pub const UNANSWERED: i64 = -32000;

/// The request a round belongs to.
#[derive(Clone, Copy, Debug)]
pub struct RoundOf<'a> {
    pub method: Method,
    pub params: Option<&'a Value>,
    pub revision: Revision,
    pub principal: Option<&'a Principal>,
    pub now: Timestamp,
    /// The handshake-era client as its connection knows it.
    pub client: ClientSide<'a>,
}

impl RoundOf<'_> {
    /// What the client can be asked: in the stateless era what this request's `_meta`
    /// declares; in the handshake era what the client declared in `initialize`.
    pub fn caps(&self) -> ClientCaps {
        if self.revision.is_modern() {
            ClientCaps::of_declared(Meta::of(self.params).get(META_CLIENT_CAPABILITIES))
        } else {
            self.client.caps
        }
    }

    fn digest(&self) -> String {
        request_state::request_digest(self.method.as_str(), self.params)
    }
}

/// The inputs a handler runs with in this round, or the `-32602` refusing the retry.
pub fn read(server_key: &[u8], round: &RoundOf<'_>) -> Result<Inputs, RpcError> {
    let caps = round.caps();
    let first = Inputs {
        caps,
        ..Inputs::default()
    };
    if !round.revision.is_modern() {
        return match round.client.answers {
            None => Ok(first),
            Some(Answers::Given(inputs)) => Ok(Inputs {
                caps,
                ..inputs.clone()
            }),
            Some(Answers::Unanswered(why)) => Err(unanswered(why)),
        };
    }
    let field = |k: &str| round.params.and_then(|p| p.get(k));
    let responses = match field("inputResponses") {
        None => None,
        Some(Value::Object(map)) => {
            if let Some((key, value)) = map.iter().find(|(_, v)| !v.is_object()) {
                let path = validate::child_path("params.inputResponses", key);
                return Err(RpcError::invalid_params(format!(
                    "{path} must be an object (the client's result of the request), got {}",
                    kind_of(value)
                ))
                .with_data(json!({"field": path})));
            }
            Some(map)
        }
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "params.inputResponses must be an object of the client's results keyed as \
                 inputRequests named them, got {}",
                kind_of(other)
            )));
        }
    };
    let token = match field("requestState") {
        None => return Ok(first),
        Some(Value::String(t)) => t,
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "params.requestState must be the string the server sent, got {}",
                kind_of(other)
            )));
        }
    };
    let claims = request_state::open(
        server_key,
        token,
        round.now,
        &round.digest(),
        round.principal,
    )
    .map_err(|refusal| {
        RpcError::invalid_params(format!(
            "{}; send the request again without inputResponses and requestState to start over",
            refusal.explain()
        ))
        .with_data(json!({"reason": refusal.code()}))
    })?;
    let empty = Map::new();
    let responses = responses.unwrap_or(&empty);
    let mut answered = Vec::new();
    for (key, capability) in &claims.asked {
        let Some(response) = responses.get(key) else {
            continue;
        };
        if let Some(why) = misfit(capability, response) {
            let path = validate::child_path("params.inputResponses", key);
            return Err(RpcError::invalid_params(format!("{path}: {why}"))
                .with_data(json!({"field": path})));
        }
        answered.push((key.clone(), response.clone()));
    }
    Ok(Inputs {
        responses: answered,
        state: claims.state,
        caps,
    })
}

/// Why `response` cannot answer a request that needed `capability`.
fn misfit(capability: &str, response: &Value) -> Option<&'static str> {
    let probe = match capability {
        "elicitation" => InputRequest::Elicit {
            message: String::new(),
            requested_schema: Value::Null,
        },
        "sampling" => InputRequest::Sample {
            messages: Vec::new(),
            max_tokens: 0,
        },
        _ => InputRequest::ListRoots,
    };
    probe.misfit(response)
}

/// The refusal of a handshake-era request whose client never answered.
fn unanswered(why: &Unanswered) -> RpcError {
    let (reason, message) = match why {
        Unanswered::Expired => (
            "input_expired",
            "the client did not answer the server's questions in time; nothing was recorded, \
             send the request again to be asked again"
                .to_string(),
        ),
        Unanswered::Refused { method, message } => (
            "input_refused",
            format!(
                "the client answered the server's {method} with an error ({}); nothing was \
                 recorded",
                super::jsonrpc::shorten(message, 200)
            ),
        ),
        Unanswered::Unreachable => (
            "input_unreachable",
            "the server could not put its questions to the client on this request's stream \
             (an HTTP client must accept text/event-stream); nothing was recorded"
                .to_string(),
        ),
    };
    RpcError::new(UNANSWERED, message).with_data(json!({ "reason": reason }))
}

/// What a handler's questions become.
#[derive(Debug)]
pub enum Asked {
    /// The stateless era's `InputRequiredResult`.
    Result(Value),
    /// Handshake era: questions for the engine to put to the client.
    Client(InputNeeded),
}

/// What to do with a handler's `needed`: an `InputRequiredResult` (stateless era) or the
/// questions for the engine (handshake era); refused when the client did not declare a
/// capability it needs (`-32021`) or the handler asked for nothing usable.
pub fn ask<F: Fold>(
    server: &Server<F>,
    round: &RoundOf<'_>,
    needed: InputNeeded,
) -> Result<Asked, RpcError> {
    if let Some(missing) = needed.missing(round.caps()) {
        return Err(missing_capability(missing, round.revision));
    }
    let mut requests = Map::new();
    let mut asked = Vec::new();
    for (key, request) in &needed.requests {
        if requests.insert(key.clone(), request.to_value()).is_some() {
            return Err(RpcError::internal(format!(
                "the handler asked two things under one key {key:?}"
            )));
        }
        asked.push((key.clone(), request.capability().key().to_string()));
    }
    if requests.is_empty() {
        return Err(RpcError::internal(
            "the handler needed input but asked for nothing",
        ));
    }
    if !round.revision.is_modern() {
        return Ok(Asked::Client(needed));
    }
    let claims = Claims {
        request: round.digest(),
        principal: request_state::principal_of(round.principal),
        expires: round.now.0.saturating_add(server.config.input_expiry_ms),
        asked,
        state: needed.state,
    };
    let token = request_state::seal(&server.config.request_state_key, &claims);
    let result = json!({"inputRequests": requests, "requestState": token});
    let mut result = decorate(server, round.revision, round.method, result);
    if let Value::Object(obj) = &mut result {
        obj.insert("resultType".into(), Value::String("input_required".into()));
    }
    Ok(Asked::Result(result))
}

/// MissingRequiredClientCapabilityError naming `capability`.
pub fn missing_capability(capability: Capability, revision: Revision) -> RpcError {
    let how = if revision.is_modern() {
        format!(
            "declare it in params._meta[\"{META_CLIENT_CAPABILITIES}\"] if the client supports it"
        )
    } else {
        "declare it in initialize's capabilities if the client supports it".to_string()
    };
    let key = capability.key();
    RpcError::new(
        MISSING_CAPABILITY,
        format!("this request needs the client capability {key:?}, which the client did not declare: {how}"),
    )
    .with_data(json!({"requiredCapabilities": {key: {}}}))
}

#[cfg(test)]
mod tests;
