//! Content digests and MACs: `sha256:<hex>` digests over canonical JSON, HMAC-SHA256 tags.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// A SHA-256 content digest, rendered `sha256:<64 lowercase hex>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest that stands before the first record of any chain.
    pub const ZERO: Digest = Digest([0; 32]);

    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// Digest of several parts, each length-prefixed so that part boundaries are unambiguous.
    pub fn of_parts(parts: &[&[u8]]) -> Digest {
        let mut h = Sha256::new();
        for p in parts {
            h.update((p.len() as u64).to_be_bytes());
            h.update(p);
        }
        Digest(h.finalize().into())
    }

    pub fn hex(&self) -> String {
        self.rendered().as_str()["sha256:".len()..].to_string()
    }

    /// `sha256:<64 hex>` on the stack: Display and Serialize write it without allocating.
    pub(crate) fn rendered(&self) -> Rendered {
        let mut out = [0u8; 71];
        out[..7].copy_from_slice(b"sha256:");
        hex::encode_to_slice(self.0, &mut out[7..]).expect("64 hex digits hold 32 bytes");
        Rendered(out)
    }

    /// Parses `sha256:<64 hex>`.
    pub fn parse(s: &str) -> Option<Digest> {
        let hex_part = s.strip_prefix("sha256:")?;
        if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut out).ok()?;
        Some(Digest(out))
    }
}

/// A digest's rendering, `sha256:<64 hex>`, on the stack.
pub(crate) struct Rendered([u8; 71]);

impl Rendered {
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("the prefix and hex digits are ASCII")
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rendered().as_str())
    }
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.rendered().as_str()[..19])
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.rendered().as_str())
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Digest::parse(&s)
            .ok_or_else(|| serde::de::Error::custom("expected sha256:<64 lowercase hex>"))
    }
}

/// What a record's HMAC tag is computed over, before the record hash's 32 bytes (format 3,
/// docs/FORMATS.md §3): the label keeps record tags apart from every other message the audit
/// key authenticates, and with the hash the message fits one SHA-256 block.
pub const RECORD_TAG_LABEL: &[u8; 20] = b"bernstein.record.v3:";

/// HMAC-SHA256 of `message` under `key`, rendered `hmac-sha256:<hex>`.
pub fn hmac_tag(key: &[u8], message: &[u8]) -> String {
    let mut mac = HmacCheck::new(key);
    mac.update(message);
    mac.tag()
}

/// Constant-time check of a rendered HMAC tag.
pub fn verify_hmac_tag(key: &[u8], message: &[u8], tag: &str) -> bool {
    let mut mac = HmacCheck::new(key);
    mac.update(message);
    mac.verify(tag)
}

/// [`hmac_tag`] and [`verify_hmac_tag`] over a message fed in pieces (a large file read or
/// written in chunks).
pub struct HmacCheck(Hmac<Sha256>);

impl HmacCheck {
    pub fn new(key: &[u8]) -> HmacCheck {
        HmacCheck(Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length"))
    }

    pub fn update(&mut self, piece: &[u8]) {
        self.0.update(piece);
    }

    /// The tag of the whole message, rendered `hmac-sha256:<hex>`.
    pub fn tag(self) -> String {
        format!(
            "hmac-sha256:{}",
            hex::encode(self.0.finalize().into_bytes())
        )
    }

    /// Whether `tag` is exactly the rendering [`hmac_tag`] gives the whole message.
    pub fn verify(self, tag: &str) -> bool {
        let Some(hex_part) = tag.strip_prefix("hmac-sha256:") else {
            return false;
        };
        // Only the exact rendering `hmac_tag` produces verifies: hex decoding alone would also
        // accept upper-case digits, and the tag is not covered by the record hash.
        if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
            return false;
        }
        let Ok(bytes) = hex::decode(hex_part) else {
            return false;
        };
        self.0.verify_slice(&bytes).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(
            Digest::of(b"abc").to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // RFC 4231 test case 2.
        assert_eq!(
            hmac_tag(b"Jefe", b"what do ya want for nothing?"),
            "hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn parse_round_trips_and_rejects_junk() {
        let d = Digest::of(b"x");
        assert_eq!(Digest::parse(&d.to_string()), Some(d));
        assert_eq!(Digest::parse("sha256:abc"), None);
        assert_eq!(Digest::parse(&d.to_string().to_uppercase()), None);
        assert!(verify_hmac_tag(b"k", b"m", &hmac_tag(b"k", b"m")));
        assert!(!verify_hmac_tag(b"k", b"m2", &hmac_tag(b"k", b"m")));
        let upper = hmac_tag(b"k", b"m")
            .to_uppercase()
            .replace("HMAC-SHA256", "hmac-sha256");
        assert!(!verify_hmac_tag(b"k", b"m", &upper));
    }
}
