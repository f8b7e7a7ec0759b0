//! Keeping the projection small without changing what it serializes to.
//!
//! * [`Shared`]: a large value (a task row, a run view) behind a reference count, so that a
//!   tree node of the persistent map holding it stores a pointer instead of the whole value. A
//!   map node is a fixed array of 16 slots however many are used, so a slot as large as the
//!   value wasted its size in every empty slot; and a node copied by a fold after a clone
//!   copies pointers instead of the values' strings. It serializes as the value itself.
//! * [`InlineStr`]: a task id (`T-` and 16 hex digits) or another short key, stored in the 24
//!   bytes a `String` takes for its pointer, length and capacity, instead of a heap allocation
//!   (32 bytes with the allocator's rounding) per copy. A task id was copied into five of the
//!   projection's collections. Strings that never change once folded are kept in one too:
//!   stream names (a run's `run:T-…` is 22 bytes), a task's title, goal, role and claimer, a
//!   run's title. Longer ones go to the heap without a `String`'s spare capacity.
//! * [`map`] and [`set`]: read a persistent collection from a checkpoint with full tree leaves.
//!   Inserting sorted keys one by one (what the collections' own deserializers do) splits every
//!   full leaf in halves and never comes back to the left half, so every leaf of a collection
//!   read from a checkpoint was half empty. The keys are inserted in an order that refills the
//!   halves instead: first the first half of every run of 16 keys (which leaves one half-full
//!   leaf per run of 16), then the second halves, each of which lands in the leaf of its run
//!   (the leaf's upper bound is the next run's first key) and fills it without a split. The
//!   result is the same collection; only its node layout differs, and if the tree's node size
//!   were not 16 it would merely be less full.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Keys per leaf of `imbl`'s ordered collections (`ORD_CHUNK_SIZE`): half of them stay in a
/// leaf that splits.
const LEAF: usize = 16;

/// A value shared by reference count; equality, order of fields and serialization are the
/// value's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared<T>(Arc<T>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared(Arc::new(value))
    }
}

impl<T: Clone> Shared<T> {
    /// The value to change, copied first if another projection still shares it.
    pub fn make_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Shared::new)
    }
}

/// Longest string kept inline.
const INLINE: usize = 22;

/// A string kept inline up to 22 bytes (on the heap beyond); compares, borrows and serializes
/// as the string.
#[derive(Clone)]
pub enum InlineStr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

impl InlineStr {
    pub fn new(s: &str) -> InlineStr {
        if s.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            InlineStr::Inline {
                len: s.len() as u8,
                bytes,
            }
        } else {
            InlineStr::Heap(s.into())
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            // Always whole characters: the bytes were copied from a `str`.
            InlineStr::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            InlineStr::Heap(s) => s,
        }
    }
}

impl Deref for InlineStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for InlineStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for InlineStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for InlineStr {}

