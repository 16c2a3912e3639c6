//! MCP resources: knowledge a host can attach to a conversation the way it
//! attaches a file. `vouch://claim/{id}`, a page, entity, relation, evidence
//! or proposal, a source with its text, a context pack for a task, an
//! object's provenance (`kb.why`), the status and the gate's health.
//!
//! Every read goes through the registry's read methods (`kb.read_claim`,
//! `kb.context`, …) as a tool call would, so a resource says exactly what
//! the matching tool says, with the same limits and the same notes when it
//! is partial. Nothing here writes.

use super::{Answer, ask};
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use serde_json::{Value, json};
use std::sync::Arc;
use vouch_core::{Caller, Kb};

/// The scheme of every resource this server serves.
pub(crate) const SCHEME: &str = "vouch://";

/// Resources per `resources/list` page.
pub(crate) const PAGE: usize = 100;

/// The longest URI read or subscribed to: a context pack's task is the
/// only long part, and `kb.context` bounds it again.
const MAX_URI: usize = 8 * 1024;

const JSON: &str = "application/json";

/// One kind of resource: its URI's first segment, what reads it and, for
/// approved knowledge, what lists it.
struct Kind {
    segment: &'static str,
    title: &'static str,
    description: &'static str,
    /// The read method and its one param.
    read: (&'static str, &'static str),
    /// The list method, for the kinds `resources/list` pages through.
    list: Option<&'static str>,
}

const KINDS: &[Kind] = &[
    Kind {
        segment: "claim",
        title: "Claim",
        description: "An approved claim with its status and citations (kb.read_claim). The id of \
                      a pending proposal's claim reads as not found until it is approved; \
                      subscribe to it to hear when it is.",
        read: ("kb.read_claim", "id"),
        list: Some("kb.list_claims"),
    },
    Kind {
        segment: "page",
        title: "Page",
        description: "An approved markdown page with its body (kb.read_page).",
        read: ("kb.read_page", "id"),
        list: Some("kb.list_pages"),
    },
    Kind {
        segment: "entity",
        title: "Entity",
        description: "An approved named entity (kb.read_entity).",
        read: ("kb.read_entity", "id"),
        list: Some("kb.list_entities"),
    },
    Kind {
        segment: "relation",
        title: "Relation",
        description: "An approved typed edge between two objects (kb.read_relation).",
        read: ("kb.read_relation", "id"),
        list: Some("kb.list_relations"),
    },
    Kind {
        segment: "source",
        title: "Source",
        description: "A registered source: its metadata (kb.read_source), then its text. A \
                      redacted source's text is gone and the resource says so.",
        read: ("kb.read_source", "id"),
        list: None,
    },
    Kind {
        segment: "evidence",
        title: "Evidence",
        description: "A quoted span of a source that claims cite (kb.read_evidence).",
        read: ("kb.read_evidence", "id"),
        list: None,
    },
    Kind {
        segment: "proposal",
        title: "Proposal",
        description: "A proposal awaiting review or decided, with what it cites \
                      (kb.read_proposal). Pending proposals are not knowledge.",
        read: ("kb.read_proposal", "id"),
        list: None,
    },
    Kind {
        segment: "why",
        title: "Provenance",
        description: "How an object came to be: proposal, proposer, approver, citations with \
                      their quotes, the supersession chain, every audit event (kb.why).",
        read: ("kb.why", "id"),
        list: None,
    },
    Kind {
        segment: "context",
        title: "Context pack",
        description: "Current approved knowledge for a task, with citations, within a budget \
                      (kb.context): the pack's text as markdown, then the whole pack as JSON. \
                      The task is percent-encoded.",
        read: ("kb.context", "task"),
        list: None,
    },
];

