//! Input from the client in the middle of a request: a tool or prompt answers "not yet, ask the
//! client this first" ([`InputNeeded`]: elicitation form, sampling, roots, each keyed by a name,
//! plus opaque state of the handler's own) and is run again with the client's answers and that
//! state ([`Inputs`]). One handler API for both eras: in 2026-07-28 the request ends with an
//! `InputRequiredResult` and the client retries with `inputResponses` and the `requestState`
//! ([`super::input_round`], [`super::request_state`]).
//!
//! A handler asks only for what the client declared it can answer ([`Inputs::can`]); the
//! engine refuses a request that asks for more with `-32021` (MissingRequiredClientCapability),
//! so a handler that can do without falls back instead. Pure values only.

use serde_json::{Map, Value, json};

/// The `_meta` key of the client's capabilities (stateless era).
pub use super::era::META_CLIENT_CAPABILITIES;

/// A client feature a server-to-client request needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    Elicitation,
    Sampling,
    Roots,
}

impl Capability {
    /// The key under `ClientCapabilities`.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Elicitation => "elicitation",
            Capability::Sampling => "sampling",
            Capability::Roots => "roots",
        }
    }
}

/// What the client declared it can answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCaps {
    /// `elicitation` in form mode (`elicitation: {}` means form; `{url: {}}` alone does not).
    pub elicitation: bool,
    pub sampling: bool,
    pub roots: bool,
}

impl ClientCaps {
    /// A client that declared nothing.
    pub const NONE: ClientCaps = ClientCaps {
        elicitation: false,
        sampling: false,
        roots: false,
    };

    /// The capabilities of a `ClientCapabilities` object; anything that is not an object
    /// declares nothing.
    pub fn of_declared(declared: Option<&Value>) -> ClientCaps {
        let Some(Value::Object(caps)) = declared else {
            return ClientCaps::NONE;
        };
        let object = |key: &str| caps.get(key).and_then(Value::as_object);
        let elicitation = object("elicitation")
            .is_some_and(|e| e.is_empty() || e.get("form").is_some_and(Value::is_object));
        ClientCaps {
            elicitation,
            sampling: object("sampling").is_some(),
            roots: object("roots").is_some(),
        }
    }

    pub fn allows(self, capability: Capability) -> bool {
        match capability {
            Capability::Elicitation => self.elicitation,
            Capability::Sampling => self.sampling,
            Capability::Roots => self.roots,
        }
    }
}

/// One thing to ask the client.
#[derive(Clone, Debug, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create` in form mode: a message and a flat object schema of the answer.
    Elicit {
        message: String,
        requested_schema: Value,
    },
    /// `sampling/createMessage`: the conversation (`SamplingMessage` objects) and a token cap.
    Sample {
        messages: Vec<Value>,
        max_tokens: u64,
    },
    /// `roots/list`.
    ListRoots,
}

impl InputRequest {
    /// A form asking for `fields` (`PrimitiveSchemaDefinition` objects by name), all of
    /// `required` required.
    pub fn form(message: impl Into<String>, fields: Value, required: &[&str]) -> InputRequest {
        InputRequest::Elicit {
            message: message.into(),
            requested_schema: json!({
                "type": "object",
                "properties": fields,
                "required": required,
            }),
        }
    }

    /// A one-message sampling request: `text` from the user, at most `max_tokens` back.
    pub fn ask_model(text: impl Into<String>, max_tokens: u64) -> InputRequest {
        InputRequest::Sample {
            messages: vec![json!({
                "role": "user",
                "content": {"type": "text", "text": text.into()},
            })],
            max_tokens,
        }
    }

    pub fn capability(&self) -> Capability {
        match self {
            InputRequest::Elicit { .. } => Capability::Elicitation,
            InputRequest::Sample { .. } => Capability::Sampling,
            InputRequest::ListRoots => Capability::Roots,
        }
    }

