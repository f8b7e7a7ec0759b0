//! Catalogue features beyond tools, prompts and static resources, served through the engine
//! and checked against the official schema of every revision: a tool's own progress steps
//! (`notifications/progress` before the result, only with a progress token), resource
//! templates (`resources/templates/list`, `resources/read` of a matching URI) and
//! `completion/complete` with the `completions` capability.

// Test harness: the purity rules bind the core's source only.
#![allow(clippy::disallowed_methods)]

mod protocol_support;

use bernstein_core::config::Tier;
use bernstein_core::protocol::Outcome;
use bernstein_core::protocol::completion::starting_with;
use bernstein_core::protocol::registry::{Candidates, Progress, TemplatedRead, ToolOutput};
use bernstein_domain::bound::{Catalog, ToolContext};
use bernstein_domain::bound::{ResourceContext, ResourceTemplateSpec, Server, TemplateCompleter};
use protocol_support::{SchemaBook, Session, fixture_catalog, fixture_server, modern_meta};
use serde_json::{Map, Value, json};

const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

fn stepping(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::ok(json!({"done": true}));
    out.progress = (1..=3)
        .map(|i| Progress {
            progress: i * 10,
            total: Some(30),
            message: (i == 2).then(|| "halfway".to_string()),
        })
        .collect();
    out
}

fn read_item(
    _: &ResourceContext<'_>,
    uri: &str,
    vars: &Map<String, Value>,
) -> Result<TemplatedRead, String> {
    let id = vars["id"].as_str().unwrap_or_default();
    if id == "missing" {
        return Err("no item missing".into());
    }
    Ok(TemplatedRead {
        contents: vec![json!({"uri": uri, "mimeType": "text/plain", "text": format!("item {id}")})],
        ..TemplatedRead::default()
    })
}

fn item_ids(_: &ResourceContext<'_>, _: &str, typed: &str, _: &Map<String, Value>) -> Candidates {
    Candidates::all(starting_with(&["alpha", "beta"], typed))
}

fn catalog(completers: bool) -> Catalog {
    let mut c = fixture_catalog();
    let mut tool = c.tool("echo").cloned().unwrap();
    tool.name = "stepping";
    tool.output_schema = None;
    tool.call = stepping;
    c.tools.push(tool);
    c.resource_templates.push(ResourceTemplateSpec {
        uri_template: "fixture://items/{id}",
        name: "item",
        title: "Item",
        description: "One item by id.",
        mime_type: "text/plain",
        read: read_item,
        complete: completers.then_some(item_ids as TemplateCompleter),
    });
    if completers {
        c.prompts[0].arguments[1].complete =
            Some(|typed, _| starting_with(&["friendly", "formal"], typed));
    }
    c
}

/// A session under one revision whose every reply (and notification) is checked against that
/// revision's official schema.
struct Probe {
    session: Session,
    book: SchemaBook,
    revision: &'static str,
}

impl Probe {
    fn new(revision: &'static str, completers: bool) -> Probe {
        let base = fixture_server(Tier::All, false, false);
        let mut session = Session::new(Server::with_catalog(
            base.config.clone(),
            catalog(completers),
        ));
        if revision != "2026-07-28" {
            session.facts.protocol_version = Some(revision.to_string());
        }
        Probe {
            session,
            book: SchemaBook::default(),
            revision,
        }
    }

    /// Sends `method` (the stateless `_meta` merged into `params._meta` under 2026-07-28) and
    /// returns the reply and the outcome.
    fn send(&mut self, method: &str, mut params: Value) -> (Value, Outcome) {
        let rev = self.revision;
        if rev == "2026-07-28" {
            let meta = params["_meta"].as_object().cloned().unwrap_or_default();
            params["_meta"] = modern_meta();
            params["_meta"].as_object_mut().unwrap().extend(meta);
        }
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let outcome = self.session.send(message.to_string().as_bytes());
        let reply: Value =
            serde_json::from_slice(&outcome.response.as_ref().unwrap().render(7)).unwrap();
        self.book
            .check_reply(rev, Some(method), &reply)
            .unwrap_or_else(|e| panic!("{rev} {method}: {e}\n{reply}"));
        for note in &outcome.notifications {
            let note: Value = serde_json::from_slice(note).unwrap();
            let def = match note["method"].as_str() {
                Some("notifications/message") => "LoggingMessageNotification",
                _ => "ProgressNotification",
            };
            self.book
                .check(rev, def, &note)
                .unwrap_or_else(|e| panic!("{rev}: {e}\n{note}"));
        }
        (reply, outcome)
    }

