//! Human-readable rendering of method results. `--json` prints the result
//! exactly as the wire carries it.

use serde_json::Value;

fn s(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(x)) => x.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn list(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Write to stdout. A reader that went away (`vouch search x | head -1`)
/// is not an error: exit 0 quietly, as ripgrep does.
pub fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let res = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Err(e) = res {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing output: {e}");
        std::process::exit(1);
    }
}

/// Print warnings to stderr, escaped. Runs of the same kind (a 1.x KB with
/// thousands of files this vouch cannot read) are summed up after the
/// first few, so a command's output stays readable; `vouch doctor` lists
/// every one.
pub fn print_warnings(warnings: Vec<String>) {
    const SHOWN: usize = 5;
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    let mut order: Vec<String> = Vec::new();
    for w in warnings {
        // The kind: the text before the file-specific part.
        let kind = w
            .split_once(": ")
            .map(|(k, _)| k.to_string())
            .unwrap_or_else(|| w.clone());
        let n = seen.entry(kind.clone()).or_insert(0);
        *n += 1;
        if *n <= SHOWN {
            eprintln!("warning: {}", terminal_safe(&w));
        } else if *n == SHOWN + 1 {
            order.push(kind);
        }
    }
    for kind in order {
        eprintln!(
            "warning: … and {} more like {:?} (`vouch doctor` lists them all)",
            seen[&kind] - SHOWN,
            terminal_safe(&kind)
        );
    }
}

/// Pretty JSON and a newline. serde_json leaves C1 controls and bidi
/// overrides raw; they are written as `\uXXXX` escapes, which decode to the
/// same string.
pub fn emit_json(v: &Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    emit(&(terminal_safe(&text).into_owned() + "\n"));
}

/// Would this character, printed raw, let text steer the terminal or the
/// order in which it is read? C0 controls other than newline and tab (an
/// `ESC[8m` makes the rest of a line invisible, `\r` overwrites it), DEL,
/// C1 controls, and the bidi overrides and isolates that reorder a line
/// ("Trojan Source").
fn steers_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that could hide or reorder what a person
/// reads written as a visible `\uXXXX` escape. Every human-facing output
/// passes through here: proposals and sources come from agents and from
/// cloned repositories.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(steers_terminal) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if steers_terminal(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub fn output(json: bool, label: &str, v: &Value) {
    if json {
        emit_json(v);
        return;
    }
    let text = match label {
        "init" => init(v),
        "kb.status" => status(v),
        "kb.list_pending" => pending(v),
        "kb.search" => search(v),
        "kb.context" => context(v),
        "kb.synthesize" => synthesis(v),
        "kb.knowledge_validate" | "kb.knowledge_import" => knowledge(v),
        "kb.eval" => eval(v),
        "kb.audit" => audit(v),
        "kb.audit_verify" => verify(v),
        "kb.propose_claim" | "kb.propose_page" | "kb.propose_entity" | "kb.propose_relation" => {
            proposed(v)
        }
        "kb.approve" => approved(v),
        "kb.lint" | "kb.doctor" => health(v),
        "kb.export" => exported(v),
        "kb.export_check" => export_checked(v),
        "kb.import_check" => import_checked(v),
        "kb.import_apply" => imported(v),
        "kb.lifecycle_changes" => lifecycle_changes(v),
        "show" => show(v),
        _ => generic(v, 0),
    };
    let text = terminal_safe(&text);
    if text.ends_with('\n') {
        emit(&text);
    } else {
        emit(&(text.into_owned() + "\n"));
    }
}

fn init(v: &Value) -> String {
    let created = list(v, "created");
    let mut out = format!("Initialized vouch knowledge base at {}\n", s(v, "root"));
    if created.is_empty() {
        out.push_str("(everything already existed; nothing was changed)\n");
    }
    for e in list(v, "existing") {
        out.push_str(&format!("  kept existing {e}\n"));
    }
    out
}

