//! Resolution of flags and environment variables into the core's `Config`. The only place
//! that reads `BERNSTEIN_*` variables.

use bernstein_core::config::{AuthMode, ClientSecret, Introspection, OAuthConfig};
use bernstein_core::{Config, Tier};

/// Reads a boolean switch such as `BERNSTEIN_MCP_COST_METER` (default on).
pub fn env_switch(name: &str, default: bool) -> Result<bool, String> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8")),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "on" | "yes" => Ok(true),
            "0" | "false" | "off" | "no" => Ok(false),
            other => Err(format!(
                "{name}={other:?} is not a switch: use 1/0, true/false, on/off"
            )),
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
        Err(std::env::VarError::NotUnicode(_)) => {
            Err("BERNSTEIN_MCP_TOOL_TIER is not valid UTF-8".into())
        }
        Ok(v) => v
            .trim()
            .parse::<Tier>()
            .map_err(|e| format!("BERNSTEIN_MCP_TOOL_TIER: {e}")),
    }
}

/// The core configuration for a server process.
pub fn config(audit_key: Vec<u8>, tier: Tier, transports: Vec<String>) -> Result<Config, String> {
    let mut cfg = Config::new(audit_key);
    cfg.tier = tier;
    cfg.cost_meter = env_switch("BERNSTEIN_MCP_COST_METER", true)?;
    cfg.deprecated_aliases = env_switch("BERNSTEIN_MCP_DEPRECATED_ALIASES", true)?;
    if let Some(secs) = input_expiry_secs()? {
        cfg.input_expiry_ms = secs * 1000;
    }
    cfg.transports = transports;
    Ok(cfg)
}

/// `BERNSTEIN_MCP_INPUT_EXPIRY_SECS`: how long a request may wait for the client's input (a
/// `requestState` stays valid), 1 s to 1 day; `None` when unset (10 minutes).
fn input_expiry_secs() -> Result<Option<u64>, String> {
    const NAME: &str = "BERNSTEIN_MCP_INPUT_EXPIRY_SECS";
    env_value(NAME)?
        .map(|v| {
            v.parse::<u64>()
                .ok()
                .filter(|n| (1..=86_400).contains(n))
                .ok_or_else(|| {
                    format!("{NAME}={v:?} is not a whole number of seconds from 1 to 86400")
                })
        })
        .transpose()
}

/// A variable's value, `None` when unset or blank; an error when not UTF-8.
fn env_value(name: &str) -> Result<Option<String>, String> {
    match std::env::var(name) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8")),
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v.trim().to_string())),
    }
}

/// The HTTP auth mode: the flag, then `BERNSTEIN_MCP_AUTH_MODE`, then `bearer` when a token is
/// set (`BERNSTEIN_MCP_TOKEN`, else `BERNSTEIN_MCP_AUTH_TOKEN`) and `none` otherwise.
pub fn auth_mode(flag: Option<&str>) -> Result<AuthMode, String> {
    let token = match env_value("BERNSTEIN_MCP_TOKEN")? {
        Some(t) => Some(t),
        None => env_value("BERNSTEIN_MCP_AUTH_TOKEN")?,
    };
    let mode = match flag {
        Some(m) => Some(m.trim().to_ascii_lowercase()),
        None => env_value("BERNSTEIN_MCP_AUTH_MODE")?.map(|m| m.to_ascii_lowercase()),
    };
    match (mode.as_deref(), token) {
        (None | Some("bearer"), Some(token)) => Ok(AuthMode::Bearer { token }),
        (Some("bearer"), None) => {
            Err("auth mode bearer needs a token: set BERNSTEIN_MCP_TOKEN (or BERNSTEIN_MCP_AUTH_TOKEN)".into())
        }
        (None | Some("none"), None) => Ok(AuthMode::None),
        (Some("none"), Some(_)) => Err(
            "auth mode none contradicts the token set in BERNSTEIN_MCP_TOKEN/BERNSTEIN_MCP_AUTH_TOKEN: unset one".into(),
        ),
        (Some(other), _) => Err(format!("unknown auth mode {other:?}: expected none or bearer")),
    }
}

