//! A run's members (task id → status, in task-id order), sized for what runs hold: most have a
//! handful, so up to [`FEW`] members live in a sorted vector; a run with more moves to a
//! persistent map, so copying its view stays O(1) however large it grows. A persistent map
//! holding one member took about 630 bytes, a vector entry about 60: this was the largest part
//! of the projection's cost per run. A run's only member (most runs have one task) is kept in
//! the view itself, with no vector: that saved the vector's 48-byte allocation per run, and
//! the view is no larger (its status byte holds the form's tag). Either way it serializes as
//! the map it stands for (the checkpoint's shape is unchanged), and which form holds the
//! members is a function of their number alone (members are never removed), so equal member
//! sets compare equal.

use imbl::OrdMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::lifecycle::TaskStatus;
use bernstein_core::ledger::compact::InlineStr;

/// Most members kept in the vector form.
pub const FEW: usize = 16;

type Member = (InlineStr, TaskStatus);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Members {
    /// Sorted by task id, at most [`FEW`].
    Few(Few),
    Many(OrdMap<InlineStr, TaskStatus>),
}

/// At most [`FEW`] members sorted by task id: one inline, none or more than one in a vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Few {
    One(Member),
    List(Vec<Member>),
}

impl Few {
    fn as_slice(&self) -> &[Member] {
        match self {
            Few::One(m) => std::slice::from_ref(m),
            Few::List(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Member] {
        match self {
            Few::One(m) => std::slice::from_mut(m),
            Few::List(v) => v,
        }
    }

    fn position(&self, task_id: &str) -> Result<usize, usize> {
        self.as_slice()
            .binary_search_by(|(id, _)| id.as_str().cmp(task_id))
    }

    /// Inserts a new member at `i` (where [`Few::position`] said it belongs).
    fn insert_at(&mut self, i: usize, member: Member) {
        let mut list = match std::mem::replace(self, Few::List(Vec::new())) {
            Few::List(v) if v.is_empty() => {
                *self = Few::One(member);
                return;
            }
            Few::List(v) => v,
            Few::One(first) => {
                let mut v = Vec::with_capacity(2);
                v.push(first);
                v
            }
        };
        // Exactly as long as needed: most runs never get more members.
        list.reserve_exact(1);
        list.insert(i, member);
        *self = Few::List(list);
    }

    fn into_vec(self) -> Vec<Member> {
        match self {
            Few::One(m) => vec![m],
            Few::List(v) => v,
        }
    }
}

impl Default for Members {
    fn default() -> Self {
        Members::Few(Few::List(Vec::new()))
    }
}

impl Members {
    pub fn len(&self) -> usize {
        match self {
            Members::Few(v) => v.as_slice().len(),
            Members::Many(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, task_id: &str) -> Option<&TaskStatus> {
        match self {
            Members::Few(v) => v.position(task_id).ok().map(|i| &v.as_slice()[i].1),
            Members::Many(m) => m.get(task_id),
        }
    }

    pub fn get_mut(&mut self, task_id: &str) -> Option<&mut TaskStatus> {
        match self {
            Members::Few(v) => match v.position(task_id) {
                Ok(i) => Some(&mut v.as_mut_slice()[i].1),
                Err(_) => None,
            },
            Members::Many(m) => m.get_mut(task_id),
        }
    }

    pub fn contains_key(&self, task_id: &str) -> bool {
        self.get(task_id).is_some()
    }

    /// Sets the status of `task_id`, adding it if it is not a member yet.
    pub fn insert(&mut self, task_id: String, status: TaskStatus) {
        match self {
            Members::Few(v) => match v.position(&task_id) {
                Ok(i) => v.as_mut_slice()[i].1 = status,
                Err(i) if v.as_slice().len() < FEW => {
                    v.insert_at(i, (InlineStr::new(&task_id), status));
                }
                Err(_) => {
                    let few = std::mem::replace(v, Few::List(Vec::new()));
                    let mut m: OrdMap<InlineStr, TaskStatus> = few.into_vec().into_iter().collect();
                    m.insert(InlineStr::new(&task_id), status);
                    *self = Members::Many(m);
                }
            },
            Members::Many(m) => {
                m.insert(InlineStr::new(&task_id), status);
            }
        }
    }

    /// Every member, in task-id order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&str, TaskStatus)> + '_> {
        match self {
            Members::Few(v) => Box::new(v.as_slice().iter().map(|(id, s)| (id.as_str(), *s))),
            Members::Many(m) => Box::new(m.iter().map(|(id, s)| (id.as_str(), *s))),
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|(id, _)| id)
    }

    pub fn values(&self) -> impl Iterator<Item = TaskStatus> + '_ {
        self.iter().map(|(_, s)| s)
    }
}

impl Serialize for Members {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<String, TaskStatus>::deserialize(deserializer)?;
        let mut members = Members::default();
        for (id, status) in map {
            members.insert(id, status);
        }
        Ok(members)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn ids(n: usize) -> Vec<String> {
        // Inserted out of order, so the vector form has to keep itself sorted.
        (0..n)
            .rev()
            .map(|i| format!("T-{:03}", (i * 7) % n))
            .collect()
    }

    #[test]
    fn behaves_as_the_map_it_stands_for_on_both_sides_of_the_switch() {
        for n in [0, 1, 3, FEW, FEW + 1, 3 * FEW] {
            let mut members = Members::default();
            let mut map = BTreeMap::new();
            for (i, id) in ids(n).into_iter().enumerate() {
                let status = TaskStatus::ALL[i % TaskStatus::ALL.len()];
                members.insert(id.clone(), status);
                map.insert(id, status);
            }
            assert_eq!(matches!(members, Members::Few(_)), n <= FEW, "{n}");
            assert_eq!(members.len(), map.len());
            let listed: Vec<(&str, TaskStatus)> = members.iter().collect();
            let expected: Vec<(&str, TaskStatus)> =
                map.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            assert_eq!(listed, expected, "{n}: task-id order");
            for (id, status) in &map {
                assert_eq!(members.get(id), Some(status));
            }
            assert!(!members.contains_key("T-none"));
            // Serialized exactly as the map (the checkpoint's shape), and read back equal.
            let json = serde_json::to_string(&members).unwrap();
            assert_eq!(json, serde_json::to_string(&map).unwrap());
            let back: Members = serde_json::from_str(&json).unwrap();
            assert_eq!(back, members, "{n}");
            if let Some(first) = map.keys().next() {
                *members.get_mut(first).unwrap() = TaskStatus::Done;
                assert_eq!(members.get(first), Some(&TaskStatus::Done));
                members.insert(first.clone(), TaskStatus::Open);
                assert_eq!(members.len(), map.len(), "re-inserting does not add");
            }
        }
    }
}