fn status(v: &Value) -> String {
    let c = &v["counts"];
    format!(
        "{} ({})\n  claims     {}\n  pages      {}\n  sources    {}\n  entities   {}\n  relations  {}\n  evidence   {}\n  pending    {}\n  last audit {}\n",
        s(v, "kb_name"),
        s(v, "root"),
        c["claims"],
        c["pages"],
        c["sources"],
        c["entities"],
        c["relations"],
        c["evidence"],
        v["pending"],
        v.get("last_audit_at")
            .and_then(Value::as_str)
            .unwrap_or("never"),
    ) + &match (
        v["retrieval"]
            .get("degraded_reason")
            .and_then(Value::as_str),
        v["retrieval"].get("model").and_then(Value::as_str),
    ) {
        (Some(why), _) => format!("  search     {} ({why})\n", s(&v["retrieval"], "used")),
        (None, Some(model)) => format!(
            "  search     {} (model {model})\n",
            s(&v["retrieval"], "used")
        ),
        (None, None) => format!("  search     {}\n", s(&v["retrieval"], "used")),
    } + &match v["retrieval"]["watcher"]["pid"].as_u64() {
        Some(pid) => format!("  watched by process {pid} (one-shot commands skip the file scan)\n"),
        None => String::new(),
    }
}

fn citation_line(c: &Value) -> String {
    if c.get("missing") == Some(&Value::Bool(true)) {
        return format!("    ! {} {} (missing)\n", s(c, "kind"), s(c, "id"));
    }
    match s(c, "kind").as_str() {
        "evidence" => format!(
            "    cites evidence {} ({} {})\n      \"{}\"\n",
            s(c, "id"),
            s(c, "source_locator"),
            s(c, "locator"),
            s(c, "quote").replace('\n', "\n       ")
        ),
        _ => {
            let title = s(c, "title");
            format!(
                "    cites source {}… {}{}\n",
                &s(c, "id")[..12.min(s(c, "id").len())],
                s(c, "locator"),
                if title.is_empty() {
                    String::new()
                } else {
                    format!(" \"{title}\"")
                }
            )
        }
    }
}

fn pending(v: &Value) -> String {
    let items = v.as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return "No proposals awaiting review.\n".into();
    }
    let mut out = format!(
        "{} proposal(s) awaiting review, oldest first:\n\n",
        items.len()
    );
    for p in items {
        let payload = &p["payload"];
        let what = if payload.get("method").is_some() {
            // A lifecycle change: the call it will make when approved.
            format!("{} {}", s(payload, "method"), payload["params"])
        } else {
            ["text", "title", "name"]
                .iter()
                .map(|k| s(payload, k))
                .find(|x| !x.is_empty())
                .unwrap_or_else(|| {
                    format!(
                        "{} {} {}",
                        s(payload, "source"),
                        s(payload, "relation"),
                        s(payload, "target")
                    )
                })
        };
        out.push_str(&format!(
            "{}  {} → {}  by {} at {}\n  {}\n",
            s(&p, "id"),
            s(&p, "kind"),
            s(&p, "object_id"),
            s(&p, "proposed_by"),
            s(&p, "created_at"),
            what
        ));
        if let Some(r) = p.get("rationale").and_then(Value::as_str) {
            out.push_str(&format!("    rationale: {r}\n"));
        }
        for c in p["_meta"]["citations"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            out.push_str(&citation_line(&c));
        }
        for d in p["_meta"]["possible_duplicates"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            out.push_str(&format!(
                "    ≈ possible duplicate of {} (similarity {}): {}\n",
                s(&d, "id"),
                d["similarity"],
                s(&d, "text")
            ));
        }
        out.push('\n');
    }
    out
}

fn lifecycle_changes(v: &Value) -> String {
    let items = v.as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return "No lifecycle changes by agents to review.\n".into();
    }
    let mut out = format!(
        "{} lifecycle change(s) by agents, not reviewed by anyone, newest first (undo one with \
         `vouch revert EVENT_ID`):\n\n",
        items.len()
    );
    for c in items {
        out.push_str(&format!(
            "  {}  {} by {} via {}  {}\n    {}\n",
            s(&c, "created_at"),
            s(&c, "event"),
            s(&c, "actor"),
            match s(&c, "via") {
                v if v.is_empty() => "?".to_string(),
                v => v,
            },
            list(&c, "object_ids").join(", "),
            s(&c, "event_id"),
        ));
        let reason = s(&c, "reason");
        if !reason.is_empty() {
            out.push_str(&format!("    reason: {reason}\n"));
        }
    }
    out
}

