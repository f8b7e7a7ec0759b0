//! Signed heads: the ledger position, signed with the project's Ed25519 key, the way a
//! transparency log signs its tree head (RFC 9162 §4.10). Anyone who saved one can later prove
//! that a ledger extends it, or that it was cut back or rewritten after it
//! (`bernstein audit verify --witness FILE`), without the audit key.
//!
//! ```text
//! {type: "bernstein.signed_head.v1", seq, ledgerHead, chainHead, signature, signerPublicKeyPem}
//! ```
//! `ledgerHead` is the hash of record `seq`, `chainHead` the `audit` stream's head at that point;
//! `signature` is Ed25519 over the canonical JSON `{chainHead, ledgerHead, seq, type}`.
//! Served as the resource `bernstein://ledger/head` (the head of the snapshot the read was
//! answered from). Deterministic: one position and key give the same bytes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Snapshot;
use crate::bound::ResourceSpec;
use crate::refusal::Refusal;
use bernstein_core::config::Config;
use bernstein_core::ledger::AUDIT_STREAM;

use bernstein_core::signing::{Signer, canonical_message, verify_signature};

/// The `type` of a signed head (and the domain separation of its signature).
pub const SIGNED_HEAD_TYPE: &str = "bernstein.signed_head.v1";
/// The resource serving the newest signed head.
pub const SIGNED_HEAD_URI: &str = "bernstein://ledger/head";

/// A signed ledger head.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignedHead {
    #[serde(rename = "type")]
    pub kind: String,
    pub seq: u64,
    pub ledger_head: String,
    pub chain_head: String,
    pub signature: String,
    pub signer_public_key_pem: String,
}

/// The message a signed head's signature covers.
pub fn signed_message(seq: u64, ledger_head: &str, chain_head: &str) -> Vec<u8> {
    canonical_message(&json!({
        "chainHead": chain_head,
        "ledgerHead": ledger_head,
        "seq": seq,
        "type": SIGNED_HEAD_TYPE,
    }))
}

/// The signed head of `snapshot`'s position.
pub fn sign_head(snapshot: &Snapshot, signer: &Signer) -> SignedHead {
    let ledger_head = snapshot.position.head.to_string();
    let chain_head = snapshot.stream_head(AUDIT_STREAM).to_string();
    let seq = snapshot.position.seq;
    SignedHead {
        kind: SIGNED_HEAD_TYPE.to_string(),
        seq,
        signature: signer.sign(&signed_message(seq, &ledger_head, &chain_head)),
        ledger_head,
        chain_head,
        signer_public_key_pem: signer.public_key_pem().to_string(),
    }
}

/// Checks a signed head's shape and signature (not yet against a ledger).
pub fn check_signed_head(head: &SignedHead) -> Result<(), String> {
    if head.kind != SIGNED_HEAD_TYPE {
        return Err(format!("type is {:?}, not {SIGNED_HEAD_TYPE:?}", head.kind));
    }
    for (name, d) in [
        ("ledgerHead", &head.ledger_head),
        ("chainHead", &head.chain_head),
    ] {
        if bernstein_core::digest::Digest::parse(d).is_none() {
            return Err(format!("{name} is not sha256:<64 lowercase hex>"));
        }
    }
    let message = signed_message(head.seq, &head.ledger_head, &head.chain_head);
    verify_signature(&head.signer_public_key_pem, &message, &head.signature)
        .map_err(|e| format!("signature: {e}"))
}

/// The resource `bernstein://ledger/head`.
pub fn resource() -> ResourceSpec {
    ResourceSpec {
        uri: SIGNED_HEAD_URI,
        name: "ledger-head",
        title: "Signed ledger head",
        description: "The ledger's current position signed with the project's Ed25519 key (JSON). \
                      Save it: `bernstein audit verify --witness FILE` later proves the ledger \
                      still extends it.",
        mime_type: "application/json",
        read: read_head,
    }
}

fn read_head(config: &Config, snapshot: &Snapshot) -> Vec<Value> {
    let text = match &config.signing_key {
        Some(signer) => serde_json::to_string(&sign_head(snapshot, signer))
            .expect("a signed head always serializes"),
        None => json!({
            "error": Refusal::SigningKeyUnavailable.as_str(),
            "message": "this server has no signing key, so it signs no heads",
        })
        .to_string(),
    };
    vec![json!({"uri": SIGNED_HEAD_URI, "mimeType": "application/json", "text": text})]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_head_verifies_and_any_edit_does_not() {
        let signer = Signer::from_seed(&[7; 32]);
        let head = sign_head(&Snapshot::genesis(), &signer);
        assert_eq!(head.seq, 0);
        check_signed_head(&head).unwrap();
        let mut moved = head.clone();
        moved.seq = 1;
        assert!(check_signed_head(&moved).unwrap_err().contains("signature"));
        let mut other = head;
        other.chain_head = bernstein_core::digest::Digest::of(b"x").to_string();
        assert!(check_signed_head(&other).is_err());
    }
}