    fn ask(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params).0
    }

    /// `completion/complete` of `argument` = `value` for `reference`.
    fn complete(&mut self, reference: Value, argument: &str, value: &str) -> Value {
        let params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
        self.ask("completion/complete", params)
    }
}

#[test]
fn tool_progress_steps_precede_the_result_only_with_a_token() {
    for rev in REVISIONS {
        let mut p = Probe::new(rev, true);
        let args = json!({"name": "stepping", "arguments": {"text": "x"}});
        let (reply, out) = p.send("tools/call", args.clone());
        assert_eq!(reply["result"]["isError"], false, "{rev}: {reply}");
        assert!(out.notifications.is_empty(), "{rev}: no token, no progress");
        let mut with_token = args;
        with_token["_meta"] = json!({"progressToken": 42});
        let (reply, out) = p.send("tools/call", with_token);
        assert_eq!(reply["result"]["isError"], false, "{rev}: {reply}");
        let notes: Vec<Value> = out
            .notifications
            .iter()
            .map(|n| serde_json::from_slice(n).unwrap())
            .collect();
        let steps: Vec<(&Value, &Value)> = notes
            .iter()
            .map(|n| (&n["params"]["progressToken"], &n["params"]["progress"]))
            .collect();
        let (token, ten, twenty, thirty) = (json!(42), json!(10), json!(20), json!(30));
        assert_eq!(
            steps,
            [(&token, &ten), (&token, &twenty), (&token, &thirty)],
            "{rev}"
        );
        assert_eq!(notes[1]["params"]["message"], "halfway");
    }
}

#[test]
fn templates_are_listed_and_read_in_every_revision() {
    for rev in REVISIONS {
        let mut p = Probe::new(rev, false);
        let reply = p.ask("resources/templates/list", json!({}));
        let t = &reply["result"]["resourceTemplates"][0];
        assert_eq!(t["uriTemplate"], "fixture://items/{id}", "{rev}");
        assert_eq!(t.get("title").is_some(), rev >= "2025-06-18", "{rev}");
        let reply = p.ask("resources/read", json!({"uri": "fixture://items/a%2Fb"}));
        let content = &reply["result"]["contents"][0];
        assert_eq!(content["text"], "item a/b", "{rev}: {reply}");
        assert_eq!(content["uri"], "fixture://items/a%2Fb");
        // The static resource still wins its own URI.
        let reply = p.ask("resources/read", json!({"uri": "fixture://card"}));
        assert_eq!(reply["result"]["contents"][0]["uri"], "fixture://card");
        for missing in [
            "fixture://items/missing",
            "fixture://items/",
            "fixture://items/a/b",
        ] {
            let reply = p.ask("resources/read", json!({"uri": missing}));
            let code = reply["error"]["code"].as_i64().unwrap();
            assert!(code == -32002 || code == -32602, "{rev} {missing}: {reply}");
            assert_eq!(reply["error"]["data"]["uri"], missing);
        }
        let reply = p.ask("resources/templates/list", json!({"cursor": "x"}));
        assert_eq!(reply["error"]["code"], -32602);
    }
}

#[test]
fn completion_is_served_and_declared_only_with_completers() {
    let greet = json!({"type": "ref/prompt", "name": "greet"});
    let items = json!({"type": "ref/resource", "uri": "fixture://items/{id}"});
    for rev in REVISIONS {
        let mut p = Probe::new(rev, true);
        let mut params = json!({"ref": greet, "argument": {"name": "tone", "value": "f"}});
        params["context"] = json!({"arguments": {"name": "Ada"}});
        let reply = p.ask("completion/complete", params);
        let values = &reply["result"]["completion"]["values"];
        assert_eq!(values, &json!(["friendly", "formal"]), "{rev}");
        let reply = p.complete(items.clone(), "id", "b");
        assert_eq!(
            reply["result"]["completion"]["values"],
            json!(["beta"]),
            "{rev}"
        );
        let reply = p.complete(json!({"type": "ref/prompt", "name": "nope"}), "tone", "");
        assert_eq!(reply["error"]["code"], -32602, "{rev}");
        let reply = Probe::new(rev, false).complete(greet.clone(), "tone", "");
        assert_eq!(
            reply["error"]["code"], -32601,
            "{rev}: no completers, no method"
        );
    }
    // The capability: declared by initialize and server/discover only with completers.
    for completers in [true, false] {
        let mut p = Probe::new("2025-11-25", completers);
        p.session.facts.protocol_version = None;
        let init = p.ask(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        );
        let caps = &init["result"]["capabilities"];
        assert_eq!(caps.get("completions").is_some(), completers);
        p.revision = "2026-07-28";
        let discover = p.ask("server/discover", json!({}));
        let caps = &discover["result"]["capabilities"];
        assert_eq!(caps.get("completions").is_some(), completers);
    }
}

