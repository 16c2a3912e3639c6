//! The approval link where the agent works: when an agent proposes over
//! MCP and the result carries `review_url`, a host that supports URL-mode
//! elicitation (protocol 2025-11-25) is asked to open that page for the
//! person.
//!
//! Only URL mode is used, never form mode: a host can answer a form itself
//! without anyone looking, so nothing a host answers is taken as anyone's
//! decision. The answer is not even read; the decision is made on vouch's
//! own page, signed in as a person.

use rmcp::model::{ElicitRequestParams, ProtocolVersion, Request, ServerRequest};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the host of this session is being asked already: while one ask
/// is open, later proposals do not ask again (the page lists the queue).
#[derive(Default)]
pub(crate) struct Asking(AtomicBool);

/// What the person is told beside the link.
fn message(result: &Value) -> String {
    let object = ["claim_id", "page_id", "entity_id", "relation_id"]
        .iter()
        .find_map(|k| result.get(*k).and_then(Value::as_str).map(|id| (*k, id)));
    let what = match object {
        Some((key, id)) => format!("a {} ({id})", key.trim_end_matches("_id")),
        None => "a change".to_string(),
    };
    format!(
        "Your agent proposed {what} for the knowledge base. Open vouch's review page to read \
         it with its evidence and decide, signed in as yourself. Nothing is approved by \
         answering here."
    )
}

/// One line naming the host a stdio session serves and whether it will be
/// asked to open review pages: so a person can see which hosts do.
pub(crate) fn describe_host(info: &rmcp::model::ClientConfig) -> String {
    let url_mode = info
        .capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.url.is_some());
    let asked = if url_mode && info.protocol_version < ProtocolVersion::V_2026_07_28 {
        "yes (URL-mode elicitation)"
    } else {
        "no (it gets review_url in results)"
    };
    format!(
        "vouch: MCP client {} {} (protocol {}); asked to open review pages: {asked}",
        info.client_info.name, info.client_info.version, info.protocol_version
    )
}

/// Ask the host to open the review page of the proposal in `result`, if
/// the host can and nothing is being asked already. Never waits.
pub(crate) fn offer(asking: &Arc<Asking>, context: &RequestContext<RoleServer>, result: &Value) {
    let (Some(url), Some(id)) = (
        result.get("review_url").and_then(Value::as_str),
        result.get("proposal_id").and_then(Value::as_str),
    ) else {
        return;
    };
    // 2026-07-28 has no server-to-client requests outside a call's own
    // input round trip; hosts there get the link in the result only.
    let legacy = context
        .protocol_version()
        .is_some_and(|v| v < ProtocolVersion::V_2026_07_28);
    let url_mode = context
        .peer
        .peer_info()
        .and_then(|info| info.capabilities.elicitation.clone())
        .is_some_and(|e| e.url.is_some());
    if !legacy || !url_mode || asking.0.swap(true, Ordering::AcqRel) {
        return;
    }
    let params = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: message(result),
        url: url.to_string(),
        elicitation_id: id.to_string(),
    };
    let (peer, asking): (Peer<RoleServer>, _) = (context.peer.clone(), asking.clone());
    tokio::spawn(async move {
        // Accept, decline or cancel: the same to us.
        let _ = peer
            .send_request(ServerRequest::ElicitRequest(Request::new(params)))
            .await;
        asking.0.store(false, Ordering::Release);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_host_line_says_whether_it_is_asked() {
        let mut info: rmcp::model::ClientConfig = serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"url": {}}},
            "clientInfo": {"name": "host", "version": "1.0"}
        }))
        .unwrap();
        assert!(describe_host(&info).ends_with("yes (URL-mode elicitation)"));
        info.capabilities.elicitation = None;
        assert!(describe_host(&info).contains("asked to open review pages: no"));
    }

    #[test]
    fn the_message_names_what_was_proposed_and_that_answering_decides_nothing() {
        let m = message(&json!({"proposal_id": "p1", "claim_id": "deploys-freeze"}));
        assert!(m.contains("a claim (deploys-freeze)"), "{m}");
        assert!(m.contains("Nothing is approved by answering here"), "{m}");
        assert!(message(&json!({"proposal_id": "p1"})).contains("a change"));
    }
}
