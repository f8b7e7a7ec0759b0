//! Immutable configuration handed to the core by the runtime. Nothing here is read from the
//! environment by the core itself: the CLI resolves flags and variables into this value.

use serde::Serialize;

use crate::signing::Signer;

/// Tool tiers, cumulative: every `core` tool is in `standard`, every `standard` tool in `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Core,
    #[default]
    Standard,
    All,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Core, Tier::Standard, Tier::All];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Core => "core",
            Tier::Standard => "standard",
            Tier::All => "all",
        }
    }

    /// Whether a tool declared in `tool_tier` is available when `self` is active.
    pub fn includes(self, tool_tier: Tier) -> bool {
        tool_tier <= self
    }
}

impl std::str::FromStr for Tier {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "core" => Ok(Tier::Core),
            "standard" => Ok(Tier::Standard),
            "all" => Ok(Tier::All),
            other => Err(format!(
                "unknown tool tier {other:?}: expected one of core, standard, all"
            )),
        }
    }
}

/// How HTTP requests are authenticated.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum AuthMode {
    /// Anonymous; only allowed on loopback binds.
    #[default]
    None,
    /// Static bearer token, compared in constant time.
    Bearer { token: String },
}

/// OAuth 2 protected-resource metadata (RFC 9728) pointing at an external IdP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthConfig {
    pub issuer: String,
    pub scopes: Vec<String>,
    /// An audience accepted besides this server's `/mcp` URL (`BERNSTEIN_MCP_OAUTH_AUDIENCE`).
    pub audience: Option<String>,
    /// Where the issuer's keys are (`BERNSTEIN_MCP_OAUTH_JWKS_URL`); `None`: discovered from
    /// the issuer's metadata.
    pub jwks_url: Option<String>,
    /// RFC 7662 introspection of opaque (non-JWT) access tokens; `None`: they are refused.
    pub introspection: Option<Introspection>,
}

/// How opaque access tokens are introspected (RFC 7662): where, as which client, and how long
/// an answer is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Introspection {
    /// The endpoint (`BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL`); `None`: the
    /// `introspection_endpoint` of the issuer's metadata.
    pub url: Option<String>,
    /// This server's client at the IdP (HTTP Basic client authentication).
    pub client_id: String,
    pub client_secret: ClientSecret,
    /// Longest an active answer is kept (never past the token's `exp`).
    pub cache_secs: u64,
}

/// A client secret: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(String);

impl ClientSecret {
    pub fn new(secret: impl Into<String>) -> ClientSecret {
        ClientSecret(secret.into())
    }

    /// The secret itself, for the one request that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl core::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ClientSecret(<redacted>)")
    }
}

impl OAuthConfig {
    /// Tokens of `issuer`, advertising `scopes`; keys discovered, no extra audience.
    pub fn new(issuer: impl Into<String>, scopes: Vec<String>) -> OAuthConfig {
        OAuthConfig {
            issuer: issuer.into(),
            scopes,
            audience: None,
            jwks_url: None,
            introspection: None,
        }
    }
}

/// Limits that protect the server from oversized or hostile input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted JSON-RPC message, in bytes.
    pub max_message_bytes: usize,
    /// Deepest accepted JSON nesting.
    pub max_json_depth: usize,
    /// Longest accepted string argument, in bytes, unless a schema says less.
    pub max_string_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 1 << 20,
            max_json_depth: 32,
            max_string_bytes: 64 * 1024,
        }
    }
}

