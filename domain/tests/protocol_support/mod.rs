//! Shared support of the protocol engine's integration tests: a small fixture catalogue (not
//! Bernstein's domain catalogue), a session helper that serves messages against an advancing
//! snapshot, and validation of every emitted message against the official MCP schemas.
#![allow(dead_code)]
// Reads the official schema files: test code, outside the purity rules of domain/src.
#![allow(clippy::disallowed_methods)]

use bernstein_core::protocol::refusal::Common;
use std::collections::HashMap;
use std::path::PathBuf;

use bernstein_core::config::{Config, Tier};
use bernstein_core::ledger::Draft;
use bernstein_core::protocol::registry::{
    Arguments, Effects, PromptArgument, PromptSpec, TaskSupport, ToolError, ToolOutput,
};
use bernstein_core::protocol::{Outcome, TransportFacts};
use bernstein_core::time::Timestamp;
use bernstein_domain::Snapshot;
use bernstein_domain::bound::{Catalog, ResourceSpec, ToolContext, ToolSpec};
use bernstein_domain::bound::{Input, Server};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

bernstein_core::refusal_codes! {
    /// This fixture's own refusal.
    enum Fixture {
        NotAllowed = "not_allowed",
    }
}

/// 2026-01-01T00:00:00Z.
pub const NOW: Timestamp = Timestamp(1_767_225_600_000);
/// The latency transcripts render with.
pub const LATENCY_MS: u64 = 7;

// ---------------------------------------------------------------- fixture catalogue

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Plain,
    Shout,
}

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    /// What to echo.
    #[schemars(length(min = 1, max = 20))]
    text: String,
    /// How many times (1-3).
    #[schemars(range(min = 1, max = 3))]
    times: Option<u8>,
    mode: Option<Mode>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct EchoOut {
    echo: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// The run to write to or read.
    #[schemars(length(min = 1, max = 40))]
    run: String,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct JournalOut {
    run: String,
    steps: u32,
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schemas serialize")
}

fn parse<T: for<'de> Deserialize<'de>>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::new(Common::InvalidArguments, e.to_string(), "fix the arguments"))
}

fn echo(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    let args: EchoArgs = match parse(args) {
        Ok(a) => a,
        Err(e) => return ToolOutput::refused(e),
    };
    let mut text = args.text.repeat(usize::from(args.times.unwrap_or(1)));
    if matches!(args.mode, Some(Mode::Shout)) {
        text = text.to_uppercase();
    }
    ToolOutput::ok(json!({ "echo": text }))
}

fn refuse(_: &ToolContext<'_>, _: Value) -> ToolOutput {
    let mut out = ToolOutput::refused(
        ToolError::new(
            Fixture::NotAllowed,
            "the fixture refuses every call",
            "call echo instead",
        )
        .with("task_id", "T-1"),
    );
    // A refusal's drafts must never reach the ledger.
    out.drafts.push(Draft::new(
        "backlog",
        "fixture.should_not_appear",
        json!({}),
    ));
    out
}

fn journal(ctx: &ToolContext<'_>, args: Value) -> ToolOutput {
    let args: RunArgs = match parse(args) {
        Ok(a) => a,
        Err(e) => return ToolOutput::refused(e),
    };
    let stream = format!("run:{}", args.run);
    let mut out = ToolOutput::ok(json!({ "run": args.run, "steps": 2 }));
    out.drafts.push(Draft::new(
        &stream,
        "fixture.step",
        json!({"n": 1, "call_id": ctx.call_id}),
    ));
    out.drafts.push(Draft::new(
        &stream,
        "fixture.step",
        json!({"n": 2, "revision": ctx.spec_revision}),
    ));
    out.run_id = Some(args.run);
    out
}

fn peek(_: &ToolContext<'_>, args: Value) -> ToolOutput {
    let args: RunArgs = match parse(args) {
        Ok(a) => a,
        Err(e) => return ToolOutput::refused(e),
    };
    let mut out = ToolOutput::ok(json!({ "run": args.run }));
    out.run_id = Some(args.run);
    out
}

