//! The protocol's own tests build catalogues of their own over the empty fold `()`, so they
//! name no domain type (what a fold holds is only passed through to a catalogue's functions).

pub type Snapshot = crate::ledger::Snapshot<()>;
pub type Server = super::Server<()>;
pub type Input<'a> = super::Input<'a, ()>;
pub type Catalog = super::registry::Catalog<()>;
pub type ToolSpec = super::registry::ToolSpec<()>;
pub type ToolContext<'a> = super::registry::ToolContext<'a, ()>;
pub type ResourceSpec = super::registry::ResourceSpec<()>;

/// A catalogue of `tools` and nothing else (no prompts, resources, aliases or tasks).
pub fn tools_only(tools: Vec<ToolSpec>) -> Catalog {
    Catalog {
        tools,
        ..Catalog::empty()
    }
}

/// A core-tier tool with no arguments, no effects and no answer of note.
pub fn plain_tool(name: &'static str) -> ToolSpec {
    ToolSpec {
        name,
        title: name,
        description: "does nothing",
        tier: crate::config::Tier::Core,
        input_schema: || serde_json::json!({"type": "object"}),
        output_schema: None,
        effects: super::registry::Effects::default(),
        task_support: super::registry::TaskSupport::Forbidden,
        arguments: super::registry::Arguments::Schema,
        call: |_, _| super::registry::ToolOutput::ok(serde_json::json!({})),
    }
}

/// A core-tier tool with no arguments that writes one record (`w.wrote` on stream `w`) and
/// names nothing it read: decided on the whole ledger, so it loses every race for the head.
pub fn writing_tool(name: &'static str) -> ToolSpec {
    ToolSpec {
        description: "writes one record",
        call: |_, _| super::registry::ToolOutput {
            drafts: vec![crate::ledger::Draft::new(
                "w",
                "w.wrote",
                serde_json::json!({}),
            )],
            ..super::registry::ToolOutput::ok(serde_json::json!({}))
        },
        ..plain_tool(name)
    }
}

/// A server of `tools` only, keyed with `b"k"`.
pub fn server_of(tools: Vec<ToolSpec>) -> Server {
    Server::with_catalog(crate::config::Config::new(b"k".to_vec()), tools_only(tools))
}
