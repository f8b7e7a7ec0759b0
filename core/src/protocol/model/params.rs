//! Typed views of request params: each method's fields read once, with the `-32602` a
//! malformed field gets. A view borrows from the parsed message; nothing is copied.
//!
//! What a field must be is decided here and nowhere else: a handler receives a view and never
//! looks a field up by name. (`_meta` keys of the stateless envelope are the era's,
//! `super::super::era`.)

use serde_json::{Map, Value};

use crate::protocol::jsonrpc::{RpcError, kind_of, shorten, string_param};

/// `params._meta`, as the peer sent it (unvalidated: each reader screens what it uses).
#[derive(Clone, Copy, Debug, Default)]
pub struct Meta<'a>(Option<&'a Value>);

impl<'a> Meta<'a> {
    /// The `_meta` of `params`.
    pub fn of(params: Option<&'a Value>) -> Meta<'a> {
        Meta(params.and_then(|p| p.get("_meta")))
    }

    /// The whole `_meta` value.
    pub fn value(self) -> Option<&'a Value> {
        self.0
    }

    /// One `_meta` key.
    pub fn get(self, key: &str) -> Option<&'a Value> {
        self.0?.get(key)
    }

    /// `progressToken`, when it is a string or an integer (anything else is no token).
    pub fn progress_token(self) -> Option<&'a Value> {
        let token = self.get("progressToken")?;
        match token {
            Value::String(_) => Some(token),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(token),
            _ => None,
        }
    }

    /// W3C `traceparent`, when it is a string (its shape is checked by whoever reads it).
    pub fn traceparent(self) -> Option<&'a str> {
        self.get("traceparent")?.as_str()
    }
}

/// `tools/call`.
#[derive(Clone, Copy, Debug)]
pub struct CallParams<'a> {
    pub name: &'a str,
    /// `arguments`; `None` when absent or `null` (no arguments).
    pub arguments: Option<&'a Value>,
    /// `task` (2025-11-25 task augmentation), as sent.
    pub task: Option<&'a Value>,
    pub meta: Meta<'a>,
}

impl<'a> CallParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<CallParams<'a>, RpcError> {
        let name = match params.and_then(|p| p.get("name")) {
            Some(Value::String(n)) => n.as_str(),
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "params.name must be a string naming the tool, got {}",
                    kind_of(other)
                )));
            }
            None => {
                return Err(RpcError::invalid_params(
                    "params.name is required: the tool to call",
                ));
            }
        };
        Ok(CallParams {
            name,
            arguments: params
                .and_then(|p| p.get("arguments"))
                .filter(|a| !a.is_null()),
            task: params.and_then(|p| p.get("task")),
            meta: Meta::of(params),
        })
    }
}

/// The `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list` params:
/// every list fits in one page, so no cursor is ever valid.
#[derive(Clone, Copy, Debug)]
pub struct ListParams;

impl ListParams {
    pub fn read(params: Option<&Value>) -> Result<ListParams, RpcError> {
        match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => Ok(ListParams),
            Some(Value::String(c)) => Err(RpcError::invalid_params(format!(
                "Invalid cursor {:?}: this server returns every item in one page and never issues cursors",
                shorten(c, 40)
            ))),
            Some(other) => Err(RpcError::invalid_params(format!(
                "params.cursor must be a string, got {}",
                kind_of(other)
            ))),
        }
    }
}

/// `prompts/get`.
#[derive(Clone, Copy, Debug)]
pub struct GetPromptParams<'a> {
    pub name: &'a str,
    arguments: Option<&'a Value>,
}

impl<'a> GetPromptParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<GetPromptParams<'a>, RpcError> {
        let name = string_param(
            params.and_then(|p| p.get("name")),
            "params.name",
            ": the prompt to render",
        )?;
        Ok(GetPromptParams {
            name,
            arguments: params.and_then(|p| p.get("arguments")),
        })
    }

    /// `arguments` (`None` when absent or `null`), or its error. Read after the prompt is
    /// found, so an unknown prompt is the error a peer sees first; the values are checked
    /// against the prompt's arguments.
    pub fn arguments(&self) -> Result<Option<&'a Map<String, Value>>, RpcError> {
        match self.arguments {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(RpcError::invalid_params(format!(
                "params.arguments must be an object of strings, got {}",
                kind_of(other)
            ))),
        }
    }
}

