//! MCP over stdio (SPEC §6): tool listing and calls.

use serde_json::{Value, json};

use crate::Config;
use crate::check::{Ctx, Miss, Res, brief, ensure, ensure_flag, lists_transport, skip};
use crate::kb::{Kb, methods, sha256_hex};
use crate::mcp::{Mcp, McpClient, ToolResult};
use crate::server::CallErr;

pub fn mcp(cfg: &Config, ctx: &mut Ctx) {
    let Some(cmd) = cfg.mcp_server.clone() else {
        return ctx.record("setup", skip("no --mcp-server command given"));
    };
    let mut kb = match Kb::new(cfg) {
        Ok(k) => k,
        Err(e) => return ctx.record("setup", Err(e.into())),
    };
    let mut m = match kb.start(&cmd) {
        Ok(s) => Mcp::new(s),
        Err(e) => return ctx.record("setup", Err(e)),
    };
    let init = m.initialize();
    ctx.record(
        "initialize",
        initialized(init).map(|r| format!("protocolVersion {}", r["protocolVersion"])),
    );
    let tools = m.tools();
    let caps = m.call("kb_capabilities", json!({}));
    let caps = match caps {
        Ok(Ok(c)) => c,
        other => return ctx.record("setup", Err(format!("kb_capabilities: {other:?}").into())),
    };
    ctx.check("capabilities-over-mcp", || {
        ensure(
            caps.get("review_gated") == Some(&json!(true)),
            format!("review_gated: {:?}", caps.get("review_gated")),
        )?;
        lists_transport(&caps, "mcp")?;
        Ok("kb_capabilities: review_gated true, transports lists mcp".into())
    });
    ctx.record("every-method-is-a-tool", tools_cover_methods(&tools, &caps));
    ctx.record("tools-have-input-schemas", tools_have_schemas(&tools));
    let content = "MCP-registered bytes ✓\n";
    let reg = m.call(
        "kb_register_source",
        json!({"content": content, "locator": "mcp.md"}),
    );
    ctx.record("register-source-tool", registered(reg, content));
    ctx.record("uncited-claim-refused-over-mcp", uncited_refused(&mut m));
    ctx.check("self-approval-refused-over-mcp", || {
        let id = sha256_hex(content.as_bytes());
        let pid = self_approval_refused(&mut m, "MCP bytes are registered.", &id)?;
        ensure(
            kb.exists(&format!("proposed/{pid}.yaml")),
            "the proposal left proposed/",
        )?;
        Ok("kb_approve of its own proposal is refused; still pending".into())
    });
    ctx.record("unknown-tool-is-an-error", unknown_tool(&mut m));
    ctx.check("missing-argument-is-an-error", || {
        let r = m.call("kb_search", json!({}))?;
        ensure(
            r.is_err(),
            format!("kb_search without query answered {r:?}"),
        )?;
        Ok("kb_search {} → error".into())
    });
    ctx.check("serves-after-errors", || {
        ensure(
            matches!(m.call("kb_status", json!({})), Ok(Ok(_))),
            "kb_status no longer answers",
        )?;
        Ok("kb_status still answers".into())
    });
}

/// Every method kb_capabilities lists is a `kb_<method>` tool.
pub(super) fn tools_cover_methods(tools: &Result<Vec<Value>, String>, caps: &Value) -> Res {
    let tools = tools.as_ref().map_err(|e| e.clone())?;
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let methods = methods(caps);
    ensure(!methods.is_empty(), "kb_capabilities lists no methods")?;
    let missing: Vec<String> = methods
        .iter()
        .map(|m| m.replace('.', "_"))
        .filter(|t| !names.contains(&t.as_str()))
        .collect();
    ensure(missing.is_empty(), format!("no tool for {missing:?}"))?;
    Ok(format!("{} methods → kb_<method> tools", methods.len()))
}

/// Every tool has an object `inputSchema`.
pub(super) fn tools_have_schemas(tools: &Result<Vec<Value>, String>) -> Res {
    let tools = tools.as_ref().map_err(|e| e.clone())?;
    let bad: Vec<String> = tools
        .iter()
        .filter(|t| t.get("inputSchema").and_then(|s| s.get("type")) != Some(&json!("object")))
        .map(|t| t["name"].to_string())
        .collect();
    ensure(bad.is_empty(), format!("no object inputSchema: {bad:?}"))?;
    Ok(format!(
        "{} tools, each with an object inputSchema",
        tools.len()
    ))
}

/// kb_register_source of `content` answered the sha256 of its bytes.
pub(super) fn registered(reg: Result<ToolResult, CallErr>, content: &str) -> Res {
    let r = reg
        .map_err(Miss::from)?
        .map_err(|e| Miss::Fail(format!("refused: {e}")))?;
    ensure(
        r.get("id") == Some(&json!(sha256_hex(content.as_bytes()))),
        format!("id {:?}", r.get("id")),
    )?;
    Ok("kb_register_source → id = sha256 of the bytes".into())
}

/// A claim citing nothing is refused (valid: false, or a tool error).
pub(super) fn uncited_refused(m: &mut dyn McpClient) -> Res {
    match m.call(
        "kb_propose_claim",
        json!({"text": "Nothing cites this.", "evidence": []}),
    )? {
        Err(e) => Ok(format!("tool error: {e}")),
        Ok(v) => {
            ensure_flag(&v, "valid", false, "accepted")?;
            Ok("valid: false".into())
        }
    }
}

/// A tool nobody defined is an error.
pub(super) fn unknown_tool(m: &mut dyn McpClient) -> Res {
    let r = m.call("kb_no_such_tool", json!({}))?;
    ensure(r.is_err(), format!("kb_no_such_tool answered {r:?}"))?;
    Ok("JSON-RPC error or isError".into())
}

/// An `initialize` answered with a protocolVersion and a tools capability.
pub(super) fn initialized(init: Result<Result<Value, String>, CallErr>) -> Result<Value, Miss> {
    let r = init
        .map_err(Miss::from)?
        .map_err(|e| Miss::Fail(format!("initialize refused: {e}")))?;
    ensure(
        r.get("protocolVersion").is_some_and(Value::is_string),
        "no protocolVersion",
    )?;
    ensure(
        r.pointer("/capabilities/tools").is_some(),
        "capabilities.tools absent",
    )?;
    Ok(r)
}

/// Propose a claim citing `source`, then have the proposer approve it: the
/// approval must be refused. The proposal id.
pub(super) fn self_approval_refused(
    m: &mut dyn McpClient,
    text: &str,
    source: &str,
) -> Result<String, Miss> {
    let p = m
        .call(
            "kb_propose_claim",
            json!({"text": text, "evidence": [source]}),
        )?
        .map_err(|e| Miss::Fail(format!("propose refused: {e}")))?;
    let pid = p
        .get("proposal_id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no proposal_id: {}", brief(&p)))?
        .to_string();
    let r = m.call("kb_approve", json!({"proposal_id": pid}))?;
    ensure(
        r.is_err() || r.as_ref().is_ok_and(|v| v.get("ok") == Some(&json!(false))),
        format!("the proposer approved its own proposal: {r:?}"),
    )?;
    Ok(pid)
}
