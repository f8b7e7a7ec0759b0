//! Ed25519 signing: the identity that signs, the offline check of a signature, and the SPKI PEM
//! its public half travels as. Crypto primitives like [`crate::digest`]'s HMAC, below every layer
//! that signs; what is signed (claim receipts, mailbox entries, capsules, signed heads) and the
//! refusal of a tool that must sign without a signer are the domain's.
//!
//! Signatures are RFC 8032 Ed25519: deterministic, so the same message under the same key gives
//! byte-identical signatures, which keeps receipts replayable. A signature is rendered as
//! base64url without padding of its 64 bytes. The public half travels with what it signs as
//! an SPKI PEM (RFC 8410): the 12-byte DER prefix `30 2a 30 05 06 03 2b 65 70 03 21 00`
//! followed by the 32-byte key, base64 on one line between the `PUBLIC KEY` armour lines.
//!
//! This module never sees where the seed came from (the runtime loads it from
//! `.sdd/keys/signing.ed25519`) and never renders the seed: [`Signer`]'s `Debug` shows only the
//! public half.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use serde_json::Value;

use crate::canonical::to_canonical_bytes;

/// DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410 §4); the raw key follows it.
pub const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];
const PEM_BEGIN: &str = "-----BEGIN PUBLIC KEY-----";
const PEM_END: &str = "-----END PUBLIC KEY-----";

/// An Ed25519 signing identity: the secret key and the PEM of its public half.
#[derive(Clone)]
pub struct Signer {
    key: SigningKey,
    public_pem: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the seed.
        f.debug_struct("Signer")
            .field("public_key_pem", &self.public_pem)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The identity of a 32-byte Ed25519 seed (RFC 8032 secret key).
    pub fn from_seed(seed: &[u8; 32]) -> Signer {
        let key = SigningKey::from_bytes(seed);
        let public_pem = public_key_pem(&key.verifying_key());
        Signer { key, public_pem }
    }

    /// SPKI PEM of the public half.
    pub fn public_key_pem(&self) -> &str {
        &self.public_pem
    }

    /// Signs `message`; base64url (no padding) of the 64-byte signature.
    pub fn sign(&self, message: &[u8]) -> String {
        use ed25519_dalek::Signer as _;
        URL_SAFE_NO_PAD.encode(self.key.sign(message).to_bytes())
    }
}

/// The SPKI PEM of an Ed25519 public key (one base64 line; ends with a newline).
pub fn public_key_pem(key: &VerifyingKey) -> String {
    let mut der = ED25519_SPKI_PREFIX.to_vec();
    der.extend_from_slice(key.as_bytes());
    format!("{PEM_BEGIN}\n{}\n{PEM_END}\n", STANDARD.encode(der))
}

/// Why a signature does not verify.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    #[error("the signer key is not an Ed25519 SPKI PEM: {0}")]
    BadKey(&'static str),
    #[error("the signature is not base64url of 64 bytes")]
    BadEncoding,
    #[error("the Ed25519 signature does not verify under the embedded public key")]
    Mismatch,
}

/// Parses an Ed25519 SPKI PEM as [`public_key_pem`] writes it (a trailing newline and line
/// breaks inside the base64 are tolerated).
pub fn parse_public_key_pem(pem: &str) -> Result<VerifyingKey, SignatureError> {
    let inner = pem
        .trim()
        .strip_prefix(PEM_BEGIN)
        .and_then(|r| r.strip_suffix(PEM_END))
        .ok_or(SignatureError::BadKey("missing PUBLIC KEY armour"))?;
    let b64: String = inner.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let der = STANDARD
        .decode(b64)
        .map_err(|_| SignatureError::BadKey("the body is not base64"))?;
    let raw = der
        .strip_prefix(&ED25519_SPKI_PREFIX[..])
        .ok_or(SignatureError::BadKey(
            "not an Ed25519 SubjectPublicKeyInfo",
        ))?;
    let bytes: [u8; 32] = raw
        .try_into()
        .map_err(|_| SignatureError::BadKey("the key is not 32 bytes"))?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| SignatureError::BadKey("not a curve point"))
}

/// Verifies `signature` (base64url, no padding) over `message` under the key in `pem`.
/// Uses RFC 8032 strict verification (no malleable or small-order signatures).
pub fn verify_signature(pem: &str, message: &[u8], signature: &str) -> Result<(), SignatureError> {
    let key = parse_public_key_pem(pem)?;
    let raw = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| SignatureError::BadEncoding)?;
    let bytes: [u8; 64] = raw
        .as_slice()
        .try_into()
        .map_err(|_| SignatureError::BadEncoding)?;
    key.verify_strict(message, &Signature::from_bytes(&bytes))
        .map_err(|_| SignatureError::Mismatch)
}

/// The canonical JSON bytes of a signing pre-image. Pre-images are built from strings only,
/// so they always have a canonical form.
pub fn canonical_message(value: &Value) -> Vec<u8> {
    to_canonical_bytes(value).expect("signing pre-images hold strings only")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8032 §7.1 TEST 1.
    const SEED: [u8; 32] = [
        0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c,
        0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae,
        0x7f, 0x60,
    ];

    #[test]
    fn rfc8032_vector_and_pem_round_trip() {
        let s = Signer::from_seed(&SEED);
        let sig = s.sign(b"");
        let raw = URL_SAFE_NO_PAD.decode(&sig).unwrap();
        assert_eq!(
            hex::encode(raw),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        let pem = s.public_key_pem();
        assert_eq!(
            pem,
            "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n-----END PUBLIC KEY-----\n"
        );
        let key = parse_public_key_pem(pem).unwrap();
        assert_eq!(
            hex::encode(key.as_bytes()),
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
        verify_signature(pem, b"", &sig).unwrap();
        assert_eq!(s.sign(b""), sig, "deterministic");
    }

    #[test]
    fn tampering_fails_with_a_named_reason() {
        let s = Signer::from_seed(&SEED);
        let sig = s.sign(b"message");
        assert_eq!(
            verify_signature(s.public_key_pem(), b"messagE", &sig),
            Err(SignatureError::Mismatch)
        );
        let other = Signer::from_seed(&[7; 32]);
        assert_eq!(
            verify_signature(other.public_key_pem(), b"message", &sig),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(s.public_key_pem(), b"message", "not base64!"),
            Err(SignatureError::BadEncoding)
        );
        assert!(matches!(
            verify_signature(
                "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
                b"m",
                &sig
            ),
            Err(SignatureError::BadKey(_))
        ));
        assert!(matches!(
            parse_public_key_pem("garbage"),
            Err(SignatureError::BadKey(_))
        ));
    }

    #[test]
    fn debug_never_shows_the_seed() {
        let s = Signer::from_seed(&SEED);
        let text = format!("{s:?}");
        assert!(!text.contains("9d61b19d"), "{text}");
        assert!(text.contains("PUBLIC KEY"));
    }
}
