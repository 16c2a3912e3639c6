//! Reads and lists with paging (seed 001).

use serde_json::{Value, json};

use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, ensure};
use crate::kb::{approved_claim, ids, register};

pub fn reads(cfg: &Config, ctx: &mut Ctx) {
    let Some((kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    for m in [
        "kb.read_claim",
        "kb.read_page",
        "kb.read_entity",
        "kb.read_relation",
    ] {
        ctx.check(&format!("{}-missing-is-null", &m[3..]), || {
            let r = s.call(m, json!({"id": "no-such-object-here"}))?;
            ensure(r.is_null(), format!("{m} of a missing id returned {r}"))?;
            Ok("null".into())
        });
    }
    ctx.record(
        "read-requires-id",
        super::basics::expect_code(s.call("kb.read_claim", json!({})), "missing_param"),
    );
    let mut srcs = Vec::new();
    for i in 0..5 {
        match register(
            &mut s,
            &format!("Paging source number {i}.\n"),
            &format!("p{i}.md"),
        ) {
            Ok(id) => srcs.push(id),
            Err(m) => return ctx.record("setup", Err(m)),
        }
    }
    for kind in [
        "list_claims",
        "list_pages",
        "list_entities",
        "list_relations",
        "list_sources",
        "list_pending",
    ] {
        ctx.check(&format!("{kind}-is-array"), || {
            let r = s.call(&format!("kb.{kind}"), json!({}))?;
            ensure(r.is_array(), format!("not an array: {r}"))?;
            Ok(format!("{} items", r.as_array().map_or(0, Vec::len)))
        });
    }
    ctx.check("paging-limit-offset", || {
        let mut seen = Vec::new();
        for off in [0, 2, 4] {
            let page = ids(&s.call("kb.list_sources", json!({"limit": 2, "offset": off}))?);
            let want = if off == 4 { 1 } else { 2 };
            ensure(
                page.len() == want,
                format!("offset {off}: {} items, expected {want}", page.len()),
            )?;
            seen.extend(page);
        }
        let mut all = seen.clone();
        all.sort();
        all.dedup();
        ensure(
            all.len() == 5,
            format!("3 pages gave {} distinct of 5", all.len()),
        )?;
        let mut want = srcs.clone();
        want.sort();
        ensure(all == want, "pages do not cover the registered sources")?;
        let past = s.call("kb.list_sources", json!({"limit": 2, "offset": 10}))?;
        ensure(
            past.as_array().is_some_and(Vec::is_empty),
            "offset past the end is not empty",
        )?;
        Ok("limit 2 at offsets 0/2/4 → 2+2+1 distinct, all 5 sources; past the end → []".into())
    });
    let claims = (|| -> Result<(String, String), Miss> {
        let a = approved_claim(&kb, &mut s, "Paging works in lists.", &[&srcs[0]])?;
        let b = approved_claim(&kb, &mut s, "Filters match fields.", &[&srcs[1]])?;
        s.call("kb.archive", json!({"id": b}))?;
        Ok((a, b))
    })();
    ctx.check_d("filter-field-equality", "filter is field equality", || {
        let (a, b) = claims.as_ref().map_err(|m| match m {
            Miss::Skip(w) => Miss::Skip(w.clone()),
            Miss::Fail(f) => Miss::Fail(f.clone()),
        })?;
        let arch = ids(&s.call("kb.list_claims", json!({"filter": {"status": "archived"}}))?);
        ensure(
            arch == vec![b.clone()],
            format!("filter status=archived → {arch:?}"),
        )?;
        let all = ids(&s.call("kb.list_claims", json!({}))?);
        ensure(
            all.contains(a) && all.contains(b),
            "unfiltered list lacks a claim",
        )?;
        Ok("{status: archived} lists only the archived claim".into())
    });
    ctx.check("read-claim-roundtrip", || {
        let (a, _) = claims.as_ref().map_err(|m| match m {
            Miss::Skip(w) => Miss::Skip(w.clone()),
            Miss::Fail(f) => Miss::Fail(f.clone()),
        })?;
        let c = s.call("kb.read_claim", json!({"id": a}))?;
        ensure(
            c.get("id") == Some(&json!(a)),
            format!("read_claim id {:?}", c.get("id")),
        )?;
        ensure(
            c.get("text") == Some(&json!("Paging works in lists.")),
            "text differs",
        )?;
        Ok("read_claim returns the approved claim".into())
    });
    ctx.check("status-counts", || {
        if claims.is_err() {
            return crate::check::skip("needs approved claims (--approve)");
        }
        let st = s.call("kb.status", json!({}))?;
        let n = |k: &str| st.pointer(&format!("/counts/{k}")).and_then(Value::as_u64);
        ensure(
            n("sources") == Some(5),
            format!("counts.sources {:?}", n("sources")),
        )?;
        ensure(
            n("claims") == Some(2),
            format!("counts.claims {:?}", n("claims")),
        )?;
        ensure(
            st.get("pending") == Some(&json!(0)),
            format!("pending {:?}", st.get("pending")),
        )?;
        Ok("sources 5, claims 2, pending 0".into())
    });
}
