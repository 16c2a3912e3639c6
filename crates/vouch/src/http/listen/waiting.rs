//! The connections that wait for a holder, from every address together
//! ([`Limits::max_waiting_connections`]): when they are too many, the
//! oldest of the address that has the most of them is closed to make room.

use super::{ConnState, Hold, Holder, lock};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

/// Every connection that waits for a holder, oldest first.
pub(super) struct Waiting {
    cap: usize,
    all: Mutex<Line>,
}

#[derive(Default)]
struct Line {
    next: u64,
    /// By when they were accepted: each one's address and state.
    by_age: BTreeMap<u64, (Holder, Weak<ConnState>)>,
}

/// One connection's place among those waiting, with its place among its
/// address's ([`Limits::max_connections_per_address`]); both given back
/// when dropped (its request got a holder, it closed, or it was closed
/// to make room).
pub(super) struct Waiter {
    waiting: Arc<Waiting>,
    id: u64,
    _address: Hold,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        lock(&self.waiting.all).by_age.remove(&self.id);
    }
}

/// The cap on waiting connections: `cap` or, unset, half of `max` (the
/// global limit); at least one, at most `max`.
pub(super) fn waiting_cap(cap: Option<usize>, max: usize) -> usize {
    cap.unwrap_or(max / 2).clamp(1, max.max(1))
}

impl Waiting {
    pub(super) fn new(cap: usize) -> Arc<Waiting> {
        Arc::new(Waiting {
            cap,
            all: Mutex::new(Line::default()),
        })
    }

    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    pub(super) fn full(&self) -> bool {
        lock(&self.all).by_age.len() >= self.cap
    }

    /// Put `state`'s connection in line, holding `address`'s place.
    pub(super) fn enter(self: &Arc<Self>, state: &Arc<ConnState>, address: Hold) -> Waiter {
        let mut all = lock(&self.all);
        let id = all.next;
        all.next += 1;
        all.by_age
            .insert(id, (address.holder.clone(), Arc::downgrade(state)));
        Waiter {
            waiting: self.clone(),
            id,
            _address: address,
        }
    }

    /// Close the oldest waiting connection of the address that has the
    /// most waiting (of those that have as many, the one waiting longest):
    /// its address, or `None` when none waits. Its places are given back
    /// at once; its task closes the socket.
    pub(super) fn close_one(&self) -> Option<Holder> {
        loop {
            let (id, at, state) = {
                let all = lock(&self.all);
                let mut counts: HashMap<&Holder, usize> = HashMap::new();
                for (at, _) in all.by_age.values() {
                    *counts.entry(at).or_default() += 1;
                }
                let most = counts.values().copied().max()?;
                let (id, (at, state)) =
                    all.by_age.iter().find(|(_, (at, _))| counts[at] == most)?;
                (*id, at.clone(), state.clone())
            };
            // Its request may have got a holder meanwhile: then it has left
            // the line (its `Waiter` dropped) and another is chosen.
            let left = state.upgrade().and_then(|s| {
                // A request on it is about to get its holder (or be
                // refused): it leaves the line, and is not cut off.
                if s.in_request.load(std::sync::atomic::Ordering::SeqCst) {
                    return None;
                }
                let waiter = lock(&s.address).take();
                waiter.map(|w| {
                    drop(w);
                    s.closed.notify_one();
                })
            });
            if left.is_some() {
                return Some(at);
            }
            lock(&self.all).by_age.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::waiting_cap;

    #[test]
    fn half_the_slots_wait_unless_set() {
        assert_eq!(waiting_cap(None, 256), 128);
        assert_eq!(waiting_cap(None, 8), 4);
        assert_eq!(waiting_cap(None, 1), 1);
        assert_eq!(waiting_cap(Some(3), 8), 3);
        assert_eq!(waiting_cap(Some(100), 8), 8);
    }
}