/// Resources with no parameter: listed first.
const FIXED: &[(&str, &str, &str, &str)] = &[
    (
        "vouch://status",
        "status",
        "Knowledge base status",
        "Counts, pending proposals, the index and its vectors (kb.status).",
    ),
    (
        "vouch://gate/stats",
        "gate-stats",
        "The gate's health",
        "Queue size and age, proposals and decisions by agent and reviewer, approval rates, \
         median time to decision (kb.gate_stats).",
    ),
];

/// What a `vouch://` URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The registry method that reads it.
    method: &'static str,
    /// Its params.
    params: Value,
    /// A source's text follows its metadata.
    source: Option<String>,
    /// A context pack's text comes first, as markdown.
    pack: bool,
}

/// Parse a resource URI; the error says what URIs look like.
pub(crate) fn parse(uri: &str) -> Result<Target, ErrorData> {
    if uri.len() > MAX_URI {
        return Err(ErrorData::invalid_params(
            format!("resource URI is {} bytes; at most {MAX_URI}", uri.len()),
            None,
        ));
    }
    let unknown = || {
        ErrorData::invalid_params(
            format!(
                "unknown resource {:?}; resources/templates/list names the URIs this server \
                 reads (vouch://claim/{{id}}, vouch://context/{{task}}, …)",
                vouch_core::ids::truncate_for_message(uri)
            ),
            None,
        )
    };
    let rest = uri.strip_prefix(SCHEME).ok_or_else(unknown)?;
    match rest {
        "status" => return Ok(fixed("kb.status")),
        "gate/stats" => return Ok(fixed("kb.gate_stats")),
        _ => {}
    }
    let (segment, arg) = rest.split_once('/').ok_or_else(unknown)?;
    let kind = KINDS
        .iter()
        .find(|k| k.segment == segment)
        .ok_or_else(unknown)?;
    let arg = percent_decode(arg).ok_or_else(|| {
        ErrorData::invalid_params(
            format!("{segment}: the rest of the URI is not percent-encoded UTF-8"),
            None,
        )
    })?;
    if arg.is_empty() {
        return Err(ErrorData::invalid_params(
            format!("{uri}: names no {}", kind.read.1),
            None,
        ));
    }
    let (method, param) = kind.read;
    Ok(Target {
        method,
        params: json!({ param: arg }),
        source: (segment == "source").then(|| arg.clone()),
        pack: segment == "context",
    })
}

fn fixed(method: &'static str) -> Target {
    Target {
        method,
        params: json!({}),
        source: None,
        pack: false,
    }
}

/// `%XX` escapes decoded; anything else is taken as it is.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The URI of an object of kind `segment` (`claim`, `page`, …).
pub(crate) fn uri(segment: &str, id: &str) -> String {
    format!("{SCHEME}{segment}/{}", crate::ui::html::url_id(id))
}

/// Every template, with titles and MIME types.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(
        KINDS
            .iter()
            .map(|k| {
                ResourceTemplate::new(format!("{SCHEME}{}/{{{}}}", k.segment, k.read.1), k.segment)
                    .with_title(k.title)
                    .with_description(k.description)
                    .with_mime_type(JSON)
            })
            .collect(),
    )
}

/// Where a `resources/list` page starts: a kind of approved knowledge and
/// an offset into it. The cursor is `kind:offset`.
fn start(cursor: Option<&str>) -> Result<(usize, usize), ErrorData> {
    let Some(cursor) = cursor else {
        return Ok((0, 0));
    };
    let bad = || {
        ErrorData::invalid_params(
            format!(
                "cursor {:?} is not one this server gave; start again without one",
                vouch_core::ids::truncate_for_message(cursor)
            ),
            None,
        )
    };
    let (segment, offset) = cursor.split_once(':').ok_or_else(bad)?;
    let kind = listed()
        .position(|k| k.segment == segment)
        .ok_or_else(bad)?;
    Ok((kind, offset.parse().map_err(|_| bad())?))
}

fn listed() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().filter(|k| k.list.is_some())
}

