//! `vouch audit checkpoint`: a MAC over the audit log's head, appended to
//! the log itself, that `doctor` and `audit verify` check against the key.
//! It takes the knowledge base (its lock, its clock), so it lives here
//! above `audit/`, which knows only the log.

use crate::audit::checkpoints::{CHECKPOINT_EVENT, Checkpoint, head_and_history};
use crate::error::{Error, Result};
use crate::kb::Kb;

/// Append a checkpoint of the log as it is now.
pub fn checkpoint(kb: &Kb, actor: &str, key: &[u8]) -> Result<Checkpoint> {
    let _lock = kb.lock()?;
    let events = kb.audit_log().read_all()?;
    let (head, counted) = head_and_history(&events);
    let cp = Checkpoint::new(key, counted, &head);
    let mut ev = kb.event(
        CHECKPOINT_EVENT,
        actor,
        Vec::new(),
        serde_json::to_value(&cp).map_err(|e| Error::internal(e.to_string()))?,
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    Ok(cp)
}
