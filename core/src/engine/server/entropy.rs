//! The engine's randomness, drawn from a seed the runtime hands in (32 bytes from the OS): the
//! tokens of legacy SSE streams (unguessable: each is SHA-256 of the secret seed and a
//! counter, as in a hash DRBG), the nonces of handshake-era session ids and the seeds of the
//! requests' jittered pauses. Nothing here
//! reads the OS; the same seed gives the same draws, which the simulations rely on.

use sha2::{Digest as _, Sha256};

#[derive(Clone)]
pub(super) struct Entropy {
    seed: [u8; 32],
    drawn: u64,
}

impl std::fmt::Debug for Entropy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The seed is secret: it makes the tokens.
        f.debug_struct("Entropy")
            .field("drawn", &self.drawn)
            .finish_non_exhaustive()
    }
}

impl Entropy {
    pub(super) fn new(seed: [u8; 32]) -> Entropy {
        Entropy { seed, drawn: 0 }
    }

    fn draw(&mut self, purpose: &[u8]) -> [u8; 32] {
        self.drawn += 1;
        let mut h = Sha256::new();
        h.update(b"bernstein-engine-entropy\0");
        h.update(self.seed);
        h.update(purpose);
        h.update(self.drawn.to_be_bytes());
        h.finalize().into()
    }

    /// A fresh stream token: 128 bits, hex.
    pub(super) fn token(&mut self) -> String {
        hex::encode(&self.draw(b"token")[..16])
    }

    /// A fresh session id's nonce (its identity; `transport::http::session`): 128 bits.
    pub(super) fn session_nonce(&mut self) -> u128 {
        let b = self.draw(b"session");
        let mut n = [0; 16];
        n.copy_from_slice(&b[..16]);
        u128::from_be_bytes(n)
    }

    /// A fresh seed for one request's jitter.
    pub(super) fn request_seed(&mut self) -> u64 {
        let b = self.draw(b"jitter");
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_distinct_valid_and_follow_the_seed() {
        let mut a = Entropy::new([7; 32]);
        let mut b = Entropy::new([7; 32]);
        let mut c = Entropy::new([8; 32]);
        let (t1, t2) = (a.token(), a.token());
        assert_ne!(t1, t2);
        assert_eq!(t1.len(), 32);
        assert!(crate::transport::http::exchange::valid_token(&t1));
        assert_eq!(b.token(), t1);
        assert_ne!(c.token(), t1);
        assert!(!format!("{a:?}").contains("seed: ["));
    }
}