/// One page of approved knowledge: the fixed resources, then claims,
/// pages, entities and relations, each sorted by id.
pub(crate) async fn list(
    kb: &Arc<Kb>,
    caller: &Caller,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let (mut kind, mut offset) = start(cursor)?;
    let mut resources: Vec<Resource> = Vec::new();
    if cursor.is_none() {
        for (uri, name, title, description) in FIXED {
            resources.push(
                Resource::new(*uri, *name)
                    .with_title(*title)
                    .with_description(*description)
                    .with_mime_type(JSON),
            );
        }
    }
    let kinds: Vec<&Kind> = listed().collect();
    while let Some(k) = kinds.get(kind) {
        let want = PAGE - resources.len().min(PAGE);
        if want == 0 {
            // Full, and kinds still to list: the next page starts here.
            return Ok(ListResourcesResult {
                next_cursor: Some(format!("{}:{offset}", k.segment)),
                ..ListResourcesResult::with_all_items(resources)
            });
        }
        // One more than fits, to know whether this kind goes on.
        let params = json!({ "limit": want + 1, "offset": offset });
        let page = match ask(kb, caller, k.list.unwrap_or_default(), params).await {
            Answer {
                value: Ok(Value::Array(items)),
                ..
            } => items,
            Answer { value, .. } => return Err(super::protocol_error(value.err().flatten())),
        };
        let more = page.len() > want;
        for item in page.iter().take(want) {
            resources.push(listing(k, item));
        }
        if more {
            offset += want;
            return Ok(ListResourcesResult {
                next_cursor: Some(format!("{}:{offset}", k.segment)),
                ..ListResourcesResult::with_all_items(resources)
            });
        }
        kind += 1;
        offset = 0;
    }
    Ok(ListResourcesResult::with_all_items(resources))
}

/// A listed object as a resource: its id as the name, a short title, its
/// status in the description.
fn listing(kind: &Kind, item: &Value) -> Resource {
    let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
    let id = field("id");
    let title = match kind.segment {
        "claim" => field("text"),
        "page" => field("title"),
        "entity" => field("name"),
        _ => "",
    };
    let title = if title.is_empty() {
        match kind.segment {
            "relation" => format!(
                "{} {} {}",
                field("source"),
                field("relation"),
                field("target")
            ),
            _ => id.to_string(),
        }
    } else {
        short(title)
    };
    let status = field("status");
    let description = if status.is_empty() {
        kind.title.to_string()
    } else {
        format!("{} ({status})", kind.title)
    };
    Resource::new(uri(kind.segment, id), id)
        .with_title(title)
        .with_description(description)
        .with_mime_type(JSON)
}