/// The OAuth resource-server mode from `BERNSTEIN_MCP_OAUTH_ISSUER` (the IdP whose access
/// tokens are accepted, and the protected-resource metadata naming it),
/// `BERNSTEIN_MCP_OAUTH_SCOPES` (comma- or space-separated; default bernstein.read,
/// bernstein.write), `BERNSTEIN_MCP_OAUTH_AUDIENCE` (an audience accepted besides the `/mcp`
/// URL), `BERNSTEIN_MCP_OAUTH_JWKS_URL` (the keys, when not discovered from the issuer) and
/// the introspection of opaque tokens ([`introspection`]).
pub fn oauth() -> Result<Option<OAuthConfig>, String> {
    let Some(issuer) = env_value("BERNSTEIN_MCP_OAUTH_ISSUER")? else {
        return Ok(None);
    };
    if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
        return Err(format!(
            "BERNSTEIN_MCP_OAUTH_ISSUER must be an http(s) URL, got {issuer:?}"
        ));
    }
    let scopes = match env_value("BERNSTEIN_MCP_OAUTH_SCOPES")? {
        Some(list) => list
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        None => vec!["bernstein.read".to_string(), "bernstein.write".to_string()],
    };
    let audience = env_value("BERNSTEIN_MCP_OAUTH_AUDIENCE")?.filter(|a| !a.trim().is_empty());
    let jwks_url = env_value("BERNSTEIN_MCP_OAUTH_JWKS_URL")?;
    if let Some(url) = &jwks_url {
        bernstein_effects::idp::allowed_url(url)
            .map_err(|e| format!("BERNSTEIN_MCP_OAUTH_JWKS_URL: {e}"))?;
    }
    if !issuer.starts_with("https://") {
        bernstein_effects::idp::allowed_url(&issuer)
            .map_err(|e| format!("BERNSTEIN_MCP_OAUTH_ISSUER: {e}"))?;
    }
    Ok(Some(OAuthConfig {
        issuer,
        scopes,
        audience,
        jwks_url,
        introspection: introspection()?,
    }))
}

/// Default of `BERNSTEIN_MCP_OAUTH_INTROSPECTION_CACHE_SECS`.
const INTROSPECTION_CACHE_SECS: u64 = 60;

/// RFC 7662 introspection of opaque tokens, on when this server's client at the IdP is set:
/// `BERNSTEIN_MCP_OAUTH_CLIENT_ID` with `BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE` (a file holding
/// the secret, the better place for it) or `BERNSTEIN_MCP_OAUTH_CLIENT_SECRET`;
/// `BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL` (else the issuer's metadata says where) and
/// `BERNSTEIN_MCP_OAUTH_INTROSPECTION_CACHE_SECS` (how long an active answer is kept, 1 to
/// 3600; default 60). A half-configured client, or a URL without one, is refused.
fn introspection() -> Result<Option<Introspection>, String> {
    let url = env_value("BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL")?;
    let id = env_value("BERNSTEIN_MCP_OAUTH_CLIENT_ID")?;
    let secret = env_value("BERNSTEIN_MCP_OAUTH_CLIENT_SECRET")?;
    let secret_file = env_value("BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE")?;
    let cache = env_value("BERNSTEIN_MCP_OAUTH_INTROSPECTION_CACHE_SECS")?;
    let secret = match (secret, secret_file) {
        (Some(_), Some(_)) => {
            return Err("both BERNSTEIN_MCP_OAUTH_CLIENT_SECRET and BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE are set: unset one".into());
        }
        (Some(s), None) => Some(s),
        (None, Some(path)) => Some(read_secret_file(&path)?),
        (None, None) => None,
    };
    let (client_id, secret) = match (id, secret) {
        (Some(id), Some(secret)) => (id, secret),
        (None, None) => {
            if url.is_some() || cache.is_some() {
                return Err("introspection needs this server's client at the IdP: set BERNSTEIN_MCP_OAUTH_CLIENT_ID and BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE (or _CLIENT_SECRET)".into());
            }
            return Ok(None);
        }
        (Some(_), None) => {
            return Err("BERNSTEIN_MCP_OAUTH_CLIENT_ID is set without a secret: set BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE (or _CLIENT_SECRET)".into());
        }
        (None, Some(_)) => {
            return Err("a client secret is set without BERNSTEIN_MCP_OAUTH_CLIENT_ID".into());
        }
    };
    if let Some(u) = &url {
        bernstein_effects::idp::allowed_url(u)
            .map_err(|e| format!("BERNSTEIN_MCP_OAUTH_INTROSPECTION_URL: {e}"))?;
    }
    let cache_secs = match cache {
        None => INTROSPECTION_CACHE_SECS,
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=3600).contains(n))
            .ok_or_else(|| {
                format!("BERNSTEIN_MCP_OAUTH_INTROSPECTION_CACHE_SECS={v:?} is not a whole number of seconds from 1 to 3600")
            })?,
    };
    Ok(Some(Introspection {
        url,
        client_id,
        client_secret: ClientSecret::new(secret),
        cache_secs,
    }))
}

