//! The documents the in-memory vectors belong to, one copy of each key.
//! A row names its document by slot (4 bytes), not by a copy of its
//! key; the key is held once, found through a table of slots hashed by
//! key. At a million documents this is about 140 bytes a document instead
//! of about 400 (a key per row plus a map from key to entry, each with a
//! status string of its own and a vector of rows).

use crate::index::SEARCH_KINDS;
use crate::index::engine::Sig;
use std::hash::BuildHasher;

/// No row (a document's `first` before its first chunk).
const NO_ROW: u32 = u32::MAX;

struct Slot {
    /// Its kind's place in [`SEARCH_KINDS`].
    kind: u8,
    /// Its id; empty in a free slot.
    id: Box<str>,
    sig: Sig,
    /// 0: none; else `statuses[status - 1]`.
    status: u32,
    /// Its first chunk's row, and any further chunks'.
    first: u32,
    more: Vec<u32>,
}

#[derive(Default)]
pub(crate) struct Docs {
    slots: Vec<Slot>,
    /// Slots of removed documents, taken by the next ones added.
    free: Vec<u32>,
    /// Live slots, by the hash of their key.
    by_key: hashbrown::HashTable<u32>,
    /// foldhash, seeded per process: a key hashes in a few nanoseconds
    /// (SipHash took a tenth of a million-document load).
    hasher: hashbrown::DefaultHashBuilder,
    /// Every status seen, each held once.
    statuses: Vec<Box<str>>,
}

fn kind_index(kind: &str) -> Option<u8> {
    SEARCH_KINDS
        .iter()
        .position(|k| k.as_str() == kind)
        .map(|i| i as u8)
}

