//! The envelope and its errors, the capabilities descriptor, and sources.

use serde_json::{Value, json};

use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, Res, brief, ensure, ensure_flag, lists_transport, skip};
use crate::kb::{methods, sha256_hex};
use crate::server::{CallErr, Server};

/// Seed 001's four error codes.
pub const CODES: [&str; 4] = [
    "method_not_found",
    "missing_param",
    "invalid_request",
    "internal_error",
];

/// SPEC §5: the methods a conforming implementation MUST expose.
pub const SPEC_METHODS: &[&str] = &[
    "kb.capabilities",
    "kb.status",
    "kb.search",
    "kb.context",
    "kb.read_page",
    "kb.read_claim",
    "kb.read_entity",
    "kb.read_relation",
    "kb.list_pages",
    "kb.list_claims",
    "kb.list_entities",
    "kb.list_relations",
    "kb.list_sources",
    "kb.list_pending",
    "kb.register_source",
    "kb.register_source_from_path",
    "kb.source_verify",
    "kb.propose_claim",
    "kb.propose_page",
    "kb.propose_entity",
    "kb.propose_relation",
    "kb.approve",
    "kb.reject",
    "kb.supersede",
    "kb.contradict",
    "kb.archive",
    "kb.confirm",
    "kb.cite",
    "kb.session_start",
    "kb.session_end",
    "kb.crystallize",
    "kb.index_rebuild",
    "kb.lint",
    "kb.doctor",
    "kb.audit",
    "kb.export",
    "kb.export_check",
    "kb.import_check",
    "kb.import_apply",
];

/// The error code of a refused call, or a failure naming what came back.
pub fn refused_code(r: Result<Value, CallErr>) -> Result<(String, String), Miss> {
    match r {
        Err(CallErr::Refused(c, m)) => Ok((c, m)),
        Err(CallErr::Transport(t)) => Err(Miss::Fail(format!("no error envelope: {t}"))),
        Ok(v) => Err(Miss::Fail(format!("accepted (ok: true): {}", brief(&v)))),
    }
}

/// The call is refused with exactly `code`.
pub fn expect_code(r: Result<Value, CallErr>, code: &str) -> Res {
    let (c, m) = refused_code(r)?;
    ensure(
        c == code,
        format!("error code {c:?}, expected {code:?} ({m})"),
    )?;
    ensure(!m.trim().is_empty(), "error message is empty")?;
    Ok(format!("{code}: {m}"))
}

/// Send one raw line and read the next response.
fn raw(s: &mut Server, line: &[u8]) -> Result<Value, Miss> {
    s.write_line(line)?;
    Ok(s.read_value()?)
}

/// `v` is `ok: false` with error code `code`; else a miss naming `what`.
fn ensure_error(v: &Value, code: &str, what: &str) -> Result<(), Miss> {
    let got = v.pointer("/error/code").and_then(Value::as_str);
    ensure(
        v.get("ok") == Some(&Value::Bool(false)) && got == Some(code),
        format!("{what}: expected ok:false {code}, got {}", brief(v)),
    )
}