impl PartialOrd for InlineStr {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InlineStr {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Display for InlineStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for InlineStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for InlineStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for InlineStr {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<InlineStr> for String {
    fn eq(&self, other: &InlineStr) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<InlineStr> for str {
    fn eq(&self, other: &InlineStr) -> bool {
        self == other.as_str()
    }
}

impl From<String> for InlineStr {
    fn from(s: String) -> InlineStr {
        InlineStr::new(&s)
    }
}

impl From<&str> for InlineStr {
    fn from(s: &str) -> InlineStr {
        InlineStr::new(s)
    }
}

impl fmt::Debug for InlineStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for InlineStr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for InlineStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = InlineStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<InlineStr, E> {
                Ok(InlineStr::new(v))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// The order in which to insert `n` sorted entries so that the leaves come out full: the
/// first halves of every run of [`LEAF`], then the second halves.
fn filling_order(n: usize) -> impl Iterator<Item = usize> {
    let half = LEAF / 2;
    let first = (0..n).filter(move |i| i % LEAF < half);
    let second = (0..n).filter(move |i| i % LEAF >= half);
    first.chain(second)
}

/// A map of sorted, distinct entries, built with full leaves.
pub fn packed_map<K: Ord + Clone, V: Clone>(sorted: Vec<(K, V)>) -> OrdMap<K, V> {
    let mut slots: Vec<Option<(K, V)>> = sorted.into_iter().map(Some).collect();
    let mut out = OrdMap::new();
    for i in filling_order(slots.len()) {
        if let Some((k, v)) = slots[i].take() {
            out.insert(k, v);
        }
    }
    out
}

/// A set of sorted, distinct values, built with full leaves.
pub fn packed_set<A: Ord + Clone>(sorted: Vec<A>) -> OrdSet<A> {
    let mut slots: Vec<Option<A>> = sorted.into_iter().map(Some).collect();
    let mut out = OrdSet::new();
    for i in filling_order(slots.len()) {
        if let Some(a) = slots[i].take() {
            out.insert(a);
        }
    }
    out
}

/// Entries as read, sorted by key with the last of equal keys kept (what inserting them in
/// order would leave); a no-op for what the collections wrote, which is sorted and distinct.
fn sorted_distinct<K: Ord, V>(mut v: Vec<(K, V)>) -> Vec<(K, V)> {
    if v.windows(2).all(|w| w[0].0 < w[1].0) {
        return v;
    }
    v.reverse();
    // Stable: of equal keys the last read comes first, and dedup keeps the first.
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v.dedup_by(|b, a| a.0 == b.0);
    v
}

/// Reads a map's entries into a vector (no tree of its own on the way: its freed nodes would
/// stay with the allocator, scattered among the projection's).
struct Entries<K, V>(std::marker::PhantomData<(K, V)>);

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> serde::de::Visitor<'de> for Entries<K, V> {
    type Value = Vec<(K, V)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut access: A,
    ) -> Result<Self::Value, A::Error> {
        let mut v = Vec::with_capacity(access.size_hint().unwrap_or(0));
        while let Some(entry) = access.next_entry()? {
            v.push(entry);
        }
        Ok(v)
    }
}

fn entries<'de, D, K, V>(deserializer: D) -> Result<Vec<(K, V)>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord,
    V: Deserialize<'de>,
{
    let v = deserializer.deserialize_map(Entries(std::marker::PhantomData))?;
    Ok(sorted_distinct(v))
}

fn elements<'de, D, A>(deserializer: D) -> Result<Vec<A>, D::Error>
where
    D: Deserializer<'de>,
    A: Deserialize<'de> + Ord,
{
    let v = Vec::<A>::deserialize(deserializer)?;
    Ok(sorted_distinct(v.into_iter().map(|a| (a, ())).collect())
        .into_iter()
        .map(|(a, ())| a)
        .collect())
}

/// `deserialize_with` for an `OrdMap`: the map its serialized form stands for, packed.
pub fn map<'de, D, K, V>(deserializer: D) -> Result<OrdMap<K, V>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord + Clone,
    V: Deserialize<'de> + Clone,
{
    Ok(packed_map(entries(deserializer)?))
}

/// `deserialize_with` for an `OrdSet`: the set its serialized form stands for, packed.
pub fn set<'de, D, A>(deserializer: D) -> Result<OrdSet<A>, D::Error>
where
    D: Deserializer<'de>,
    A: Deserialize<'de> + Ord + Clone,
{
    Ok(packed_set(elements(deserializer)?))
}

/// A set read with full leaves (the values of [`map_of_sets`]).
#[derive(Clone)]
struct PackedSet<A: Ord + Clone>(OrdSet<A>);

impl<'de, A: Deserialize<'de> + Ord + Clone> Deserialize<'de> for PackedSet<A> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        set(deserializer).map(PackedSet)
    }
}

/// `deserialize_with` for a map of sets (`by_status`): both levels packed.
pub fn map_of_sets<'de, D, K, A>(deserializer: D) -> Result<OrdMap<K, OrdSet<A>>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord + Clone,
    A: Deserialize<'de> + Ord + Clone,
{
    let v: Vec<(K, PackedSet<A>)> = entries(deserializer)?;
    Ok(packed_map(v.into_iter().map(|(k, s)| (k, s.0)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_strings_behave_as_their_strings() {
        let samples = [
            "",
            "T-0123456789abcdef",
            "run:T-0123456789abcdef",
            "é",
            "x".repeat(23).leak(),
        ];
        for a in samples {
            let ia = InlineStr::new(a);
            assert_eq!(ia.as_str(), a);
            assert_eq!(matches!(ia, InlineStr::Inline { .. }), a.len() <= INLINE);
            let json = serde_json::to_string(&ia).unwrap();
            assert_eq!(json, serde_json::to_string(a).unwrap());
            assert_eq!(serde_json::from_str::<InlineStr>(&json).unwrap(), ia);
            for b in samples {
                assert_eq!(ia.cmp(&InlineStr::new(b)), a.cmp(b), "{a} {b}");
            }
        }
        assert_eq!(std::mem::size_of::<InlineStr>(), 24);
        let m: OrdMap<InlineStr, u8> = [(InlineStr::new("T-b"), 1)].into_iter().collect();
        assert_eq!(m.get("T-b"), Some(&1));
    }

    #[test]
    fn the_filling_order_visits_every_index_once() {
        for n in [0, 1, 7, 8, 15, 16, 17, 100, 1000] {
            let mut seen: Vec<usize> = filling_order(n).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "{n}");
        }
    }

    #[test]
    fn packed_collections_equal_the_ones_built_by_inserting() {
        for n in [0usize, 1, 8, 16, 17, 33, 257, 5000] {
            let entries: Vec<(u64, String)> =
                (0..n as u64).map(|i| (i * 3, format!("v{i}"))).collect();
            let plain: OrdMap<u64, String> = entries.iter().cloned().collect();
            let packed = packed_map(entries.clone());
            assert_eq!(packed, plain, "{n}");
            assert!(
                packed
                    .iter()
                    .map(|(k, _)| *k)
                    .eq(entries.iter().map(|e| e.0))
            );
            assert_eq!(packed.len(), n);
            let keys: Vec<u64> = entries.iter().map(|e| e.0).collect();
            let set = packed_set(keys.clone());
            assert!(set.iter().copied().eq(keys.iter().copied()), "{n}");
            assert_eq!(set, keys.iter().copied().collect::<OrdSet<u64>>());
        }
    }

    #[test]
    fn reads_what_the_collections_wrote() {
        let m: OrdMap<String, u64> = (0..100u64).map(|i| (format!("k{i:03}"), i)).collect();
        let text = serde_json::to_string(&m).unwrap();
        let back = map(&mut serde_json::Deserializer::from_str(&text)).unwrap();
        assert_eq!(back, m);
        let s: OrdSet<(u8, u64)> = (0..100u64).map(|i| ((i % 3) as u8, i)).collect();
        let text = serde_json::to_string(&s).unwrap();
        let back = set(&mut serde_json::Deserializer::from_str(&text)).unwrap();
        assert_eq!(back, s);
        // Unsorted input with a repeated key reads as inserting in order would.
        let back: OrdMap<u64, u64> = map(&mut serde_json::Deserializer::from_str(
            r#"{"3":1,"1":2,"3":4}"#,
        ))
        .unwrap();
        assert_eq!(back, [(1u64, 2u64), (3, 4)].into_iter().collect());
        let back: OrdSet<u64> = set(&mut serde_json::Deserializer::from_str("[3,1,3]")).unwrap();
        assert_eq!(back, [1u64, 3].into_iter().collect());
        let nested = r#"{"open":[2,1],"done":[5]}"#;
        let back: OrdMap<String, OrdSet<u64>> =
            map_of_sets(&mut serde_json::Deserializer::from_str(nested)).unwrap();
        assert_eq!(back["open"], [1u64, 2].into_iter().collect());
        let shared = Shared::new(vec![1, 2]);
        assert_eq!(serde_json::to_string(&shared).unwrap(), "[1,2]");
    }
}
