//! Resolution of flags and environment variables into the core's `Config`. The only place
//! that reads `BERNSTEIN_*` variables.

use bernstein_core::{Config, Tier};

/// Reads a boolean switch such as `BERNSTEIN_MCP_COST_METER` (default on).
pub fn env_switch(name: &str, default: bool) -> Result<bool, String> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8")),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "on" | "yes" => Ok(true),
            "0" | "false" | "off" | "no" => Ok(false),
            other => Err(format!("{name}={other:?} is not a switch: use 1/0, true/false, on/off")),
        },
    }
}

/// The tool tier: the flag, then `BERNSTEIN_MCP_TOOL_TIER`, then `standard`.
pub fn tier(flag: Option<Tier>) -> Result<Tier, String> {
    if let Some(t) = flag {
        return Ok(t);
    }
    match std::env::var("BERNSTEIN_MCP_TOOL_TIER") {
        Err(std::env::VarError::NotPresent) => Ok(Tier::default()),
        Err(std::env::VarError::NotUnicode(_)) => Err("BERNSTEIN_MCP_TOOL_TIER is not valid UTF-8".into()),
        Ok(v) => v.trim().parse::<Tier>().map_err(|e| format!("BERNSTEIN_MCP_TOOL_TIER: {e}")),
    }
}

/// The core configuration for a server process.
pub fn config(audit_key: Vec<u8>, tier: Tier, transports: Vec<String>) -> Result<Config, String> {
    let mut cfg = Config::new(audit_key);
    cfg.tier = tier;
    cfg.cost_meter = env_switch("BERNSTEIN_MCP_COST_METER", true)?;
    cfg.deprecated_aliases = env_switch("BERNSTEIN_MCP_DEPRECATED_ALIASES", true)?;
    cfg.transports = transports;
    Ok(cfg)
}
