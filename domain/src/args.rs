//! Argument newtypes: each carries its limits as const parameters, and both the schema a tool
//! advertises and the check its arguments pass when they are parsed are read off them, so the
//! two are one fact. Parsing is the only check a call's arguments pass (the engine runs no
//! schema validator for typed tools): each type's Deserialize refuses everything its schema
//! says (a length, a bound, a number of items) and what a schema cannot say (non-blank text,
//! no control characters, no secret in an identifier), for any caller that parses arguments
//! (the engine's tools, the CLI, a test). A failed check is a serde error whose message is the
//! rule, worded as the schema validator words it where both say it (`must be at least 1
//! character`); `tools::parse_args` turns it into a violation at the argument's path.
//!
//! Every string a tool records is one of two things (docs/SECURITY.md lists each field):
//! free text ([`Text`], [`Label`], [`Bytes`]), which the tool redacts with the DLP before
//! recording it, or an identifier ([`TaskId`], [`Ident`], [`ArtifactKey`]), recorded verbatim
//! and so held to the exact shape of what it identifies: its schema carries that shape as an
//! anchored `pattern`, and its check refuses, without repeating it, any value a DLP pattern
//! matches (a `ghp_…` token has the alphabet of a worker name).
//!
//! Each serializes as its inner value, so a tool's canonical arguments (which derive its task
//! ids) are unchanged by the wrapping.

use std::borrow::Cow;
use std::ops::Deref;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, Deserializer};
use serde::{Serialize, Serializer};

use super::dlp::redact;
use super::ids::{TASK_ID_HEX_LEN, TASK_ID_PREFIX, check_task_id, quote_for_message};
use super::lineage::{MAX_KEY_BYTES, check_key};

/// `MIN` to `MAX` characters of text; when `MIN` is at least 1, some of them not blank (a goal,
/// a note, a reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text<const MIN: usize, const MAX: usize>(String);

/// `MIN` to `MAX` characters, nothing more said of them (a journal head to compare, a name
/// looked up as given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chars<const MIN: usize, const MAX: usize>(String);

/// 1 to `MAX` characters of non-blank text without control characters (a label or a filter
/// value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label<const MAX: usize>(String);

/// 1 to `MAX` bytes of UTF-8 (a message body whose size is what is bounded); the schema's
/// `maxLength` (characters) is `MAX` too, which no longer text can meet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bytes<const MAX: usize>(String);

/// 1 to `MAX` ASCII letters, digits and `_.:-` that no DLP pattern matches: a name that is not
/// an id of ours (a worker, a sender, a fingerprint, a role, a project, a capability).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident<const MAX: usize>(String);

/// A task id, the shape [`super::ids::derive_task_id`] makes: `T-` and 16 lowercase hex digits.
/// A run's id and a plan's id are their root task's id, so they are task ids too.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TaskId(String);

/// An artifact key: a relative path of letters, digits and `_.-/` ([`check_key`]) that no DLP
/// pattern matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactKey(String);

/// An integer from `MIN` to `MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int<T, const MIN: u64, const MAX: u64>(T);

/// At most `MAX` items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T, const MAX: usize>(Vec<T>);

impl<const MIN: usize, const MAX: usize> Text<MIN, MAX> {
    pub fn check(text: &str) -> Result<(), String> {
        Chars::<MIN, MAX>::check(text)?;
        if MIN > 0 && text.trim().is_empty() {
            return Err("must hold some non-blank text".into());
        }
        Ok(())
    }
}

