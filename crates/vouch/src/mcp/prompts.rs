//! MCP prompts for the common jobs: review what a session proposed, say
//! what we know about something with citations, record what was learned.
//!
//! A prompt is a message for the host's model, with the knowledge it needs
//! attached as resources read through the registry (what the person would
//! see on the review page is what the model gets). None of them decides
//! anything: deciding stays with a person on vouch's own review page.

use super::resources::uri;
use super::{Answer, ask};
use rmcp::ErrorData;
use rmcp::model::{
    GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage, Role,
};
use serde_json::{Value, json};
use std::sync::Arc;
use vouch_core::{Caller, Kb};

/// The longest argument a prompt takes, in bytes.
const MAX_ARGUMENT: usize = 4 * 1024;

/// Proposals one review prompt attaches at most.
const MAX_PROPOSALS: usize = 50;

/// Approved knowledge the record prompt attaches, so nothing known is
/// proposed again.
const RELATED: usize = 5;

struct Spec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    /// Name, description, required.
    arguments: &'static [(&'static str, &'static str, bool)],
}

const PROMPTS: &[Spec] = &[
    Spec {
        name: "review_session",
        title: "Review what this session proposed",
        description: "The proposals a session (or you, by default) filed that wait for review, \
                      each with what it cites, and how a person decides them.",
        arguments: &[(
            "session_id",
            "A kb session's id (kb_session_start); without it, every pending proposal you made.",
            false,
        )],
    },
    Spec {
        name: "what_we_know",
        title: "What do we know about…",
        description: "Approved knowledge about a topic as a context pack with citations, and \
                      the instruction to answer only from it and to name the gaps.",
        arguments: &[(
            "topic",
            "What to look up, in a few words or a question.",
            true,
        )],
    },
    Spec {
        name: "record_learning",
        title: "Record what we learned",
        description: "How to file what this session established as cited proposals for review, \
                      with what is already known about it attached.",
        arguments: &[
            ("learning", "What was learned, in a sentence or two.", true),
            (
                "source",
                "Where it is written down: a file in the project, or the text itself.",
                false,
            ),
        ],
    },
];

/// Every prompt, with titles and arguments.
pub(crate) fn list() -> ListPromptsResult {
    ListPromptsResult::with_all_items(
        PROMPTS
            .iter()
            .map(|p| {
                let arguments = p
                    .arguments
                    .iter()
                    .map(|(name, description, required)| {
                        PromptArgument::new(*name)
                            .with_description(*description)
                            .with_required(*required)
                    })
                    .collect();
                Prompt::new(p.name, Some(p.description), Some(arguments)).with_title(p.title)
            })
            .collect(),
    )
}

/// The arguments `spec` takes, checked: required ones present, none
/// unknown, none too long.
fn arguments(
    spec: &Spec,
    given: Option<serde_json::Map<String, Value>>,
) -> Result<serde_json::Map<String, Value>, ErrorData> {
    let given = given.unwrap_or_default();
    let invalid = |m: String| ErrorData::invalid_params(m, None);
    for (k, v) in &given {
        if !spec.arguments.iter().any(|(name, ..)| name == k) {
            return Err(invalid(format!(
                "prompt {} takes no argument {:?}; prompts/list names its arguments",
                spec.name,
                vouch_core::ids::truncate_for_message(k)
            )));
        }
        let Some(s) = v.as_str() else {
            return Err(invalid(format!("{}: {k} must be a string", spec.name)));
        };
        if s.len() > MAX_ARGUMENT {
            return Err(invalid(format!(
                "{}: {k} is {} bytes; at most {MAX_ARGUMENT}",
                spec.name,
                s.len()
            )));
        }
    }
    for (name, _, required) in spec.arguments {
        let blank = given
            .get(*name)
            .and_then(Value::as_str)
            .is_none_or(|s| s.trim().is_empty());
        if *required && blank {
            return Err(invalid(format!("{}: {name} is required", spec.name)));
        }
    }
    Ok(given)
}

/// Build prompt `name` for `caller`.
pub(crate) async fn get(
    kb: &Arc<Kb>,
    caller: &Caller,
    name: &str,
    given: Option<serde_json::Map<String, Value>>,
) -> Result<GetPromptResult, ErrorData> {
    let spec = PROMPTS.iter().find(|p| p.name == name).ok_or_else(|| {
        ErrorData::invalid_params(
            format!(
                "unknown prompt {:?}; prompts/list names them all",
                vouch_core::ids::truncate_for_message(name)
            ),
            None,
        )
    })?;
    let args = arguments(spec, given)?;
    let arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::trim);
    let messages = match spec.name {
        "review_session" => review_session(kb, caller, arg("session_id")).await?,
        "what_we_know" => what_we_know(kb, caller, arg("topic").unwrap_or_default()).await?,
        _ => {
            let learning = arg("learning").unwrap_or_default();
            record_learning(kb, caller, learning, arg("source")).await?
        }
    };
    let mut result = GetPromptResult::new(messages);
    result.description = Some(spec.description.to_string());
    Ok(result)
}

/// Call a read the prompt needs; its error is the prompt's.
async fn read(
    kb: &Arc<Kb>,
    caller: &Caller,
    method: &str,
    params: Value,
) -> Result<Value, ErrorData> {
    let Answer { value, .. } = ask(kb, caller, method, params).await;
    value.map_err(super::protocol_error)
}

