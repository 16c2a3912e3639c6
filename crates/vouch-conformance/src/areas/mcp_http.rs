//! MCP over streamable HTTP, against a server already running at
//! `--mcp-url` (DECISIONS "HTTP": the spec names MCP stdio and JSONL; HTTP
//! is our decision, on the MCP spec's streamable HTTP transport). The kit
//! cannot give that server a fresh KB, so nothing here assumes an empty one:
//! it only adds (a source of unique random bytes, one pending proposal
//! citing it) and reads back what it added.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::mcp::{
    initialized, registered, self_approval_refused, tools_cover_methods, tools_have_schemas,
    uncited_refused, unknown_tool,
};
use crate::Config;
use crate::check::{Ctx, Miss, Res, brief, ensure, skip};
use crate::kb::{ids, sha256_hex};
use crate::mcp::McpClient;
use crate::mcp_http::{ALL, Carry, McpHttp};

/// The DECISIONS.md point every check here rests on.
const D: &str = "HTTP";

/// The checks after initialize, skipped together when it fails.
const AFTER_INIT: &[&str] = &[
    "initialized-accepted",
    "capabilities-over-http",
    "every-method-is-a-tool",
    "tools-have-input-schemas",
    "register-source-tool",
    "uncited-claim-refused",
    "self-approval-refused",
    "unknown-tool-is-an-error",
    "session-required",
    "delete-ends-session",
];

pub fn mcp_http(cfg: &Config, ctx: &mut Ctx) {
    let Some(url) = cfg.mcp_url.clone() else {
        return ctx.record("setup", skip("no --mcp-url given"));
    };
    let mut m = match McpHttp::new(&url, cfg.token.clone(), cfg.timeout) {
        Ok(m) => m,
        Err(e) => return ctx.record("setup", Err(e.into())),
    };
    ctx.record_d("bearer-token-required", D, token_required(&mut m));
    let init = initialized(m.initialize_only()).and_then(|r| {
        ensure(
            r.pointer("/serverInfo/name").is_some_and(Value::is_string),
            format!("no serverInfo.name: {}", brief(&r)),
        )?;
        Ok(r)
    });
    let init = match init {
        Ok(r) => r,
        Err(e) => {
            ctx.record_d("initialize", D, Err(e));
            for n in AFTER_INIT {
                ctx.record_d(n, D, skip("initialize failed"));
            }
            return;
        }
    };
    ctx.record_d(
        "initialize",
        D,
        Ok(format!(
            "protocolVersion {}, serverInfo {}, {}",
            init["protocolVersion"],
            init.pointer("/serverInfo/name").unwrap_or(&Value::Null),
            match &m.session {
                Some(_) => "a session id given",
                None => "no session id (sessionless)",
            }
        )),
    );
    ctx.record_d(
        "initialized-accepted",
        D,
        m.notify("notifications/initialized")
            .map(|()| "notifications/initialized → 202 Accepted".into())
            .map_err(Miss::from),
    );
    let caps = m.call("kb_capabilities", json!({}));
    ctx.check_d("capabilities-over-http", D, || {
        let caps = caps
            .as_ref()
            .map_err(|e| e.to_string())?
            .as_ref()
            .map_err(|e| format!("kb_capabilities refused: {e}"))?;
        ensure(
            caps.get("review_gated") == Some(&json!(true)),
            format!("review_gated: {:?}", caps.get("review_gated")),
        )?;
        Ok(format!(
            "kb_capabilities: review_gated true, transports {}",
            caps.get("transports").unwrap_or(&Value::Null)
        ))
    });
    let caps = caps.ok().and_then(Result::ok).unwrap_or(Value::Null);
    let tools = m.tools();
    ctx.record_d(
        "every-method-is-a-tool",
        D,
        tools_cover_methods(&tools, &caps),
    );
    ctx.record_d("tools-have-input-schemas", D, tools_have_schemas(&tools));

    // Unique bytes, so the source is new even in a KB that has seen the kit.
    let nonce = nonce();
    let content = format!("vouch-conformance over HTTP, nonce {nonce}\n");
    let reg = m.call(
        "kb_register_source",
        json!({"content": content, "locator": format!("conformance-{nonce}.md")}),
    );
    ctx.record_d("register-source-tool", D, registered(reg, &content));
    ctx.record_d("uncited-claim-refused", D, uncited_refused(&mut m));
    ctx.check_d("self-approval-refused", D, || {
        let source = sha256_hex(content.as_bytes());
        let text = format!("The conformance probe {nonce} is registered.");
        let pid = self_approval_refused(&mut m, &text, &source)?;
        still_pending(&mut m, &pid)
    });
    ctx.record_d("unknown-tool-is-an-error", D, unknown_tool(&mut m));
    ctx.record_d("session-required", D, session_required(&mut m));
    ctx.record_d("delete-ends-session", D, delete_ends_session(&mut m));
}