/// The client secret in `path` (surrounding whitespace, a final newline included, trimmed).
fn read_secret_file(path: &str) -> Result<String, String> {
    let name = "BERNSTEIN_MCP_OAUTH_CLIENT_SECRET_FILE";
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read {path}: {e}"))?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(format!("{name}: {path} is empty"));
    }
    Ok(secret.to_string())
}

/// Extra trusted browser origins from `BERNSTEIN_MCP_ALLOWED_ORIGINS` (comma-separated).
pub fn allowed_origins() -> Result<Vec<String>, String> {
    Ok(env_value("BERNSTEIN_MCP_ALLOWED_ORIGINS")?
        .map(|l| bernstein_core::transport::http::HttpOptions::parse_origin_list(&l))
        .unwrap_or_default())
}

/// Extra `Host` values the HTTP server answers (`host` for any port, `host:port`): the
/// `--allowed-hosts` flag, else `BERNSTEIN_MCP_ALLOWED_HOSTS` (both comma-separated). Entries are
/// validated when the server binds.
pub fn allowed_hosts(flag: Option<&str>) -> Result<Vec<String>, String> {
    let list = match flag {
        Some(f) => Some(f.to_string()),
        None => env_value("BERNSTEIN_MCP_ALLOWED_HOSTS")?,
    };
    Ok(list
        .map(|l| bernstein_core::transport::http::HttpOptions::parse_origin_list(&l))
        .unwrap_or_default())
}

/// Most engines `--engines` or `BERNSTEIN_MCP_ENGINES` may ask for.
pub const MAX_ENGINES: usize = 256;

/// How many engines (each on its own event loop) serve HTTP: the `--engines` flag, then
/// `BERNSTEIN_MCP_ENGINES`, else one; from 1 to [`MAX_ENGINES`].
pub fn engines(flag: Option<usize>) -> Result<usize, String> {
    let (n, from) = match flag {
        Some(n) => (n.to_string(), "--engines"),
        None => match env_value("BERNSTEIN_MCP_ENGINES")? {
            Some(v) => (v, "BERNSTEIN_MCP_ENGINES"),
            None => return Ok(1),
        },
    };
    n.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_ENGINES).contains(n))
        .ok_or_else(|| format!("{from}={n}: expected a whole number from 1 to {MAX_ENGINES}"))
}

