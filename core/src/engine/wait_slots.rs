//! Who may hold a pending answer open: at most `max` waits at once on a server, and at most
//! `per_peer` of them for one peer address, so one client cannot fill the server with waits.
//! A request asks for a slot before it waits ([`super::Output::ClaimWaitSlot`]); without one
//! the engine answers at once with the retryable `too_many_waits` refusal.
//!
//! The engine keeps one `WaitSlots` and performs its requests' claims and releases on it;
//! every decision (the caps, the count per peer) is here.

use core::net::IpAddr;
use std::collections::BTreeMap;

/// The waits a server holds, in total and by peer address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitSlots {
    max: usize,
    per_peer: usize,
    held: usize,
    by_peer: BTreeMap<IpAddr, usize>,
}

impl Default for WaitSlots {
    fn default() -> WaitSlots {
        WaitSlots::new()
    }
}

impl WaitSlots {
    /// No cap until a transport sets one ([`WaitSlots::limit`]).
    pub const fn new() -> WaitSlots {
        WaitSlots {
            max: usize::MAX,
            per_peer: usize::MAX,
            held: 0,
            by_peer: BTreeMap::new(),
        }
    }

    /// At most `max` waits at once, and at most `per_peer` for one peer address (each at
    /// least one). Slots already held stay held; the caps apply to the next claims.
    pub fn limit(&mut self, max: usize, per_peer: usize) {
        self.max = max.max(1);
        self.per_peer = per_peer.max(1);
    }

    /// Takes a slot for a request of `peer` (`None`: a transport without peer addresses,
    /// counted only in the total), if both caps allow; whether it was granted.
    pub fn claim(&mut self, peer: Option<IpAddr>) -> bool {
        if self.held >= self.max {
            return false;
        }
        if let Some(peer) = peer {
            let n = self.by_peer.entry(peer).or_default();
            if *n >= self.per_peer {
                return false;
            }
            *n += 1;
        }
        self.held += 1;
        true
    }

    /// Gives back a slot [`WaitSlots::claim`] granted to `peer`.
    pub fn release(&mut self, peer: Option<IpAddr>) {
        if let Some(peer) = peer
            && let Some(n) = self.by_peer.get_mut(&peer)
        {
            *n -= 1;
            if *n == 0 {
                self.by_peer.remove(&peer);
            }
        }
        self.held = self.held.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use core::net::Ipv4Addr;

    use super::*;

    fn ip(n: u8) -> Option<IpAddr> {
        Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)))
    }

    #[test]
    fn one_peer_cannot_take_more_than_its_share_and_the_total_caps_everyone() {
        let mut s = WaitSlots::new();
        s.limit(3, 2);
        assert!(s.claim(ip(1)) && s.claim(ip(1)));
        assert!(!s.claim(ip(1)), "a third wait of one peer is refused");
        assert!(s.claim(ip(2)));
        assert!(!s.claim(ip(3)), "the total is reached");
        assert!(!s.claim(None), "also for a peer without an address");
        s.release(ip(1));
        assert!(s.claim(ip(1)), "a slot given back can be taken again");
        assert_eq!(s.held, 3);
        s.release(ip(2));
        s.release(ip(1));
        s.release(ip(1));
        assert_eq!(s, {
            let mut empty = WaitSlots::new();
            empty.limit(3, 2);
            empty
        });
    }

    #[test]
    fn no_cap_until_limited_and_caps_are_at_least_one() {
        let mut s = WaitSlots::new();
        for _ in 0..1000 {
            assert!(s.claim(ip(1)));
        }
        let mut t = WaitSlots::new();
        t.limit(0, 0);
        assert!(t.claim(None));
        assert!(!t.claim(None));
    }
}