impl<const MIN: usize, const MAX: usize> Chars<MIN, MAX> {
    /// The length rules of the schema's `minLength`/`maxLength`, worded as the schema
    /// validator words them.
    pub fn check(text: &str) -> Result<(), String> {
        let chars = text.chars().count();
        if chars < MIN {
            return Err(format!(
                "must be at least {MIN} character{}",
                plural(MIN as u64)
            ));
        }
        if chars > MAX {
            return Err(format!(
                "must be at most {MAX} character{} (got {chars})",
                plural(MAX as u64)
            ));
        }
        Ok(())
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl<const MAX: usize> Label<MAX> {
    pub fn check(text: &str) -> Result<(), String> {
        if text.trim().is_empty()
            || text.chars().count() > MAX
            || text.chars().any(char::is_control)
        {
            return Err(format!(
                "must hold 1 to {MAX} characters of text without control characters"
            ));
        }
        Ok(())
    }
}

impl<const MAX: usize> Bytes<MAX> {
    pub fn check(text: &str) -> Result<(), String> {
        if text.is_empty() || text.len() > MAX {
            return Err(format!(
                "must hold 1 to {MAX} bytes of UTF-8 (got {} bytes)",
                text.len()
            ));
        }
        Ok(())
    }
}

/// What the check of an identifier says of a value a DLP pattern matches. The value is not
/// repeated: the refusal is answered, and may be logged.
pub const LOOKS_LIKE_A_SECRET: &str = "looks like a secret (a DLP pattern matches it; docs/RECORDS.md \
§7) and identifiers are recorded as given, so it is refused; the value is not repeated here";

/// Whether a DLP pattern matches `text`: an identifier that does is refused, never recorded.
pub fn looks_like_a_secret(text: &str) -> bool {
    redact(text).count > 0
}

impl<const MAX: usize> Ident<MAX> {
    pub fn check(text: &str) -> Result<(), String> {
        if looks_like_a_secret(text) {
            return Err(LOOKS_LIKE_A_SECRET.into());
        }
        let ok = !text.is_empty()
            && text.len() <= MAX
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
        if ok {
            return Ok(());
        }
        Err(format!(
            "{} must be 1 to {MAX} characters of letters, digits and _.:-",
            quote_for_message(text)
        ))
    }
}

impl TaskId {
    pub fn check(text: &str) -> Result<(), String> {
        if looks_like_a_secret(text) {
            return Err(LOOKS_LIKE_A_SECRET.into());
        }
        check_task_id(text)
            .map(drop)
            .map_err(|e| format!("{} is not a task id: {e}", quote_for_message(text)))
    }
}

impl ArtifactKey {
    pub fn check(text: &str) -> Result<(), String> {
        if looks_like_a_secret(text) {
            return Err(LOOKS_LIKE_A_SECRET.into());
        }
        check_key(text)
    }
}

/// The string newtypes: their value, construction through the check, transparent serde, and
/// the schema `$schema` with the schema name `$schema_name`.
macro_rules! string_newtype {
    ($name:ident, $schema_name:expr, $schema:expr) => {
        string_newtype!($name<>, $schema_name, $schema);
    };
    ($name:ident < $(const $p:ident : usize),* >, $schema_name:expr, $schema:expr) => {
        impl<$(const $p: usize),*> $name<$($p),*> {
            /// The value, when it passes the check.
            pub fn new(text: impl Into<String>) -> Result<Self, String> {
                let text = text.into();
                Self::check(&text)?;
                Ok($name(text))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl<$(const $p: usize),*> Deref for $name<$($p),*> {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl<$(const $p: usize),*> std::fmt::Display for $name<$($p),*> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<$(const $p: usize),*> Serialize for $name<$($p),*> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(s)
            }
        }

        impl<'de, $(const $p: usize),*> Deserialize<'de> for $name<$($p),*> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $name::new(String::deserialize(d)?).map_err(de::Error::custom)
            }
        }

        impl<$(const $p: usize),*> JsonSchema for $name<$($p),*> {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                Cow::Owned($schema_name)
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}

string_newtype!(
    Text<const MIN: usize, const MAX: usize>,
    format!("Text_{MIN}_{MAX}"),
    string_schema(MIN, MAX)
);
string_newtype!(
    Chars<const MIN: usize, const MAX: usize>,
    format!("Chars_{MIN}_{MAX}"),
    string_schema(MIN, MAX)
);
string_newtype!(Label<const MAX: usize>, format!("Label_{MAX}"), string_schema(1, MAX));
string_newtype!(Bytes<const MAX: usize>, format!("Bytes_{MAX}"), string_schema(1, MAX));
string_newtype!(
    Ident<const MAX: usize>,
    format!("Ident_{MAX}"),
    pattern_schema(&format!("^[A-Za-z0-9_.:-]{{1,{MAX}}}$"))
);
string_newtype!(
    TaskId,
    "TaskId".to_string(),
    pattern_schema(&format!("^{TASK_ID_PREFIX}[0-9a-f]{{{TASK_ID_HEX_LEN}}}$"))
);
string_newtype!(
    ArtifactKey,
    "ArtifactKey".to_string(),
    pattern_schema(&format!("^[A-Za-z0-9_./-]{{1,{MAX_KEY_BYTES}}}$"))
);

/// `{"type": "string", "minLength": min, "maxLength": max}` (no `minLength` for 0).
fn string_schema(min: usize, max: usize) -> Schema {
    let mut schema = json_schema!({"type": "string"});
    if min > 0 {
        schema.insert("minLength".into(), min.into());
    }
    schema.insert("maxLength".into(), max.into());
    schema
}

/// `{"type": "string", "pattern": pattern}`: the anchored shape of an identifier, which states
/// its length too (so no `minLength`/`maxLength` repeats it).
fn pattern_schema(pattern: &str) -> Schema {
    json_schema!({"type": "string", "pattern": pattern})
}

impl<T: Copy + Into<u64>, const MIN: u64, const MAX: u64> Int<T, MIN, MAX> {
    pub fn new(value: T) -> Result<Self, String> {
        Self::check(i128::from(value.into()))?;
        Ok(Int(value))
    }

    /// The schema's `minimum`/`maximum`, worded as the schema validator words them.
    fn check(v: i128) -> Result<(), String> {
        if v < i128::from(MIN) {
            return Err(format!("must be at least {MIN} (got {v})"));
        }
        if v > i128::from(MAX) {
            return Err(format!("must be at most {MAX} (got {v})"));
        }
        Ok(())
    }

    pub fn get(self) -> T {
        self.0
    }
}

impl<T: Serialize, const MIN: u64, const MAX: u64> Serialize for Int<T, MIN, MAX> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// Reads any JSON integer, so one out of the bounds (a negative, one past `T`'s width) is
/// refused by them, not by `T`.
impl<'de, T, const MIN: u64, const MAX: u64> Deserialize<'de> for Int<T, MIN, MAX>
where
    T: Copy + Into<u64> + TryFrom<u64>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Integer;
        impl de::Visitor<'_> for Integer {
            type Value = i128;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<i128, E> {
                Ok(v.into())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<i128, E> {
                Ok(v.into())
            }
        }
        let v = d.deserialize_i128(Integer)?;
        Self::check(v).map_err(de::Error::custom)?;
        // In 0..=MAX, so a u64; in `T` as long as MAX is (a bound past `T` is a bug here).
        let v = u64::try_from(v).map_err(|_| de::Error::custom("is out of range"))?;
        let t = T::try_from(v).map_err(|_| de::Error::custom("is out of range"))?;
        Ok(Int(t))
    }
}

impl<T: JsonSchema, const MIN: u64, const MAX: u64> JsonSchema for Int<T, MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("Int_{}_{MIN}_{MAX}", T::schema_name()))
    }

    /// The inner integer's schema with these bounds (which `schema::portable` keeps over the
    /// integer format's own).
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = T::json_schema(generator);
        schema.insert("minimum".into(), MIN.into());
        schema.insert("maximum".into(), MAX.into());
        schema
    }
}

impl<T, const MAX: usize> List<T, MAX> {
    pub fn as_slice(&self) -> &[T] {
        &self.0
    }

    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<T, const MAX: usize> Deref for List<T, MAX> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Serialize, const MAX: usize> Serialize for List<T, MAX> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for List<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = Vec::<T>::deserialize(d)?;
        if items.len() > MAX {
            return Err(de::Error::custom(format!(
                "must have at most {MAX} item{} (got {})",
                plural(MAX as u64),
                items.len()
            )));
        }
        Ok(List(items))
    }
}

impl<T: JsonSchema, const MAX: usize> JsonSchema for List<T, MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("List_{}_{MAX}", T::schema_name()))
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = Vec::<T>::json_schema(generator);
        schema.insert("maxItems".into(), MAX.into());
        schema
    }
}

/// `#[serde(default, deserialize_with = "null_is_default")]` on an argument that is not an
/// `Option`: an explicit `null` is the argument left out, as for an `Option` one (clients that
/// fill every field send `null` for "not given").
pub fn null_is_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests;