#[test]
fn bernsteins_own_catalogue_completes_the_run_scope() {
    let mut config = bernstein_core::Config::new(b"k".to_vec());
    config.tier = Tier::Standard;
    for rev in REVISIONS {
        let mut p = Probe::new(rev, false);
        p.session.server = Server::new(config.clone());
        let goal = json!({"type": "ref/prompt", "name": "orchestrate_goal"});
        let reply = p.complete(goal.clone(), "scope", "");
        let values = &reply["result"]["completion"]["values"];
        assert_eq!(values, &json!(["small", "medium", "large"]), "{rev}");
        let reply = p.complete(goal.clone(), "role", "b");
        assert_eq!(reply["result"]["completion"]["values"], json!([]), "{rev}");
        let reply = p.complete(goal, "nope", "");
        assert_eq!(reply["error"]["code"], -32602, "{rev}");
        let reply = p.ask("resources/templates/list", json!({}));
        let templates: Vec<&str> = reply["result"]["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["uriTemplate"].as_str().unwrap())
            .collect();
        assert_eq!(
            templates,
            [
                "bernstein://runs/{run_id}",
                "bernstein://tasks/{task_id}",
                "bernstein://tasks/{task_id}/artifacts",
                "bernstein://tasks/{task_id}/mailbox"
            ],
            "{rev}"
        );
        // No run yet: nothing to complete, and no such run to read.
        let run = json!({"type": "ref/resource", "uri": "bernstein://runs/{run_id}"});
        let reply = p.complete(run, "run_id", "T-");
        assert_eq!(reply["result"]["completion"]["values"], json!([]), "{rev}");
        let reply = p.ask(
            "resources/read",
            json!({"uri": "bernstein://runs/T-0123456789abcdef"}),
        );
        assert!(reply["error"]["code"].is_i64(), "{rev}: {reply}");
    }
}

/// The `notifications/message` of an outcome, parsed.
fn log_messages(out: &Outcome) -> Vec<Value> {
    out.notifications
        .iter()
        .map(|n| serde_json::from_slice::<Value>(n).unwrap())
        .filter(|n| n["method"] == "notifications/message")
        .collect()
}

#[test]
fn a_poll_logs_the_run_only_at_a_level_asked_for() {
    let mut config = bernstein_core::Config::new(b"k".to_vec());
    config.tier = Tier::Standard;
    for rev in REVISIONS {
        let mut p = Probe::new(rev, false);
        p.session.server = Server::new(config.clone());
        let (run, _) = p.send(
            "tools/call",
            json!({"name": "bernstein_run", "arguments": {"goal": "log me"}}),
        );
        let run: Value =
            serde_json::from_str(run["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        let run_id = run["result"]["run_id"].as_str().unwrap().to_string();
        let poll = json!({"name": "bernstein_run_status", "arguments": {"run_id": run_id}});
        let (_, out) = p.send("tools/call", poll.clone());
        assert!(log_messages(&out).is_empty(), "{rev}: no level asked");
        let mut loud = poll.clone();
        if rev == "2026-07-28" {
            // Per request; logging/setLevel is no method of this era.
            let (reply, _) = p.send("logging/setLevel", json!({"level": "info"}));
            assert_eq!(reply["error"]["code"], -32601, "{rev}");
            loud["_meta"] = json!({"io.modelcontextprotocol/logLevel": "info"});
        } else {
            let (reply, _) = p.send("logging/setLevel", json!({"level": "info"}));
            assert_eq!(reply["result"], json!({}), "{rev}");
            let (reply, _) = p.send("logging/setLevel", json!({"level": "loud"}));
            assert_eq!(reply["error"]["code"], -32602, "{rev}");
        }
        let (_, out) = p.send("tools/call", loud.clone());
        let logs = log_messages(&out);
        assert_eq!(logs.len(), 1, "{rev}");
        let params = &logs[0]["params"];
        assert_eq!(
            (
                &params["level"],
                &params["logger"],
                &params["data"]["run_id"]
            ),
            (&json!("info"), &json!("bernstein.run"), &json!(run_id)),
            "{rev}"
        );
        assert_eq!(params["data"]["status"], "working", "{rev}");
        // Above the level a working run logs at: nothing.
        if rev == "2026-07-28" {
            loud["_meta"] = json!({"io.modelcontextprotocol/logLevel": "warning"});
        } else {
            p.send("logging/setLevel", json!({"level": "warning"}));
        }
        let (_, out) = p.send("tools/call", loud);
        assert!(log_messages(&out).is_empty(), "{rev}");
    }
}
