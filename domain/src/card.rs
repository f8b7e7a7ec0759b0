//! The capability card: how this server is running, built from the live [`Config`] on every
//! read — transports, auth modes (`auth.modes`: what the transport accepts, `none` or
//! `bearer`; OAuth discovery under `auth.oauth`), the active tool tier and every tier's tools,
//! the cost-meter state, the spec revisions served, the prompt catalogue
//! (`prompts.catalogue`), the server's name and version.
//! Served as the resource `bernstein://capability` and as `capabilityCard` in `initialize`.
//!
//! The card describes; it must never reveal a secret (no bearer token, no key) and never read
//! state beyond the configuration.

use serde_json::{Value, json};

use crate::bound::ResourceSpec;
use bernstein_core::config::{AuthMode, Config, Tier};
use bernstein_core::protocol::era::Revision;

use super::prompts;
use super::tiers;

/// URI of the capability card resource.
pub const CAPABILITY_URI: &str = "bernstein://capability";

/// Environment variable selecting the tool tier (read by the CLI, named here for hosts).
pub const TIER_ENV_VAR: &str = "BERNSTEIN_MCP_TOOL_TIER";
/// Environment variable switching the cost meter (read by the CLI, named here for hosts).
pub const METER_ENV_VAR: &str = "BERNSTEIN_MCP_COST_METER";

/// The card for `config`.
pub fn capability_card(config: &Config) -> Value {
    // `modes`: only what the transport accepts. OAuth is discovery only (protected-resource
    // metadata naming the issuer), never a mode of its own.
    let mode = match config.auth {
        AuthMode::None => "none",
        AuthMode::Bearer { .. } => "bearer",
    };
    let oauth = match &config.oauth {
        Some(o) => json!({"discovery": true, "issuer": o.issuer, "scopes": o.scopes}),
        None => json!({"discovery": false}),
    };
    let auth = json!({"modes": [mode], "anonymousScope": "loopback-only", "oauth": oauth});

    let mut tier_map = serde_json::Map::new();
    for t in Tier::ALL {
        tier_map.insert(t.as_str().into(), json!(tiers::tools_in(t)));
    }
    let spec_revisions: Vec<&str> = Revision::SUPPORTED
        .iter()
        .rev()
        .map(|r| r.as_str())
        .collect();
    let prompt_list: Vec<Value> = prompts::registered()
        .iter()
        .map(|p| json!({"name": p.name, "description": p.description}))
        .collect();

    json!({
        "name": config.server_name,
        "version": config.server_version,
        // The protocol revisions the server speaks, oldest first.
        "specRevisions": spec_revisions,
        "transports": config.transports,
        "auth": auth,
        "tools": {
            "activeTier": config.tier.as_str(),
            "advertised": tiers::tools_in(config.tier),
            "tiers": tier_map,
            "tierEnvVar": TIER_ENV_VAR,
        },
        "prompts": {"catalogue": prompt_list},
        "resources": [CAPABILITY_URI],
        "costMeter": {
            "enabled": config.cost_meter,
            "envVar": METER_ENV_VAR,
            "envelopeKeys": ["result", "_meter"],
        },
        "deprecatedAliases": config.deprecated_aliases,
    })
}

/// The card as resource contents: one `TextResourceContents`, compact JSON.
pub fn read_card(config: &Config) -> Vec<Value> {
    let text = serde_json::to_string(&capability_card(config)).expect("a card always serializes");
    vec![json!({"uri": CAPABILITY_URI, "mimeType": "application/json", "text": text})]
}

/// The capability card resource.
pub fn resource() -> ResourceSpec {
    ResourceSpec {
        uri: CAPABILITY_URI,
        name: "capability",
        title: "Bernstein capability card",
        description: "How this server runs right now: transports, auth modes, tool tiers, cost meter, \
                      spec revisions and prompts (JSON).",
        mime_type: "application/json",
        read: |config, _| read_card(config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bernstein_core::config::OAuthConfig;

    #[test]
    fn card_reflects_live_config() {
        let mut c = Config::new(b"k".to_vec());
        let card = capability_card(&c);
        assert_eq!(card["tools"]["activeTier"], "standard");
        assert_eq!(
            card["tools"]["advertised"],
            json!(tiers::tools_in(Tier::Standard))
        );
        assert_eq!(
            card["tools"]["tiers"]["core"],
            json!(tiers::tools_in(Tier::Core))
        );
        assert_eq!(card["auth"]["modes"], json!(["none"]));
        assert_eq!(card["auth"]["oauth"], json!({"discovery": false}));
        assert_eq!(card["costMeter"]["enabled"], true);
        assert_eq!(card["transports"], json!(["stdio"]));
        assert_eq!(card["specRevisions"][4], "2026-07-28");
        let catalogue = card["prompts"]["catalogue"].as_array().unwrap();
        assert_eq!(catalogue.len(), prompts::registered().len());
        assert!(
            catalogue
                .iter()
                .all(|p| p["name"].is_string() && p["description"].is_string())
        );

        c.tier = Tier::Core;
        c.cost_meter = false;
        c.transports = vec!["stdio".into(), "streamable-http".into()];
        c.auth = AuthMode::Bearer {
            token: "s3cret-token".into(),
        };
        c.oauth = Some(OAuthConfig::new("https://idp.example", vec!["mcp".into()]));
        let card = capability_card(&c);
        assert_eq!(card["tools"]["activeTier"], "core");
        assert_eq!(card["costMeter"]["enabled"], false);
        assert_eq!(card["auth"]["modes"], json!(["bearer"]));
        assert_eq!(
            card["auth"]["oauth"],
            json!({"discovery": true, "issuer": "https://idp.example", "scopes": ["mcp"]})
        );
        assert_eq!(card["transports"][1], "streamable-http");
        let text = read_card(&c)[0]["text"].as_str().unwrap().to_string();
        assert!(
            !text.contains("s3cret-token"),
            "the card leaks the bearer token"
        );
        assert_eq!(text, serde_json::to_string(&card).unwrap(), "not compact");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), card);
    }

    #[test]
    fn resource_contents_are_json_text() {
        let r = resource();
        let contents = (r.read)(&Config::new(vec![]), &crate::Snapshot::genesis());
        assert_eq!(contents.len(), 1);
        assert_eq!(contents[0]["uri"], CAPABILITY_URI);
        assert_eq!(contents[0]["mimeType"], "application/json");
    }
}
