//! How the results of moving knowledge in and out read: knowledge files
//! (validate, import) and bundles (export, check, import).

use super::{Human, damaged, refused};
use vouch_core::interop::knowledge::{self, ValidateReport};
use vouch_core::params::*;

/// Format problems of a knowledge folder, one a line.
fn knowledge_problems(problems: &[knowledge::Problem]) -> String {
    problems
        .iter()
        .map(|p| {
            format!(
                "{}: {}{}{}: {}\n",
                p.severity,
                p.file,
                p.line.map_or(String::new(), |l| format!(":{l}")),
                p.id.as_deref().map_or(String::new(), |id| format!(" {id}")),
                p.message
            )
        })
        .collect()
}

impl Human for ValidateReport {
    fn human(&self) -> String {
        knowledge_problems(&self.problems)
            + &format!(
                "{} facts in {} files: {} errors, {} warnings\n",
                self.facts, self.files, self.errors, self.warnings
            )
    }
    fn exit_code(&self) -> i32 {
        damaged(self.ok)
    }
}

impl Human for knowledge::ImportResult {
    fn human(&self) -> String {
        let mut out = knowledge_problems(&self.problems);
        for f in &self.facts {
            out.push_str(&format!(
                "{:<14} {}{}{}\n",
                f.outcome,
                f.knowledge_id,
                f.proposal_id
                    .as_deref()
                    .map_or(String::new(), |p| format!(" → {p}")),
                f.reason
                    .as_deref()
                    .map_or(String::new(), |r| format!(" ({r})"))
            ));
        }
        // Each `related` link: filed with the facts, or why it waits.
        for r in &self.relations {
            out.push_str(&format!(
                "{:<14} {} related {}{}{}\n",
                r.outcome,
                r.from,
                r.to,
                r.proposal_id
                    .as_deref()
                    .map_or(String::new(), |p| format!(" → {p}")),
                r.reason
                    .as_deref()
                    .map_or(String::new(), |why| format!(" ({why})"))
            ));
        }
        if !self.ok {
            out.push_str("nothing imported: fix the errors above, or pass --skip-invalid\n");
        }
        out
    }
    fn exit_code(&self) -> i32 {
        damaged(self.ok)
    }
}

impl Human for ExportResult {
    fn human(&self) -> String {
        let mut out = format!(
            "Exported {} files to {} ({} bytes, sha256 {})\n",
            self.files, self.path, self.bytes, self.sha256
        );
        for path in &self.unreviewed {
            out.push_str(&format!(
                "  unreviewed: {path} (no review let it in; an import keeps it unaudited)\n"
            ));
        }
        out
    }
}

fn bundle_problems(problems: &[BundleProblem]) -> String {
    problems
        .iter()
        .map(|p| {
            if p.path.is_empty() {
                format!("  ! {}\n", p.reason)
            } else {
                format!("  ! {}: {}\n", p.path, p.reason)
            }
        })
        .collect()
}

impl Human for ExportCheckResult {
    fn human(&self) -> String {
        if self.ok {
            format!(
                "Bundle OK: {} files, consistent with its manifest\n",
                self.files
            )
        } else {
            format!("Bundle has problems:\n{}", bundle_problems(&self.problems))
        }
    }
    fn exit_code(&self) -> i32 {
        refused(self.ok)
    }
}

impl Human for ImportCheckResult {
    fn human(&self) -> String {
        let mut out = if self.ok {
            "Bundle can be imported.\n".to_string()
        } else {
            "Bundle would be REFUSED (nothing will be written until these are fixed):\n".to_string()
                + &bundle_problems(&self.problems)
        };
        out.push_str(&format!(
            "  new        {}\n  conflict   {}\n  identical  {}\n",
            self.new.len(),
            self.conflict.len(),
            self.identical.len()
        ));
        // What, not only how many: the first 50 of each, then a count.
        const SHOWN: usize = 50;
        for (what, list) in [
            ("new", &self.new_objects),
            ("conflict", &self.conflict_objects),
        ] {
            for o in list.iter().take(SHOWN) {
                out.push_str(&format!("    {what}: {} {}", o.kind, o.id));
                if let Some(by) = &o.approved_by {
                    out.push_str(&format!("  (approved by {by}, the bundle says)"));
                }
                match o.approver {
                    Some(ApproverStanding::Agent) => out.push_str(
                        "  [APPROVED BY AN AGENT: this KB's log shows them proposing and never \
                         deciding; the approval does not count]",
                    ),
                    Some(ApproverStanding::Unknown) => out.push_str(
                        "  [APPROVER UNKNOWN HERE: never seen deciding in this KB; check who \
                         they are]",
                    ),
                    _ => {}
                }
                if o.unreviewed {
                    out.push_str(
                        "  [UNREVIEWED: no approval by a person in the bundle wrote it as it is]",
                    );
                }
                out.push('\n');
                // What agents will be served, as they will be served it.
                if let Some(text) = &o.text {
                    for line in text.lines() {
                        out.push_str(&format!("        | {line}\n"));
                    }
                }
            }
            if list.len() > SHOWN {
                out.push_str(&format!("    … and {} more {what}\n", list.len() - SHOWN));
            }
        }
        for c in &self.ignored {
            out.push_str(&format!("    ignored: {c} (this KB keeps its own)\n"));
        }
        for c in &self.unreviewed {
            out.push_str(&format!(
                "    unreviewed: {c} (no approval by a person in the bundle wrote it as it is: \
                 written or edited by hand where it came from, or approved by an agent; it will \
                 be marked unaudited here)\n"
            ));
        }
        if !self.conflict.is_empty() {
            out.push_str("Conflicts are skipped unless you pass --on-conflict overwrite.\n");
        }
        out
    }
    fn exit_code(&self) -> i32 {
        refused(self.ok)
    }
}

impl Human for ImportApplyResult {
    fn human(&self) -> String {
        let mut out = format!(
            "Imported {} new file(s); {} overwritten, {} conflicting skipped, {} already identical\n",
            self.imported, self.overwritten, self.skipped, self.identical
        );
        if self.proposed > 0 {
            out.push_str(&format!(
                "{} claim(s)/page(s)/entit(ies)/relation(s) arrived as proposals awaiting review (`vouch pending`)\n",
                self.proposed
            ));
        }
        if self.unreviewed > 0 {
            out.push_str(&format!(
                "{} object(s) came unreviewed (written or edited by hand where they came from, \
                 or approved by an agent): written, and marked unaudited here (`vouch doctor` \
                 names them)\n",
                self.unreviewed
            ));
        }
        out
    }
}
