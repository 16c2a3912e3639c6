//! The official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, pinned in
//! `tests/mcp-ts-client/package.json` and its lockfile) — the client most
//! MCP hosts are built on — against the real binary, over stdio and over
//! streamable HTTP (`/mcp` with a bearer token). The driver is
//! `tests/mcp-ts-client/client.mjs`; this test prepares a KB holding one of
//! every kind of object, runs it and checks what it printed.
//!
//! What it proves: the SDK accepts our tool list (its own types of the
//! protocol parse every tool), every schema compiles under a strict draft
//! 2020-12 validator with no unknown keyword or format and no boolean
//! subschema, every read-only tool answers with a `structuredContent` that
//! fits its `outputSchema`, titles and annotations match the registry, a
//! propose → (reviewer) approve → search flow works across both transports,
//! and nothing the SDK or the validator logs (the warnings a host shows).
//!
//! Which Node runs it: `VOUCH_NODE` when set (`scripts/test.sh` sets it
//! after `npm ci` in tests/mcp-ts-client), otherwise `node` on PATH. The
//! packages must be installed in tests/mcp-ts-client/node_modules, or the
//! test FAILS saying to run `scripts/test.sh`. It never skips.

use crate::common::server::{HttpServer, http_server};
use crate::common::{Project, entity_relation_and_page};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use vouch_core::methods::{Effect, REGISTRY};

const CLIENT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/mcp-ts-client");
const DEADLINE: Duration = Duration::from_secs(200);
const AGENT: &str = "ts-agent";
const REVIEWER: &str = "ts-reviewer";
const TOKEN: &str = "tok-ts-reviewer-0123456789abcdef0123456789abcdef";

/// The SDK version pinned in package.json.
fn pinned_sdk_version() -> String {
    let text = std::fs::read_to_string(Path::new(CLIENT_DIR).join("package.json"))
        .expect("read package.json");
    let v: Value = serde_json::from_str(&text).expect("package.json is JSON");
    v["dependencies"]["@modelcontextprotocol/sdk"]
        .as_str()
        .expect("package.json pins @modelcontextprotocol/sdk")
        .to_string()
}

fn node() -> String {
    const HOW: &str = "run `scripts/test.sh` (it runs `npm ci` in tests/mcp-ts-client and points \
                       VOUCH_NODE at node), or `npm ci` there yourself";
    let node = std::env::var("VOUCH_NODE")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "node".to_string());
    match Command::new(&node).arg("--version").output() {
        Ok(o) if o.status.success() => {}
        _ => panic!("Node.js ({node}) cannot run; this test does not skip; {HOW}"),
    }
    let sdk = Path::new(CLIENT_DIR).join("node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.is_file(),
        "the MCP TypeScript SDK is not installed ({} missing); {HOW}",
        sdk.display()
    );
    node
}

fn run_client(node: &str, p: &Project, http: &str, fixture: &Path) -> crate::common::ClientRun {
    let mut cmd = Command::new(node);
    // Only what the client and the server it starts need: no VOUCH_* or
    // tokens from the shell running the tests.
    cmd.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    cmd.env("HOME", p.root())
        .current_dir(CLIENT_DIR)
        .arg("client.mjs")
        .arg("--vouch")
        .arg(env!("CARGO_BIN_EXE_vouch"))
        .arg("--kb")
        .arg(p.root())
        .args(["--agent", AGENT, "--http", http, "--token", TOKEN])
        .arg("--fixture")
        .arg(fixture)
        .arg("--person")
        .arg(p.person.path());
    crate::common::run_client(cmd, DEADLINE)
}