fn greet(args: &Map<String, Value>) -> Result<Vec<Value>, String> {
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    let tone = args
        .get("tone")
        .and_then(Value::as_str)
        .unwrap_or("friendly");
    if tone != "friendly" && tone != "formal" {
        return Err(format!("tone must be friendly or formal, got {tone:?}"));
    }
    Ok(vec![
        json!({"role": "user", "content": {"type": "text", "text": format!("Greet {name} in a {tone} tone.")}}),
    ])
}

fn card(config: &Config) -> Value {
    json!({"server": "fixture", "tier": config.tier.as_str(), "cost_meter": config.cost_meter})
}

fn read_card(config: &Config) -> Vec<Value> {
    vec![
        json!({"uri": "fixture://card", "mimeType": "application/json", "text": card(config).to_string()}),
    ]
}

const NO_EFFECTS: Effects = Effects {
    reads_files: false,
    writes_files: false,
    spawns_processes: false,
    network: false,
};

/// The fixture catalogue: `echo` and `refuse` (core), `journal` (standard), `peek` (all), the
/// aliases `old_echo` and `old_journal`, the prompt `greet` and the resource `fixture://card`.
pub fn fixture_catalog() -> Catalog {
    let tool = |name,
                title,
                description,
                tier,
                input: fn() -> Value,
                output: Option<fn() -> Value>,
                call| ToolSpec {
        name,
        title,
        description,
        tier,
        input_schema: input,
        output_schema: output,
        effects: NO_EFFECTS,
        task_support: TaskSupport::Forbidden,
        arguments: Arguments::Schema,
        call,
    };
    let mut peek_tool = tool(
        "peek",
        "Peek",
        "Reads a run's journal head. Reads no files.",
        Tier::All,
        schema::<RunArgs>,
        None,
        peek,
    );
    peek_tool.effects.network = true;
    peek_tool.task_support = TaskSupport::Optional;
    Catalog {
        tools: vec![
            tool(
                "echo",
                "Echo",
                "Echoes text back. No side effects.",
                Tier::Core,
                schema::<EchoArgs>,
                Some(schema::<EchoOut>),
                echo,
            ),
            tool(
                "journal",
                "Journal",
                "Writes two steps to a run journal.",
                Tier::Standard,
                schema::<RunArgs>,
                Some(schema::<JournalOut>),
                journal,
            ),
            peek_tool,
            tool(
                "refuse",
                "Refuse",
                "Refuses every call.",
                Tier::Core,
                schema::<RunArgs>,
                None,
                refuse,
            ),
        ],
        prompts: vec![PromptSpec {
            name: "greet",
            title: "Greet someone",
            description: "A greeting in a chosen tone.",
            arguments: vec![
                PromptArgument {
                    name: "name",
                    description: "Who to greet",
                    required: true,
                    complete: None,
                },
                PromptArgument {
                    name: "tone",
                    description: "friendly (default) or formal",
                    required: false,
                    complete: None,
                },
            ],
            render: |args, _| {
                greet(args).map(bernstein_core::protocol::registry::PromptTurn::Messages)
            },
        }],
        resources: vec![ResourceSpec {
            uri: "fixture://card",
            name: "card",
            title: "Fixture card",
            description: "The fixture's capability card.",
            mime_type: "application/json",
            read: |config, _| read_card(config),
        }],
        resource_templates: Vec::new(),
        aliases: vec![("old_echo", "echo"), ("old_journal", "journal")],
        instructions: |_| "Fixture server: call echo.".into(),
        capability_card: card,
        tasks: None,
        tool_tasks: None,
        effects_in_descriptions: false,
        redact: bernstein_core::protocol::registry::no_redaction,
    }
}

/// The fixture server with the test audit key.
pub fn fixture_server(tier: Tier, meter: bool, aliases: bool) -> Server {
    let mut config = Config::new(b"fixture-audit-key".to_vec());
    config.tier = tier;
    config.cost_meter = meter;
    config.deprecated_aliases = aliases;
    config.server_version = "0.0.0-test".into();
    Server::with_catalog(config, fixture_catalog())
}