/// With `--token`, a request without it is refused with 401.
fn token_required(m: &mut McpHttp) -> Res {
    if !m.has_token() {
        return skip("no --token given");
    }
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": crate::mcp::PROTOCOL_VERSION, "capabilities": {},
                   "clientInfo": {"name": "vouch-conformance", "version": env!("CARGO_PKG_VERSION")}}});
    let r = m.post(
        &init,
        Carry {
            token: false,
            session: false,
        },
    )?;
    ensure(
        r.status == 401,
        format!("initialize without the token: {}", r.brief()),
    )?;
    Ok("initialize without Authorization → 401".into())
}

/// The proposal `pid` is still pending: kb_read_proposal says so, or (when
/// it cannot be read) kb_list_pending lists it.
fn still_pending(m: &mut McpHttp, pid: &str) -> Res {
    if let Ok(Ok(p)) = m.call("kb_read_proposal", json!({"id": pid}))
        && p.is_object()
    {
        let status = p.get("status").and_then(Value::as_str);
        ensure(
            status.is_none_or(|s| s == "pending"),
            format!("after the refused approval: {}", brief(&p)),
        )?;
        return Ok(format!(
            "kb_approve of its own proposal is refused; kb_read_proposal: status {}",
            status.unwrap_or("absent")
        ));
    }
    let pending = m
        .call("kb_list_pending", json!({"limit": 1000}))?
        .map_err(|e| format!("kb_list_pending refused: {e}"))?;
    ensure(
        ids(&pending).iter().any(|i| i == pid),
        format!("{pid} is neither readable nor listed as pending"),
    )?;
    Ok("kb_approve of its own proposal is refused; kb_list_pending lists it".into())
}

/// After initialize, a request without the session id is refused (4xx).
fn session_required(m: &mut McpHttp) -> Res {
    if m.session.is_none() {
        return skip("the server gave no Mcp-Session-Id (sessions are optional in MCP)");
    }
    let req = json!({"jsonrpc": "2.0", "id": m.next_id(), "method": "tools/list", "params": {}});
    let r = m.post(
        &req,
        Carry {
            token: true,
            session: false,
        },
    )?;
    ensure(
        (400..500).contains(&r.status),
        format!("tools/list without Mcp-Session-Id: {}", r.brief()),
    )?;
    Ok(format!("tools/list without Mcp-Session-Id → {}", r.status))
}

/// DELETE with the session id ends the session: later requests carrying
/// it get 404 (MCP: the client must start a new session).
fn delete_ends_session(m: &mut McpHttp) -> Res {
    if m.session.is_none() {
        return skip("the server gave no Mcp-Session-Id (sessions are optional in MCP)");
    }
    let status = m.delete()?;
    if status == 405 {
        return skip("DELETE → 405: the server does not let clients end sessions (MCP allows it)");
    }
    ensure(
        (200..300).contains(&status),
        format!("DELETE of the session → HTTP {status}"),
    )?;
    let req = json!({"jsonrpc": "2.0", "id": m.next_id(), "method": "tools/list", "params": {}});
    let r = m.post(&req, ALL)?;
    ensure(
        r.status == 404,
        format!("tools/list with the ended session: {}", r.brief()),
    )?;
    Ok(format!(
        "DELETE → {status}; the ended session's id then gets 404"
    ))
}

/// 16 hex digits no earlier run produced (time, process, a stack address).
fn nonce() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let here = &t as *const u128 as usize;
    let seed = format!("{t}-{}-{here}", std::process::id());
    sha256_hex(seed.as_bytes())[..16].to_string()
}