/// A KB with one approved object of every kind, a session, a pending
/// proposal, a knowledge folder and a bundle: every read tool has something
/// real to return.
pub(crate) fn fixture(p: &Project) -> (Value, PathBuf) {
    let text = "Deploys need the staging credentials loaded first.\n\
                Rollbacks are announced in the release channel.\n";
    let src = p.source(text);
    let quote = p.ok(
        "agent",
        &[
            "quote",
            &src,
            "Deploys need the staging credentials loaded first.",
        ],
    );
    let evidence = quote["evidence_id"]
        .as_str()
        .or_else(|| quote["id"].as_str())
        .unwrap_or_else(|| panic!("quote gave no evidence id: {quote}"))
        .to_string();
    let approve = |v: Value| {
        let id = v["proposal_id"].as_str().expect("proposal_id").to_string();
        p.ok("alice", &["approve", &id])
    };
    let claim = approve(p.ok(
        "agent",
        &[
            "propose-claim",
            "Deploys need the staging credentials loaded first.",
            "-e",
            &evidence,
        ],
    ))["object_id"]
        .as_str()
        .expect("claim id")
        .to_string();
    let (entity, relation, page) = entity_relation_and_page(p, &claim, &src);
    // A lifecycle change for kb_lifecycle_changes to list.
    p.ok("alice", &["confirm", &claim]);
    let session = p.ok("agent", &["session", "start", "--task", "check deploys"]);
    let session = session["session_id"]
        .as_str()
        .or_else(|| session["id"].as_str())
        .unwrap_or_else(|| panic!("no session id: {session}"))
        .to_string();
    let (proposal, _) = p.propose("Rollbacks are announced in the release channel.", &src);
    p.ok("alice", &["knowledge", "export", "knowledge"]);
    p.ok("alice", &["export", "kb.tar.gz"]);

    let fixture = json!({
        "source": src,
        "evidence": evidence,
        "claim": claim,
        "entity": entity,
        "relation": relation,
        "page": page,
        "session": session,
        "proposal": proposal,
        "knowledge_dir": "knowledge",
        "bundle": "kb.tar.gz",
        "query": "staging credentials",
        "new_claim": "Rollbacks are announced in the release channel.",
        "new_quote": "Rollbacks are announced in the release channel.",
        "new_query": "rollbacks announced",
        "linked_claim": "Deploys are announced before they start.",
        "second_linked_claim": "Deploys are paused during incidents.",
    });
    let path = p.root().join("fixture.json");
    std::fs::write(&path, fixture.to_string()).expect("write fixture");
    (fixture, path)
}

/// `vouch serve --transport http` on `p` with one token, `reviewer`'s, who
/// decides over HTTP because the person named it in their own config
/// (outside the project).
pub(crate) fn reviewers_server(p: &Project, reviewer: &str, token: &str) -> HttpServer {
    p.reviewers(&[reviewer]);
    http_server(
        p.root(),
        &[(
            "XDG_CONFIG_HOME",
            p.person.path().to_str().expect("utf-8 path"),
        )],
        &["--token", &format!("{reviewer}={token}")],
    )
}

