//! MCP logging: the level a request asked for and the `notifications/message` it may carry.
//!
//! A level is asked for per request in the stateless era (`_meta["io.modelcontextprotocol/
//! logLevel"]`) and per connection in the handshake era (`logging/setLevel`, which the engine
//! keeps with the connection as it keeps the negotiated revision, and hands back in
//! [`TransportFacts::log_level`]). A catalogue's handler returns the messages it has
//! ([`LogMessage`] in `ToolOutput::logs`); [`notifications`] sends those at or above the asked
//! level, and none when no level was asked.
//!
//! This module never keeps state.

use serde_json::{Value, json};

use super::TransportFacts;
use super::era::Revision;
use super::jsonrpc::{RpcError, kind_of, shorten};
use super::model::Meta;

/// `_meta` key of the stateless era's per-request log level.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// A log message's severity (RFC 5424's, least severe first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    pub fn parse(s: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// Reads a level sent by a peer, or the `-32602` naming the levels.
    fn read(value: Option<&Value>, what: &str) -> Result<LogLevel, RpcError> {
        let Some(value) = value else {
            return Err(RpcError::invalid_params(format!("{what} is required")));
        };
        value.as_str().and_then(LogLevel::parse).ok_or_else(|| {
            let got = match value.as_str() {
                Some(s) => format!("{:?}", shorten(s, 40)),
                None => kind_of(value).to_string(),
            };
            let names: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
            RpcError::invalid_params(format!(
                "{what} must be one of {}, got {got}",
                names.join(", ")
            ))
        })
    }
}

/// One message a handler has for the client's log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogMessage {
    pub level: LogLevel,
    /// The logger's name (`notifications/message`'s `logger`).
    pub logger: &'static str,
    pub data: Value,
}

/// `logging/setLevel` (handshake era): the empty result and the level the connection keeps.
pub fn set_level(params: Option<&Value>) -> Result<(Value, LogLevel), RpcError> {
    let level = LogLevel::read(params.and_then(|p| p.get("level")), "params.level")?;
    Ok((json!({}), level))
}

/// The level request `params` asked for under `revision`: the stateless era's `_meta` key, or
/// the handshake connection's `logging/setLevel`; `None` when none was asked. A stateless
/// request naming an unknown level is `-32602`.
pub fn asked(
    revision: Revision,
    params: Option<&Value>,
    transport: &TransportFacts,
) -> Result<Option<LogLevel>, RpcError> {
    if revision.is_modern() {
        return match Meta::of(params).get(META_LOG_LEVEL) {
            None => Ok(None),
            v => LogLevel::read(v, "_meta[\"io.modelcontextprotocol/logLevel\"]").map(Some),
        };
    }
    Ok(transport.log_level)
}

/// The serialized `notifications/message` of `messages` at or above `level`, in order; none
/// when no level was asked.
pub fn notifications(level: Option<LogLevel>, messages: &[LogMessage]) -> Vec<Vec<u8>> {
    let Some(level) = level else {
        return Vec::new();
    };
    messages
        .iter()
        .filter(|m| m.level >= level)
        .filter_map(|m| {
            let note = json!({
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": m.level.as_str(), "logger": m.logger, "data": m.data},
            });
            serde_json::to_vec(&note).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(level: LogLevel) -> LogMessage {
        LogMessage {
            level,
            logger: "t",
            data: json!(level.as_str()),
        }
    }

    #[test]
    fn only_messages_at_or_above_the_asked_level_are_sent_and_none_unasked() {
        let all: Vec<LogMessage> = LogLevel::ALL.into_iter().map(message).collect();
        assert!(notifications(None, &all).is_empty());
        let sent: Vec<Value> = notifications(Some(LogLevel::Warning), &all)
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap())
            .collect();
        let levels: Vec<&str> = sent
            .iter()
            .map(|n| n["params"]["level"].as_str().unwrap())
            .collect();
        assert_eq!(
            levels,
            ["warning", "error", "critical", "alert", "emergency"]
        );
        assert_eq!(
            sent[0],
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "warning", "logger": "t", "data": "warning"}})
        );
        assert_eq!(notifications(Some(LogLevel::Debug), &all).len(), 8);
    }

    #[test]
    fn levels_are_read_from_the_era_s_place() {
        let stdio = TransportFacts {
            log_level: Some(LogLevel::Notice),
            ..TransportFacts::stdio(None)
        };
        let meta = json!({"_meta": {META_LOG_LEVEL: "error"}});
        let modern = Revision::MODERN;
        let old = Revision::LATEST_HANDSHAKE;
        assert_eq!(
            asked(modern, Some(&meta), &stdio),
            Ok(Some(LogLevel::Error))
        );
        assert_eq!(asked(modern, Some(&json!({})), &stdio), Ok(None));
        assert_eq!(asked(old, Some(&meta), &stdio), Ok(Some(LogLevel::Notice)));
        let none = TransportFacts::stdio(None);
        assert_eq!(asked(old, None, &none), Ok(None));
        let bad = json!({"_meta": {META_LOG_LEVEL: "loud"}});
        assert_eq!(asked(modern, Some(&bad), &stdio).unwrap_err().code, -32602);
    }

    #[test]
    fn set_level_answers_empty_and_refuses_unknown_levels() {
        let (r, l) = set_level(Some(&json!({"level": "info"}))).unwrap();
        assert_eq!((r, l), (json!({}), LogLevel::Info));
        for bad in [json!({}), json!({"level": "loud"}), json!({"level": 3})] {
            assert_eq!(set_level(Some(&bad)).unwrap_err().code, -32602, "{bad}");
        }
        assert_eq!(set_level(None).unwrap_err().code, -32602);
        let e = set_level(Some(&json!({"level": "loud"}))).unwrap_err();
        assert!(e.message.contains("debug, info"), "{}", e.message);
    }
}