/// The HTTP server's limits from the environment, each a positive whole number:
/// `BERNSTEIN_MCP_SSE_KEEPALIVE_SECS` (default 15), `BERNSTEIN_MCP_SSE_IDLE_SECS` (300),
/// `BERNSTEIN_MCP_SSE_MAX_STREAMS` (128), `BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER` (a quarter
/// of the streams), `BERNSTEIN_MCP_FEED_IDLE_SECS` (300), `BERNSTEIN_MCP_MAX_CONNECTIONS`
/// (512), `BERNSTEIN_MCP_MAX_WAITS` (the connection cap), `BERNSTEIN_MCP_MAX_WAITS_PER_PEER`
/// (a quarter of the waits), `BERNSTEIN_MCP_MAX_UNSENT_BYTES` (65536),
/// `BERNSTEIN_MCP_WRITE_TIMEOUT_SECS` (10), `BERNSTEIN_MCP_MAX_SUBSCRIPTIONS` (100000) and
/// `BERNSTEIN_MCP_MAX_SUBSCRIPTIONS_PER_CONNECTION` (1024).
pub fn http_limits(limits: &mut bernstein_core::transport::http::HttpLimits) -> Result<(), String> {
    let positive = |name: &str| -> Result<Option<u64>, String> {
        env_value(name)?
            .map(|v| {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0 && *n <= 86_400 * 365)
                    .ok_or_else(|| format!("{name}={v:?} is not a positive whole number"))
            })
            .transpose()
    };
    let count = |name: &str| -> Result<Option<usize>, String> {
        positive(name)?
            .map(|n| usize::try_from(n).map_err(|e| format!("{name}: {e}")))
            .transpose()
    };
    if let Some(n) = positive("BERNSTEIN_MCP_SSE_KEEPALIVE_SECS")? {
        limits.sse_keepalive = std::time::Duration::from_secs(n);
    }
    if let Some(n) = positive("BERNSTEIN_MCP_SSE_IDLE_SECS")? {
        limits.sse_idle = std::time::Duration::from_secs(n);
    }
    if let Some(n) = count("BERNSTEIN_MCP_SSE_MAX_STREAMS")? {
        limits.max_legacy_streams = n;
    }
    limits.max_streams_per_peer = count("BERNSTEIN_MCP_SSE_MAX_STREAMS_PER_PEER")?
        .unwrap_or((limits.max_legacy_streams / 4).max(1));
    if let Some(n) = positive("BERNSTEIN_MCP_FEED_IDLE_SECS")? {
        limits.feed_idle = std::time::Duration::from_secs(n);
    }
    if let Some(n) = count("BERNSTEIN_MCP_MAX_UNSENT_BYTES")? {
        limits.max_unsent_bytes = n;
    }
    if let Some(n) = positive("BERNSTEIN_MCP_WRITE_TIMEOUT_SECS")? {
        limits.write_timeout = std::time::Duration::from_secs(n);
    }
    if let Some(n) = count("BERNSTEIN_MCP_MAX_CONNECTIONS")? {
        limits.max_connections = n;
    }
    limits.max_waits = count("BERNSTEIN_MCP_MAX_WAITS")?.unwrap_or(limits.max_connections);
    limits.max_waits_per_peer =
        count("BERNSTEIN_MCP_MAX_WAITS_PER_PEER")?.unwrap_or((limits.max_waits / 4).max(1));
    if let Some(n) = count("BERNSTEIN_MCP_MAX_SUBSCRIPTIONS")? {
        limits.max_subscriptions = n;
    }
    if let Some(n) = count("BERNSTEIN_MCP_MAX_SUBSCRIPTIONS_PER_CONNECTION")? {
        limits.max_subscriptions_per_connection = n;
    }
    Ok(())
}

/// The ledger store's URL: the `--store` flag, then `BERNSTEIN_STORE_URL`; `None` means the
/// embedded `.sdd/` file store of the workdir (the default). Only PostgreSQL URLs
/// (`postgres://…`, `postgresql://…`) name another store.
pub fn store_url(flag: Option<&str>) -> Result<Option<String>, String> {
    let url = match flag {
        Some(f) if !f.trim().is_empty() => Some(f.trim().to_string()),
        _ => env_value("BERNSTEIN_STORE_URL")?,
    };
    match url {
        Some(u) if !bernstein_store_postgres::is_postgres_url(&u) => Err(
            "--store/BERNSTEIN_STORE_URL must be a postgres:// URL (without it the .sdd/ directory of --workdir is the store)".into(),
        ),
        other => Ok(other),
    }
}

/// Options of the PostgreSQL store: `BERNSTEIN_STORE_POOL_MAX` connections at most (default
/// 16), `BERNSTEIN_STORE_TIMEOUT_MS` for a checkout and a connect (default 10000 / 5000).
pub fn pg_options() -> Result<bernstein_store_postgres::PgOptions, String> {
    let mut options = bernstein_store_postgres::PgOptions::default();
    if let Some(v) = env_value("BERNSTEIN_STORE_POOL_MAX")? {
        options.pool.max_size =
            v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("BERNSTEIN_STORE_POOL_MAX={v:?} is not a positive number")
            })?;
    }
    if let Some(v) = env_value("BERNSTEIN_STORE_TIMEOUT_MS")? {
        let ms =
            v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("BERNSTEIN_STORE_TIMEOUT_MS={v:?} is not a positive number")
            })?;
        options.pool.checkout_timeout = std::time::Duration::from_millis(ms);
        options.pool.connect_timeout = std::time::Duration::from_millis(ms);
    }
    Ok(options)
}

