//! The log levels handshake-era clients set with `logging/setLevel` over streamable HTTP, by
//! session id ([`crate::transport::http::session`]): a call carrying the session id hears
//! `notifications/message` at that level on whichever connection it arrives. Bounded: at most
//! [`MAX_SESSIONS`] sessions, the one used least recently dropped first (its client then hears
//! nothing until it sets a level again). In memory, per engine.

use std::collections::BTreeMap;

use crate::protocol::logging::LogLevel;
use crate::transport::http::session::SessionId;

/// Most sessions whose level is kept.
pub const MAX_SESSIONS: usize = 10_000;

#[derive(Debug)]
pub struct SessionLevels {
    levels: BTreeMap<SessionId, (LogLevel, u64)>,
    /// Last use: the least recent first.
    order: BTreeMap<u64, SessionId>,
    next: u64,
    cap: usize,
}

impl Default for SessionLevels {
    fn default() -> Self {
        SessionLevels::with_capacity(MAX_SESSIONS)
    }
}

impl SessionLevels {
    /// A table of at most `cap` sessions (at least one).
    pub fn with_capacity(cap: usize) -> SessionLevels {
        SessionLevels {
            levels: BTreeMap::new(),
            order: BTreeMap::new(),
            next: 0,
            cap: cap.max(1),
        }
    }

    fn touch(&mut self, id: SessionId, level: LogLevel) {
        if let Some((_, used)) = self.levels.get(&id) {
            self.order.remove(used);
        }
        self.next += 1;
        self.order.insert(self.next, id);
        self.levels.insert(id, (level, self.next));
    }

    /// The session `id` asks for `level`; over the cap, the least recently used is dropped.
    pub fn set(&mut self, id: SessionId, level: LogLevel) {
        self.touch(id, level);
        while self.levels.len() > self.cap {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.levels.remove(&oldest);
        }
    }

    /// The level session `id` asked for, if it is kept (a use: it becomes the most recent).
    pub fn get(&mut self, id: SessionId) -> Option<LogLevel> {
        let (level, _) = *self.levels.get(&id)?;
        self.touch(id, level);
        Some(level)
    }

    /// How many sessions are kept.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_kept_per_session_and_the_least_recently_used_goes_first() {
        let mut t = SessionLevels::with_capacity(2);
        assert_eq!(t.get(1), None);
        t.set(1, LogLevel::Info);
        t.set(2, LogLevel::Debug);
        assert_eq!(t.get(1), Some(LogLevel::Info));
        // 2 is now the least recently used: a third session drops it.
        t.set(3, LogLevel::Warning);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(2), None);
        assert_eq!(t.get(1), Some(LogLevel::Info));
        assert_eq!(t.get(3), Some(LogLevel::Warning));
        // Setting again replaces, and counts as a use.
        t.set(3, LogLevel::Error);
        t.set(4, LogLevel::Debug);
        assert_eq!(t.get(1), None);
        assert_eq!(t.get(3), Some(LogLevel::Error));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn the_table_never_grows_past_its_cap() {
        let mut t = SessionLevels::with_capacity(100);
        for id in 0..10_000u128 {
            t.set(id, LogLevel::Info);
        }
        assert_eq!(t.len(), 100);
        assert_eq!(t.order.len(), 100);
        assert_eq!(t.get(9_999), Some(LogLevel::Info));
        assert_eq!(t.get(0), None);
    }
}
