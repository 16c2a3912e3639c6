//! [`SharedQueue`]: where the pending proposals live when writers share
//! more than one process (a team server's database) rather than in the
//! tree's `proposed/`.
//!
//! The gate still writes each new proposal into `proposed/` first — its
//! crash-safe path (staged, journaled, fsynced, renamed) is the same for
//! one process or ten — and the holder of the write lock moves what is
//! there into the queue before it gives the lock back
//! ([`crate::stored::Store`]'s inbox). So `proposed/` is an inbox: empty
//! between writes, and after a crash holding only what the next writer
//! moves. Reads take the queue plus whatever the inbox still holds.

use crate::error::Result;

/// The pending proposals kept outside the tree, by proposal id, as the
/// bytes of the YAML file the gate wrote (so one parser, with its checks,
/// reads both). A pending proposal never changes: it is kept once and
/// forgotten when decided.
pub trait SharedQueue: Send + Sync {
    /// Where it is, for messages; never a secret.
    fn describe(&self) -> String;
    /// Every pending proposal's id, sorted.
    fn ids(&self) -> Result<Vec<String>>;
    /// The bytes of these proposals (id, bytes); an id not kept is left
    /// out.
    fn read(&self, ids: &[String]) -> Result<Vec<(String, Vec<u8>)>>;
    /// Keep these proposals (id, bytes). An id kept already keeps what it
    /// has: returned are those whose kept bytes differ from these.
    fn keep(&self, proposals: &[(String, Vec<u8>)]) -> Result<Vec<String>>;
    /// Forget these proposals (decided).
    fn forget(&self, ids: &[String]) -> Result<()>;
}