// ---------------------------------------------------------------- sessions

/// A client session: serves messages like a runtime does (commit the append, remember the
/// negotiated revision on stdio) against an advancing snapshot.
pub struct Session {
    pub server: Server,
    pub snapshot: Snapshot,
    pub facts: TransportFacts,
    pub now: Timestamp,
}

impl Session {
    pub fn new(server: Server) -> Session {
        Session {
            server,
            snapshot: Snapshot::genesis(),
            facts: TransportFacts::stdio(None),
            now: NOW,
        }
    }

    /// Handles `bytes`, commits the outcome's records and returns the outcome.
    pub fn send(&mut self, bytes: &[u8]) -> Outcome {
        let outcome = self.server.handle(&Input {
            bytes,
            snapshot: &self.snapshot,
            now: self.now,
            transport: &self.facts,
        });
        if let Some(append) = &outcome.append {
            assert_eq!(
                append.expected, self.snapshot.position,
                "an append names the snapshot it was built on"
            );
            for rec in &append.records {
                self.snapshot
                    .apply(rec)
                    .expect("sealed records extend the snapshot");
            }
        }
        if let Some(v) = &outcome.negotiated_version {
            self.facts.protocol_version = Some(v.clone());
        }
        // As the engine keeps it with the connection.
        if let Some(level) = outcome.log_level {
            self.facts.log_level = Some(level);
        }
        outcome
    }

    /// Sends a JSON value and returns the rendered reply as a value (None for no reply).
    pub fn send_json(&mut self, message: &Value) -> Option<Value> {
        let out = self.send(message.to_string().as_bytes());
        out.response
            .map(|r| serde_json::from_slice(&r.render(LATENCY_MS)).expect("replies are JSON"))
    }
}

/// `_meta` of a stateless (2026-07-28) request.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fixture-client", "version": "1.0.0"}
    })
}

// ---------------------------------------------------------------- schema validation

/// Validators for `$defs` of the official schemas, built on demand.
#[derive(Default)]
pub struct SchemaBook {
    docs: HashMap<String, Value>,
    validators: HashMap<(String, String), jsonschema::Validator>,
}

/// The official schemas, vendored in the repository (tests/mcp-schema/README.md). A check
/// whose schema file is missing fails; none is skipped.
fn schema_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/mcp-schema"))
}

/// The schema folder that describes `revision` (2024-11-05 has none; its messages are a subset
/// of 2025-03-26's).
pub fn schema_revision(revision: &str) -> &str {
    if revision == "2024-11-05" {
        "2025-03-26"
    } else {
        revision
    }
}

impl SchemaBook {
    /// Whether `revision`'s schema defines `name`.
    pub fn defines(&mut self, revision: &str, name: &str) -> bool {
        let doc = self.doc(revision);
        doc.get("$defs")
            .or_else(|| doc.get("definitions"))
            .and_then(|d| d.get(name))
            .is_some()
    }

    fn doc(&mut self, revision: &str) -> &Value {
        let rev = schema_revision(revision).to_string();
        self.docs.entry(rev.clone()).or_insert_with(|| {
            let path = schema_dir().join(&rev).join("schema.json");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_json::from_str(&text).expect("schema.json is JSON")
        })
    }

