//! How a redaction reads: what left the working tree, by hash, and the
//! paths whose earlier git commits still hold it, with the command that
//! purges them (docs/redaction.md).

use super::Human;
use vouch_core::params::RedactResult;

impl Human for RedactResult {
    fn human(&self) -> String {
        let mut out = if self.dry_run {
            format!(
                "Would redact {} {} (dry run, nothing written):\n",
                self.kind, self.id
            )
        } else {
            format!(
                "Redacted {} {} (audit event {}); what left the working tree, by sha256:\n",
                self.kind, self.id, self.event_id
            )
        };
        for (path, sha) in &self.removed {
            out.push_str(&format!("  {path}  {sha}\n"));
        }
        for held in &self.still_held {
            out.push_str(&format!("Still held: {held}\n"));
        }
        out.push_str(
            "\nEarlier git commits, and every clone and fork of them, still hold the bytes. \
             Purge them from history (docs/redaction.md), then rotate the credential:\n",
        );
        for path in &self.purge {
            out.push_str(&format!("  {path}\n"));
        }
        let quoted = |paths: &[String]| -> String {
            paths.iter().map(|p| format!(" --path '{p}'")).collect()
        };
        if !self.gone.is_empty() {
            out.push_str(&format!(
                "\nRemoved files, whole history:\n  git filter-repo --invert-paths{}\n",
                quoted(&self.gone)
            ));
        }
        if self.purge.len() > self.gone.len() {
            out.push_str(
                "\nRewritten files: put the leaked value in a file as `literal:<secret>==>[REDACTED]` \
                 (one a line), then, in every clone:\n  git filter-repo --replace-text \
                 secrets.txt\n",
            );
        }
        out.push_str(
            "\nThe derived index (.vouch/state.db, never committed) may keep freed pages: \
             delete .vouch/state.db* and run `vouch index rebuild` for a fresh one.\n",
        );
        out
    }
}