    /// The JSON-RPC method the client serves it with.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::Elicit { .. } => "elicitation/create",
            InputRequest::Sample { .. } => "sampling/createMessage",
            InputRequest::ListRoots => "roots/list",
        }
    }

    /// The request's `params`.
    pub fn params(&self) -> Value {
        match self {
            InputRequest::Elicit {
                message,
                requested_schema,
            } => json!({
                "mode": "form",
                "message": message,
                "requestedSchema": requested_schema,
            }),
            InputRequest::Sample {
                messages,
                max_tokens,
            } => json!({"messages": messages, "maxTokens": max_tokens}),
            InputRequest::ListRoots => json!({}),
        }
    }

    /// The request as an `InputRequest` object (`{method, params}`).
    pub fn to_value(&self) -> Value {
        json!({"method": self.method(), "params": self.params()})
    }

    /// The request as a JSON-RPC request with id `id` (handshake era: sent on the stream of
    /// the call that asks), naming `related_task` in its `_meta` when it is asked for a task.
    pub fn to_request(&self, id: &str, related_task: Option<&str>) -> Value {
        let mut params = self.params();
        if let (Some(task), Value::Object(p)) = (related_task, &mut params) {
            let meta = json!({ super::era::META_RELATED_TASK: {"taskId": task} });
            p.insert("_meta".into(), meta);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": self.method(), "params": params})
    }

    /// Why `response` cannot be the client's answer to this request, if it cannot: an
    /// `ElicitResult`, `CreateMessageResult` or `ListRootsResult` by the request's method.
    pub fn misfit(&self, response: &Value) -> Option<&'static str> {
        let Value::Object(r) = response else {
            return Some("must be an object (the client's result of the request)");
        };
        match self {
            InputRequest::Elicit { .. } => match r.get("action").and_then(Value::as_str) {
                Some("accept") if !r.get("content").is_none_or(Value::is_object) => {
                    Some("content must be an object")
                }
                Some("accept" | "decline" | "cancel") => None,
                _ => Some("action must be \"accept\", \"decline\" or \"cancel\""),
            },
            InputRequest::Sample { .. } => {
                let fits = r.get("role").is_some_and(Value::is_string)
                    && r.get("model").is_some_and(Value::is_string)
                    && r.get("content")
                        .is_some_and(|c| c.is_object() || c.is_array());
                (!fits).then_some("must be a CreateMessageResult (role, content, model)")
            }
            InputRequest::ListRoots => {
                let fits = r
                    .get("roots")
                    .and_then(Value::as_array)
                    .is_some_and(|roots| {
                        roots
                            .iter()
                            .all(|root| root.get("uri").is_some_and(Value::is_string))
                    });
                (!fits).then_some("must be a ListRootsResult (roots, each with a uri)")
            }
        }
    }
}

/// A handler's "not yet": what to ask the client, keyed by names the handler chooses, and the
/// state it wants back with the answers (`None`: it needs none).
#[derive(Clone, Debug, PartialEq)]
pub struct InputNeeded {
    pub requests: Vec<(String, InputRequest)>,
    pub state: Option<Value>,
    /// The task the questions are asked for (a handshake-era `tasks/result`): each request put
    /// to the client names it in `_meta` (`io.modelcontextprotocol/related-task`).
    pub related_task: Option<String>,
}

impl InputNeeded {
    /// One request under `key`, no state.
    pub fn one(key: impl Into<String>, request: InputRequest) -> InputNeeded {
        InputNeeded {
            requests: vec![(key.into(), request)],
            state: None,
            related_task: None,
        }
    }

    pub fn with_state(mut self, state: Value) -> InputNeeded {
        self.state = Some(state);
        self
    }

    /// The first capability asked for that `caps` lacks.
    pub fn missing(&self, caps: ClientCaps) -> Option<Capability> {
        self.requests
            .iter()
            .map(|(_, r)| r.capability())
            .find(|c| !caps.allows(*c))
    }
}

/// The answers a handler is run with: the client's responses to the previous round's requests
/// (those keys only), the state the handler kept, and what the client can be asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    pub responses: Vec<(String, Value)>,
    pub state: Option<Value>,
    pub caps: ClientCaps,
}

/// No answers, no state, nothing the client can be asked: a handler run outside a request
/// (the CLI, tests).
pub static NO_INPUT: Inputs = Inputs {
    responses: Vec::new(),
    state: None,
    caps: ClientCaps::NONE,
};

/// Why a handshake-era client's answers to a request's questions never came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unanswered {
    /// Not all answered within the expiry (`Config::input_expiry_ms`).
    Expired,
    /// The client answered one with a JSON-RPC error.
    Refused { method: String, message: String },
    /// The question could not be put to the client (its stream cannot carry requests).
    Unreachable,
}

