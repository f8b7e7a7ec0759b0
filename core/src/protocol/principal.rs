//! Who a call is made for when an OAuth access token authenticated it: the token's issuer and
//! subject (recorded in the call's audit record; the token itself never is), and the scopes
//! it grants. The scope rule reads the tools' own declared [`Effects`]: `bernstein.read` may
//! call a tool that writes nothing ([`Effects::writes_nothing`]), `bernstein.write` any tool of
//! the tier.

use serde_json::Value;

use super::registry::Effects;

/// The scope that lets a token call the tools that write nothing.
pub const SCOPE_READ: &str = "bernstein.read";
/// The scope that lets a token call every tool of the tier.
pub const SCOPE_WRITE: &str = "bernstein.write";

/// The principal of an OAuth-authenticated request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub iss: String,
    pub sub: String,
    pub scopes: Scopes,
}

/// What a token's scopes let it call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scopes {
    pub read: bool,
    pub write: bool,
}

impl Scopes {
    /// The scopes of a token's claims: `scope` (space-separated, RFC 8693 and RFC 9068) or
    /// `scp` (an array, or a space-separated string).
    pub fn of_claims(claims: &Value) -> Scopes {
        let mut names: Vec<&str> = Vec::new();
        for claim in ["scope", "scp"] {
            match claims.get(claim) {
                Some(Value::String(s)) => names.extend(s.split(' ')),
                Some(Value::Array(list)) => names.extend(list.iter().filter_map(Value::as_str)),
                _ => {}
            }
        }
        let write = names.contains(&SCOPE_WRITE);
        Scopes {
            read: write || names.contains(&SCOPE_READ),
            write,
        }
    }

    /// Whether these scopes let a token call a tool with `effects`.
    pub fn allow(self, effects: Effects) -> bool {
        if effects.writes_nothing() {
            self.read
        } else {
            self.write
        }
    }
}

/// The scope a call of a tool with `effects` needs.
pub fn needed_scope(effects: Effects) -> &'static str {
    if effects.writes_nothing() {
        SCOPE_READ
    } else {
        SCOPE_WRITE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_of_claims_and_the_rule() {
        let read = Scopes::of_claims(&json!({"scope": "openid bernstein.read"}));
        assert_eq!(
            read,
            Scopes {
                read: true,
                write: false
            }
        );
        let write = Scopes::of_claims(&json!({"scp": ["bernstein.write"]}));
        assert_eq!(
            write,
            Scopes {
                read: true,
                write: true
            }
        );
        assert_eq!(
            Scopes::of_claims(&json!({"scope": "bernstein.readx"})),
            Scopes::default()
        );
        assert_eq!(Scopes::of_claims(&json!({})), Scopes::default());
        let reads = Effects {
            reads_files: true,
            ..Effects::default()
        };
        let writes = Effects {
            writes_files: true,
            ..reads
        };
        let spawns = Effects {
            spawns_processes: true,
            ..reads
        };
        assert!(read.allow(reads) && !read.allow(writes) && !read.allow(spawns));
        assert!(write.allow(writes) && write.allow(reads));
        assert!(!Scopes::default().allow(reads));
        assert_eq!(needed_scope(reads), SCOPE_READ);
        assert_eq!(needed_scope(writes), SCOPE_WRITE);
    }
}
