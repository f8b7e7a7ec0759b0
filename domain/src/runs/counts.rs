//! A run's member counts by status: one counter per status, inline. The map it replaced held
//! one tree node (≈130 bytes on the heap) for a run of a single task; this is 48 bytes in the
//! view and nothing on the heap. It serializes as that map did (statuses in order, zeros left
//! out), so checkpoints keep their bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::lifecycle::TaskStatus;

const N: usize = TaskStatus::ALL.len();

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts([u32; N]);

impl StatusCounts {
    /// Members in `status`.
    pub fn get(&self, status: TaskStatus) -> u64 {
        u64::from(self.0[status as usize])
    }

    pub(crate) fn increment(&mut self, status: TaskStatus) {
        let n = &mut self.0[status as usize];
        *n = n.saturating_add(1);
    }

    pub(crate) fn decrement(&mut self, status: TaskStatus) {
        let n = &mut self.0[status as usize];
        *n = n.saturating_sub(1);
    }

    /// The statuses with members, in status order, with their counts.
    pub fn iter(&self) -> impl Iterator<Item = (TaskStatus, u64)> + '_ {
        let mut statuses = TaskStatus::ALL;
        statuses.sort_unstable();
        statuses
            .into_iter()
            .map(|s| (s, self.get(s)))
            .filter(|(_, n)| *n > 0)
    }

    /// As the map of nonzero counts.
    pub fn to_map(&self) -> BTreeMap<TaskStatus, u64> {
        self.iter().collect()
    }
}

impl Serialize for StatusCounts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for StatusCounts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<TaskStatus, u64>::deserialize(deserializer)?;
        let mut out = StatusCounts::default();
        for (status, n) in map {
            out.0[status as usize] = u32::try_from(n).map_err(serde::de::Error::custom)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_map_of_nonzero_counts() {
        let mut c = StatusCounts::default();
        let mut map = BTreeMap::new();
        for (i, s) in TaskStatus::ALL.into_iter().rev().enumerate() {
            for _ in 0..(i % 3) {
                c.increment(s);
                *map.entry(s).or_insert(0u64) += 1;
            }
        }
        c.increment(TaskStatus::Done);
        c.decrement(TaskStatus::Done);
        assert_eq!(c.to_map(), map);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, serde_json::to_string(&map).unwrap());
        assert_eq!(serde_json::from_str::<StatusCounts>(&json).unwrap(), c);
        assert_eq!(
            serde_json::to_string(&StatusCounts::default()).unwrap(),
            "{}"
        );
    }
}