/// A resource embedded in a message, as JSON.
fn attached(uri: String, value: &Value) -> PromptMessage {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    PromptMessage::new_resource(
        Role::User,
        uri,
        Some("application/json".into()),
        Some(text),
        None,
        None,
        None,
    )
}

async fn review_session(
    kb: &Arc<Kb>,
    caller: &Caller,
    session: Option<&str>,
) -> Result<Vec<PromptMessage>, ErrorData> {
    let (filter, whose) = match session.filter(|s| !s.is_empty()) {
        Some(s) => (json!({ "session_id": s }), format!("session {s}")),
        None => (
            json!({ "proposed_by": caller.actor }),
            format!("you ({})", caller.actor),
        ),
    };
    let params = json!({ "filter": filter, "limit": MAX_PROPOSALS });
    let pending = read(kb, caller, "kb.list_pending", params).await?;
    let pending = pending.as_array().cloned().unwrap_or_default();
    let mut lead = format!(
        "These are the {} proposal(s) filed by {whose} that wait for review{}. For each, say in \
         a line what it would make known and whether its citations support it (quote the \
         evidence). Point out duplicates of approved knowledge and anything that looks like a \
         secret. Do not approve anything: a person decides, on vouch's review page (`vouch ui`) \
         or with `vouch review`; an agent never approves its own proposals.",
        pending.len(),
        if pending.len() == MAX_PROPOSALS {
            format!(" (the first {MAX_PROPOSALS})")
        } else {
            String::new()
        }
    );
    if pending.is_empty() {
        lead = format!("Nothing filed by {whose} waits for review.");
    }
    let mut messages = vec![PromptMessage::new_text(Role::User, lead)];
    for p in &pending {
        let id = p.get("id").and_then(Value::as_str).unwrap_or_default();
        messages.push(attached(uri("proposal", id), p));
    }
    Ok(messages)
}

async fn what_we_know(
    kb: &Arc<Kb>,
    caller: &Caller,
    topic: &str,
) -> Result<Vec<PromptMessage>, ErrorData> {
    let pack = read(kb, caller, "kb.context", json!({ "task": topic })).await?;
    let lead = format!(
        "What do we know about: {topic}\n\nAnswer only from the approved knowledge attached \
         (a context pack from vouch). Cite the id of every claim you use, in brackets. Where \
         the pack does not answer part of the question, say so plainly and name the gap \
         instead of filling it from memory; pending proposals are not knowledge."
    );
    Ok(vec![
        PromptMessage::new_text(Role::User, lead),
        attached(uri("context", topic), &pack),
    ])
}

async fn record_learning(
    kb: &Arc<Kb>,
    caller: &Caller,
    learning: &str,
    source: Option<&str>,
) -> Result<Vec<PromptMessage>, ErrorData> {
    let related = read(
        kb,
        caller,
        "kb.search",
        json!({ "query": learning, "limit": RELATED }),
    )
    .await?;
    let register = match source.filter(|s| !s.is_empty()) {
        Some(s) => format!(
            "The material is: {s}. Register it with kb_register_source_from_path if it is a file \
             in the project, else with kb_register_source (its exact text)."
        ),
        None => "Register the material it rests on (a file with \
                 kb_register_source_from_path, other text with kb_register_source); a claim \
                 without a source cannot be filed."
            .to_string(),
    };
    let lead = format!(
        "Record what we learned: {learning}\n\n1. Check the approved knowledge attached (a \
         search for it): if a claim already says this, propose nothing new; if one is now \
         wrong, say so.\n2. {register}\n3. Quote the exact sentence that supports each claim \
         with kb_register_evidence.\n4. File each claim with kb_propose_claim citing that \
         evidence; one fact per claim, in plain words.\nProposals are pending until a person \
         approves them; tell the person which proposal ids to review."
    );
    let related = format!(
        "Approved knowledge that matches it (kb_search):\n{}",
        serde_json::to_string_pretty(&related).unwrap_or_default()
    );
    Ok(vec![
        PromptMessage::new_text(Role::User, lead),
        PromptMessage::new_text(Role::User, related),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Option<serde_json::Map<String, Value>> {
        v.as_object().cloned()
    }

    #[test]
    fn arguments_are_checked_against_the_prompt() {
        let know = &PROMPTS[1];
        assert!(arguments(know, args(json!({"topic": "releases"}))).is_ok());
        for bad in [
            json!({}),
            json!({"topic": "  "}),
            json!({"topic": 3}),
            json!({"topic": "x", "other": "y"}),
            json!({"topic": "x".repeat(MAX_ARGUMENT + 1)}),
        ] {
            let e = arguments(know, args(bad.clone())).unwrap_err();
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
        }
        // An optional argument may be left out.
        assert!(arguments(&PROMPTS[0], None).is_ok());
    }

    #[test]
    fn every_prompt_is_listed_with_its_arguments() {
        let listed = list().prompts;
        assert_eq!(listed.len(), PROMPTS.len());
        let know = listed.iter().find(|p| p.name == "what_we_know").unwrap();
        let topic = &know.arguments.as_ref().unwrap()[0];
        assert_eq!((topic.name.as_str(), topic.required), ("topic", Some(true)));
    }
}
