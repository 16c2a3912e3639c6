//! How each method's result reads for a person, by its type: one [`Human`]
//! impl per result type, so a command's output follows from what the core
//! returned, not from the method's name. `--json` prints the result as the
//! wire carries it instead.

use crate::errors::{EXIT_INVALID_PROPOSAL, mapping};
use serde::Serialize;
use serde_json::Value;
use vouch_core::ErrorKind;
use vouch_core::audit::VerifyReport;
use vouch_core::interop::knowledge;
use vouch_core::methods::ApproveOutput;
use vouch_core::model::Proposal;
use vouch_core::params::*;
use vouch_core::retrieval::SearchHit;
use vouch_core::retrieval::eval::EvalReport;
use vouch_core::retrieval::pack::ContextPack;

pub(crate) mod insight;
mod interop;
mod removal;

/// A result as a person reads it, and the exit code it stands for.
pub(crate) trait Human: Serialize {
    /// The text for a terminal (escaped by the caller). By default the
    /// result's fields as indented `key: value` lines.
    fn human(&self) -> String {
        generic(&serde_json::to_value(self).unwrap_or_default(), 0)
    }

    /// Non-zero when the call succeeded but found something wrong: a check
    /// that found damage exits 6, input that cannot be accepted exits 2.
    fn exit_code(&self) -> i32 {
        0
    }
}

/// A check that found damage (`ok: false`) exits as corrupt data does.
fn damaged(ok: bool) -> i32 {
    if ok {
        0
    } else {
        mapping(ErrorKind::Corrupt).exit_code
    }
}

/// Input that cannot be accepted as it is exits 2.
fn refused(ok: bool) -> i32 {
    if ok { 0 } else { EXIT_INVALID_PROPOSAL }
}

/// Results printed as their fields.
macro_rules! fields {
    ($($t:ty),+ $(,)?) => { $(impl Human for $t {})+ };
}

fields!(
    Value,
    RegisterSourceResult,
    RegisterEvidenceResult,
    OkResult,
    LifecycleResult,
    SessionStartResult,
    SessionEndResult,
    CrystallizeResult,
    knowledge::ExportResult,
);

/// The digest as a hook pastes it into an agent's context.
impl Human for vouch_core::answer::recall::RecallResult {
    fn human(&self) -> String {
        self.text.clone()
    }
}

impl Human for SourceVerifyResult {
    fn exit_code(&self) -> i32 {
        damaged(self.ok)
    }
}

/// `vouch init`: what it made, and what to do next (the git step only
/// inside a git work tree).
#[derive(Serialize)]
pub(crate) struct Initialized {
    #[serde(flatten)]
    pub report: vouch_core::kb::InitReport,
    #[serde(skip)]
    pub in_git: bool,
}

impl Human for Initialized {
    fn human(&self) -> String {
        let r = &self.report;
        if r.created.is_empty() {
            // Run again: one line, nothing to list.
            return format!(
                "Already initialized: {} ({} files and folders there, none changed)\n",
                r.root,
                r.existing.len()
            );
        }
        let mut out = format!("Initialized vouch knowledge base at {}\n", r.root);
        if !r.existing.is_empty() {
            out.push_str(&format!(
                "(kept {} that already existed: {})\n",
                r.existing.len(),
                r.existing.join(", ")
            ));
        }
        out.push_str(
            "\nNext:\n  \
             vouch install-mcp claude-code   connect an agent (or cursor, codex, …; --dry-run shows the change)\n  \
             vouch review                    review what agents propose (or `vouch ui` in the browser)\n",
        );
        if self.in_git {
            out.push_str(
                "  git add .vouch && git commit    share it: teammates get it with `git clone`\n",
            );
        }
        out
    }
}

