//! The documents the in-memory vectors belong to, one copy of each key.
//! A row names its document by slot (4 bytes), not by a copy of its
//! key; the key is held once, found through a table of slots hashed by
//! key, its id in one string with every other's. At a million documents
//! this is about 100 bytes a document instead of about 400 (a key per row
//! plus a map from key to entry, each with a status string of its own
//! and a vector of rows).

use crate::index::SEARCH_KINDS;
use crate::index::engine::Sig;
use std::hash::BuildHasher;

/// No row (a document's `first` before its first chunk).
const NO_ROW: u32 = u32::MAX;

struct Slot {
    /// Its kind's place in [`SEARCH_KINDS`].
    kind: u8,
    /// Its id: `Docs::ids[id_at..id_at + id_len]`; empty in a free slot.
    id_at: u32,
    id_len: u32,
    sig: Sig,
    /// 0: none; else `statuses[status - 1]`.
    status: u32,
    /// Its first chunk's row (further chunks' are in [`Docs::more`]).
    first: u32,
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
    /// Every held document's id, one after another: an allocation of its
    /// own was 30 bytes a document more (a pointer, a length and the
    /// allocator's rounding). Removed ids stay until they are half of it.
    ids: String,
    /// Bytes of `ids` no document holds any more. (Offsets are `u32`:
    /// 4 GiB of ids, some sixty million documents.)
    ids_gone: usize,
    /// The rows of a document's chunks after its first, by slot: most
    /// documents have one chunk, and an empty list in every slot was 24
    /// bytes a document (27 MB at a million).
    more: std::collections::HashMap<u32, Vec<u32>>,
}

/// A slot's id in `ids`.
fn id_in<'a>(ids: &'a str, s: &Slot) -> &'a str {
    &ids[s.id_at as usize..(s.id_at + s.id_len) as usize]
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
        let (slots, ids) = (&self.slots, self.ids.as_str());
        self.by_key
            .find(self.hash(k, id), |&s| {
                let slot = &slots[s as usize];
                slot.kind == k && id_in(ids, slot) == id
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
            s.id_len > 0
                && id_in(&self.ids, s) == id
                && SEARCH_KINDS[s.kind as usize].as_str() == kind
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
        let (slots, ids) = (&self.slots, self.ids.as_str());
        let held = self.by_key.find(hash, |&s| {
            let slot = &slots[s as usize];
            slot.kind == k && id_in(ids, slot) == id
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
            id_at: self.ids.len() as u32,
            id_len: id.len() as u32,
            sig,
            status,
            first: NO_ROW,
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
        self.ids.push_str(id);
        let (slots, hasher, ids) = (&self.slots, &self.hasher, self.ids.as_str());
        self.by_key.insert_unique(hash, at, |&s| {
            let slot = &slots[s as usize];
            hasher.hash_one((slot.kind, id_in(ids, slot)))
        });
        at
    }

    /// Stop holding the document in `slot`; its rows.
    pub(crate) fn take(&mut self, slot: u32) -> Vec<u32> {
        let s = &self.slots[slot as usize];
        let hash = self.hash(s.kind, id_in(&self.ids, s));
        if let Ok(entry) = self.by_key.find_entry(hash, |&x| x == slot) {
            entry.remove();
        }
        let more = self.more.remove(&slot).unwrap_or_default();
        let s = &mut self.slots[slot as usize];
        let mut rows = Vec::with_capacity(1 + more.len());
        if s.first != NO_ROW {
            rows.push(s.first);
        }
        rows.extend(more);
        s.first = NO_ROW;
        self.ids_gone += s.id_len as usize;
        (s.id_at, s.id_len) = (0, 0);
        self.free.push(slot);
        if self.ids_gone > self.ids.len() / 2 {
            self.compact_ids();
        }
        rows
    }

    /// Write the held documents' ids anew, without the removed ones'.
    fn compact_ids(&mut self) {
        let mut ids = String::with_capacity(self.ids.len() - self.ids_gone);
        for s in self.slots.iter_mut().filter(|s| s.id_len > 0) {
            let id = id_in(&self.ids, s);
            s.id_at = ids.len() as u32;
            ids.push_str(id);
        }
        self.ids = ids;
        self.ids_gone = 0;
    }

    /// The rows of the document in `slot`, first chunk first.
    pub(crate) fn rows(&self, slot: u32) -> impl Iterator<Item = usize> + '_ {
        let s = &self.slots[slot as usize];
        (s.first != NO_ROW)
            .then_some(s.first)
            .into_iter()
            .chain(self.more.get(&slot).into_iter().flatten().copied())
            .map(|r| r as usize)
    }

    /// Give the document in `slot` one more chunk's row.
    pub(crate) fn push_row(&mut self, slot: u32, row: usize) {
        let s = &mut self.slots[slot as usize];
        if s.first == NO_ROW {
            s.first = row as u32;
        } else {
            self.more.entry(slot).or_default().push(row as u32);
        }
    }

    /// The document in `slot` has its row `from` at `to` now.
    pub(crate) fn move_row(&mut self, slot: u32, from: usize, to: usize) {
        let s = &mut self.slots[slot as usize];
        let more = self.more.get_mut(&slot).into_iter().flatten();
        for r in std::iter::once(&mut s.first).chain(more) {
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
        (SEARCH_KINDS[s.kind as usize].as_str(), id_in(&self.ids, s))
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
        // Later chunks' rows move too, and go with their document.
        docs.push_row(c, 8);
        docs.push_row(c, 9);
        docs.move_row(c, 9, 4);
        assert_eq!(docs.rows(c).collect::<Vec<_>>(), [2, 8, 4]);
        assert_eq!(docs.rows(b).collect::<Vec<_>>(), [1], "another's rows stay");
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

    /// Once most ids held were removed, the rest are written anew: every
    /// document is still found by its key, keeps its slot and rows, and
    /// documents added after are found too.
    #[test]
    fn ids_written_anew_after_removals_keep_every_document() {
        let mut docs = Docs::default();
        let slots: Vec<u32> = (0..100)
            .map(|i| {
                let s = docs
                    .add("claim", &format!("doc-{i}"), (i, i), None)
                    .unwrap();
                docs.push_row(s, i as usize);
                s
            })
            .collect();
        for i in (0..100).filter(|i| i % 5 != 0) {
            docs.take(slots[i]);
        }
        let live: usize = (0..100).step_by(5).map(|i| format!("doc-{i}").len()).sum();
        assert!(
            docs.ids.len() <= 2 * live,
            "written anew: {} bytes",
            docs.ids.len()
        );
        for i in (0..100).step_by(5) {
            let s = docs.find("claim", &format!("doc-{i}")).unwrap();
            assert_eq!(s, slots[i]);
            assert_eq!(docs.key(s), ("claim", format!("doc-{i}").as_str()));
            assert_eq!(docs.rows(s).collect::<Vec<_>>(), [i]);
        }
        assert_eq!(docs.find("claim", "doc-1"), None);
        let n = docs.add("page", "after", (0, 0), None).unwrap();
        assert_eq!(docs.find("page", "after"), Some(n));
        assert_eq!(docs.len(), 21);
    }
}