/// At most 80 characters, on one line.
fn short(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(79) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// Read one resource. An object that does not exist is MCP's "resource not
/// found"; a domain error (a bad id) is invalid params, its message the
/// tool's. What makes an answer partial comes as a last text content (the
/// model reads it) and in `_meta` (the host does).
pub(crate) async fn read(
    kb: &Arc<Kb>,
    caller: &Caller,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let target = parse(uri)?;
    let Answer { value, meta } = ask(kb, caller, target.method, target.params.clone()).await;
    let value = value.map_err(super::protocol_error)?;
    if value.is_null() {
        return Err(ErrorData::resource_not_found(
            format!("{uri}: no such object"),
            None,
        ));
    }
    let mut contents = Vec::new();
    if target.pack
        && let Some(text) = value.get("text").and_then(Value::as_str)
    {
        contents.push(ResourceContents::text(text, uri).with_mime_type("text/markdown"));
    }
    let json = serde_json::to_string_pretty(&value).unwrap_or_default();
    contents.push(ResourceContents::text(json, uri).with_mime_type(JSON));
    let mut notes = meta.unwrap_or_default();
    if let Some(id) = &target.source {
        contents.push(source_text(kb, id, &value, uri, &mut notes).await);
    }
    let mut result = ReadResourceResult::new(contents)
        // Knowledge changes when a person decides: never fresh for long,
        // and never shared between users (a reviewer's view may differ).
        .with_ttl_ms(0)
        .with_cache_scope(rmcp::model::CacheScope::Private);
    if !notes.is_empty() {
        result.contents.push(
            ResourceContents::text(super::notes_text(&notes), uri).with_mime_type("text/plain"),
        );
        result.meta = Some(rmcp::model::MetaObject(notes));
    }
    Ok(result)
}

/// A source's text, or a line saying why there is none (redacted, missing,
/// not UTF-8). Content that no longer hashes to the id is never served.
async fn source_text(
    kb: &Arc<Kb>,
    id: &str,
    meta: &Value,
    uri: &str,
    notes: &mut serde_json::Map<String, Value>,
) -> ResourceContents {
    let media = meta
        .get("media_type")
        .and_then(Value::as_str)
        .unwrap_or("text/plain")
        .to_string();
    let redacted = meta
        .get(vouch_core::review::gate::redact::REDACTED_KEY)
        .cloned();
    let (kb, id2) = (kb.clone(), id.to_string());
    let read = tokio::task::spawn_blocking(move || kb.source_content(&id2))
        .await
        .unwrap_or_else(|_| Err(vouch_core::Error::internal("reading the source panicked")));
    let why = match (read, redacted) {
        (_, Some(mark)) => {
            notes.insert("partial".into(), true.into());
            notes.insert("redacted".into(), mark);
            format!("source {id}'s content was redacted; only its metadata is kept")
        }
        (Ok(Some(bytes)), None) => match String::from_utf8(bytes) {
            Ok(text) => return ResourceContents::text(text, uri).with_mime_type(media),
            Err(e) => format!(
                "source {id} is {} bytes that are not UTF-8 text; its text is not shown",
                e.as_bytes().len()
            ),
        },
        (Ok(None), None) => format!("source {id}'s content is missing from .vouch/sources/"),
        (Err(e), None) => e.message,
    };
    notes.insert("partial".into(), true.into());
    ResourceContents::text(why, uri).with_mime_type("text/plain")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn uris_name_their_method_and_decode_their_argument() {
        let t = parse("vouch://claim/clm_01ABC").unwrap();
        assert_eq!(
            (t.method, t.params),
            ("kb.read_claim", json!({"id": "clm_01ABC"}))
        );
        let t = parse("vouch://context/how%20do%20we%20release%3F").unwrap();
        assert_eq!(t.params, json!({"task": "how do we release?"}));
        assert!(t.pack);
        assert_eq!(parse("vouch://gate/stats").unwrap().method, "kb.gate_stats");
        let src = "a".repeat(64);
        assert_eq!(parse(&uri("source", &src)).unwrap().source, Some(src));
        // An id that would add a segment is one segment, encoded and decoded.
        let odd = "../x y";
        let t = parse(&uri("page", odd)).unwrap();
        assert_eq!(t.params, json!({"id": odd}));
    }

    #[test]
    fn unknown_or_malformed_uris_are_invalid_params() {
        for bad in [
            "file:///etc/passwd",
            "vouch://claims/x",
            "vouch://claim/",
            "vouch://claim",
            "vouch://context/%ZZ",
            "vouch://context/%FF",
            "vouch://context/%+1",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad}");
        }
        let long = format!("vouch://context/{}", "a".repeat(MAX_URI));
        assert!(parse(&long).unwrap_err().message.contains("at most"));
    }

    #[test]
    fn cursors_are_checked() {
        assert_eq!(start(None).unwrap(), (0, 0));
        assert_eq!(start(Some("page:200")).unwrap(), (1, 200));
        for bad in ["", "page", "source:1", "claim:-1", "claim:x"] {
            assert!(start(Some(bad)).is_err(), "{bad}");
        }
    }

    /// A KB holding `n` approved claims, and a caller that reads it.
    pub(crate) fn kb_with_claims(n: usize) -> (tempfile::TempDir, Arc<Kb>, Caller) {
        use vouch_core::Transport;
        let dir = tempfile::tempdir().unwrap();
        Kb::init(dir.path(), "t", None).unwrap();
        let clock = Arc::new(vouch_core::clock::SystemClock::default());
        let kb = Kb::open(&dir.path().join(".vouch"), clock).unwrap();
        let agent = Caller::new("agent", Transport::Jsonl);
        let call = |who: &Caller, m: &str, p: Value| {
            vouch_core::methods::dispatch(&kb, who, m, p).unwrap()
        };
        let src = call(
            &agent,
            "kb.register_source",
            json!({"content": "notes", "locator": "n"}),
        );
        let ids: Vec<Value> = (0..n)
            .map(|i| {
                let text = format!("Fact number {i} holds.");
                call(
                    &agent,
                    "kb.propose_claim",
                    json!({"text": text, "evidence": [src["id"]]}),
                )["proposal_id"]
                    .clone()
            })
            .collect();
        let person = Caller::new("alice", Transport::Cli);
        call(&person, "kb.approve", json!({"proposal_id": ids}));
        (dir, Arc::new(kb), agent)
    }

    /// Every URI `resources/list` gives, page by page; the number of pages.
    async fn list_all(kb: &Arc<Kb>, agent: &Caller) -> (Vec<String>, usize) {
        let (mut uris, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
        loop {
            let page = list(kb, agent, cursor.as_deref()).await.unwrap();
            assert!(page.resources.len() <= PAGE);
            uris.extend(page.resources.into_iter().map(|r| r.uri));
            pages += 1;
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return (uris, pages),
            }
        }
    }

    /// A page that one kind fills exactly still leads on to the next kind.
    #[tokio::test]
    async fn a_page_filled_by_one_kind_goes_on_to_the_next() {
        use vouch_core::Transport;
        let (_dir, kb, agent) = kb_with_claims(PAGE - 2);
        let call = |who: &Caller, m: &str, p: Value| {
            vouch_core::methods::dispatch(&kb, who, m, p).unwrap()
        };
        let page = call(
            &agent,
            "kb.propose_page",
            json!({"title": "Deploys", "body": "How."}),
        );
        let person = Caller::new("alice", Transport::Cli);
        call(
            &person,
            "kb.approve",
            json!({"proposal_id": page["proposal_id"]}),
        );
        let (uris, pages) = list_all(&kb, &agent).await;
        assert_eq!(pages, 2);
        assert_eq!(uris.len(), PAGE + 1);
        assert!(
            uris.contains(&"vouch://page/deploys".to_string()),
            "{uris:?}"
        );
    }

    #[tokio::test]
    async fn the_list_pages_through_every_approved_object_once() {
        let (_dir, kb, agent) = kb_with_claims(PAGE + 30);
        let (mut uris, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
        loop {
            let page = list(&kb, &agent, cursor.as_deref()).await.unwrap();
            assert!(page.resources.len() <= PAGE);
            uris.extend(page.resources.into_iter().map(|r| r.uri));
            pages += 1;
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(pages, 2);
        assert_eq!(&uris[..2], ["vouch://status", "vouch://gate/stats"]);
        let claims: Vec<&String> = uris
            .iter()
            .filter(|u| u.starts_with("vouch://claim/"))
            .collect();
        assert_eq!(claims.len(), PAGE + 30);
        let mut sorted = claims.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, claims, "sorted by id, each once");
        // Every listed claim reads.
        let read = read(&kb, &agent, claims[PAGE]).await.unwrap();
        assert!(read.meta.is_none(), "a current read has nothing to note");
    }

    #[test]
    fn titles_are_one_short_line() {
        assert_eq!(short("a\n b"), "a b");
        let long = "x".repeat(200);
        assert_eq!(short(&long).chars().count(), 80);
    }
}