/// `resources/read`.
#[derive(Clone, Copy, Debug)]
pub struct ReadResourceParams<'a> {
    pub uri: &'a str,
}

impl<'a> ReadResourceParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<ReadResourceParams<'a>, RpcError> {
        let uri = string_param(
            params.and_then(|p| p.get("uri")),
            "params.uri",
            ": the resource to read",
        )?;
        Ok(ReadResourceParams { uri })
    }
}

/// `initialize` (handshake era).
#[derive(Clone, Copy, Debug)]
pub struct InitializeParams<'a> {
    /// The revision the client asks for; `None` when it names none.
    pub protocol_version: Option<&'a str>,
}

impl<'a> InitializeParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<InitializeParams<'a>, RpcError> {
        let protocol_version = match params.and_then(|p| p.get("protocolVersion")) {
            Some(Value::String(v)) => Some(v.as_str()),
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "params.protocolVersion must be a string naming a protocol revision, got {}",
                    kind_of(other)
                )));
            }
            None => None,
        };
        Ok(InitializeParams { protocol_version })
    }
}

/// What `completion/complete` completes.
#[derive(Clone, Copy, Debug)]
pub enum CompleteRef<'a> {
    /// `ref/prompt`: an argument of the prompt `name`.
    Prompt { name: &'a str },
    /// `ref/resource`: a variable of the template (or static resource) `uri`.
    Resource { uri: &'a str },
}

/// `completion/complete`.
#[derive(Clone, Copy, Debug)]
pub struct CompleteParams<'a> {
    pub reference: CompleteRef<'a>,
    /// `argument.name` and `argument.value`.
    pub name: &'a str,
    pub value: &'a str,
    /// `context.arguments`: the values of the other arguments so far (strings only).
    pub context: Option<&'a Map<String, Value>>,
}

impl<'a> CompleteParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<CompleteParams<'a>, RpcError> {
        let params = params.unwrap_or(&Value::Null);
        let reference = object(params.get("ref"), "params.ref")?;
        let argument = object(params.get("argument"), "params.argument")?;
        let name = string_param(argument.get("name"), "params.argument.name", "")?;
        let value = string_param(argument.get("value"), "params.argument.value", "")?;
        let context = match params.get("context").and_then(|c| c.get("arguments")) {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) if m.values().all(Value::is_string) => Some(m),
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "params.context.arguments must be an object of strings, got {}",
                    kind_of(other)
                )));
            }
        };
        let reference = match string_param(reference.get("type"), "params.ref.type", "")? {
            "ref/prompt" => CompleteRef::Prompt {
                name: string_param(reference.get("name"), "params.ref.name", "")?,
            },
            "ref/resource" => CompleteRef::Resource {
                uri: string_param(reference.get("uri"), "params.ref.uri", "")?,
            },
            other => {
                return Err(RpcError::invalid_params(format!(
                    "params.ref.type must be \"ref/prompt\" or \"ref/resource\", got {:?}",
                    shorten(other, 40)
                )));
            }
        };
        Ok(CompleteParams {
            reference,
            name,
            value,
            context,
        })
    }
}

/// `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update`: the task.
#[derive(Clone, Copy, Debug)]
pub struct TaskParams<'a> {
    pub task_id: &'a str,
}

impl<'a> TaskParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<TaskParams<'a>, RpcError> {
        match params.and_then(|p| p.get("taskId")) {
            Some(Value::String(id)) => Ok(TaskParams { task_id: id }),
            Some(other) => Err(RpcError::invalid_params(format!(
                "params.taskId must be a string naming a task, got {}",
                kind_of(other)
            ))),
            None => Err(RpcError::invalid_params(
                "params.taskId is required: the taskId a task-augmented tools/call returned",
            )),
        }
    }
}

/// `tasks/update` (2026-07-28): the client's responses to input requests.
#[derive(Clone, Copy, Debug)]
pub struct TaskUpdateParams<'a> {
    pub input_responses: &'a Map<String, Value>,
}

impl<'a> TaskUpdateParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<TaskUpdateParams<'a>, RpcError> {
        match params.and_then(|p| p.get("inputResponses")) {
            Some(Value::Object(m)) => Ok(TaskUpdateParams { input_responses: m }),
            other => Err(RpcError::invalid_params(format!(
                "params.inputResponses must be an object of responses keyed by input request id, got {}",
                other.map_or("nothing", kind_of)
            ))),
        }
    }
}