impl Human for StatusResult {
    fn human(&self) -> String {
        let c = &self.counts;
        let r = &self.retrieval.state;
        let used = vouch_core::retrieval::backend::name_of(r.used);
        let mut out = format!(
            "{} ({})\n  claims     {}\n  pages      {}\n  sources    {}\n  entities   {}\n  relations  {}\n  evidence   {}\n  pending    {}\n  last audit {}\n",
            self.kb_name.as_deref().unwrap_or(""),
            self.root,
            c.claims,
            c.pages,
            c.sources,
            c.entities,
            c.relations,
            c.evidence,
            self.pending,
            self.last_audit_at.as_deref().unwrap_or("never"),
        );
        out.push_str(&match (&r.degraded_reason, &r.model) {
            (Some(why), _) => format!("  search     {used} ({why})\n"),
            (None, Some(model)) => format!("  search     {used} (model {model})\n"),
            (None, None) => format!("  search     {used}\n"),
        });
        if let Some(w) = &self.retrieval.watcher {
            out.push_str(&format!(
                "  watched by process {} (one-shot commands skip the file scan)\n",
                w.pid
            ));
        }
        let review = &self.review;
        out.push_str(&if review.trusted_agent {
            "  review     any agent may approve others' proposals (trusted-agent, your config)\n"
                .to_string()
        } else if review.reviewers.is_empty() {
            "  review     people only (vouch review, vouch ui)\n".to_string()
        } else {
            format!(
                "  review     people, and reviewers {}\n",
                review.reviewers.join(", ")
            )
        });
        for ignored in &review.ignored_settings {
            out.push_str(&format!(
                "  ignored    {ignored} (the repository's config.yaml may not widen the gate)\n"
            ));
        }
        if let Some(lock) = &self.shared_lock {
            out.push_str(&format!("  writes     ordered by {lock}\n"));
        }
        out
    }
}

/// One citation of a proposal, for a reviewer.
pub(crate) fn citation_line(c: &ResolvedCitation) -> String {
    let mut line = citation_head(c);
    if let Some(p) = c.provenance() {
        line.push_str(&format!("      ({p})\n"));
    }
    line
}

fn citation_head(c: &ResolvedCitation) -> String {
    if c.missing {
        return format!("    ! {} {} (missing)\n", c.kind, c.id);
    }
    let or_empty = |s: &Option<String>| s.clone().unwrap_or_default();
    match c.kind.as_str() {
        "evidence" => format!(
            "    cites evidence {} ({} {})\n      \"{}\"\n",
            c.id,
            or_empty(&c.source_locator),
            or_empty(&c.locator),
            or_empty(&c.quote).replace('\n', "\n       ")
        ),
        _ => format!(
            "    cites source {}… {}{}\n",
            &c.id[..12.min(c.id.len())],
            or_empty(&c.locator),
            match &c.title {
                Some(t) if !t.is_empty() => format!(" \"{t}\""),
                _ => String::new(),
            }
        ),
    }
}

/// A string field of a JSON object, or "" (a number as written).
fn field(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(x)) => x.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// What a pending proposal asks for, in one line.
fn proposal_line(p: &Proposal) -> String {
    let payload = &p.payload;
    if payload.get("method").is_some() {
        // A lifecycle change: the call it will make when approved.
        return format!("{} {}", field(payload, "method"), payload["params"]);
    }
    ["text", "title", "name"]
        .iter()
        .map(|k| field(payload, k))
        .find(|x| !x.is_empty())
        .unwrap_or_else(|| {
            format!(
                "{} {} {}",
                field(payload, "source"),
                field(payload, "relation"),
                field(payload, "target")
            )
        })
}

impl Human for Vec<Read<Proposal>> {
    fn human(&self) -> String {
        if self.is_empty() {
            return "No proposals awaiting review.\n".into();
        }
        let mut out = format!(
            "{} proposal(s) awaiting review, oldest first:\n\n",
            self.len()
        );
        for r in self {
            let p = &r.object;
            // A lifecycle change in words, with what it changes as it
            // reads now: what agents will read once it is approved.
            let line = match &r.meta.change {
                Some(c) => c.summary.clone(),
                None => proposal_line(p),
            };
            out.push_str(&format!(
                "{}  {} → {}  by {} at {}\n  {}\n",
                p.id, p.kind, p.object_id, p.proposed_by, p.created_at, line
            ));
            for o in r.meta.change.iter().flat_map(|c| &c.objects) {
                out.push_str(&format!(
                    "    {} {} ({}): \"{}\"\n",
                    o.kind, o.id, o.status, o.text
                ));
            }
            if let Some(why) = &p.rationale {
                out.push_str(&format!("    rationale: {why}\n"));
            }
            // A page's body becomes durable too: shown whole.
            if let Some(body) = p.payload.get("body").and_then(|b| b.as_str())
                && !body.is_empty()
            {
                out.push_str(&format!("    body ({} lines):\n", body.lines().count()));
                for line in body.lines() {
                    out.push_str(&format!("      | {line}\n"));
                }
            }
            // Everything else that becomes durable if approved.
            if p.payload.get("method").is_none() {
                for (name, value) in vouch_core::review::payload_fields(&p.payload) {
                    out.push_str(&format!("    {name}: {value}\n"));
                }
            }
            for c in r.meta.citations.iter().flatten() {
                out.push_str(&citation_line(c));
            }
            for d in &r.meta.possible_duplicates {
                out.push_str(&format!(
                    "    ≈ possible duplicate of {} (similarity {}): {}\n",
                    d.id,
                    Value::from(d.similarity),
                    d.text
                ));
            }
            out.push('\n');
        }
        out
    }
}