#[test]
fn official_typescript_sdk_drives_vouch_over_stdio_and_http() {
    let node = node();
    // The client starts its own stdio server, on the wall clock: so is
    // this project's, or its changes would be months before that server's
    // "recent".
    let p = Project::real_clock();
    let (fixture, fixture_path) = fixture(&p);
    let server = reviewers_server(&p, REVIEWER, TOKEN);
    let http = format!("http://127.0.0.1:{}/mcp", server.port);
    // The person's own config says where their review pages are: this
    // server's. Proposals link there.
    let pages = format!("http://127.0.0.1:{}", server.port);
    p.person_config(&format!(
        "review:\n  reviewers: [{REVIEWER}]\n  url: {pages}\n"
    ));

    let run = run_client(&node, &p, &http, &fixture_path);
    assert_eq!(
        run.code,
        Some(0),
        "the TypeScript MCP client failed\nstderr:\n{}\nstdout:\n{}",
        run.stderr,
        run.stdout
    );
    let out: Value = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "client stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    });
    let ctx = format!("client output:\n{out:#}\nstderr:\n{}", run.stderr);

    // The SDK we meant to test, speaking its newest protocol version.
    assert_eq!(out["sdk"]["version"], json!(pinned_sdk_version()), "{ctx}");
    assert_eq!(
        out["initialize"]["protocol_version"], out["spec_version"],
        "{ctx}"
    );
    assert_eq!(out["initialize"]["server"]["name"], json!("vouch"), "{ctx}");
    assert_eq!(out["initialize"]["tools_capability"], json!(true), "{ctx}");

    // Nothing logged: no "unknown format" or any other warning a host shows.
    assert_eq!(out["warnings"], json!([]), "{ctx}");
    // Every schema compiles strictly, with no boolean subschema.
    assert_eq!(out["schema_problems"], json!([]), "{ctx}");

    // tools/list is the registry, with titles and every hint as it says.
    let tools = out["tools"].as_object().expect("tools");
    let listed: BTreeSet<&str> = tools.keys().map(String::as_str).collect();
    let names: Vec<String> = REGISTRY.iter().map(|m| m.tool_name()).collect();
    let expected: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(listed, expected, "{ctx}");
    for m in REGISTRY {
        let t = &tools[&m.tool_name()];
        assert_eq!(t["title"], json!(m.title), "{} title", m.name);
        let a = &t["annotations"];
        assert_eq!(a["title"], json!(m.title), "{}", m.name);
        assert_eq!(
            a["readOnlyHint"],
            json!(m.effect == Effect::Read),
            "{}",
            m.name
        );
        assert_eq!(a["destructiveHint"], json!(m.destructive), "{}", m.name);
        assert_eq!(a["idempotentHint"], json!(m.idempotent), "{}", m.name);
        assert_eq!(a["openWorldHint"], json!(false), "{}", m.name);
    }
    // Spot checks that the registry's marks mean what they say.
    assert_eq!(
        tools["kb_search"]["annotations"]["readOnlyHint"],
        json!(true)
    );
    assert_eq!(
        tools["kb_propose_claim"]["annotations"]["idempotentHint"],
        json!(false)
    );
    assert_eq!(
        tools["kb_export"]["annotations"]["destructiveHint"],
        json!(true)
    );

    // Every read-only tool was called and gave a real (non-empty) answer,
    // and every one with an output schema was validated against it.
    let reads: BTreeSet<String> = REGISTRY
        .iter()
        .filter(|m| m.effect == Effect::Read)
        .map(|m| m.tool_name())
        .collect();
    let called = out["read_calls"].as_object().expect("read_calls");
    let called_names: BTreeSet<String> = called.keys().cloned().collect();
    assert_eq!(called_names, reads, "{ctx}");
    for (tool, non_empty) in called {
        assert_eq!(non_empty, &json!(true), "{tool} returned nothing: {ctx}");
    }
    let checked: BTreeSet<String> = out["output_checked"]
        .as_array()
        .expect("output_checked")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let with_schema: BTreeSet<String> = REGISTRY
        .iter()
        .filter(|m| m.effect == Effect::Read && vouch::mcp::output_schema(m).is_some())
        .map(|m| m.tool_name())
        .chain(["kb_propose_claim", "kb_approve"].map(String::from))
        .collect();
    assert!(
        with_schema.is_subset(&checked),
        "not validated: {:?}\n{ctx}",
        with_schema.difference(&checked).collect::<Vec<_>>()
    );

    // propose (stdio, agent) → its own approval refused → approve (HTTP,
    // reviewer) → search finds it on both transports, not before.
    let claim_id = out["proposal"]["claim_id"].as_str().expect("claim_id");
    assert!(
        out["self_approve"]["text"]
            .as_str()
            .unwrap()
            .contains("review_gate"),
        "{ctx}"
    );
    assert!(
        !out["search_before"]
            .as_array()
            .unwrap()
            .contains(&json!(claim_id)),
        "{ctx}"
    );
    assert_eq!(out["approve"]["ok"], json!(true), "{ctx}");
    assert_eq!(out["http"]["session"], json!(true), "{ctx}");
    let http_tools: BTreeSet<&str> = out["http"]["tool_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(http_tools, expected, "{ctx}");
    assert_eq!(
        out["http"]["protocol_version"], out["spec_version"],
        "{ctx}"
    );
    for found in [&out["http"]["search_after"], &out["search_after"]] {
        assert!(
            found.as_array().unwrap().contains(&json!(claim_id)),
            "{ctx}"
        );
    }

    // Resources and prompts, on both transports.
    for (transport, r) in [
        ("stdio", &out["resources"]),
        ("http", &out["http"]["resources"]),
    ] {
        check_resources_and_prompts(r, &fixture, &format!("{transport}: {ctx}"));
    }
    // Both subscribers heard of the approval: the agent of the claim its
    // proposal made (over stdio), the reviewer of the proposal it decided
    // (over HTTP); the claim now reads as approved knowledge.
    // The agent's review prompt names its one pending proposal and attaches it.
    let review = &out["review_prompt"];
    let lead = review[0]["text"].as_str().unwrap();
    assert!(
        lead.contains(&format!("1 proposal(s) filed by you ({AGENT})")),
        "{ctx}"
    );
    assert!(lead.contains("Do not approve"), "{ctx}");
    let proposal_id = out["proposal"]["id"].as_str().unwrap();
    assert_eq!(
        review[1]["uri"],
        json!(format!("vouch://proposal/{proposal_id}")),
        "{ctx}"
    );
    assert_eq!(review.as_array().unwrap().len(), 2, "{ctx}");
    assert_eq!(out["updates"]["stdio_claim"], json!(true), "{ctx}");
    assert_eq!(out["updates"]["http_proposal"], json!(true), "{ctx}");
    let read: Value = serde_json::from_str(
        out["new_claim_read"][0]
            .as_str()
            .expect("the new claim reads"),
    )
    .expect("a claim resource is JSON");
    assert_eq!(read["id"], json!(claim_id), "{ctx}");
    assert_eq!(read["approved_by"], json!(REVIEWER), "{ctx}");

    // The approval link: the proposal carries its review page, a host that
    // opens URLs was asked once (not again while that ask was open), in
    // URL mode, and its "accept" decided nothing.
    let e = &out["elicitation"];
    let proposal_id = e["proposal"]["proposal_id"].as_str().unwrap();
    let url = format!("{pages}/ui/proposal/{proposal_id}");
    assert_eq!(e["proposal"]["review_url"], json!(url), "{ctx}");
    assert!(e["second"]["review_url"].is_string(), "{ctx}");
    let asked = e["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{ctx}");
    assert_eq!(asked[0]["mode"], json!("url"), "{ctx}");
    assert_eq!(asked[0]["url"], json!(url), "{ctx}");
    assert_eq!(asked[0]["elicitationId"], json!(proposal_id), "{ctx}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("Nothing is approved by answering here"),
        "{ctx}"
    );
    assert_eq!(e["still_pending"], json!("pending"), "{ctx}");

    // On disk: approved by the reviewer the token names, proposed by the
    // stdio agent; the audit chain verifies.
    let claim = p.call("tester", "kb.read_claim", json!({"id": claim_id}));
    let claim = claim.json();
    assert_eq!(claim["approved_by"], json!(REVIEWER), "{claim}");
    let verify = p.call("tester", "kb.audit_verify", json!({}));
    assert_eq!(verify.json()["ok"], json!(true), "{}", verify.stdout);
    server.terminate();
}

/// What `resourcesAndPrompts` in client.mjs saw: every template with a
/// title and MIME type, the fixture's approved objects listed, every kind
/// read with the fixture's ids (a source with its text, a context pack as
/// markdown and JSON), MCP's error codes for a missing object and a foreign
/// or traversing URI, and the three prompts with what they attach.
pub(crate) fn check_resources_and_prompts(r: &Value, f: &Value, ctx: &str) {
    assert_eq!(
        r["capabilities"]["resources"]["subscribe"],
        json!(true),
        "{ctx}"
    );
    assert!(r["capabilities"]["prompts"].is_object(), "{ctx}");
    let templates: BTreeSet<&str> = r["templates"]
        .as_array()
        .expect("templates")
        .iter()
        .map(|t| {
            assert!(t["title"].is_string(), "{t} {ctx}");
            assert_eq!(t["mime_type"], json!("application/json"), "{ctx}");
            t["uri_template"].as_str().unwrap()
        })
        .collect();
    for want in [
        "vouch://claim/{id}",
        "vouch://page/{id}",
        "vouch://entity/{id}",
        "vouch://source/{id}",
        "vouch://context/{task}",
        "vouch://why/{id}",
    ] {
        assert!(templates.contains(want), "{want} missing: {ctx}");
    }
    let listed: BTreeSet<&str> = r["listed"]
        .as_array()
        .expect("listed")
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    for (kind, key) in [
        ("claim", "claim"),
        ("page", "page"),
        ("entity", "entity"),
        ("relation", "relation"),
    ] {
        let uri = format!("vouch://{kind}/{}", f[key].as_str().unwrap());
        assert!(listed.contains(uri.as_str()), "{uri} not listed: {ctx}");
    }
    assert!(listed.contains("vouch://gate/stats"), "{ctx}");
    // Pending proposals are not knowledge: never listed.
    assert!(
        !listed.iter().any(|u| u.starts_with("vouch://proposal/")),
        "{ctx}"
    );

    let json_of = |kind: &str, at: usize| -> Value {
        let c = &r["reads"][kind][at];
        assert_eq!(c["mime_type"], json!("application/json"), "{kind}: {ctx}");
        serde_json::from_str(c["text"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{kind}: {e} {ctx}"))
    };
    assert_eq!(json_of("claim", 0)["id"], f["claim"], "{ctx}");
    assert_eq!(json_of("entity", 0)["id"], f["entity"], "{ctx}");
    assert_eq!(json_of("proposal", 0)["id"], f["proposal"], "{ctx}");
    assert!(json_of("page", 0)["body"].is_string(), "{ctx}");
    assert!(json_of("why", 0).is_object(), "{ctx}");
    assert!(json_of("gate", 0)["queue"].is_object(), "{ctx}");
    // A source: its metadata, then its text, byte for byte what was registered.
    assert_eq!(json_of("source", 0)["id"], f["source"], "{ctx}");
    let text = r["reads"]["source"][1]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Deploys need the staging credentials"),
        "{ctx}"
    );
    // A context pack: its text as markdown, citing the claim, then the JSON.
    let pack = &r["reads"]["context"];
    assert_eq!(pack[0]["mime_type"], json!("text/markdown"), "{ctx}");
    assert!(
        pack[0]["text"]
            .as_str()
            .unwrap()
            .contains(f["claim"].as_str().unwrap()),
        "{ctx}"
    );
    assert_eq!(pack[1]["mime_type"], json!("application/json"), "{ctx}");

    assert_eq!(r["not_found"]["code"], json!(-32002), "{ctx}");
    assert_eq!(r["unknown"]["code"], json!(-32602), "{ctx}");
    assert_eq!(r["traversal"]["code"], json!(-32602), "{ctx}");
    assert_eq!(r["prompt_missing_arg"]["code"], json!(-32602), "{ctx}");

    let prompts: BTreeSet<&str> = r["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        prompts,
        BTreeSet::from(["review_session", "what_we_know", "record_learning"]),
        "{ctx}"
    );
    // What we know: the instruction, then the context pack attached.
    let know = &r["prompt"]["what_we_know"];
    assert!(
        know[0]["text"].as_str().unwrap().contains("Cite the id"),
        "{ctx}"
    );
    assert_eq!(know[1]["type"], json!("resource"), "{ctx}");
    assert!(
        know[1]["text"]
            .as_str()
            .unwrap()
            .contains(f["claim"].as_str().unwrap()),
        "{ctx}"
    );
    // Record what we learned: the steps, and what is known already.
    let record = &r["prompt"]["record_learning"];
    assert!(
        record[0]["text"]
            .as_str()
            .unwrap()
            .contains("kb_register_evidence"),
        "{ctx}"
    );
    assert!(
        record[0]["text"]
            .as_str()
            .unwrap()
            .contains("pending until a person"),
        "{ctx}"
    );
}
