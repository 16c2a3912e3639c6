//! Proposals and their validation (SPEC §3, seed 001), and sessions.

use serde_json::{Value, json};

use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, Res, brief, ensure, ensure_flag};
use crate::kb::{Kb, ids, proposal_ids, propose_claim, register};
use crate::server::{CallErr, Server};

/// The proposal was refused: an error envelope, or `valid: false` with a
/// non-empty `errors`. Returns what the refusal said.
pub fn refused(r: Result<Value, CallErr>) -> Result<String, Miss> {
    match r {
        Err(CallErr::Refused(c, m)) => Ok(format!("{c}: {m}")),
        Err(CallErr::Transport(t)) => Err(Miss::Fail(t)),
        Ok(v) => {
            ensure_flag(&v, "valid", false, "accepted")?;
            let errs = v
                .get("errors")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            ensure(!errs.is_empty(), "valid: false with no errors")?;
            Ok(format!("valid: false, {}", brief(&Value::Array(errs))))
        }
    }
}

/// Files under proposed/, claims/, pages/, entities/, relations/.
fn gated_files(kb: &Kb) -> Vec<(String, u64)> {
    kb.snapshot()
        .into_iter()
        .filter(|(p, _)| {
            ["proposed/", "claims/", "pages/", "entities/", "relations/"]
                .iter()
                .any(|d| p.starts_with(d))
        })
        .collect()
}

/// `f` is refused and writes nothing the gate guards, nor an audit event.
fn refused_writes_nothing(kb: &Kb, s: &mut Server, method: &str, params: Value) -> Res {
    let files = gated_files(kb);
    let audit = kb.audit_bytes();
    let why = refused(s.call(method, params))?;
    ensure(
        gated_files(kb) == files,
        "files were written under proposed/ or a durable directory",
    )?;
    ensure(
        kb.audit_bytes() == audit,
        "an audit event was appended for a refused proposal",
    )?;
    Ok(format!("refused ({why}); nothing written"))
}