impl Human for Vec<LifecycleChange> {
    fn human(&self) -> String {
        if self.is_empty() {
            return "No lifecycle changes by agents to review.\n".into();
        }
        let mut out = format!(
            "{} lifecycle change(s) by agents, not reviewed by anyone, newest first (undo one with \
             `vouch revert EVENT_ID`):\n\n",
            self.len()
        );
        for c in self {
            out.push_str(&format!(
                "  {}  {} by {} via {}  {}\n    {}\n",
                c.created_at,
                c.event,
                c.actor,
                c.via.as_deref().filter(|v| !v.is_empty()).unwrap_or("?"),
                c.object_ids.join(", "),
                c.event_id,
            ));
            if let Some(reason) = c.reason.as_deref().filter(|r| !r.is_empty()) {
                out.push_str(&format!("    reason: {reason}\n"));
            }
        }
        out
    }
}

impl Human for Vec<SearchHit> {
    fn human(&self) -> String {
        if self.is_empty() {
            return "No matches.\n".into();
        }
        // A score only orders the hits of one search; its scale is the
        // backend's (`vouch search --help` says which is which).
        let mut out = format!(
            "{} hit(s), best first; a score only ranks the hits of this search (BM25 for \
             words: near 0 in a small knowledge base; cosine for meaning; see `vouch search \
             --help`)\n",
            self.len()
        );
        for h in self {
            // BM25 scores in a tiny KB are near zero; keep them readable.
            let score = if h.score != 0.0 && h.score.abs() < 0.001 {
                format!("{:.1e}", h.score)
            } else {
                format!("{:.3}", h.score)
            };
            // Which side found it, when not the lexical index alone.
            let backend = if h.backend != "fts5" {
                format!(", {}", h.backend)
            } else {
                String::new()
            };
            // Knowledge no approval let in, said where it is read.
            let unaudited = if h.meta.unaudited {
                ", UNAUDITED: not reviewed"
            } else {
                ""
            };
            out.push_str(&format!(
                "{:<7} {}  ({score}{}{backend}{unaudited})\n  {}\n",
                h.kind,
                h.id,
                match &h.status {
                    Some(st) => format!(", {st}"),
                    None => String::new(),
                },
                highlighted(&h.snippet, &h.highlights)
                    .replace('\n', " ")
                    .trim_end()
            ));
        }
        out
    }
}

impl Human for ContextPack {
    fn human(&self) -> String {
        let mut out = self.text.clone();
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "— {} item(s), {} of {} chars",
            self.items.len(),
            self.used_chars,
            self.max_chars
        ));
        let counts = &self.omitted_counts;
        for (k, label) in [(counts.budget, "over budget"), (counts.uncited, "uncited")] {
            if k > 0 {
                out.push_str(&format!("; {k} left out {label}"));
            }
        }
        out.push('\n');
        for gap in &self.gaps {
            out.push_str(&format!("gap: {gap}\n"));
        }
        out
    }
}

impl Human for vouch_core::answer::Synthesis {
    fn human(&self) -> String {
        let meta = &self.meta;
        let mut out = self.answer.clone();
        if out.is_empty() {
            out = format!("No answer: {}.", meta.reason.as_deref().unwrap_or(""));
        }
        out.push_str("\n\n");
        for c in &self.citations {
            out.push_str(&format!(
                "[{}] {} ({}, confidence {})\n",
                c.id,
                c.text,
                c.status,
                Value::from(c.confidence)
            ));
            for e in &c.evidence {
                match &e.quote {
                    _ if e.redacted => out.push_str(&format!(
                        "    source {} ({}): evidence redacted\n",
                        e.source_id, e.locator
                    )),
                    Some(q) => out.push_str(&format!("    {}: \"{q}\"\n", e.locator)),
                    None => out.push_str(&format!("    source {} ({})\n", e.source_id, e.locator)),
                }
            }
        }
        if !self.gaps.is_empty() {
            out.push_str(&format!(
                "not covered (words of the question no cited claim holds): {}\n",
                self.gaps.join(", ")
            ));
        }
        out.push_str(&format!(
            "— confidence {}, backend {}, {}\n",
            meta.synthesis_confidence, meta.backend, meta.mode
        ));
        for d in meta.dropped.iter().filter(|d| d.what == "llm") {
            out.push_str(&format!("dropped from the model's answer: {}\n", d.reason));
        }
        if let Some(p) = &meta.proposal_id {
            out.push_str(&format!("proposed as page: {p}\n"));
        }
        out
    }
}