impl Docs {
    /// Documents held.
    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }

    fn hash(&self, kind: u8, id: &str) -> u64 {
        self.hasher.hash_one((kind, id))
    }

    /// The slot of a document, if held.
    pub(crate) fn find(&self, kind: &str, id: &str) -> Option<u32> {
        let k = kind_index(kind)?;
        let slots = &self.slots;
        self.by_key
            .find(self.hash(k, id), |&s| {
                let slot = &slots[s as usize];
                slot.kind == k && &*slot.id == id
            })
            .copied()
    }

    /// Room for `n` documents without growing.
    pub(crate) fn with_capacity(n: usize) -> Docs {
        Docs {
            slots: Vec::with_capacity(n),
            by_key: hashbrown::HashTable::with_capacity(n),
            ..Docs::default()
        }
    }

    /// Whether `slot` holds this document.
    pub(crate) fn is(&self, slot: u32, kind: &str, id: &str) -> bool {
        self.slots.get(slot as usize).is_some_and(|s| {
            !s.id.is_empty() && &*s.id == id && SEARCH_KINDS[s.kind as usize].as_str() == kind
        })
    }

    /// Hold a document not held yet, with no rows; its slot. `None` for
    /// a kind search does not know.
    pub(crate) fn add(
        &mut self,
        kind: &str,
        id: &str,
        sig: Sig,
        status: Option<&str>,
    ) -> Option<u32> {
        let k = kind_index(kind)?;
        Some(self.insert(k, id, sig, status, self.hash(k, id)))
    }

    /// [`Docs::add`], or `None` when the document is held already.
    pub(crate) fn add_new(&mut self, kind: &str, id: &str, sig: Sig) -> Option<u32> {
        let k = kind_index(kind)?;
        let hash = self.hash(k, id);
        let slots = &self.slots;
        let held = self.by_key.find(hash, |&s| {
            let slot = &slots[s as usize];
            slot.kind == k && &*slot.id == id
        });
        match held {
            Some(_) => None,
            None => Some(self.insert(k, id, sig, None, hash)),
        }
    }

    fn insert(&mut self, k: u8, id: &str, sig: Sig, status: Option<&str>, hash: u64) -> u32 {
        let status = self.status_code(status);
        let slot = Slot {
            kind: k,
            id: id.into(),
            sig,
            status,
            first: NO_ROW,
            more: Vec::new(),
        };
        let at = match self.free.pop() {
            Some(at) => {
                self.slots[at as usize] = slot;
                at
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.by_key.insert_unique(hash, at, |&s| {
            let slot = &slots[s as usize];
            hasher.hash_one((slot.kind, &*slot.id))
        });
        at
    }

    /// Stop holding the document in `slot`; its rows.
    pub(crate) fn take(&mut self, slot: u32) -> Vec<u32> {
        let s = &self.slots[slot as usize];
        let hash = self.hash(s.kind, &s.id);
        if let Ok(entry) = self.by_key.find_entry(hash, |&x| x == slot) {
            entry.remove();
        }
        let s = &mut self.slots[slot as usize];
        let mut rows = std::mem::take(&mut s.more);
        if s.first != NO_ROW {
            rows.insert(0, s.first);
        }
        s.first = NO_ROW;
        s.id = Box::from("");
        self.free.push(slot);
        rows
    }

    /// The rows of the document in `slot`, first chunk first.
    pub(crate) fn rows(&self, slot: u32) -> impl Iterator<Item = usize> + '_ {
        let s = &self.slots[slot as usize];
        (s.first != NO_ROW)
            .then_some(s.first)
            .into_iter()
            .chain(s.more.iter().copied())
            .map(|r| r as usize)
    }

    /// Give the document in `slot` one more chunk's row.
    pub(crate) fn push_row(&mut self, slot: u32, row: usize) {
        let s = &mut self.slots[slot as usize];
        if s.first == NO_ROW {
            s.first = row as u32;
        } else {
            s.more.push(row as u32);
        }
    }

    /// The document in `slot` has its row `from` at `to` now.
    pub(crate) fn move_row(&mut self, slot: u32, from: usize, to: usize) {
        let s = &mut self.slots[slot as usize];
        for r in std::iter::once(&mut s.first).chain(s.more.iter_mut()) {
            if *r as usize == from {
                *r = to as u32;
            }
        }
    }

    /// The kind of the document in `slot`, as its place in
    /// [`SEARCH_KINDS`].
    pub(crate) fn kind(&self, slot: u32) -> u8 {
        self.slots[slot as usize].kind
    }

    /// The kind and id of the document in `slot`.
    pub(crate) fn key(&self, slot: u32) -> (&'static str, &str) {
        let s = &self.slots[slot as usize];
        (SEARCH_KINDS[s.kind as usize].as_str(), &s.id)
    }

    pub(crate) fn sig(&self, slot: u32) -> Sig {
        self.slots[slot as usize].sig
    }

    pub(crate) fn status(&self, slot: u32) -> Option<&str> {
        match self.slots[slot as usize].status {
            0 => None,
            n => Some(&self.statuses[n as usize - 1]),
        }
    }

    pub(crate) fn set_status(&mut self, slot: u32, status: Option<&str>) {
        let code = self.status_code(status);
        self.slots[slot as usize].status = code;
    }

    fn status_code(&mut self, status: Option<&str>) -> u32 {
        let Some(status) = status else { return 0 };
        let at = match self.statuses.iter().position(|s| &**s == status) {
            Some(at) => at,
            None => {
                self.statuses.push(status.into());
                self.statuses.len() - 1
            }
        };
        at as u32 + 1
    }

    /// How many slots there are, free ones included.
    pub(crate) fn slots_len(&self) -> usize {
        self.slots.len()
    }

    /// The slots of every document held, in slot order.
    pub(crate) fn live_slots(&self) -> impl Iterator<Item = u32> + use<> {
        let mut live: Vec<u32> = self.by_key.iter().copied().collect();
        live.sort_unstable();
        live.into_iter()
    }

    /// Every document held: its kind and id.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        self.by_key.iter().map(|&s| self.key(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Documents come and go: a removed one is not found, its slot is
    /// taken by the next, and every other keeps its key, status and rows.
    #[test]
    fn documents_are_found_by_key_after_others_come_and_go() {
        let mut docs = Docs::default();
        let a = docs.add("claim", "a", (1, 1), Some("working")).unwrap();
        let b = docs.add("page", "a", (2, 2), None).unwrap();
        docs.push_row(a, 0);
        docs.push_row(a, 5);
        docs.push_row(b, 1);
        assert_eq!(docs.find("claim", "a"), Some(a));
        assert_eq!(docs.find("page", "a"), Some(b));
        assert_eq!(docs.find("claim", "b"), None);
        assert!(docs.is(b, "page", "a") && !docs.is(b, "claim", "a") && !docs.is(99, "page", "a"));
        assert_eq!(docs.add("nonsense", "x", (0, 0), None), None);
        assert_eq!(docs.add_new("claim", "a", (0, 0)), None, "held already");
        assert_eq!(docs.take(a), [0, 5]);
        assert_eq!(docs.find("claim", "a"), None);
        assert!(!docs.is(a, "claim", "a"), "a free slot holds nothing");
        let c = docs.add("claim", "c", (3, 3), Some("working")).unwrap();
        assert_eq!(c, a, "the free slot is reused");
        assert_eq!(docs.rows(c).count(), 0);
        docs.push_row(c, 7);
        docs.move_row(c, 7, 2);
        assert_eq!(docs.rows(c).collect::<Vec<_>>(), [2]);
        assert_eq!(docs.key(b), ("page", "a"));
        assert_eq!(docs.status(c), Some("working"));
        assert_eq!(docs.status(b), None);
        docs.set_status(c, Some("superseded"));
        assert_eq!(docs.status(c), Some("superseded"));
        assert_eq!(docs.sig(b), (2, 2));
        assert_eq!(docs.len(), 2);
        let mut keys: Vec<_> = docs.keys().collect();
        keys.sort();
        assert_eq!(keys, [("claim", "c"), ("page", "a")]);
        // Many more, past the table's first growth.
        for i in 0..5000 {
            docs.add("claim", &format!("d{i}"), (i, i), None).unwrap();
        }
        for i in (0..5000).step_by(2) {
            let s = docs.find("claim", &format!("d{i}")).unwrap();
            docs.take(s);
        }
        assert_eq!(docs.len(), 2502);
        assert!(docs.find("claim", "d4999").is_some() && docs.find("claim", "d4998").is_none());
        assert_eq!(docs.sig(docs.find("claim", "d17").unwrap()), (17, 17));
    }
}
