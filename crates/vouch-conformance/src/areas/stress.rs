//! Concurrency (two writer processes) and robustness (hostile lines).

use serde_json::{Value, json};

use super::basics::alive;
use super::open;
use crate::Config;
use crate::check::{Ctx, Miss, brief, ensure};
use crate::kb::{Kb, ids};
use crate::server::Server;

pub fn concurrency(cfg: &Config, ctx: &mut Ctx) {
    let Some((mut kb, s1)) = open(cfg, ctx) else {
        return;
    };
    let s2 = match kb.serve() {
        Ok(s) => s,
        Err(m) => return ctx.record("setup", Err(m)),
    };
    const N: usize = 15;
    let run = |mut s: Server, tag: &'static str| {
        std::thread::spawn(move || -> Result<Vec<String>, String> {
            let mut out = Vec::new();
            for i in 0..N {
                let r = s.call("kb.register_source", json!({"content": format!("writer {tag} source {i}\n"), "locator": format!("{tag}-{i}.md")})).map_err(|e| e.to_string())?;
                let id = r
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let p = s.call("kb.propose_claim", json!({"text": format!("Writer {tag} made claim number {i}."), "evidence": [id]})).map_err(|e| e.to_string())?;
                out.push(id);
                out.push(
                    p.get("proposal_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                );
            }
            // The same bytes from both writers at once.
            s.call(
                "kb.register_source",
                json!({"content": "shared by both writers\n", "locator": "shared.md"}),
            )
            .map_err(|e| e.to_string())?;
            Ok(out)
        })
    };
    let (a, b) = (run(s1, "a"), run(s2, "b"));
    let ra = a.join().unwrap_or_else(|_| Err("writer a panicked".into()));
    let rb = b.join().unwrap_or_else(|_| Err("writer b panicked".into()));
    ctx.check("both-writers-served", || {
        let (a, b) = (
            ra.as_ref().map_err(|e| e.clone())?,
            rb.as_ref().map_err(|e| e.clone())?,
        );
        ensure(
            a.iter().chain(b).all(|x| !x.is_empty()),
            "an id came back empty",
        )?;
        Ok(format!("{} calls each, interleaved", 2 * N + 1))
    });
    check_log(&kb, ctx, N);
    ctx.check("nothing-lost-in-lists", || {
        let mut s = kb.serve()?;
        let srcs = ids(&s.call("kb.list_sources", json!({"limit": 1000}))?);
        ensure(
            srcs.len() == 2 * N + 1,
            format!("{} sources listed, {} registered", srcs.len(), 2 * N + 1),
        )?;
        let pend = ids(&s.call("kb.list_pending", json!({"limit": 1000}))?);
        ensure(
            pend.len() == 2 * N,
            format!("{} pending, {} proposed", pend.len(), 2 * N),
        )?;
        Ok(format!(
            "{} sources and {} pending proposals, as made",
            2 * N + 1,
            2 * N
        ))
    });
}

fn check_log(kb: &Kb, ctx: &mut Ctx, n: usize) {
    let ev = kb.audit();
    let count = |e: &str| {
        ev.iter()
            .filter(|x| x.get("event") == Some(&json!(e)))
            .count()
    };
    ctx.check("no-lost-or-doubled-event", || {
        ensure(
            count("source.register") == 2 * n + 1,
            format!(
                "{} source.register events for {} distinct sources",
                count("source.register"),
                2 * n + 1
            ),
        )?;
        ensure(
            count("proposal.create") == 2 * n,
            format!(
                "{} proposal.create events for {} proposals",
                count("proposal.create"),
                2 * n
            ),
        )?;
        Ok(format!(
            "{} + {} events, one per mutation",
            2 * n + 1,
            2 * n
        ))
    });
    ctx.check_d(
        "chain-intact-after-concurrent-appends",
        "the audit hash chain",
        || {
            let (k, _) = super::audit::verify_chain(&kb.audit_bytes())?;
            Ok(format!("{k} events chain"))
        },
    );
}

fn answered(s: &mut Server, line: &[u8]) -> Result<Value, Miss> {
    s.write_line(line)?;
    Ok(s.read_value()?)
}

pub fn robustness(cfg: &Config, ctx: &mut Ctx) {
    let Some((_kb, mut s)) = open(cfg, ctx) else {
        return;
    };
    let huge =
        json!({"id": "huge", "method": "kb.search", "params": {"query": "x".repeat(8 << 20)}})
            .to_string();
    ctx.check("huge-line-answered", || {
        let v = answered(&mut s, huge.as_bytes())?;
        ensure(v.get("ok").is_some_and(Value::is_boolean), brief(&v))?;
        Ok(format!("an 8 MiB line → ok: {}", v["ok"]))
    });
    ctx.record("serves-after-huge-line", alive(&mut s));
    let deep = format!(
        "{{\"id\":\"deep\",\"method\":\"kb.status\",\"params\":{{\"a\":{}{}}}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    ctx.check("deep-nesting-answered", || {
        let v = answered(&mut s, deep.as_bytes())?;
        ensure(v.get("ok").is_some_and(Value::is_boolean), brief(&v))?;
        Ok(format!("100 000 nested arrays → ok: {}", v["ok"]))
    });
    ctx.record("serves-after-deep-nesting", alive(&mut s));
    ctx.check("invalid-utf8-answered", || {
        let mut line = br#"{"id":"utf8","method":"kb.search","params":{"query":""#.to_vec();
        line.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28]);
        line.extend_from_slice(br#""}}"#);
        let v = answered(&mut s, &line)?;
        let code = v.pointer("/error/code").and_then(Value::as_str);
        ensure(
            v.get("ok") == Some(&json!(false)) && code == Some("invalid_request"),
            brief(&v),
        )?;
        Ok("invalid UTF-8 → invalid_request".into())
    });
    ctx.record("serves-after-invalid-utf8", alive(&mut s));
    ctx.check("nul-and-controls-in-strings", || {
        let r = s.call("kb.search", json!({"query": "a\u{0}b\u{1}\u{7f}\u{202e}"}))?;
        ensure(r.is_array(), format!("{r}"))?;
        Ok("NUL, controls and bidi in a query → a result".into())
    });
    ctx.check("empty-line-ignored-or-answered", || {
        s.write_line(b"")?;
        let r = s.call("kb.status", json!({}))?;
        ensure(r.is_object(), "status after a blank line")?;
        Ok("a blank line does not desynchronise the stream".into())
    });
    ctx.check("pipelined-requests-all-answered", || {
        let mut batch = Vec::new();
        for i in 0..50 {
            batch.extend_from_slice(
                json!({"id": format!("p{i}"), "method": "kb.status", "params": {}})
                    .to_string()
                    .as_bytes(),
            );
            batch.push(b'\n');
        }
        batch.pop();
        s.write_line(&batch)?;
        let mut got = Vec::new();
        for _ in 0..50 {
            got.push(s.read_value()?.get("id").cloned().unwrap_or(Value::Null));
        }
        let mut want: Vec<String> = (0..50).map(|i| format!("p{i}")).collect();
        let mut got: Vec<String> = got
            .iter()
            .map(|v| v.as_str().unwrap_or("?").to_string())
            .collect();
        want.sort();
        got.sort();
        ensure(got == want, "a response is missing or doubled")?;
        Ok("50 requests in one write → one response per id".into())
    });
    ctx.record("serves-at-the-end", alive(&mut s));
}