/// What the engine gathered for a handshake-era request that asked its client (see
/// [`ClientSide`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Answers {
    /// The answers, and the state the handler kept (`caps` is filled in by the engine's
    /// connection facts, not here).
    Given(Inputs),
    Unanswered(Unanswered),
}

/// A handshake-era client as its connection knows it, handed in beside the message: the
/// capabilities it declared in `initialize`, and the answers to this request's questions so
/// far (`None` on the first run). Stateless-era requests carry their own in `params`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientSide<'a> {
    pub caps: ClientCaps,
    pub answers: Option<&'a Answers>,
}

/// A client's answer to an elicitation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Elicited<'a> {
    /// Submitted, with the form's content (empty when the client sent none).
    Accepted(&'a Map<String, Value>),
    Declined,
    Cancelled,
}

impl Inputs {
    /// Whether the client can be asked for `capability`.
    pub fn can(&self, capability: Capability) -> bool {
        self.caps.allows(capability)
    }

    /// The response under `key`, if the client answered it.
    pub fn response(&self, key: &str) -> Option<&Value> {
        self.responses
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The answer to the elicitation under `key` (checked when it arrived).
    pub fn elicited(&self, key: &str) -> Option<Elicited<'_>> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let r = self.response(key)?;
        match r.get("action")?.as_str()? {
            "accept" => Some(Elicited::Accepted(
                r.get("content")
                    .and_then(Value::as_object)
                    .unwrap_or_else(|| EMPTY.get_or_init(Map::new)),
            )),
            "decline" => Some(Elicited::Declined),
            _ => Some(Elicited::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_capabilities() {
        let caps = |v: Value| ClientCaps::of_declared(Some(&v));
        assert_eq!(caps(json!({})), ClientCaps::NONE);
        let all = caps(json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}}));
        assert!(all.elicitation && all.sampling && all.roots);
        assert!(caps(json!({"elicitation": {"form": {}, "url": {}}})).elicitation);
        // URL mode only: no form can be shown.
        assert!(!caps(json!({"elicitation": {"url": {}}})).elicitation);
        // Not objects: not declared.
        assert_eq!(
            caps(json!({"sampling": true, "roots": []})),
            ClientCaps::NONE
        );
        assert_eq!(ClientCaps::of_declared(None), ClientCaps::NONE);
    }

    #[test]
    fn requests_render_and_check_their_answers() {
        let form = InputRequest::form("Name?", json!({"name": {"type": "string"}}), &["name"]);
        assert_eq!(form.to_value()["method"], "elicitation/create");
        assert_eq!(
            form.params()["requestedSchema"]["required"],
            json!(["name"])
        );
        assert_eq!(
            form.misfit(&json!({"action": "accept", "content": {}})),
            None
        );
        assert_eq!(form.misfit(&json!({"action": "decline"})), None);
        assert!(form.misfit(&json!({"action": "maybe"})).is_some());
        assert!(
            form.misfit(&json!({"action": "accept", "content": 3}))
                .is_some()
        );
        assert!(form.misfit(&json!(12345)).is_some());
        let sample = InputRequest::ask_model("Capital?", 100);
        assert_eq!(sample.params()["maxTokens"], 100);
        let answer = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"});
        assert_eq!(sample.misfit(&answer), None);
        assert!(sample.misfit(&json!({"role": "assistant"})).is_some());
        let roots = InputRequest::ListRoots;
        assert_eq!(
            roots.misfit(&json!({"roots": [{"uri": "file:///a"}]})),
            None
        );
        assert!(roots.misfit(&json!({"roots": [{}]})).is_some());
    }

    #[test]
    fn elicited_answers() {
        let inputs = Inputs {
            responses: vec![
                ("a".into(), json!({"action": "accept", "content": {"x": 1}})),
                ("b".into(), json!({"action": "accept"})),
                ("c".into(), json!({"action": "decline"})),
                ("d".into(), json!({"action": "cancel"})),
            ],
            ..Inputs::default()
        };
        let Some(Elicited::Accepted(content)) = inputs.elicited("a") else {
            panic!("accepted")
        };
        assert_eq!(content["x"], 1);
        assert!(matches!(inputs.elicited("b"), Some(Elicited::Accepted(c)) if c.is_empty()));
        assert_eq!(inputs.elicited("c"), Some(Elicited::Declined));
        assert_eq!(inputs.elicited("d"), Some(Elicited::Cancelled));
        assert_eq!(inputs.elicited("e"), None);
    }
}