fn search(v: &Value) -> String {
    let hits = v.as_array().cloned().unwrap_or_default();
    if hits.is_empty() {
        return "No matches.\n".into();
    }
    let mut out = String::new();
    for h in hits {
        let score = h["score"].as_f64().unwrap_or(0.0);
        // BM25 scores in a tiny KB are near zero; keep them readable.
        let score = if score != 0.0 && score.abs() < 0.001 {
            format!("{score:.1e}")
        } else {
            format!("{score:.3}")
        };
        out.push_str(&format!(
            "{:<7} {}  ({score}{}{})\n  {}\n",
            s(&h, "kind"),
            s(&h, "id"),
            match h.get("status").and_then(Value::as_str) {
                Some(st) => format!(", {st}"),
                None => String::new(),
            },
            // Which side found it, when not the lexical index alone.
            match h.get("backend").and_then(Value::as_str) {
                Some(b) if b != "fts5" => format!(", {b}"),
                _ => String::new(),
            },
            s(&h, "snippet").replace('\n', " ")
        ));
    }
    out
}

fn context(v: &Value) -> String {
    let mut out = s(v, "text");
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    let n = v["items"].as_array().map_or(0, Vec::len);
    out.push_str(&format!(
        "— {n} item(s), {} of {} chars",
        v["used_chars"], v["max_chars"]
    ));
    let counts = &v["omitted_counts"];
    for (key, label) in [("budget", "over budget"), ("uncited", "uncited")] {
        let k = counts[key].as_u64().unwrap_or(0);
        if k > 0 {
            out.push_str(&format!("; {k} left out {label}"));
        }
    }
    out.push('\n');
    for gap in list(v, "gaps") {
        out.push_str(&format!("gap: {gap}\n"));
    }
    out
}

fn knowledge(v: &Value) -> String {
    let mut out = String::new();
    for p in v["problems"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{}: {}{}{}: {}\n",
            s(p, "severity"),
            s(p, "file"),
            p.get("line").map_or(String::new(), |l| format!(":{l}")),
            p.get("id")
                .and_then(Value::as_str)
                .map_or(String::new(), |id| format!(" {id}")),
            s(p, "message")
        ));
    }
    for f in v["facts"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{:<14} {}{}{}\n",
            s(f, "outcome"),
            s(f, "knowledge_id"),
            f.get("proposal_id")
                .and_then(Value::as_str)
                .map_or(String::new(), |p| format!(" → {p}")),
            f.get("reason")
                .and_then(Value::as_str)
                .map_or(String::new(), |r| format!(" ({r})"))
        ));
    }
    if let Some(n) = v.get("facts").and_then(Value::as_u64) {
        out.push_str(&format!(
            "{n} facts in {} files: {} errors, {} warnings\n",
            v["files"], v["errors"], v["warnings"]
        ));
    }
    if v["ok"] == Value::Bool(false) && v.get("facts").is_some_and(Value::is_array) {
        out.push_str("nothing imported: fix the errors above, or pass --skip-invalid\n");
    }
    out
}

fn synthesis(v: &Value) -> String {
    let mut out = s(v, "answer");
    let meta = &v["_meta"];
    if out.is_empty() {
        out = format!("No answer: {}.", s(meta, "reason"));
    }
    out.push_str("\n\n");
    for c in v["citations"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "[{}] {} ({}, confidence {})\n",
            s(c, "id"),
            s(c, "text"),
            s(c, "status"),
            c["confidence"]
        ));
        for e in c["evidence"].as_array().into_iter().flatten() {
            match e.get("quote").and_then(Value::as_str) {
                Some(q) => out.push_str(&format!("    {}: \"{q}\"\n", s(e, "locator"))),
                None => out.push_str(&format!(
                    "    source {} ({})\n",
                    s(e, "source_id"),
                    s(e, "locator")
                )),
            }
        }
    }
    for gap in list(v, "gaps") {
        out.push_str(&format!("gap: {gap}\n"));
    }
    out.push_str(&format!(
        "— confidence {}, backend {}, {}\n",
        s(meta, "synthesis_confidence"),
        s(meta, "backend"),
        s(meta, "mode")
    ));
    for d in meta["dropped"].as_array().into_iter().flatten() {
        if s(d, "what") == "llm" {
            out.push_str(&format!(
                "dropped from the model's answer: {}\n",
                s(d, "reason")
            ));
        }
    }
    if let Some(p) = meta.get("proposal_id").and_then(Value::as_str) {
        out.push_str(&format!("proposed as page: {p}\n"));
    }
    out
}