impl Human for EvalReport {
    fn human(&self) -> String {
        let k = self.k;
        let mut out = String::new();
        for q in &self.per_query {
            let ranks: Vec<String> = q
                .ranks
                .iter()
                .map(|r| r.map_or("-".into(), |r| r.to_string()))
                .collect();
            out.push_str(&format!(
                "{:>5.2}  {:<60}  ranks {}{}\n",
                q.ndcg,
                q.query,
                ranks.join(","),
                q.note
                    .as_deref()
                    .map(|n| format!("  ({n})"))
                    .unwrap_or_default()
            ));
        }
        out.push_str(&format!(
            "\n{} queries, backend {}: recall@{k} {:.3}  MRR {:.3}  nDCG@{k} {:.3}\n",
            self.queries, self.backend, self.recall_at_k, self.mrr, self.ndcg_at_k,
        ));
        for c in &self.by_note {
            out.push_str(&format!(
                "  {:<12} {:>3} queries: recall@{k} {:.3}  MRR {:.3}\n",
                c.note, c.queries, c.recall_at_k, c.mrr,
            ));
        }
        out
    }
}

impl Human for Vec<AuditRecord> {
    fn human(&self) -> String {
        if self.is_empty() {
            return "No audit events.\n".into();
        }
        self.iter()
            .map(|e| {
                let ids: Vec<String> = e.0["object_ids"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                    .collect();
                format!(
                    "{}  {:<20} {:<16} {}\n",
                    field(&e.0, "created_at"),
                    field(&e.0, "event"),
                    field(&e.0, "actor"),
                    ids.join(" ")
                )
            })
            .collect()
    }
}

/// `vouch audit verify`: the chain, and the keyed checkpoints when a key
/// is at hand; `ok` speaks for both.
pub(crate) struct AuditVerified {
    pub chain: VerifyReport,
    pub checkpoints: Option<vouch_core::audit::checkpoints::CheckpointReport>,
    /// `--base REV`: what the branch changed, against REV.
    pub base: Option<vouch_core::health::base::BaseReport>,
}

impl AuditVerified {
    fn ok(&self) -> bool {
        self.chain.ok
            && self.checkpoints.as_ref().is_none_or(|c| c.ok)
            && self.base.as_ref().is_none_or(|b| b.ok)
    }
}

impl Serialize for AuditVerified {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v = serde_json::to_value(&self.chain).map_err(serde::ser::Error::custom)?;
        v["ok"] = Value::Bool(self.ok());
        if let Some(c) = &self.checkpoints {
            v["checkpoints"] = serde_json::to_value(c).map_err(serde::ser::Error::custom)?;
        }
        if let Some(b) = &self.base {
            v["base"] = serde_json::to_value(b).map_err(serde::ser::Error::custom)?;
        }
        v.serialize(s)
    }
}

