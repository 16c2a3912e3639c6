//! The review gate (SPEC §4, §5 review) and the lifecycle methods.

use serde_json::{Value, json};

use super::basics::{expect_code, refused_code};
use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, brief, ensure};
use crate::kb::{Kb, approved_claim, ids, propose_claim, register};
use crate::server::Server;

/// The proposal is still pending and no durable claim exists.
fn still_pending(kb: &Kb, s: &mut Server, pid: &str, cid: &str) -> Result<(), Miss> {
    ensure(
        kb.exists(&format!("proposed/{pid}.yaml")),
        format!("proposed/{pid}.yaml is gone"),
    )?;
    ensure(
        !kb.exists(&format!("claims/{cid}.yaml")),
        format!("claims/{cid}.yaml was written"),
    )?;
    let p = s.call("kb.list_pending", json!({}))?;
    ensure(
        ids(&p).iter().any(|i| i == pid),
        "no longer listed by kb.list_pending",
    )?;
    Ok(())
}

/// The actor that filed proposal `pid` (from its proposal.create event).
fn proposer(kb: &Kb, pid: &str, cid: &str) -> Option<String> {
    kb.audit().into_iter().find_map(|e| {
        let named = e
            .get("object_ids")
            .and_then(Value::as_array)
            .is_some_and(|a| {
                a.iter()
                    .any(|i| i.as_str() == Some(pid) || i.as_str() == Some(cid))
            });
        (e.get("event") == Some(&json!("proposal.create")) && named).then(|| {
            e.get("actor")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
    })
}

/// A `decided/<pid>.yaml` file's `status:` line.
fn decided_status(kb: &Kb, pid: &str) -> String {
    kb.read(&format!("decided/{pid}.yaml"))
        .lines()
        .find_map(|l| {
            l.strip_prefix("status:")
                .map(|v| v.trim().trim_matches('"').to_string())
        })
        .unwrap_or_default()
}

pub fn gate(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let src = match register(
        &mut s,
        "The gate holds every proposal for review.\n",
        "gate.md",
    ) {
        Ok(id) => id,
        Err(m) => return ctx.record("setup", Err(m)),
    };
    let (pid, cid) = match propose_claim(&mut s, "The gate holds every proposal.", &[&src]) {
        Ok(x) => x,
        Err(m) => return ctx.record("setup", Err(m)),
    };
    ctx.check("self-approval-refused", || {
        let (c, m) = refused_code(s.call("kb.approve", json!({"proposal_id": pid})))?;
        still_pending(&kb, &mut s, &pid, &cid)?;
        Ok(format!(
            "the proposer's own kb.approve → {c}: {m}; still pending"
        ))
    });
    ctx.check_d(
        "impersonation-via-approver-refused",
        "the approver param must equal the transport's actor",
        || {
            let (c, m) = refused_code(s.call(
                "kb.approve",
                json!({"proposal_id": pid, "approver": "kit-someone-else"}),
            ))?;
            still_pending(&kb, &mut s, &pid, &cid)?;
            Ok(format!(
                "approver: \"kit-someone-else\" → {c}: {m}; still pending"
            ))
        },
    );
    ctx.check("reject-requires-reason", || {
        expect_code(
            s.call("kb.reject", json!({"proposal_id": pid})),
            "missing_param",
        )?;
        still_pending(&kb, &mut s, &pid, &cid)?;
        Ok("kb.reject without reason → missing_param; still pending".into())
    });
    let approved = kb.approve(&pid);
    ctx.check("person-approves", || {
        approved
            .as_ref()
            .map_err(|m| Miss::Skip(format!("{m:?}")))?
            .clone()
            .map_err(|e| Miss::Fail(format!("--approve refused: {e}")))?;
        ensure(
            kb.exists(&format!("claims/{cid}.yaml")),
            format!("no claims/{cid}.yaml"),
        )?;
        ensure(
            kb.exists(&format!("decided/{pid}.yaml")),
            format!("no decided/{pid}.yaml"),
        )?;
        ensure(
            !kb.exists(&format!("proposed/{pid}.yaml")),
            "proposed/ still holds it",
        )?;
        let st = decided_status(&kb, &pid);
        ensure(st == "approved", format!("decided status {st:?}"))?;
        Ok("claims/<id>.yaml written; proposal moved to decided/ (status: approved)".into())
    });
    if approved.is_err() {
        let why = "needs --approve";
        return ctx.skip_all(
            &[
                "approved-claim-shape",
                "approved-by-is-not-proposer",
                "approve-is-audited",
                "approve-once-only",
                "no-decision-after-approval",
                "reject-moves-to-decided",
                "no-approval-after-rejection",
            ],
            why,
        );
    }
    ctx.check("approved-claim-shape", || {
        let c = s.call("kb.read_claim", json!({"id": cid}))?;
        for k in [
            "id",
            "text",
            "type",
            "status",
            "confidence",
            "evidence",
            "created_at",
            "updated_at",
        ] {
            ensure(
                c.get(k).is_some_and(|v| !v.is_null()),
                format!("claim lacks `{k}`: {}", brief(&c)),
            )?;
        }
        ensure(
            c.get("evidence")
                .and_then(Value::as_array)
                .is_some_and(|e| e.contains(&json!(src))),
            "evidence lost the cited source",
        )?;
        Ok("id, text, type, status, confidence, evidence, created_at, updated_at".into())
    });
    ctx.check("approved-by-is-not-proposer", || {
        let c = s.call("kb.read_claim", json!({"id": cid}))?;
        let by = c.get("approved_by").and_then(Value::as_str).unwrap_or("");
        ensure(!by.is_empty(), "approved_by is empty")?;
        let p = proposer(&kb, &pid, &cid).unwrap_or_default();
        ensure(by != p, format!("approved_by {by:?} is the proposer"))?;
        Ok(format!("approved_by {by:?}, proposed by {p:?}"))
    });
    ctx.check("approve-is-audited", || {
        let n =
            kb.events_naming("proposal.approve", &pid) + kb.events_naming("proposal.approve", &cid);
        ensure(n >= 1, "no proposal.approve event")?;
        Ok("proposal.approve".into())
    });
    ctx.check("approve-once-only", || {
        let claim = kb.read(&format!("claims/{cid}.yaml"));
        let dec = kb.read(&format!("decided/{pid}.yaml"));
        let again = kb.approve(&pid)?;
        ensure(again.is_err(), "a person approved the same proposal twice")?;
        ensure(
            kb.read(&format!("claims/{cid}.yaml")) == claim,
            "the claim file changed",
        )?;
        ensure(
            kb.read(&format!("decided/{pid}.yaml")) == dec,
            "the decided file changed",
        )?;
        ensure(
            !kb.exists(&format!("proposed/{pid}.yaml")),
            "the proposal moved back to proposed/",
        )?;
        Ok("a second approval is refused; nothing changed".into())
    });
    ctx.check("no-decision-after-approval", || {
        let (c1, _) =
            refused_code(s.call("kb.reject", json!({"proposal_id": pid, "reason": "late"})))?;
        let (c2, _) = refused_code(s.call("kb.approve", json!({"proposal_id": pid})))?;
        ensure(
            decided_status(&kb, &pid) == "approved",
            "the decision changed",
        )?;
        Ok(format!("kb.reject → {c1}, kb.approve → {c2}"))
    });
    let second = propose_claim(&mut s, "The gate rejects some proposals.", &[&src]);
    let rejected = second
        .as_ref()
        .ok()
        .map(|(p, c)| (p.clone(), c.clone(), kb.reject(p, "not true here")));
    ctx.check("reject-moves-to-decided", || {
        let (p, c, r) = rejected
            .as_ref()
            .ok_or("setup: the second proposal failed")?;
        r.as_ref()
            .map_err(|m| Miss::Skip(format!("{m:?}")))?
            .clone()
            .map_err(|e| Miss::Fail(format!("--reject refused: {e}")))?;
        ensure(
            decided_status(&kb, p) == "rejected",
            format!("decided status {:?}", decided_status(&kb, p)),
        )?;
        ensure(
            !kb.exists(&format!("proposed/{p}.yaml")),
            "still in proposed/",
        )?;
        ensure(
            !kb.exists(&format!("claims/{c}.yaml")),
            "a rejected claim was written",
        )?;
        ensure(
            kb.events_naming("proposal.reject", p) + kb.events_naming("proposal.reject", c) >= 1,
            "no proposal.reject event",
        )?;
        Ok("decided/ status: rejected, no claim, proposal.reject".into())
    });
    ctx.check("no-approval-after-rejection", || {
        let (p, c, r) = rejected.as_ref().ok_or("setup failed")?;
        if r.as_ref().map(|x| x.is_err()).unwrap_or(true) {
            return crate::check::skip("the rejection did not happen");
        }
        ensure(kb.approve(p)?.is_err(), "a rejected proposal was approved")?;
        ensure(
            !kb.exists(&format!("claims/{c}.yaml")),
            "the claim was written",
        )?;
        Ok("approving a rejected proposal is refused".into())
    });
    ctx.check_d(
        "validation-reruns-at-approval",
        "validation runs again at approve time",
        || {
            let gone = register(&mut s, "A source about to vanish.\n", "vanish.md")?;
            let (p, c) = propose_claim(&mut s, "This claim's source will vanish.", &[&gone])?;
            std::fs::remove_dir_all(kb.root().join(format!("sources/{gone}")))
                .map_err(|e| e.to_string())?;
            let r = kb.approve(&p)?;
            ensure(r.is_err(), "approved although its only citation is gone")?;
            ensure(
                !kb.exists(&format!("claims/{c}.yaml")),
                "the claim was written",
            )?;
            Ok("a proposal whose cited source vanished is refused at approval".into())
        },
    );
}

/// A claim's field.
fn field(s: &mut Server, id: &str, k: &str) -> Result<Value, Miss> {
    let c = s.call("kb.read_claim", json!({"id": id}))?;
    Ok(c.get(k).cloned().unwrap_or(Value::Null))
}

fn audited(kb: &Kb, event: &str, id: &str) -> Result<(), Miss> {
    ensure(
        kb.events_naming(event, id) >= 1,
        format!("no {event} event names {id}"),
    )
}

pub fn lifecycle(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let setup = (|| -> Result<(String, String, String, String, String), Miss> {
        let src = register(
            &mut s,
            "Release notes: v2 replaced the v1 cache.\n",
            "rel.md",
        )?;
        let a = approved_claim(&kb, &mut s, "The v2 cache is in-memory.", &[&src])?;
        let b = approved_claim(&kb, &mut s, "The v1 cache is on disk.", &[&src])?;
        let c = approved_claim(&kb, &mut s, "The cache is never cleared.", &[&src])?;
        let d = approved_claim(&kb, &mut s, "Cache entries expire hourly.", &[&src])?;
        Ok((src, a, b, c, d))
    })();
    let (src, a, b, c, d) = match setup {
        Ok(x) => x,
        Err(Miss::Skip(w)) => {
            return ctx.skip_all(
                &[
                    "supersede",
                    "supersede-cycle-refused",
                    "self-supersede-refused",
                    "contradict-symmetric",
                    "archive",
                    "confirm",
                    "cite",
                    "cite-unknown-refused",
                    "missing-claim-refused",
                ],
                &w,
            );
        }
        Err(m) => return ctx.record("setup", Err(m)),
    };
    ctx.check("supersede", || {
        s.call(
            "kb.supersede",
            json!({"old_id": b, "new_id": a, "reason": "v2"}),
        )?;
        ensure(
            field(&mut s, &b, "status")? == json!("superseded"),
            "old claim's status is not superseded",
        )?;
        ensure(
            field(&mut s, &b, "superseded_by")? == json!(a),
            "old claim's superseded_by is not the new one",
        )?;
        audited(&kb, "claim.supersede", &b)?;
        Ok("old: status superseded, superseded_by new; claim.supersede".into())
    });
    ctx.check("supersede-cycle-refused", || {
        let (code, m) = refused_code(s.call("kb.supersede", json!({"old_id": a, "new_id": b})))?;
        ensure(
            field(&mut s, &a, "status")? != json!("superseded"),
            "the new claim became superseded",
        )?;
        Ok(format!("B←A then A←B → {code}: {m}"))
    });
    ctx.check_d(
        "self-supersede-refused",
        "self-supersession is rejected",
        || {
            let (code, _) =
                refused_code(s.call("kb.supersede", json!({"old_id": d, "new_id": d})))?;
            Ok(format!("A supersedes A → {code}"))
        },
    );
    ctx.check("contradict-symmetric", || {
        s.call(
            "kb.contradict",
            json!({"a_id": a, "b_id": c, "reason": "conflict"}),
        )?;
        let ac = field(&mut s, &a, "contradicts")?;
        let ca = field(&mut s, &c, "contradicts")?;
        ensure(
            ac.as_array().is_some_and(|x| x.contains(&json!(c))),
            format!("A.contradicts = {ac}"),
        )?;
        ensure(
            ca.as_array().is_some_and(|x| x.contains(&json!(a))),
            format!("B.contradicts = {ca}"),
        )?;
        ensure(
            kb.events_naming("claim.contradict", &a) + kb.events_naming("claim.contradict", &c)
                >= 1,
            "no claim.contradict event",
        )?;
        Ok("each lists the other; claim.contradict".into())
    });
    ctx.check("archive", || {
        s.call("kb.archive", json!({"id": c, "reason": "obsolete"}))?;
        ensure(
            field(&mut s, &c, "status")? == json!("archived"),
            "status is not archived",
        )?;
        audited(&kb, "claim.archive", &c)?;
        Ok("status archived; claim.archive".into())
    });
    ctx.check("confirm", || {
        s.call("kb.confirm", json!({"id": d}))?;
        let t = field(&mut s, &d, "last_confirmed_at")?;
        ensure(
            t.as_str().is_some_and(|t| t.len() >= 19),
            format!("last_confirmed_at = {t}"),
        )?;
        audited(&kb, "claim.confirm", &d)?;
        Ok(format!("last_confirmed_at {t}; claim.confirm"))
    });
    ctx.check_d(
        "cite",
        "from an agent, kb.cite may be a lifecycle proposal a person approves",
        || {
            let extra = register(&mut s, "Second source on cache expiry.\n", "exp.md")?;
            let pending = ids(&s.call("kb.list_pending", json!({}))?).len();
            s.call("kb.cite", json!({"id": d, "evidence": extra}))?;
            let ev = field(&mut s, &d, "evidence")?;
            let direct = ev.as_array().is_some_and(|e| e.contains(&json!(extra)));
            let proposed = ids(&s.call("kb.list_pending", json!({}))?).len() > pending;
            ensure(
                direct || proposed,
                "neither appended to evidence nor filed for review",
            )?;
            ensure(
                ev.as_array().is_some_and(|e| e.contains(&json!(src))),
                "the old citation was lost",
            )?;
            Ok(if direct {
                "appended to evidence".into()
            } else {
                "filed as a pending proposal for review".into()
            })
        },
    );
    ctx.check("cite-unknown-refused", || {
        let r = s.call("kb.cite", json!({"id": d, "evidence": "f".repeat(64)}));
        let (code, _) = refused_code(r)?;
        Ok(format!("an unregistered source id → {code}"))
    });
    ctx.check("missing-claim-refused", || {
        let (code, _) =
            refused_code(s.call("kb.archive", json!({"id": "no-such-claim-anywhere"})))?;
        Ok(format!("kb.archive of a missing id → {code}"))
    });
}