/// How a server scrubs its ledger, `.sdd/` or PostgreSQL (docs/OPERATIONS.md, "The scrub"):
/// `BERNSTEIN_SCRUB_INTERVAL_SECS`, the rest between passes (default 30; decimals allowed; `0`
/// turns the scrub off), and `BERNSTEIN_SCRUB_MIB_PER_SEC`, the most it reads per second
/// (default 32).
pub fn scrub_policy() -> Result<Option<bernstein_os::scrub::ScrubPolicy>, String> {
    let mut policy = bernstein_os::scrub::ScrubPolicy::default();
    if let Some(v) = env_value("BERNSTEIN_SCRUB_INTERVAL_SECS")? {
        let secs = v
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && (0.0..=86_400.0).contains(s))
            .ok_or_else(|| {
                format!("BERNSTEIN_SCRUB_INTERVAL_SECS={v:?} is not a number of seconds (0 to 86400; 0 turns the scrub off)")
            })?;
        if secs == 0.0 {
            return Ok(None);
        }
        policy.every = std::time::Duration::from_secs_f64(secs);
    }
    if let Some(v) = env_value("BERNSTEIN_SCRUB_MIB_PER_SEC")? {
        let mib = v
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=1 << 20).contains(n))
            .ok_or_else(|| {
                format!("BERNSTEIN_SCRUB_MIB_PER_SEC={v:?} is not a positive whole number of MiB")
            })?;
        policy.bytes_per_sec = mib << 20;
    }
    Ok(Some(policy))
}

/// The HTTPS certificate and key files: the flags, else `BERNSTEIN_MCP_TLS_CERT` and
/// `BERNSTEIN_MCP_TLS_KEY`; both or neither.
pub fn tls_files(
    cert: Option<&std::path::Path>,
    key: Option<&std::path::Path>,
) -> Result<Option<(std::path::PathBuf, std::path::PathBuf)>, String> {
    let pick = |flag: Option<&std::path::Path>, var: &str| -> Result<_, String> {
        Ok(match flag {
            Some(p) => Some(p.to_path_buf()),
            None => env_value(var)?.map(std::path::PathBuf::from),
        })
    };
    match (
        pick(cert, "BERNSTEIN_MCP_TLS_CERT")?,
        pick(key, "BERNSTEIN_MCP_TLS_KEY")?,
    ) {
        (Some(c), Some(k)) => Ok(Some((c, k))),
        (None, None) => Ok(None),
        (Some(c), None) => Err(format!(
            "TLS certificate {} given without its key: add --tls-key FILE (or BERNSTEIN_MCP_TLS_KEY)",
            c.display()
        )),
        (None, Some(k)) => Err(format!(
            "TLS key {} given without its certificate: add --tls-cert FILE (or BERNSTEIN_MCP_TLS_CERT)",
            k.display()
        )),
    }
}

/// The worker's extra CA file: the flag, else `BERNSTEIN_WORKER_CA`.
/// The bearer credential a `--url` client (`bernstein worker`, `bernstein run`) sends to
/// `mcp_url`: OAuth client credentials when `BERNSTEIN_WORKER_OAUTH_TOKEN_URL` is set (with
/// `BERNSTEIN_WORKER_OAUTH_CLIENT_ID`, `BERNSTEIN_WORKER_OAUTH_CLIENT_SECRET` and optionally
/// `BERNSTEIN_WORKER_OAUTH_SCOPE`), else `BERNSTEIN_MCP_TOKEN` as it is, else none. Setting
/// both is refused: which one is sent would be a guess.
pub fn worker_credential(
    mcp_url: &str,
) -> Result<bernstein_worker::credential::Credential, String> {
    use bernstein_worker::credential::{ClientCredentials, Credential};
    let fixed = env_value("BERNSTEIN_MCP_TOKEN")?;
    let Some(token_url) = env_value("BERNSTEIN_WORKER_OAUTH_TOKEN_URL")? else {
        return Ok(fixed.map_or(Credential::None, Credential::Fixed));
    };
    if fixed.is_some() {
        return Err("both BERNSTEIN_MCP_TOKEN and BERNSTEIN_WORKER_OAUTH_TOKEN_URL are set: unset one (a fixed token, or one obtained with OAuth client credentials)".into());
    }
    let id = env_value("BERNSTEIN_WORKER_OAUTH_CLIENT_ID")?.unwrap_or_default();
    let secret = env_value("BERNSTEIN_WORKER_OAUTH_CLIENT_SECRET")?.unwrap_or_default();
    let scope = env_value("BERNSTEIN_WORKER_OAUTH_SCOPE")?;
    ClientCredentials::new(&token_url, &id, &secret, scope.as_deref(), mcp_url)
        .map(Credential::ClientCredentials)
        .map_err(|e| format!("BERNSTEIN_WORKER_OAUTH_*: {e}"))
}

pub fn worker_ca(flag: Option<&std::path::Path>) -> Result<Option<std::path::PathBuf>, String> {
    match flag {
        Some(p) => Ok(Some(p.to_path_buf())),
        None => Ok(env_value("BERNSTEIN_WORKER_CA")?.map(std::path::PathBuf::from)),
    }
}