    /// Validates `instance` against `$defs/<name>` of `revision`; Err lists the violations.
    pub fn check(&mut self, revision: &str, name: &str, instance: &Value) -> Result<(), String> {
        let key = (schema_revision(revision).to_string(), name.to_string());
        if !self.validators.contains_key(&key) {
            let doc = self.doc(revision).clone();
            let (defs_key, prefix) = if doc.get("$defs").is_some() {
                ("$defs", "#/$defs/")
            } else {
                ("definitions", "#/definitions/")
            };
            assert!(
                doc[defs_key].get(name).is_some(),
                "{revision} defines no {name}"
            );
            let mut root = Map::new();
            if let Some(s) = doc.get("$schema") {
                root.insert("$schema".into(), s.clone());
            }
            root.insert(defs_key.into(), doc[defs_key].clone());
            root.insert("$ref".into(), Value::String(format!("{prefix}{name}")));
            let validator =
                jsonschema::validator_for(&Value::Object(root)).expect("official schemas compile");
            self.validators.insert(key.clone(), validator);
        }
        let validator = &self.validators[&key];
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "not a valid {revision} {name}: {}",
                errors.join("; ")
            ))
        }
    }

    /// Validates one reply message to a request of `method` served under `revision`: the
    /// JSON-RPC envelope, and the result (or the specific error type) the method defines.
    pub fn check_reply(
        &mut self,
        revision: &str,
        method: Option<&str>,
        reply: &Value,
    ) -> Result<(), String> {
        if let Value::Array(parts) = reply {
            for p in parts {
                self.check_reply(revision, None, p)?;
            }
            // Null ids were checked part by part above (see below).
            let patched: Vec<Value> = parts
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    if p.get("id") == Some(&Value::Null) {
                        p["id"] = json!(0);
                    }
                    p
                })
                .collect();
            return self.check(revision, "JSONRPCBatchResponse", &Value::Array(patched));
        }
        if let Some(err) = reply.get("error") {
            let code = err
                .get("code")
                .and_then(Value::as_i64)
                .ok_or("error without an integer code")?;
            let mut copy = reply.clone();
            if reply.get("id") == Some(&Value::Null) {
                // JSON-RPC 2.0 requires `"id": null` when the request id could not be read; the
                // MCP schemas type ids as string|integer only, so check the rest of the message.
                if ![-32700, -32600].contains(&code) {
                    return Err(format!("id null on a {code} error"));
                }
                copy["id"] = json!(0);
            }
            let modern = revision >= "2026-07-28";
            let envelope = if self.defines(revision, "JSONRPCErrorResponse") {
                "JSONRPCErrorResponse"
            } else {
                "JSONRPCError"
            };
            self.check(revision, envelope, &copy)?;
            let specific = match code {
                -32022 if modern => Some("UnsupportedProtocolVersionError"),
                -32020 if modern => Some("HeaderMismatchError"),
                -32021 if modern => Some("MissingRequiredClientCapabilityError"),
                _ => None,
            };
            if let Some(def) = specific {
                self.check(revision, def, &copy)?;
            }
            return Ok(());
        }
        let envelope = if self.defines(revision, "JSONRPCResultResponse") {
            "JSONRPCResultResponse"
        } else {
            "JSONRPCResponse"
        };
        self.check(revision, envelope, reply)?;
        let result = reply.get("result").ok_or("no result")?;
        if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            return self.check(revision, "InputRequiredResult", result);
        }
        let def = match method {
            Some("initialize") => "InitializeResult",
            Some("ping") => "EmptyResult",
            Some("tools/list") => "ListToolsResult",
            Some("tools/call") => "CallToolResult",
            Some("prompts/list") => "ListPromptsResult",
            Some("prompts/get") => "GetPromptResult",
            Some("resources/list") => "ListResourcesResult",
            Some("resources/read") => "ReadResourceResult",
            Some("resources/templates/list") => "ListResourceTemplatesResult",
            Some("completion/complete") => "CompleteResult",
            Some("server/discover") => return self.check("2026-07-28", "DiscoverResult", result),
            _ => return Ok(()),
        };
        self.check(revision, def, result)
    }
}

/// The revision a request is served under, as a test sees it: the `_meta` envelope's, else the
/// transport's, else 2025-11-25.
pub fn request_revision(request: &Value, transport_version: Option<&str>) -> String {
    let supported = [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ];
    let from_meta = request
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"));
    if let Some(v) = from_meta {
        // An unsupported or malformed version is refused with a stateless-era error.
        return v
            .as_str()
            .filter(|v| supported.contains(v))
            .unwrap_or("2026-07-28")
            .to_string();
    }
    if request.get("method").and_then(Value::as_str) == Some("server/discover") {
        return "2026-07-28".into();
    }
    transport_version
        .filter(|v| supported.contains(v))
        .unwrap_or("2025-11-25")
        .to_string()
}