pub fn propose(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let src = match register(
        &mut s,
        "Builds run on the self-hosted runner pool.\n",
        "ci.md",
    ) {
        Ok(id) => id,
        Err(m) => return ctx.record("setup", Err(m)),
    };
    ctx.record(
        "uncited-claim-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_claim",
            json!({"text": "Builds are fast.", "evidence": []}),
        ),
    );
    ctx.record(
        "evidence-absent-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_claim",
            json!({"text": "Builds are quick."}),
        ),
    );
    let ghost = "0".repeat(63) + "1";
    ctx.record(
        "dangling-source-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_claim",
            json!({"text": "Builds are cached.", "evidence": [ghost]}),
        ),
    );
    ctx.record(
        "dangling-evidence-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_claim",
            json!({"text": "Builds are cached.", "evidence": ["no-such-evidence-id"]}),
        ),
    );
    ctx.record(
        "confidence-out-of-range-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_claim",
            json!({"text": "Builds are green.", "evidence": [src], "confidence": 1.5}),
        ),
    );
    ctx.record(
        "unknown-claim-type-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_claim",
            json!({"text": "Builds are green.", "evidence": [src], "type": "rumour"}),
        ),
    );
    ctx.check_d(
        "every-error-listed",
        "invalid proposals list every problem in errors",
        || {
            let r = s.call(
                "kb.propose_claim",
                json!({"text": "Builds are slow.", "evidence": [], "confidence": 7.0}),
            );
            match r {
                Ok(v) => {
                    let n = v
                        .get("errors")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    ensure(
                        v.get("valid") == Some(&json!(false)) && n >= 2,
                        format!("two problems, {n} listed: {}", brief(&v)),
                    )?;
                    Ok(format!("valid: false with {n} errors"))
                }
                Err(e) => Err(Miss::Fail(format!(
                    "refused as an error envelope, not valid:false + errors: {e}"
                ))),
            }
        },
    );
    ctx.record("dry-run-writes-no-file", (|| {
        let files = gated_files(&kb);
        let r = s.call("kb.propose_claim", json!({"text": "Builds run on the runner pool.", "evidence": [src], "dry_run": true}))?;
        ensure_flag(&r, "valid", true, "dry run of a valid claim")?;
        ensure(gated_files(&kb) == files, "dry_run wrote a file")?;
        Ok("valid: true, no file written".into())
    })());
    ctx.check_d(
        "dry-run-writes-no-event",
        "dry_run writes no audit event",
        || {
            let audit = kb.audit_bytes();
            s.call(
                "kb.propose_claim",
                json!({"text": "Builds run on the pool.", "evidence": [src], "dry_run": true}),
            )?;
            ensure(kb.audit_bytes() == audit, "the audit log grew")?;
            Ok("audit log unchanged".into())
        },
    );
    let made = propose_claim(
        &mut s,
        "Builds run on the self-hosted runner pool.",
        &[&src],
    );
    ctx.check("propose-writes-proposed-file", || {
        let (pid, cid) = made.as_ref().map_err(|m| Miss::Fail(format!("{m:?}")))?;
        ensure(
            kb.exists(&format!("proposed/{pid}.yaml")),
            format!("no .vouch/proposed/{pid}.yaml"),
        )?;
        ensure(
            !kb.exists(&format!("claims/{cid}.yaml")),
            "a durable claim was written before review",
        )?;
        Ok("proposed/<id>.yaml, nothing under claims/".into())
    });
    ctx.check("propose-is-audited", || {
        let (pid, cid) = made.as_ref().map_err(|m| Miss::Fail(format!("{m:?}")))?;
        let n = kb.events_naming("proposal.create", pid) + kb.events_naming("proposal.create", cid);
        ensure(
            n >= 1,
            "no proposal.create event names the proposal or claim",
        )?;
        Ok("proposal.create".into())
    });
    ctx.check("pending-lists-it", || {
        let (pid, _) = made.as_ref().map_err(|m| Miss::Fail(format!("{m:?}")))?;
        let p = s.call("kb.list_pending", json!({}))?;
        ensure(ids(&p).contains(pid), format!("list_pending lacks {pid}"))?;
        Ok("kb.list_pending lists the proposal".into())
    });
    let twin = propose_claim(
        &mut s,
        "Builds run on the self-hosted runner pool.",
        &[&src],
    );
    ctx.check("proposal-ids-unique", || {
        let (a, _) = made.as_ref().map_err(|m| Miss::Fail(format!("{m:?}")))?;
        let (b, _) = twin.as_ref().map_err(|m| Miss::Fail(format!("{m:?}")))?;
        ensure(a != b, format!("two proposals share id {a}"))?;
        Ok("same text twice → two proposal ids".into())
    });
    ctx.check_d(
        "claim-ids-unique",
        "a taken slug gets -2, -3… at propose time",
        || {
            let (_, a) = made.as_ref().map_err(|m| Miss::Fail(format!("{m:?}")))?;
            let (_, b) = twin.as_ref().map_err(|m| Miss::Fail(format!("{m:?}")))?;
            ensure(a != b, format!("two pending claims share id {a}"))?;
            Ok(format!("{a} and {b}"))
        },
    );
    let ent = s.call(
        "kb.propose_entity",
        json!({"name": "Runner Pool", "type": "system"}),
    );
    ctx.record(
        "propose-entity",
        ent.map_err(Miss::from).and_then(|r| {
            let (pid, eid) = proposal_ids(&r, "entity_id")?;
            ensure(
                kb.exists(&format!("proposed/{pid}.yaml")),
                "no proposed file",
            )?;
            Ok(format!("entity {eid} pending"))
        }),
    );
    ctx.record(
        "unknown-entity-type-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_entity",
            json!({"name": "X", "type": "planet"}),
        ),
    );
    ctx.record(
        "propose-page",
        s.call(
            "kb.propose_page",
            json!({"title": "CI Overview", "body": "# CI\n\nRunners.\n", "sources": [src]}),
        )
        .map_err(Miss::from)
        .and_then(|r| {
            let (_, pg) = proposal_ids(&r, "page_id")?;
            Ok(format!("page {pg} pending"))
        }),
    );
    ctx.record(
        "unknown-relation-type-refused",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_relation",
            json!({"source": "a", "relation": "loves", "target": "b"}),
        ),
    );
    ctx.record_d(
        "relation-dangling-ends-refused",
        "both ends of a relation must exist",
        refused_writes_nothing(
            &kb,
            &mut s,
            "kb.propose_relation",
            json!({"source": "no-such-entity", "relation": "uses", "target": "no-such-other"}),
        ),
    );
}