/// `tasks/list`.
#[derive(Clone, Copy, Debug)]
pub struct TaskListParams<'a> {
    /// The `nextCursor` of the previous page, as sent (decoded by the tasks module).
    pub cursor: Option<&'a str>,
}

impl<'a> TaskListParams<'a> {
    pub fn read(params: Option<&'a Value>) -> Result<TaskListParams<'a>, RpcError> {
        match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => Ok(TaskListParams { cursor: None }),
            Some(Value::String(c)) => Ok(TaskListParams { cursor: Some(c) }),
            Some(other) => Err(RpcError::invalid_params(format!(
                "params.cursor must be a string returned as nextCursor, got {}",
                kind_of(other)
            ))),
        }
    }
}

fn object<'a>(v: Option<&'a Value>, path: &str) -> Result<&'a Map<String, Value>, RpcError> {
    match v {
        Some(Value::Object(m)) => Ok(m),
        Some(other) => Err(RpcError::invalid_params(format!(
            "{path} must be an object, got {}",
            kind_of(other)
        ))),
        None => Err(RpcError::invalid_params(format!("{path} is required"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn call_params_read_name_arguments_task_and_meta() {
        let p = json!({"name": "t", "arguments": null, "task": {}, "_meta": {"progressToken": 7}});
        let c = CallParams::read(Some(&p)).unwrap();
        assert_eq!(c.name, "t");
        assert!(c.arguments.is_none(), "null arguments are no arguments");
        assert_eq!(c.task, Some(&json!({})));
        assert_eq!(c.meta.progress_token(), Some(&json!(7)));
        let e = CallParams::read(Some(&json!({"name": 3}))).unwrap_err();
        assert!(
            e.message.contains("must be a string naming the tool, got"),
            "{e:?}"
        );
        assert!(
            CallParams::read(None)
                .unwrap_err()
                .message
                .contains("is required")
        );
    }

    #[test]
    fn meta_screens_what_it_hands_out() {
        for (token, usable) in [(json!("a"), true), (json!(3), true), (json!(1.5), false)] {
            let p = json!({"_meta": {"progressToken": token, "traceparent": 5}});
            assert_eq!(Meta::of(Some(&p)).progress_token().is_some(), usable);
            assert_eq!(Meta::of(Some(&p)).traceparent(), None);
        }
        assert!(Meta::of(None).value().is_none());
    }

    #[test]
    fn prompt_arguments_are_checked_when_read() {
        let p = json!({"name": "p", "arguments": [1]});
        let g = GetPromptParams::read(Some(&p)).unwrap();
        assert_eq!(g.name, "p");
        assert!(
            g.arguments()
                .unwrap_err()
                .message
                .contains("object of strings")
        );
        let p = json!({"name": "p", "arguments": null});
        assert_eq!(
            GetPromptParams::read(Some(&p))
                .unwrap()
                .arguments()
                .unwrap(),
            None
        );
    }

    #[test]
    fn cursors_and_task_ids() {
        assert!(ListParams::read(Some(&json!({"cursor": null}))).is_ok());
        assert!(ListParams::read(Some(&json!({"cursor": "c"}))).is_err());
        let c = json!({"cursor": "c"});
        assert_eq!(TaskListParams::read(Some(&c)).unwrap().cursor, Some("c"));
        assert!(TaskListParams::read(Some(&json!({"cursor": 1}))).is_err());
        assert_eq!(
            TaskParams::read(Some(&json!({"taskId": "x"})))
                .unwrap()
                .task_id,
            "x"
        );
        assert!(TaskParams::read(None).is_err());
        assert!(TaskUpdateParams::read(Some(&json!({"inputResponses": {}}))).is_ok());
        assert!(TaskUpdateParams::read(None).is_err());
    }

    #[test]
    fn completion_refs_are_read_by_type() {
        let p = json!({"ref": {"type": "ref/resource", "uri": "u"},
                       "argument": {"name": "a", "value": "v"}});
        let c = CompleteParams::read(Some(&p)).unwrap();
        assert!(matches!(c.reference, CompleteRef::Resource { uri: "u" }));
        assert_eq!((c.name, c.value), ("a", "v"));
        let p = json!({"ref": {"type": "ref/x"}, "argument": {"name": "a", "value": "v"}});
        let e = CompleteParams::read(Some(&p)).unwrap_err();
        assert!(e.message.contains("params.ref.type must be"), "{e:?}");
    }
}