fn eval(v: &Value) -> String {
    let k = &v["k"];
    let mut out = String::new();
    for q in v["per_query"].as_array().into_iter().flatten() {
        let ranks: Vec<String> = q["ranks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r.as_u64().map_or("-".into(), |r| r.to_string()))
            .collect();
        out.push_str(&format!(
            "{:>5.2}  {:<60}  ranks {}{}\n",
            q["ndcg"].as_f64().unwrap_or(0.0),
            s(q, "query"),
            ranks.join(","),
            q.get("note")
                .and_then(Value::as_str)
                .map(|n| format!("  ({n})"))
                .unwrap_or_default()
        ));
    }
    out.push_str(&format!(
        "\n{} queries, backend {}: recall@{k} {:.3}  MRR {:.3}  nDCG@{k} {:.3}\n",
        v["queries"],
        s(v, "backend"),
        v["recall_at_k"].as_f64().unwrap_or(0.0),
        v["mrr"].as_f64().unwrap_or(0.0),
        v["ndcg_at_k"].as_f64().unwrap_or(0.0),
    ));
    for c in v["by_note"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  {:<12} {:>3} queries: recall@{k} {:.3}  MRR {:.3}\n",
            s(c, "note"),
            c["queries"],
            c["recall_at_k"].as_f64().unwrap_or(0.0),
            c["mrr"].as_f64().unwrap_or(0.0),
        ));
    }
    out
}

fn audit(v: &Value) -> String {
    let mut out = String::new();
    for e in v.as_array().cloned().unwrap_or_default() {
        out.push_str(&format!(
            "{}  {:<20} {:<16} {}\n",
            s(&e, "created_at"),
            s(&e, "event"),
            s(&e, "actor"),
            list(&e, "object_ids").join(" ")
        ));
    }
    if out.is_empty() {
        out.push_str("No audit events.\n");
    }
    out
}

fn verify(v: &Value) -> String {
    let mut out = if v.get("problem").is_none() {
        format!("audit log chain OK: {} events\n", v["events"])
    } else {
        format!(
            "audit log BROKEN at line {}: {}\n({} events verified before it)\n",
            v["first_bad_line"],
            s(v, "problem"),
            v["events"]
        )
    };
    if let Some(c) = v.get("checkpoints") {
        out.push_str(&format!(
            "checkpoints under key {}: {} verified\n",
            s(c, "key_id"),
            c["verified"]
        ));
        for p in list(c, "problems") {
            out.push_str(&format!("  CHECKPOINT FAILED: {p}\n"));
        }
    }
    out
}

fn proposed(v: &Value) -> String {
    let object = ["claim_id", "page_id", "entity_id", "relation_id"]
        .iter()
        .find_map(|k| {
            v.get(*k)
                .and_then(Value::as_str)
                .map(|id| (k.trim_end_matches("_id"), id))
        });
    if v["valid"] == Value::Bool(false) {
        let mut out = "Not proposed — fix these and try again:\n".to_string();
        for e in list(v, "errors") {
            out.push_str(&format!("  - {e}\n"));
        }
        return out;
    }
    let (kind, id) = object.unwrap_or(("object", ""));
    if v["dry_run"] == Value::Bool(true) {
        return format!("Valid (dry run, nothing written): would propose {kind} {id}\n");
    }
    format!(
        "Proposed {kind} {id} as proposal {}\nIt is pending review: another actor must run `vouch approve {}`.\n",
        s(v, "proposal_id"),
        s(v, "proposal_id")
    )
}

fn approved(v: &Value) -> String {
    let items = match v.get("approved").and_then(Value::as_array) {
        Some(a) => a.clone(),
        None => vec![v.clone()],
    };
    items
        .iter()
        .map(|r| {
            format!(
                "Approved {} → {} {}{}\n",
                s(r, "proposal_id"),
                s(r, "object_kind"),
                s(r, "object_id"),
                if r.get("recovered") == Some(&Value::Bool(true)) {
                    " (finished an interrupted approval)"
                } else {
                    ""
                }
            )
        })
        .collect()
}

fn health(v: &Value) -> String {
    let issues = v["issues"].as_array().cloned().unwrap_or_default();
    let mut out = String::new();
    for f in list(v, "fixed") {
        out.push_str(&format!("fixed: {f}\n"));
    }
    if issues.is_empty() {
        out.push_str("No problems found.\n");
        return out;
    }
    let errors = issues.iter().filter(|f| f["severity"] == "error").count();
    for f in &issues {
        out.push_str(&format!(
            "{:<5} {}\n      {}\n",
            s(f, "severity"),
            s(f, "id"),
            s(f, "message")
        ));
    }
    out.push_str(&format!(
        "\n{errors} error(s), {} warning(s)\n",
        issues.len() - errors
    ));
    out
}