pub fn sessions(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let sid = |r: Result<Value, CallErr>| -> Result<String, Miss> {
        let v = r?;
        v.get("session_id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Miss::Fail(format!("no session_id: {}", brief(&v))))
    };
    let a = sid(s.call(
        "kb.session_start",
        json!({"task": "conformance", "note": "first"}),
    ));
    ctx.record(
        "start-returns-id",
        a.as_ref()
            .map(|id| format!("session_id {id}"))
            .map_err(|m| Miss::Fail(format!("{m:?}"))),
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let b = sid(s.call("kb.session_start", json!({"task": "second"})));
    ctx.check("ids-sort-chronologically", || {
        let (a, b) = (
            a.as_ref().map_err(|_| "no first id")?,
            b.as_ref().map_err(|_| "no second id")?,
        );
        ensure(a < b, format!("{a} sorts after the later {b}"))?;
        Ok("a later session's id sorts after an earlier one (SHOULD)".into())
    });
    ctx.check("session-file-on-disk", || {
        let a = a.as_ref().map_err(|_| "no id")?;
        ensure(
            kb.exists(&format!("sessions/{a}.yaml")),
            format!("no .vouch/sessions/{a}.yaml"),
        )?;
        Ok("sessions/<id>.yaml".into())
    });
    ctx.check("end-counts-proposals", || {
        let a = a.as_ref().map_err(|_| "no id")?.clone();
        let src = register(&mut s, "Sessions bundle proposals.\n", "s.md")?;
        let r = s.call(
            "kb.propose_claim",
            json!({"text": "Sessions bundle proposals.", "evidence": [src], "session_id": a}),
        )?;
        proposal_ids(&r, "claim_id")?;
        let e = s.call("kb.session_end", json!({"session_id": a}))?;
        ensure_flag(&e, "ok", true, "session_end")?;
        ensure(
            e.get("proposals") == Some(&json!(1)),
            format!("proposals {:?}, one was made", e.get("proposals")),
        )?;
        Ok("ok: true, proposals: 1".into())
    });
    ctx.check("end-unknown-session-refused", || {
        let r = s.call(
            "kb.session_end",
            json!({"session_id": "sess-19700101-000000-abcdef"}),
        );
        let why = super::basics::refused_code(r)?;
        Ok(format!("{}: {}", why.0, why.1))
    });
    ctx.check_d(
        "sessions-audited",
        "event names session.start / session.end",
        || {
            let a = a.as_ref().map_err(|_| "no id")?;
            ensure(
                kb.events_naming("session.start", a) == 1,
                "no single session.start naming the session",
            )?;
            ensure(
                kb.events_naming("session.end", a) == 1,
                "no single session.end naming the session",
            )?;
            Ok("session.start and session.end name the session".into())
        },
    );
    ctx.check("crystallize-shape", || {
        let b = b.as_ref().map_err(|_| "no id")?;
        let r = s.call("kb.crystallize", json!({"session_id": b}))?;
        ensure(
            r.get("claims_promoted").is_some_and(Value::is_u64),
            format!("claims_promoted missing: {}", brief(&r)),
        )?;
        ensure(
            r.get("page_id")
                .is_none_or(|p| p.is_null() || p.is_string()),
            "page_id is neither a string nor null",
        )?;
        Ok(brief(&r))
    });
    ctx.check("crystallize-writes-no-durable-page", || {
        let pages = kb
            .snapshot()
            .into_iter()
            .filter(|(p, _)| p.starts_with("pages/"))
            .count();
        ensure(
            pages == 0,
            format!("{pages} durable pages exist without any approval"),
        )?;
        Ok("no pages/ file without a person's approval".into())
    });
}
