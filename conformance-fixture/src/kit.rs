//! What every fixture is made with: a core-tier tool with no effects, an empty input schema,
//! a user text message.

use bernstein_core::Tier;
use bernstein_core::protocol::registry::{Arguments, Effects, TaskSupport, ToolOutput};
use bernstein_domain::bound::{ToolContext, ToolSpec};
use serde_json::{Value, json};

pub const NO_EFFECTS: &str = "Conformance fixture: reads no files, writes no files, spawns no \
                              processes, makes no network requests.";

pub fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

pub fn fixture_tool(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    input_schema: fn() -> Value,
    call: fn(&ToolContext<'_>, Value) -> ToolOutput,
) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        tier: Tier::Core,
        input_schema,
        output_schema: None,
        effects: Effects::default(),
        task_support: TaskSupport::Forbidden,
        arguments: Arguments::Schema,
        call,
    }
}

pub fn user_text(text: String) -> Value {
    json!({"role": "user", "content": {"type": "text", "text": text}})
}
