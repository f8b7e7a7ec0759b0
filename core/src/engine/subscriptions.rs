//! The subscriptions a server holds: per subscription where its messages go (a connection, and
//! for a `subscriptions/listen` stream the listen request's id that tags them), and per
//! resource the digest of its last rendering and the ledger stream it is rendered from.
//!
//! When the head moves, [`Subscriptions::due`] names the resources to render again: those whose
//! stream's head differs from the one last looked at (one map lookup per distinct watched
//! stream; nothing at all when the head did not move), and those that depend on no one stream.
//! [`Subscriptions::changed`] then says whether a new rendering differs from the last. Held
//! subscriptions are memory: no thread, no timer of their own. They are capped per connection
//! and in all, counted in resources.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::digest::Digest;
use crate::ledger::{Fold, LedgerPosition, Snapshot};
use crate::protocol::subscriptions::Watched;

/// A subscription, named by the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubId(u64);

/// Most resources subscribed to at once on one connection (its `resources/subscribe`s, or the
/// streams `subscriptions/listen` opened on it), and in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubscriptionLimits {
    pub per_connection: usize,
    pub total: usize,
}

impl Default for SubscriptionLimits {
    fn default() -> Self {
        SubscriptionLimits {
            per_connection: 1_024,
            total: 100_000,
        }
    }
}

/// Why a subscription was not held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    Connection(usize),
    Server(usize),
}

impl Full {
    /// The sentence the refusal carries.
    pub fn message(self) -> String {
        match self {
            Full::Connection(n) => format!(
                "this connection already holds {n} resource subscriptions, the most one connection may (BERNSTEIN_MCP_MAX_SUBSCRIPTIONS_PER_CONNECTION); unsubscribe or close a stream first"
            ),
            Full::Server(n) => format!(
                "the server already holds {n} resource subscriptions, the most it holds (BERNSTEIN_MCP_MAX_SUBSCRIPTIONS); retry later"
            ),
        }
    }
}

#[derive(Debug)]
struct Sub<C> {
    conn: C,
    /// The listen request's id (its JSON text); `None`: the connection's handshake-era
    /// subscriptions.
    tag: Option<String>,
    uris: BTreeMap<String, Entry>,
}

#[derive(Debug)]
struct Entry {
    digest: Digest,
    stream: Option<String>,
}

/// Every subscription of a server (see the module docs), its connections named by `C`.
#[derive(Debug)]
pub struct Subscriptions<C> {
    limits: SubscriptionLimits,
    subs: BTreeMap<SubId, Sub<C>>,
    by_conn: BTreeMap<C, BTreeSet<SubId>>,
    /// The resources rendered from each stream, and the stream's head when last looked at.
    by_stream: BTreeMap<String, BTreeSet<(SubId, String)>>,
    seen: BTreeMap<String, Digest>,
    /// The resources that may change with any record, and the head last looked at.
    anywhere: BTreeSet<(SubId, String)>,
    seen_position: Option<LedgerPosition>,
    issued: u64,
    held: usize,
    /// Resources subscribed to on every engine of the process (this one's included): what the
    /// total cap counts.
    everywhere: Arc<AtomicUsize>,
}

impl<C: Copy + Ord> Subscriptions<C> {
    pub fn new(limits: SubscriptionLimits) -> Subscriptions<C> {
        Subscriptions::counted_in(limits, Arc::new(AtomicUsize::new(0)))
    }

    /// Subscriptions whose total cap counts those of other engines too (`everywhere`).
    pub fn counted_in(
        limits: SubscriptionLimits,
        everywhere: Arc<AtomicUsize>,
    ) -> Subscriptions<C> {
        Subscriptions {
            limits,
            subs: BTreeMap::new(),
            by_conn: BTreeMap::new(),
            by_stream: BTreeMap::new(),
            seen: BTreeMap::new(),
            anywhere: BTreeSet::new(),
            seen_position: None,
            issued: 0,
            held: 0,
            everywhere,
        }
    }

    /// Whether no subscription is held.
    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// How many resources are subscribed to, in all.
    pub fn held(&self) -> usize {
        self.held
    }

    fn held_by(&self, conn: C) -> usize {
        self.by_conn.get(&conn).map_or(0, |subs| {
            subs.iter()
                .filter_map(|s| self.subs.get(s))
                .map(|s| s.uris.len())
                .sum()
        })
    }

    fn room(&self, conn: C, more: usize) -> Result<(), Full> {
        let SubscriptionLimits {
            per_connection,
            total,
        } = self.limits;
        if self.held_by(conn) + more > per_connection {
            Err(Full::Connection(per_connection))
        } else if self.everywhere.load(Ordering::Acquire) + more > total {
            Err(Full::Server(total))
        } else {
            Ok(())
        }
    }

    fn open(&mut self, conn: C, tag: Option<String>) -> SubId {
        self.issued += 1;
        let id = SubId(self.issued);
        let sub = Sub {
            conn,
            tag,
            uris: BTreeMap::new(),
        };
        self.subs.insert(id, sub);
        self.by_conn.entry(conn).or_default().insert(id);
        id
    }