pub fn envelope(cfg: &Config, ctx: &mut Ctx) {
    let Some((_kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let bad_line = |s: &mut Server, line: &[u8], what: &str| -> (Res, Res) {
        match raw(s, line) {
            Err(m) => (Err(m), skip("no response to check")),
            Ok(v) => {
                let a = ensure_error(&v, "invalid_request", what)
                    .map(|_| format!("{what} → invalid_request"));
                let b = ensure(
                    v.get("id") == Some(&Value::Null),
                    format!("id is {:?}", v.get("id")),
                )
                .map(|_| "id: null".to_string());
                (a, b)
            }
        }
    };
    // (the line, what it is, the checks' names, what a line of that kind is not)
    let bad_lines: [(&[u8], &str, [&str; 3], &str); 2] = [
        (
            b"{this is not json",
            "a line that is not JSON",
            [
                "malformed-json-is-invalid-request",
                "malformed-json-id-null",
                "keeps-serving-after-malformed-json",
            ],
            "JSON",
        ),
        (
            b"[1,2,3]",
            "a JSON array line",
            [
                "non-object-line-is-invalid-request",
                "non-object-line-id-null",
                "keeps-serving-after-non-object",
            ],
            "an object",
        ),
    ];
    for (line, what, [invalid, id_null, serving], not) in bad_lines {
        let (a, b) = bad_line(&mut s, line, what);
        ctx.record(invalid, a);
        ctx.record_d(
            id_null,
            &format!("a line that is not {not} gets id: null"),
            b,
        );
        ctx.record(serving, alive(&mut s));
    }

    let id = "ключ/ü-42 \"quoted\"";
    let r = raw(
        &mut s,
        json!({"id": id, "method": "kb.no_such_method", "params": {}})
            .to_string()
            .as_bytes(),
    );
    ctx.record(
        "unknown-method-is-method-not-found",
        r.as_ref()
            .map_err(|_| Miss::Fail("no response".into()))
            .and_then(|v| {
                ensure_error(v, "method_not_found", "an unknown method")?;
                Ok("method_not_found".into())
            }),
    );
    ctx.record(
        "request-id-echoed",
        r.and_then(|v| {
            ensure(
                v.get("id") == Some(&json!(id)),
                format!("id came back as {:?}", v.get("id")),
            )?;
            Ok("an unusual string id (non-ASCII, quotes, slash) came back unchanged".into())
        }),
    );
    let r = raw(&mut s, br#"{"id":"no-method","params":{}}"#);
    ctx.record(
        "missing-method-is-invalid-request",
        r.and_then(|v| {
            ensure_error(&v, "invalid_request", "a request without a method")?;
            ensure(
                v.get("id") == Some(&json!("no-method")),
                format!("id not kept: {:?}", v.get("id")),
            )?;
            Ok("invalid_request, id kept".into())
        }),
    );
    let r = raw(
        &mut s,
        br#"{"id":"params-array","method":"kb.search","params":[1]}"#,
    );
    ctx.record(
        "params-not-object-is-invalid-request",
        r.and_then(|v| {
            ensure_error(&v, "invalid_request", "params [1]")?;
            Ok("params [1] → invalid_request".into())
        }),
    );
    ctx.record(
        "missing-param",
        expect_code(
            s.call("kb.register_source", json!({"locator": "x.txt"})),
            "missing_param",
        ),
    );
    ctx.record(
        "null-param-is-missing",
        expect_code(
            s.call(
                "kb.register_source",
                json!({"content": null, "locator": "x.txt"}),
            ),
            "missing_param",
        ),
    );
    ctx.record(
        "mistyped-param-is-invalid-request",
        expect_code(
            s.call(
                "kb.register_source",
                json!({"content": 5, "locator": "x.txt"}),
            ),
            "invalid_request",
        ),
    );
    ctx.record(
        "mistyped-query-is-invalid-request",
        expect_code(
            s.call("kb.search", json!({"query": {"a": 1}})),
            "invalid_request",
        ),
    );
    ctx.check("success-envelope-shape", || {
        let v = s.envelope("kb.status", json!({}))?;
        ensure_flag(&v, "ok", true, "kb.status")?;
        ensure(v.get("result").is_some(), "ok:true without result")?;
        ensure(
            v.get("error").is_none_or(Value::is_null),
            "ok:true with an error",
        )?;
        Ok("{id, ok: true, result}".into())
    });
    ctx.check("error-envelope-shape", || {
        let v = s.envelope("kb.read_claim", json!({}))?;
        ensure_flag(&v, "ok", false, "kb.read_claim {}")?;
        let code = v
            .pointer("/error/code")
            .and_then(Value::as_str)
            .unwrap_or("");
        let msg = v
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        ensure(
            CODES.contains(&code),
            format!("code {code:?} is not one of seed 001's four"),
        )?;
        ensure(!msg.is_empty(), "empty error message")?;
        Ok(format!(
            "{{id, ok: false, error: {{code: {code}, message}}}}"
        ))
    });
    ctx.check("every-advertised-method-routes", || {
        let caps = s.call("kb.capabilities", json!({}))?;
        let ms = methods(&caps);
        ensure(!ms.is_empty(), "capabilities lists no methods")?;
        let mut bad = Vec::new();
        for m in &ms {
            match s.call(m, json!({})) {
                Err(CallErr::Refused(c, _)) if c == "method_not_found" => {
                    bad.push(format!("{m}: method_not_found"))
                }
                Err(CallErr::Refused(c, _)) if !CODES.contains(&c.as_str()) => {
                    bad.push(format!("{m}: code {c}"))
                }
                Err(CallErr::Transport(t)) => return Err(Miss::Fail(format!("{m} {{}}: {t}"))),
                _ => {}
            }
        }
        ensure(bad.is_empty(), bad.join("; "))?;
        Ok(format!(
            "all {} advertised methods answer {{}} with a result or one of the four codes",
            ms.len()
        ))
    });
    ctx.record("keeps-serving-after-errors", alive(&mut s));
}

pub fn alive(s: &mut Server) -> Res {
    ensure(
        s.alive(),
        format!("kb.capabilities no longer answers ({})", s.stderr_tail()),
    )?;
    Ok("kb.capabilities still answers".into())
}

pub fn capabilities(cfg: &Config, ctx: &mut Ctx) {
    let Some((mut kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let caps = match s.call("kb.capabilities", json!({})) {
        Ok(c) => c,
        Err(e) => return ctx.record("setup", Err(e.into())),
    };
    ctx.check("review-gated-true", || {
        ensure(
            caps.get("review_gated") == Some(&json!(true)),
            format!("review_gated is {:?}", caps.get("review_gated")),
        )?;
        Ok("review_gated: true".into())
    });
    ctx.check("descriptor-shape", || {
        for k in ["name", "version", "spec"] {
            ensure(
                caps.get(k).is_some_and(Value::is_string),
                format!("`{k}` is not a string"),
            )?;
        }
        for k in ["methods", "retrieval", "transports"] {
            let ok = caps
                .get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string));
            ensure(ok, format!("`{k}` is not a non-empty array of strings"))?;
        }
        let kc = caps
            .get("knowledge_capability")
            .ok_or("no knowledge_capability")?;
        ensure(
            kc.get("kind").is_some_and(Value::is_string),
            "knowledge_capability.kind is not a string",
        )?;
        for k in ["stores_evidence", "audit_log"] {
            ensure(
                kc.get(k).is_some_and(Value::is_boolean),
                format!("knowledge_capability.{k} is not a bool"),
            )?;
        }
        Ok("name, version, spec, methods, retrieval, transports, knowledge_capability".into())
    });
    ctx.check_d(
        "spec-is-vouch-0.1",
        "capabilities carry spec: \"vouch-0.1\"",
        || {
            ensure(
                caps.get("spec") == Some(&json!("vouch-0.1")),
                format!("spec is {:?}", caps.get("spec")),
            )?;
            Ok("spec: vouch-0.1".into())
        },
    );
    let ms = methods(&caps);
    ctx.check("all-spec-methods-listed", || {
        let missing: Vec<&&str> = SPEC_METHODS
            .iter()
            .filter(|m| !ms.iter().any(|x| x == **m))
            .collect();
        ensure(missing.is_empty(), format!("missing: {missing:?}"))?;
        Ok(format!("all {} methods of §5 listed", SPEC_METHODS.len()))
    });
    ctx.check("method-names-dotted-and-unique", || {
        let mut seen = std::collections::HashSet::new();
        for m in &ms {
            let ok = m.len() > 3
                && m.starts_with("kb.")
                && m[3..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            ensure(ok, format!("{m} is not a kb.<name>"))?;
            ensure(seen.insert(m.clone()), format!("{m} listed twice"))?;
        }
        Ok(format!("{} kb.<name> methods, no duplicates", ms.len()))
    });
    ctx.check("lists-jsonl-transport", || {
        lists_transport(&caps, "jsonl")?;
        Ok("transports lists jsonl".into())
    });
    ctx.check("stable-across-servers", || {
        let mut s2 = kb.serve()?;
        let c2 = s2.call("kb.capabilities", json!({}))?;
        ensure(methods(&c2) == ms, "a second server lists other methods")?;
        ensure(
            c2.get("review_gated") == caps.get("review_gated"),
            "review_gated differs",
        )?;
        Ok("a second server instance advertises the same methods".into())
    });
    ctx.check("status-shape", || {
        let st = s.call("kb.status", json!({}))?;
        ensure(
            st.get("root").is_some_and(Value::is_string),
            "status.root is not a string",
        )?;
        for k in ["claims", "pages", "sources", "entities", "relations"] {
            ensure(
                st.pointer(&format!("/counts/{k}"))
                    .is_some_and(Value::is_u64),
                format!("status.counts.{k} is not a count"),
            )?;
        }
        ensure(
            st.get("pending").is_some_and(Value::is_u64),
            "status.pending is not a count",
        )?;
        Ok("root, counts{claims,pages,sources,entities,relations}, pending".into())
    });
    ctx.check("gitignore-excludes-proposed", || {
        let gi = kb.read(".gitignore");
        ensure(
            gi.lines().any(|l| {
                l.trim().trim_start_matches('/') == "proposed/"
                    || l.trim().trim_start_matches('/') == "proposed"
            }),
            format!(".vouch/.gitignore does not list proposed/: {gi:?}"),
        )?;
        Ok(".vouch/.gitignore lists proposed/".into())
    });
}

pub fn sources(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let content = "The deploy key rotates every 90 days — ünïcödé ✓\n";
    let want = sha256_hex(content.as_bytes());
    let first = s.call(
        "kb.register_source",
        json!({"content": content, "locator": "notes/keys.md", "title": "Keys"}),
    );
    let id = first
        .as_ref()
        .ok()
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    ctx.check("id-is-sha256-of-bytes", || {
        let r = first.as_ref().map_err(|e| Miss::Fail(e.to_string()))?;
        ensure(
            id == want,
            format!("id {id:?}, sha256 of the UTF-8 bytes is {want}"),
        )?;
        ensure(
            r.get("deduplicated") == Some(&json!(false)),
            format!(
                "first registration: deduplicated {:?}",
                r.get("deduplicated")
            ),
        )?;
        Ok("64 lowercase hex = sha256(content); deduplicated: false".into())
    });
    let before = kb.snapshot();
    let again = s.call(
        "kb.register_source",
        json!({"content": content, "locator": "notes/keys.md", "title": "Keys"}),
    );
    ctx.check("re-register-is-idempotent", || {
        let r = again.map_err(|e| Miss::Fail(e.to_string()))?;
        ensure(
            r.get("id") == Some(&json!(want)),
            format!("second id {:?}", r.get("id")),
        )?;
        ensure(
            r.get("deduplicated") == Some(&json!(true)),
            format!("deduplicated {:?}", r.get("deduplicated")),
        )?;
        let after = kb.snapshot();
        let changed: Vec<_> = after
            .iter()
            .filter(|f| !f.0.starts_with("audit.log") && !before.contains(f))
            .collect();
        ensure(changed.is_empty(), format!("files changed: {changed:?}"))?;
        let n = s
            .call("kb.list_sources", json!({}))?
            .as_array()
            .map_or(0, Vec::len);
        ensure(n == 1, format!("list_sources has {n} sources"))?;
        Ok("same id, deduplicated: true, no file changed, one source listed".into())
    });
    ctx.check_d(
        "re-register-writes-no-event",
        "re-registering identical bytes changes nothing (no audit event)",
        || {
            let n = kb.events_naming("source.register", &want);
            ensure(
                n == 1,
                format!("{n} source.register events name the source"),
            )?;
            Ok("one source.register event".into())
        },
    );
    ctx.check("layout-sources-meta", || {
        ensure(
            kb.exists(&format!("sources/{want}/meta.yaml")),
            format!("no .vouch/sources/{want}/meta.yaml"),
        )?;
        Ok("sources/<sha>/meta.yaml".into())
    });
    ctx.check("register-from-path", || {
        let bytes = b"Path-registered notes: the queue drains nightly.\n";
        std::fs::write(kb.dir().join("queue.txt"), bytes).map_err(|e| e.to_string())?;
        let r = s.call("kb.register_source_from_path", json!({"path": "queue.txt"}))?;
        let got = r.get("id").and_then(Value::as_str).unwrap_or("");
        ensure(
            got == sha256_hex(bytes),
            format!("id {got:?} is not sha256 of the file"),
        )?;
        Ok("repo-relative path registered; id = sha256 of its bytes".into())
    });
    ctx.check("verify-clean", || {
        let r = s.call("kb.source_verify", json!({}))?;
        ensure_flag(&r, "ok", true, "source_verify")?;
        ensure(
            r.get("issues")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty),
            "issues not empty",
        )?;
        Ok("ok: true, issues: []".into())
    });
    ctx.check("verify-detects-tampered-bytes", || {
        let p = kb.root().join(format!("sources/{want}/content"));
        if !p.exists() {
            return skip("the server keeps no sources/<sha>/content (optional per §1)");
        }
        std::fs::write(&p, b"tampered bytes\n").map_err(|e| e.to_string())?;
        let r = s.call("kb.source_verify", json!({"id": want}))?;
        ensure_flag(&r, "ok", false, "tampered content verified")?;
        let issues = r
            .get("issues")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        ensure(
            issues.iter().any(|i| i.get("id") == Some(&json!(want))),
            format!("no issue names the source: {issues:?}"),
        )?;
        std::fs::write(&p, content).map_err(|e| e.to_string())?;
        Ok("content that no longer hashes to its id → ok: false, issue names it".into())
    });
    ctx.check("register-is-audited", || {
        ensure(
            kb.events_naming("source.register", &id) >= 1,
            "no source.register event names the source",
        )?;
        Ok("source.register names the id".into())
    });
}