/// Everything the core needs besides the request, the snapshot and the clock.
#[derive(Clone, Debug)]
pub struct Config {
    pub tier: Tier,
    /// Wrap tool results in the `_meter` envelope (`BERNSTEIN_MCP_COST_METER`, default on).
    pub cost_meter: bool,
    /// Serve the deprecated tool aliases (`BERNSTEIN_MCP_DEPRECATED_ALIASES`, default on).
    pub deprecated_aliases: bool,
    /// HMAC-SHA256 key of the audit and mailbox chains (never leaves the process).
    pub audit_key: Vec<u8>,
    /// HMAC-SHA256 key of `requestState` tokens (`protocol::request_state`), derived from the
    /// audit key so that every instance over one ledger accepts the others' tokens.
    pub request_state_key: Vec<u8>,
    /// HMAC-SHA256 key of handshake-era `Mcp-Session-Id` tokens
    /// (`transport::http::session`), derived from the audit key under its own label.
    pub session_key: Vec<u8>,
    /// How long a request may wait for the client's input: a `requestState` expires this many
    /// milliseconds after it was issued (`BERNSTEIN_MCP_INPUT_EXPIRY_SECS`, default 10 min).
    pub input_expiry_ms: u64,
    pub server_name: String,
    pub server_version: String,
    /// Transports this process offers (for the capability card), e.g. `["stdio"]`.
    pub transports: Vec<String>,
    pub auth: AuthMode,
    pub oauth: Option<OAuthConfig>,
    pub limits: Limits,
    /// Ed25519 identity that signs claim receipts and mailbox entries
    /// (`.sdd/keys/signing.ed25519`). Without it those tools refuse; they never answer unsigned.
    pub signing_key: Option<Signer>,
}

/// How long a request waits for the client's input by default: 10 minutes.
pub const DEFAULT_INPUT_EXPIRY_MS: u64 = 600_000;

/// The `requestState` key of an audit key: HMAC-SHA256 under the audit key of a fixed label, so
/// the tokens' key is never the audit key itself.
pub fn request_state_key(audit_key: &[u8]) -> Vec<u8> {
    derived_key(audit_key, b"bernstein.request-state-key.v1")
}

/// The `Mcp-Session-Id` key of an audit key: HMAC-SHA256 under the audit key of its own label,
/// so neither the audit key nor the `requestState` key ever tags a session id.
pub fn session_key(audit_key: &[u8]) -> Vec<u8> {
    derived_key(audit_key, b"bernstein.session-key.v1")
}

fn derived_key(audit_key: &[u8], label: &[u8]) -> Vec<u8> {
    let mut mac = crate::digest::HmacCheck::new(audit_key);
    mac.update(label);
    let rendered = mac.tag();
    hex::decode(rendered.trim_start_matches("hmac-sha256:")).unwrap_or_default()
}

impl Config {
    /// A configuration with the defaults of `bernstein mcp` and the given audit key.
    pub fn new(audit_key: Vec<u8>) -> Config {
        Config {
            tier: Tier::default(),
            cost_meter: true,
            deprecated_aliases: true,
            request_state_key: request_state_key(&audit_key),
            session_key: session_key(&audit_key),
            input_expiry_ms: DEFAULT_INPUT_EXPIRY_MS,
            audit_key,
            server_name: "bernstein".into(),
            server_version: env!("CARGO_PKG_VERSION").into(),
            transports: vec!["stdio".into()],
            auth: AuthMode::None,
            oauth: None,
            limits: Limits::default(),
            signing_key: None,
        }
    }

    /// This configuration with the signing identity of the 32-byte Ed25519 seed `seed`.
    pub fn with_signing_seed(mut self, seed: &[u8; 32]) -> Config {
        self.signing_key = Some(Signer::from_seed(seed));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_cumulative_and_parse() {
        assert!(Tier::All.includes(Tier::Core));
        assert!(Tier::Standard.includes(Tier::Standard));
        assert!(!Tier::Core.includes(Tier::Standard));
        assert_eq!("all".parse::<Tier>(), Ok(Tier::All));
        assert!(
            "gold"
                .parse::<Tier>()
                .unwrap_err()
                .contains("core, standard, all")
        );
    }

    #[test]
    fn derived_keys_are_apart_from_each_other_and_the_audit_key() {
        let c = Config::new(b"audit".to_vec());
        assert_eq!(c.session_key.len(), 32);
        assert_ne!(c.session_key, c.request_state_key);
        assert_ne!(c.session_key, c.audit_key);
        assert_eq!(c.session_key, session_key(b"audit"));
        assert_ne!(c.session_key, session_key(b"another audit key"));
    }
}