    fn add(&mut self, id: SubId, w: Watched) {
        let Some(sub) = self.subs.get_mut(&id) else {
            return;
        };
        let key = (id, w.uri.clone());
        match &w.stream {
            Some(s) => {
                self.by_stream.entry(s.clone()).or_default().insert(key);
            }
            None => {
                self.anywhere.insert(key);
            }
        }
        let entry = Entry {
            digest: w.digest,
            stream: w.stream,
        };
        if sub.uris.insert(w.uri, entry).is_none() {
            self.held += 1;
            self.everywhere.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// `resources/subscribe` on `conn`: held with the connection's other handshake-era
    /// subscriptions (subscribing again to one it holds renews its rendering).
    pub fn subscribe(&mut self, conn: C, w: Watched) -> Result<(), Full> {
        let existing = self.by_conn.get(&conn).and_then(|subs| {
            subs.iter()
                .copied()
                .find(|s| self.subs.get(s).is_some_and(|s| s.tag.is_none()))
        });
        let holds = existing
            .and_then(|s| self.subs.get(&s))
            .is_some_and(|s| s.uris.contains_key(&w.uri));
        if !holds {
            self.room(conn, 1)?;
        }
        let id = match existing {
            Some(id) => {
                self.remove_uri(id, &w.uri);
                id
            }
            None => self.open(conn, None),
        };
        self.add(id, w);
        Ok(())
    }

    /// `resources/unsubscribe` on `conn`: whether it was held.
    pub fn unsubscribe(&mut self, conn: C, uri: &str) -> bool {
        let found = self.by_conn.get(&conn).and_then(|subs| {
            subs.iter().copied().find(|s| {
                self.subs
                    .get(s)
                    .is_some_and(|s| s.tag.is_none() && s.uris.contains_key(uri))
            })
        });
        match found {
            Some(id) => {
                self.remove_uri(id, uri);
                true
            }
            None => false,
        }
    }

    /// `subscriptions/listen` on `conn`, tagged `tag`: one subscription holding `watched`.
    pub fn listen(&mut self, conn: C, tag: String, watched: Vec<Watched>) -> Result<SubId, Full> {
        self.room(conn, watched.len())?;
        let id = self.open(conn, Some(tag));
        for w in watched {
            self.add(id, w);
        }
        Ok(id)
    }

    fn remove_uri(&mut self, id: SubId, uri: &str) {
        let Some(entry) = self.subs.get_mut(&id).and_then(|s| s.uris.remove(uri)) else {
            return;
        };
        self.held -= 1;
        self.everywhere.fetch_sub(1, Ordering::AcqRel);
        let key = (id, uri.to_string());
        match entry.stream {
            Some(stream) => {
                if let Some(set) = self.by_stream.get_mut(&stream) {
                    set.remove(&key);
                    if set.is_empty() {
                        self.by_stream.remove(&stream);
                        self.seen.remove(&stream);
                    }
                }
            }
            None => {
                self.anywhere.remove(&key);
            }
        }
    }

    /// Drops a subscription; its connection and tag.
    pub fn end(&mut self, id: SubId) -> Option<(C, Option<String>)> {
        let uris: Vec<String> = self.subs.get(&id)?.uris.keys().cloned().collect();
        for uri in uris {
            self.remove_uri(id, &uri);
        }
        let sub = self.subs.remove(&id)?;
        if let Some(set) = self.by_conn.get_mut(&sub.conn) {
            set.remove(&id);
            if set.is_empty() {
                self.by_conn.remove(&sub.conn);
            }
        }
        Some((sub.conn, sub.tag))
    }

    /// Drops every subscription of `conn` (it closed); the listen streams among them.
    pub fn end_conn(&mut self, conn: C) -> Vec<(SubId, String)> {
        let ids: Vec<SubId> = self
            .by_conn
            .get(&conn)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        ids.into_iter()
            .filter_map(|id| self.end(id).and_then(|(_, tag)| Some((id, tag?))))
            .collect()
    }

    /// The listen streams tagged `tag` (a `notifications/cancelled` names it), with their
    /// connections.
    pub fn tagged(&self, tag: &str) -> Vec<(SubId, C)> {
        self.subs
            .iter()
            .filter(|(_, s)| s.tag.as_deref() == Some(tag))
            .map(|(id, s)| (*id, s.conn))
            .collect()
    }

    /// Every listen stream, with its connection and tag.
    pub fn listens(&self) -> Vec<(SubId, C, String)> {
        self.subs
            .iter()
            .filter_map(|(id, s)| Some((*id, s.conn, s.tag.clone()?)))
            .collect()
    }

    /// Where a subscription's messages go: its connection and tag.
    pub fn sink(&self, id: SubId) -> Option<(C, Option<&str>)> {
        self.subs.get(&id).map(|s| (s.conn, s.tag.as_deref()))
    }

    /// Whether a write to any of `streams` may change a subscribed resource.
    pub fn watches_any<'s>(&self, mut streams: impl Iterator<Item = &'s String>) -> bool {
        !self.anywhere.is_empty() || streams.any(|s| self.by_stream.contains_key(s))
    }

    /// The resources to render again at `head`: those rendered from a stream that moved since
    /// the last look, and those that may change with any record if the head moved at all.
    pub fn due<F: Fold>(&mut self, head: &Snapshot<F>) -> Vec<(SubId, String)> {
        if self.subs.is_empty() || self.seen_position == Some(head.position) {
            return Vec::new();
        }
        self.seen_position = Some(head.position);
        let mut due: Vec<(SubId, String)> = self.anywhere.iter().cloned().collect();
        for (stream, keys) in &self.by_stream {
            let now = head.stream_head(stream);
            if self.seen.get(stream) != Some(&now) {
                self.seen.insert(stream.clone(), now);
                due.extend(keys.iter().cloned());
            }
        }
        due
    }

    /// Records a new rendering of `uri` for `id`: whether it differs from the last.
    pub fn changed(&mut self, id: SubId, uri: &str, digest: Digest) -> bool {
        match self.subs.get_mut(&id).and_then(|s| s.uris.get_mut(uri)) {
            Some(e) if e.digest != digest => {
                e.digest = digest;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests;
