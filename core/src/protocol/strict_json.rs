//! The one parse of incoming message bytes into a [`Value`]: standard JSON, except that an
//! object naming the same key twice (at any depth, compared after escapes are decoded, so
//! `"a"` and `"\u0061"` are the same key) is an error that names the key.
//!
//! Why: with "last key wins" a proxy or policy layer that reads the first of two `name` keys
//! sees a different call than the server runs. A client message is parsed through [`parse`]
//! once, by the first layer that sees it ([`super::message::ClientMessage::read`]: the stdio
//! framing, the HTTP router), and every reader of it (dispatch and its re-runs, the header
//! rules, the cancellation peek) reads that one value, so it has one meaning. The check costs
//! one map lookup per key, in the same single pass that builds the value.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The longest key an error message quotes (characters).
const MAX_KEY_CHARS: usize = 80;

/// Parses `text` as one JSON value; a duplicate key in any object is an error
/// (`duplicate key "k" in an object at line L column C`).
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// [`parse`] for bytes (which must be UTF-8).
pub fn parse_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Strict.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Deserializes one value, refusing repeated keys.
#[derive(Clone, Copy)]
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        // serde_json never hands a non-finite float; `Null` mirrors `Value`'s own visitor.
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match object.entry(key) {
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(Strict)?);
                }
                serde_json::map::Entry::Occupied(slot) => {
                    // Quoted as JSON (no raw control characters) and cut to a readable length.
                    let quoted = Value::String(slot.key().clone()).to_string();
                    return Err(de::Error::custom(format_args!(
                        "duplicate key {} in an object",
                        super::jsonrpc::shorten(&quoted, MAX_KEY_CHARS)
                    )));
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests;