impl Human for AuditVerified {
    fn human(&self) -> String {
        let c = &self.chain;
        let mut out = match &c.problem {
            None => {
                let mut s = format!("audit log chain OK: {} events", c.events);
                if c.merges > 0 {
                    s.push_str(&format!(", {} merge(s) joined", c.merges));
                }
                s.push('\n');
                if !c.unjoined.is_empty() {
                    s.push_str(&format!(
                        "  {} branch(es) from a git merge not joined yet (ending at line(s) {}); \
                         the next write joins them, or `vouch doctor --fix`\n",
                        c.unjoined.len(),
                        c.unjoined
                            .iter()
                            .map(|l| l.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if !c.duplicates.is_empty() {
                    s.push_str(&format!(
                        "  {} event(s) appear twice (a cherry-pick merged back); `vouch doctor \
                         --fix` keeps one\n",
                        c.duplicates.len()
                    ));
                }
                s
            }
            Some(problem) => format!(
                "audit log BROKEN at line {}: {problem}\n({} events verified before it)\n",
                c.first_bad_line.map_or("null".into(), |l| l.to_string()),
                c.events
            ),
        };
        if let Some(cp) = &self.checkpoints {
            out.push_str(&format!(
                "checkpoints under key {}: {} verified\n",
                cp.key_id, cp.verified
            ));
            for p in &cp.problems {
                out.push_str(&format!("  CHECKPOINT FAILED: {p}\n"));
            }
        }
        if let Some(b) = &self.base {
            out.push_str(&format!(
                "against {}: {} of its {} events kept, {} added, {} file(s) under .vouch/ changed: {}\n",
                b.base,
                b.kept_events,
                b.base_events,
                b.new_events,
                b.changed_files,
                match (b.ok, &c.problem) {
                    (true, None) => "OK",
                    (true, Some(_)) => "PROBLEMS (this branch's audit log chain is broken, above)",
                    (false, _) => "PROBLEMS",
                }
            ));
            for d in &b.decisions {
                out.push_str(&format!("  decision: {d}\n"));
            }
            for l in &b.lifecycle_changes {
                out.push_str(&format!("  lifecycle: {l}\n"));
            }
            for w in &b.warnings {
                out.push_str(&format!("  CONFIRM: {w}\n"));
            }
            for c in &b.config_changes {
                out.push_str(&format!("  config.yaml: {c}\n"));
            }
            for p in &b.problems {
                out.push_str(&format!("  - {p}\n"));
            }
        }
        out
    }
    fn exit_code(&self) -> i32 {
        damaged(self.ok())
    }
}

impl Human for ProposeResult {
    fn human(&self) -> String {
        if !self.valid {
            let mut out = "Not proposed — fix these and try again:\n".to_string();
            for e in &self.errors {
                out.push_str(&format!("  - {e}\n"));
            }
            return out;
        }
        const KEYS: [&str; 5] = [
            "claim_id",
            "page_id",
            "entity_id",
            "relation_id",
            "object_id",
        ];
        let (kind, id) = KEYS
            .iter()
            .find_map(|k| {
                self.object
                    .get(*k)
                    .map(|id| (k.trim_end_matches("_id"), id.as_str()))
            })
            .map(|(k, id)| (if k == "object" { "deleting" } else { k }, id))
            .unwrap_or(("object", ""));
        if self.dry_run {
            return format!("Valid (dry run, nothing written): would propose {kind} {id}\n");
        }
        let page = self
            .review_url
            .as_deref()
            .map(|url| format!("Review it at {url}\n"))
            .unwrap_or_default();
        format!(
            "Proposed {kind} {id} as proposal {p}\nIt is pending review: another actor must run `vouch approve {p}`.\n{page}",
            p = self.proposal_id
        )
    }
    fn exit_code(&self) -> i32 {
        refused(self.valid)
    }
}

/// `vouch reject`: the decision in a sentence (`--json`: the method's
/// `{"ok": true}`).
#[derive(Serialize)]
pub(crate) struct Rejected {
    #[serde(flatten)]
    pub result: OkResult,
    #[serde(skip)]
    pub proposal_id: String,
    #[serde(skip)]
    pub reason: String,
}

impl Human for Rejected {
    fn human(&self) -> String {
        format!(
            "Rejected {}: {}\nNothing becomes knowledge; the proposal is kept under decided/.\n",
            self.proposal_id, self.reason
        )
    }
}

impl Human for ApproveOutput {
    fn human(&self) -> String {
        let items = match self {
            ApproveOutput::One(r) => std::slice::from_ref(r),
            ApproveOutput::Many { approved, .. } => approved.as_slice(),
        };
        items
            .iter()
            .map(|r| {
                format!(
                    "Approved {} → {} {}{}\n",
                    r.proposal_id,
                    r.object_kind,
                    r.object_id,
                    if r.recovered {
                        " (finished an interrupted approval)"
                    } else {
                        ""
                    }
                )
            })
            .collect()
    }
}

impl Human for HealthReport {
    fn human(&self) -> String {
        let mut out = String::new();
        for f in &self.fixed {
            out.push_str(&format!("fixed: {f}\n"));
        }
        if self.issues.is_empty() {
            out.push_str("No problems found.\n");
            return out;
        }
        let errors = self
            .issues
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        for f in &self.issues {
            let severity = match f.severity {
                Severity::Error => "error",
                Severity::Warn => "warn",
            };
            out.push_str(&format!("{severity:<5} {}\n      {}\n", f.id, f.message));
        }
        out.push_str(&format!(
            "\n{errors} error(s), {} warning(s)\n",
            self.issues.len() - errors
        ));
        out
    }
    fn exit_code(&self) -> i32 {
        damaged(self.ok)
    }
}

/// `vouch index rebuild`: the index, and what the local model embedded
/// after it.
#[derive(Serialize)]
pub(crate) struct Rebuilt {
    #[serde(flatten)]
    pub index: vouch_core::retrieval::RebuildResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<Value>,
}

impl Human for Rebuilt {}

/// `vouch show`: one object of any kind, and what it is connected to.
#[derive(Serialize)]
pub(crate) struct Shown {
    pub kind: &'static str,
    pub object: Value,
    /// A proposal's citations, resolved (also under `object._meta`).
    #[serde(skip)]
    pub citations: Vec<ResolvedCitation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<Read<vouch_core::model::Relation>>,
}

impl Human for Shown {
    fn human(&self) -> String {
        let o = &self.object;
        let mut out = format!("{} {}\n", self.kind, field(o, "id"));
        if o["_meta"]["unaudited"] == Value::Bool(true) {
            out.push_str(
                "  ! UNAUDITED: no approval or import in the audit log let this in \
                 (written by hand, or the log was cut); see `vouch doctor`\n",
            );
        }
        let mut rest = o.clone();
        if let Value::Object(m) = &mut rest {
            m.remove("id");
            m.remove("body");
            m.remove("_meta");
        }
        out.push_str(&generic(&rest, 1));
        for c in &self.citations {
            out.push_str(&citation_line(c));
        }
        if !self.relations.is_empty() {
            out.push_str("  relations:\n");
            for r in &self.relations {
                let r = &r.object;
                out.push_str(&format!(
                    "    {} {} {}  ({})\n",
                    r.source, r.relation, r.target, r.id
                ));
            }
        }
        if let Some(body) = o.get("body").and_then(Value::as_str) {
            out.push('\n');
            out.push_str(body);
        }
        out
    }
}

/// Indented `key: value` lines for any JSON.
pub(crate) fn generic(v: &Value, depth: usize) -> String {
    let pad = "  ".repeat(depth);
    match v {
        Value::Object(m) => {
            let mut out = String::new();
            for (k, val) in m {
                match val {
                    Value::Object(_) => {
                        out.push_str(&format!("{pad}{k}:\n{}", generic(val, depth + 1)))
                    }
                    Value::Array(items) if items.iter().any(|i| i.is_object()) => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        for i in items {
                            out.push_str(&format!("{pad}  -\n{}", generic(i, depth + 2)));
                        }
                    }
                    Value::Array(items) => out.push_str(&format!(
                        "{pad}{k}: {}\n",
                        items
                            .iter()
                            .map(|i| i
                                .as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| i.to_string()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    Value::String(x) => out.push_str(&format!("{pad}{k}: {x}\n")),
                    other => out.push_str(&format!("{pad}{k}: {other}\n")),
                }
            }
            out
        }
        Value::Array(items) => items
            .iter()
            .map(|i| format!("{pad}-\n{}", generic(i, depth + 1)))
            .collect(),
        Value::String(x) => format!("{pad}{x}\n"),
        other => format!("{pad}{other}\n"),
    }
}

/// `snippet` with its `highlights` (character ranges) marked for
/// [`crate::render::paint`].
pub(crate) fn highlighted(snippet: &str, highlights: &[[usize; 2]]) -> String {
    let mut out = String::with_capacity(snippet.len() + 8 * highlights.len());
    let mut spans = highlights.iter().peekable();
    let mut open = false;
    for (i, c) in snippet.chars().enumerate() {
        if !open && spans.peek().is_some_and(|[s, _]| *s == i) {
            out.push(HIGHLIGHT_START);
            open = true;
        }
        if c != HIGHLIGHT_START && c != HIGHLIGHT_END {
            out.push(c);
        }
        if open && spans.peek().is_some_and(|[_, e]| *e == i + 1) {
            out.push(HIGHLIGHT_END);
            open = false;
            spans.next();
        }
    }
    if open {
        out.push(HIGHLIGHT_END);
    }
    out
}

/// Around highlighted words (a search's matches) in human text; painted,
/// or dropped, by [`crate::render::paint`] only after
/// [`crate::render::terminal_safe`] has escaped everything else.
pub(crate) const HIGHLIGHT_START: char = '\u{E000}';
pub(crate) const HIGHLIGHT_END: char = '\u{E001}';