fn exported(v: &Value) -> String {
    format!(
        "Exported {} files to {} ({} bytes, sha256 {})\n",
        v["files"],
        s(v, "path"),
        v["bytes"],
        s(v, "sha256")
    )
}

fn problems(v: &Value) -> String {
    let mut out = String::new();
    for p in v["problems"].as_array().cloned().unwrap_or_default() {
        let path = s(&p, "path");
        if path.is_empty() {
            out.push_str(&format!("  ! {}\n", s(&p, "reason")));
        } else {
            out.push_str(&format!("  ! {path}: {}\n", s(&p, "reason")));
        }
    }
    out
}

fn export_checked(v: &Value) -> String {
    if v["ok"] == Value::Bool(true) {
        format!(
            "Bundle OK: {} files, consistent with its manifest\n",
            v["files"]
        )
    } else {
        format!("Bundle has problems:\n{}", problems(v))
    }
}

fn import_checked(v: &Value) -> String {
    let count = |k: &str| list(v, k).len();
    let mut out = if v["ok"] == Value::Bool(true) {
        "Bundle can be imported.\n".to_string()
    } else {
        "Bundle would be REFUSED (nothing will be written until these are fixed):\n".to_string()
            + &problems(v)
    };
    out.push_str(&format!(
        "  new        {}\n  conflict   {}\n  identical  {}\n",
        count("new"),
        count("conflict"),
        count("identical")
    ));
    for c in list(v, "conflict") {
        out.push_str(&format!("    conflict: {c}\n"));
    }
    for c in list(v, "ignored") {
        out.push_str(&format!("    ignored: {c} (this KB keeps its own)\n"));
    }
    if count("conflict") > 0 {
        out.push_str("Conflicts are skipped unless you pass --on-conflict overwrite.\n");
    }
    out
}

fn imported(v: &Value) -> String {
    let mut out = format!(
        "Imported {} new file(s); {} overwritten, {} conflicting skipped, {} already identical\n",
        v["imported"], v["overwritten"], v["skipped"], v["identical"]
    );
    if v["proposed"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!(
            "{} claim(s)/page(s)/entit(ies)/relation(s) arrived as proposals awaiting review (`vouch pending`)\n",
            v["proposed"]
        ));
    }
    out
}

fn show(v: &Value) -> String {
    let kind = s(v, "kind");
    let o = &v["object"];
    let mut out = format!("{kind} {}\n", s(o, "id"));
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
    if let Some(citations) = o["_meta"]["citations"].as_array() {
        for c in citations {
            out.push_str(&citation_line(c));
        }
    }
    if let Some(relations) = v["relations"].as_array() {
        out.push_str("  relations:\n");
        for r in relations {
            out.push_str(&format!(
                "    {} {} {}  ({})\n",
                s(r, "source"),
                s(r, "relation"),
                s(r, "target"),
                s(r, "id")
            ));
        }
    }
    if let Some(body) = o.get("body").and_then(Value::as_str) {
        out.push('\n');
        out.push_str(body);
    }
    out
}

/// Indented `key: value` lines for any JSON.
pub fn generic(v: &Value, depth: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_escapes_what_steers_a_terminal_and_keeps_the_rest() {
        assert_eq!(
            terminal_safe("plain\ttext\nnext é 中"),
            "plain\ttext\nnext é 中"
        );
        assert_eq!(
            terminal_safe("shown\u{1b}[8mhidden\u{1b}[0m"),
            "shown\\u001b[8mhidden\\u001b[0m"
        );
        assert_eq!(
            terminal_safe("a\rb\u{9b}c\u{7f}"),
            "a\\u000db\\u009bc\\u007f"
        );
        assert_eq!(terminal_safe("x\u{202e}y\u{2066}"), "x\\u202ey\\u2066");
        // JSON keeps its meaning: the escape decodes to the same string.
        let v = serde_json::json!({"t": "a\u{9b}b\u{202e}"});
        let safe = terminal_safe(&serde_json::to_string(&v).unwrap()).into_owned();
        assert!(safe.is_ascii(), "{safe}");
        assert_eq!(serde_json::from_str::<Value>(&safe).unwrap(), v);
    }
}
