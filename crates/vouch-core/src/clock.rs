//! Time and randomness, injectable so tests are byte-stable.
//!
//! The app builds a [`Clock`] from the environment (`VOUCH_TIMESTAMP`,
//! `VOUCH_SEED`); the core never reads the environment itself.

use chrono::{DateTime, Duration, Utc};
use std::sync::Mutex;

/// A source of "now" and of random bits for ids.
pub trait Clock: Send + Sync {
    /// The time now.
    fn now(&self) -> DateTime<Utc>;
    /// 64 random bits, for ids.
    fn random_u64(&self) -> u64;
}

/// Wall-clock time and OS-seeded randomness.
pub struct SystemClock {
    state: Mutex<u64>,
}

impl Default for SystemClock {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        // RandomState is seeded from the OS; mix in pid and time so two
        // processes started in the same instant still diverge.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_i64(Utc::now().timestamp_nanos_opt().unwrap_or(0));
        SystemClock {
            state: Mutex::new(h.finish()),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
    fn random_u64(&self) -> u64 {
        splitmix_next(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A pinned clock for tests: starts at a fixed instant and advances one
/// second per reading, so ordering survives and output is reproducible.
pub struct FixedClock {
    state: Mutex<(DateTime<Utc>, u64)>,
}

impl FixedClock {
    /// Start at `start`, drawing ids from `seed`.
    pub fn new(start: DateTime<Utc>, seed: u64) -> Self {
        FixedClock {
            state: Mutex::new((start, seed)),
        }
    }
}

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let t = s.0;
        s.0 = t + Duration::seconds(1);
        t
    }
    fn random_u64(&self) -> u64 {
        splitmix_next(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()).1)
    }
}

/// A clock that reads real time but draws ids from a seed.
pub struct SeededClock {
    state: Mutex<u64>,
}

impl SeededClock {
    /// Real time, drawing ids from `seed`.
    pub fn new(seed: u64) -> Self {
        SeededClock {
            state: Mutex::new(seed),
        }
    }
}

impl Clock for SeededClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
    fn random_u64(&self) -> u64 {
        splitmix_next(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// splitmix64: the one seeded generator behind ids and generated test data.
pub fn splitmix_next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small seeded generator (splitmix64): random but reproducible, for
/// what must come out the same on every run with the same seed (generated
/// benchmark KBs, fuzz and soak inputs, property tests).
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A generator seeded with `seed`: the same seed, the same sequence.
    pub fn new(seed: u64) -> Self {
        SeededRng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        splitmix_next(&mut self.0)
    }
    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }
}

/// `n` lowercase hex characters of randomness.
pub fn random_hex(clock: &dyn Clock, n: usize) -> String {
    let mut out = String::with_capacity(n + 16);
    while out.len() < n {
        out.push_str(&format!("{:016x}", clock.random_u64()));
    }
    out.truncate(n);
    out
}
