//! `kb.source_verify`: each source's stored content re-hashed against its
//! id. A source a redaction turned into a tombstone (its content removed by
//! an `object.redact` event the log holds) is reported as redacted, never
//! as missing; one whose content was removed by hand, or put back after a
//! redaction, is still an issue.

use crate::error::{Error, Result};
use crate::ids::{check_source_id, sha256_hex};
use crate::kb::Kb;
use crate::params::{SourceIssue, SourceVerifyParams, SourceVerifyResult};
use crate::review::gate::redact::{Tombstone, tombstone};

/// `kb.source_verify`: re-hash one source's stored content, or every
/// source's, against its id; lists what is missing, drifted or unreadable,
/// and which sources are redacted.
pub fn source_verify(kb: &Kb, p: SourceVerifyParams) -> Result<SourceVerifyResult> {
    let ids = match p.id {
        Some(id) => {
            check_source_id(&id)?;
            if !kb.layout().source_dir(&id)?.exists() {
                return Err(Error::not_found(format!("source {id} is not registered")));
            }
            vec![id]
        }
        None => kb.source_ids()?,
    };
    let trail = crate::audit::trail::Trail::of(kb.audit_log().read_parsed()?);
    let mut issues = Vec::new();
    let mut redacted = Vec::new();
    for id in ids {
        let issue = |kind: &str, detail: String| SourceIssue {
            id: id.clone(),
            kind: kind.to_string(),
            detail,
        };
        if !kb.source_exists(&id) {
            issues.push(issue("missing", "meta.yaml is missing".into()));
        } else if let Err(e) = kb.load_source(&id) {
            issues.push(issue(
                "unparseable",
                format!("meta.yaml does not parse: {e}"),
            ));
        }
        let content = kb.layout().source_content(&id)?;
        let found = match crate::store::nofollow::read(kb.layout().root(), &content) {
            Ok(bytes) => {
                let actual = sha256_hex(&bytes);
                if actual != id {
                    issues.push(issue(
                        "drifted",
                        format!("content hashes to {actual}, not to its id"),
                    ));
                }
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => {
                issues.push(issue("unreadable", e.to_string()));
                continue;
            }
        };
        match (tombstone(kb, &trail, &id), found) {
            (Tombstone::Redacted, false) => redacted.push(id.clone()),
            (Tombstone::None, true) => {}
            (Tombstone::None, false) => {
                issues.push(issue("missing", "stored content is missing".into()))
            }
            (Tombstone::ByHand(why), _) => issues.push(issue("missing", why)),
            (Tombstone::Redacted, true) => issues.push(issue(
                "unredacted",
                "its content is back after a redaction removed it (put back by hand): remove \
                 sources/<id>/content again"
                    .replace("<id>", &id),
            )),
        }
    }
    Ok(SourceVerifyResult {
        ok: issues.is_empty(),
        issues,
        redacted,
    })
}
