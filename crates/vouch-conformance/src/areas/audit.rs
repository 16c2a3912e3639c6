//! The audit log (SPEC §7), verified from its own bytes.

use serde_json::{Map, Value, json};

use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, ensure};
use crate::kb::{propose_claim, register, sha256_hex};

/// Compact JSON with sorted keys. `ascii`: escape non-ASCII as `\uXXXX`
/// (what Python's json.dumps does by default).
pub fn canonical(v: &Value, ascii: bool) -> String {
    let mut out = String::new();
    write(v, ascii, &mut out);
    out
}

fn write(v: &Value, ascii: bool, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(k, ascii, out);
                out.push(':');
                write(&m[*k], ascii, out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(x, ascii, out);
            }
            out.push(']');
        }
        Value::String(s) => string(s, ascii, out),
        other => out.push_str(&other.to_string()),
    }
}

fn string(s: &str, ascii: bool, out: &mut String) {
    if !ascii {
        out.push_str(&Value::String(s.to_string()).to_string());
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Verify the hash chain of `bytes`: every line an event whose `prev_hash`
/// is the previous `hash` (64 zeros first) and whose `hash` is
/// sha256(prev_hash + canonical(event without hash)). Returns the number
/// of events and which canonical form matched.
pub fn verify_chain(bytes: &[u8]) -> Result<(usize, &'static str), String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("log is not UTF-8: {e}"))?;
    let mut prev = "0".repeat(64);
    let mut forms = (0usize, 0usize);
    let mut n = 0;
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let ev: Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        let mut m: Map<String, Value> = ev
            .as_object()
            .cloned()
            .ok_or(format!("line {}: not an object", i + 1))?;
        let hash = m
            .remove("hash")
            .and_then(|h| h.as_str().map(str::to_string))
            .ok_or(format!("line {}: no hash", i + 1))?;
        let p = m.get("prev_hash").and_then(Value::as_str).unwrap_or("");
        if p != prev {
            return Err(format!(
                "line {}: prev_hash {p:.12}… is not the previous hash {prev:.12}…",
                i + 1
            ));
        }
        let body = Value::Object(m);
        let utf8 = sha256_hex(format!("{prev}{}", canonical(&body, false)).as_bytes());
        let ascii = sha256_hex(format!("{prev}{}", canonical(&body, true)).as_bytes());
        if hash == utf8 && hash != ascii {
            forms.0 += 1;
        } else if hash == ascii && hash != utf8 {
            forms.1 += 1;
        } else if hash != utf8 {
            return Err(format!(
                "line {}: hash does not match sha256(prev_hash + canonical JSON)",
                i + 1
            ));
        }
        prev = hash;
        n += 1;
    }
    let form = match forms {
        (0, 0) => "ASCII-only text",
        (_, 0) => "UTF-8",
        (0, _) => "ASCII-escaped",
        _ => "mixed",
    };
    Ok((n, form))
}

pub fn audit(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let before = (|| -> Result<(), Miss> {
        let src = register(&mut s, "Naïve café notes — “quoted” ✓\n", "café.md")?;
        let (pid, _) = propose_claim(&mut s, "The café notes are naïve.", &[&src])?;
        if let Ok(Ok(())) = kb.approve(&pid) {}
        s.call("kb.session_start", json!({"task": "audit ✓"}))?;
        Ok(())
    })();
    if let Err(m) = before {
        return ctx.record("setup", Err(m));
    }
    let bytes = kb.audit_bytes();
    let events = kb.audit();
    ctx.check("log-exists-one-event-per-line", || {
        ensure(!bytes.is_empty(), "no .vouch/audit.log.jsonl")?;
        let lines = String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count();
        ensure(
            lines == events.len(),
            format!(
                "{} of {lines} lines are not JSON objects",
                lines - events.len()
            ),
        )?;
        ensure(lines >= 3, format!("{lines} events after 3+ mutations"))?;
        Ok(format!("{lines} JSON lines"))
    });
    ctx.check("required-fields", || {
        for (i, e) in events.iter().enumerate() {
            for k in ["id", "event", "actor", "created_at"] {
                ensure(
                    e.get(k).is_some_and(Value::is_string),
                    format!("event {} lacks string `{k}`", i + 1),
                )?;
            }
            ensure(
                e.get("object_ids").is_some_and(Value::is_array),
                format!("event {} lacks object_ids", i + 1),
            )?;
            let name = e["event"].as_str().unwrap_or("");
            ensure(
                name.contains('.'),
                format!("event name {name:?} is not a dotted verb"),
            )?;
        }
        Ok("id, event (dotted), actor, created_at, object_ids on every event".into())
    });
    ctx.check("event-ids-unique", || {
        let mut ids: Vec<&str> = events
            .iter()
            .filter_map(|e| e.get("id").and_then(Value::as_str))
            .collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        ensure(ids.len() == n, "two events share an id")?;
        Ok(format!("{n} distinct ids"))
    });
    ctx.check_d(
        "hash-chain-verifies",
        "prev_hash/hash = sha256(prev_hash + compact sorted-key JSON)",
        || {
            let (n, form) = verify_chain(&bytes)?;
            Ok(format!(
                "{n} events chain from 64 zeros ({form} canonical form, non-ASCII text included)"
            ))
        },
    );
    ctx.check("reads-append-nothing", || {
        let b = kb.audit_bytes();
        for (m, p) in [
            ("kb.search", json!({"query": "café"})),
            ("kb.list_claims", json!({})),
            ("kb.status", json!({})),
            ("kb.context", json!({"task": "café"})),
            ("kb.audit", json!({})),
        ] {
            s.call(m, p)?;
        }
        ensure(kb.audit_bytes() == b, "a read appended to the audit log")?;
        Ok("search, list, status, context, audit leave the log unchanged".into())
    });
    ctx.check("append-only", || {
        let b = kb.audit_bytes();
        register(&mut s, "One more mutation.\n", "more.md")?;
        let after = kb.audit_bytes();
        ensure(
            after.len() > b.len() && after.starts_with(&b),
            "the earlier log is not a prefix of the later one",
        )?;
        Ok("a later log extends the earlier bytes".into())
    });
    ctx.check("kb-audit-serves-events", || {
        let r = s.call("kb.audit", json!({"tail": 2}))?;
        let a = r.as_array().ok_or("kb.audit is not an array")?;
        ensure(a.len() == 2, format!("tail 2 gave {}", a.len()))?;
        let last = kb.audit();
        ensure(
            a[1].get("id") == last.last().and_then(|e| e.get("id")),
            "the tail's last event is not the log's last",
        )?;
        let f = s.call("kb.audit", json!({"filter": {"event": "source.register"}}))?;
        ensure(
            f.as_array().is_some_and(|x| {
                !x.is_empty()
                    && x.iter()
                        .all(|e| e.get("event") == Some(&json!("source.register")))
            }),
            "filter by event leaks other events",
        )?;
        Ok("tail and filter.event honoured".into())
    });
    ctx.check("tampering-detectable", || {
        let b = String::from_utf8_lossy(&kb.audit_bytes()).to_string();
        let mut lines: Vec<String> = b.lines().map(str::to_string).collect();
        let mut first: Value =
            serde_json::from_str(lines.first().ok_or("empty log")?).map_err(|e| e.to_string())?;
        first["actor"] = json!("someone-else");
        lines[0] = first.to_string();
        ensure(
            verify_chain(lines.join("\n").as_bytes()).is_err(),
            "an edited event still verifies",
        )?;
        Ok("editing one event's text breaks the chain (kit self-check on the server's log)".into())
    });
}
