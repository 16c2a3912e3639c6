//! Secrets are stopped at the door (docs/secrets.md), through the real
//! binary: an agent's source, quote, claim or page holding a secret is
//! refused on JSONL, MCP and HTTP, naming the field, line and kind and
//! never echoing the secret, and nothing of it reaches `.vouch/`; a person
//! on the command line is refused too unless they ask for it masked
//! (`--mask-secrets`: the mask is applied before hashing, so the id is the
//! hash of what is stored and quotes are found in the masked text) or as
//! is (`--allow-secrets`).

use crate::common::server::{http_server, init_kb};
use crate::common::{Project, jsonl, output_ok};
use crate::transports::mcp::Mcp;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;

/// AWS's documented example key id, assembled here so that no scanner
/// reading the repository takes this file for a leak.
fn key_id() -> String {
    ["AKIA", "IOSFODNN7", "EXAMPLE"].concat()
}

/// A config file with a key id on line 2 and a password on line 3.
fn config_text() -> String {
    format!(
        "region = eu-west-1\naws_access_key_id = {}\ndb_password = \"Tr0ub4dor&3\"\n",
        key_id()
    )
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file under `.vouch/`, as (path, bytes).
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// No file under `kb`'s `.vouch/` (or `kb` itself, a `.vouch/` folder)
/// holds `secret`.
fn nowhere_in(kb: &Path, secret: &str) {
    let root = if kb.join(".vouch").is_dir() {
        kb.join(".vouch")
    } else {
        kb.to_path_buf()
    };
    for (path, bytes) in files(&root) {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{path} holds the secret"
        );
    }
}

/// A refusal's message names the field, the line and the kind, and says
/// how to proceed, without the secret's bytes.
fn names_without_echo(message: &str, field: &str, line: &str, kind: &str) {
    assert!(
        message.contains(&format!("{field}: {line}")) && message.contains(kind),
        "{message}"
    );
    assert!(
        !message.contains(&key_id()),
        "the secret is echoed: {message}"
    );
    assert!(
        !message.contains("Tr0ub4dor"),
        "the secret is echoed: {message}"
    );
}

/// The calls an agent makes that would store a secret, each with the
/// field, line and kind its refusal must name.
fn agent_calls(
    source_id: &str,
) -> Vec<(
    &'static str,
    Value,
    &'static str,
    &'static str,
    &'static str,
)> {
    vec![
        (
            "kb.register_source",
            json!({"content": config_text(), "locator": "config/app.ini"}),
            "content",
            "line 2, columns 21-40",
            "aws_access_key_id",
        ),
        (
            "kb.propose_claim",
            json!({"text": format!("The uploader signs with {}.", key_id()),
                   "evidence": [source_id]}),
            "text",
            "line 1",
            "aws_access_key_id",
        ),
        (
            "kb.propose_page",
            json!({"title": "Database access", "body": "# Access\n\nConnect with\n\n    db_password = \"Tr0ub4dor&3\"\n"}),
            "body",
            "line 5",
            "password_assignment",
        ),
        (
            "kb.propose_entity",
            json!({"name": "uploader", "type": "concept",
                   "description": format!("signs with {}", key_id())}),
            "description",
            "line 1",
            "aws_access_key_id",
        ),
    ]
}

/// A clean source to cite, registered by a person.
fn clean_source(kb: &Path) -> String {
    let out = output_ok(crate::common::server::vouch(kb).args([
        "--json",
        "source",
        "add",
        "--text",
        "The uploader signs requests.",
        "--locator",
        "notes",
    ]));
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn jsonl_refuses_an_agents_secret_naming_line_and_kind_and_stores_none_of_it() {
    let p = Project::new();
    let src = p.source("The uploader signs requests.");
    for (method, params, field, line, kind) in agent_calls(&src) {
        let r = jsonl(&p, "agent", method, params);
        assert_eq!(r["ok"], json!(false), "{method}: {r}");
        assert_eq!(
            r["error"]["code"],
            json!("invalid_request"),
            "{method}: {r}"
        );
        let message = r["error"]["message"].as_str().unwrap();
        names_without_echo(message, field, line, kind);
        assert!(
            message.contains("--mask-secrets"),
            "how to proceed: {message}"
        );
    }
    // The same refusal for a file it names, and for a quote.
    std::fs::write(p.root().join("app.ini"), config_text()).unwrap();
    let r = jsonl(
        &p,
        "agent",
        "kb.register_source_from_path",
        json!({"path": "app.ini"}),
    );
    names_without_echo(
        r["error"]["message"].as_str().unwrap(),
        "app.ini",
        "line 2",
        "aws_access_key_id",
    );
    let r = jsonl(
        &p,
        "agent",
        "kb.register_evidence",
        json!({"source_id": src, "quote": format!("signs {}", key_id())}),
    );
    names_without_echo(
        r["error"]["message"].as_str().unwrap(),
        "quote",
        "line 1",
        "aws_access_key_id",
    );
    // An agent cannot choose to store it masked or as is.
    for policy in ["mask", "allow"] {
        let r = jsonl(
            &p,
            "agent",
            "kb.register_source",
            json!({"content": config_text(), "locator": "x", "secrets": policy}),
        );
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.contains("a person's choice"), "{policy}: {message}");
    }
    nowhere_in(p.root(), &key_id());
    nowhere_in(p.root(), "Tr0ub4dor");
    let proposed = std::fs::read_dir(p.vouch_dir().join("proposed"))
        .unwrap()
        .count();
    assert_eq!(proposed, 0, "a refused proposal is written");
}

#[test]
fn mcp_refuses_an_agents_secret_as_a_tool_error_without_echoing_it() {
    let kb = init_kb();
    let src = clean_source(kb.path());
    let mut m = Mcp::start(kb.path());
    for (method, params, field, line, kind) in agent_calls(&src) {
        let (code, message) = m.call(method, params).expect_err(method);
        assert_eq!(code, "invalid_request", "{method}");
        names_without_echo(&message, field, line, kind);
    }
    m.server.finish();
    nowhere_in(kb.path(), &key_id());
    nowhere_in(kb.path(), "Tr0ub4dor");
}

#[test]
fn http_refuses_an_agents_secret_without_echoing_it() {
    let kb = init_kb();
    let src = clean_source(kb.path());
    let server = http_server(kb.path(), &[("VOUCH_AGENT", "agent")], &[]);
    for (method, params, field, line, kind) in agent_calls(&src) {
        let body = json!({"id": 1, "method": method, "params": params}).to_string();
        let r = server.rpc(None, body.as_bytes());
        let v = r.json();
        assert_eq!(v["ok"], json!(false), "{method}: {v}");
        assert_eq!(v["error"]["code"], json!("invalid_request"), "{v}");
        names_without_echo(v["error"]["message"].as_str().unwrap(), field, line, kind);
    }
    drop(server);
    nowhere_in(kb.path(), &key_id());
    nowhere_in(kb.path(), "Tr0ub4dor");
}

#[test]
fn a_person_is_refused_by_default_and_told_both_ways_through() {
    let p = Project::new();
    std::fs::write(p.root().join("app.ini"), config_text()).unwrap();
    let r = p.run("alice", &["source", "add", "app.ini"]);
    assert_eq!(r.code, 8, "{}{}", r.stdout, r.stderr);
    names_without_echo(
        &r.stderr,
        "app.ini",
        "line 2, columns 21-40",
        "aws_access_key_id",
    );
    names_without_echo(
        &r.stderr,
        "app.ini",
        "line 3, columns 16-26",
        "password_assignment",
    );
    assert!(
        r.stderr.contains("--mask-secrets") && r.stderr.contains("--allow-secrets"),
        "{}",
        r.stderr
    );
    let r = p.run(
        "alice",
        &["source", "add", "--text", &config_text(), "--locator", "x"],
    );
    assert_eq!(r.code, 8, "{}", r.stderr);
    let src = p.source("The uploader signs requests.");
    let r = p.run(
        "alice",
        &[
            "propose-claim",
            &format!("It signs with {}.", key_id()),
            "-e",
            &src,
        ],
    );
    assert_eq!(r.code, 8, "{}", r.stderr);
    names_without_echo(&r.stderr, "text", "line 1", "aws_access_key_id");
    let r = p.run(
        "alice",
        &[
            "propose-page",
            "Access",
            "--body",
            "password: \"Tr0ub4dor&3\"\n",
        ],
    );
    assert_eq!(r.code, 8, "{}", r.stderr);
    let r = p.run(
        "alice",
        &[
            "--json",
            "source",
            "add",
            "app.ini",
            "--mask-secrets",
            "--allow-secrets",
        ],
    );
    assert_ne!(r.code, 0, "the two flags exclude each other");
    nowhere_in(p.root(), &key_id());
    nowhere_in(p.root(), "Tr0ub4dor");
}

#[test]
fn a_person_stores_it_masked_before_hashing_and_quotes_the_masked_text() {
    let p = Project::new();
    std::fs::write(p.root().join("app.ini"), config_text()).unwrap();
    let v = p.ok("alice", &["source", "add", "app.ini", "--mask-secrets"]);
    let id = v["id"].as_str().unwrap().to_string();
    let stored = std::fs::read(p.vouch_dir().join("sources").join(&id).join("content")).unwrap();
    let masked = "region = eu-west-1\naws_access_key_id = [REDACTED:aws_access_key_id]\n\
                  db_password = \"[REDACTED:password_assignment]\"\n";
    assert_eq!(String::from_utf8(stored.clone()).unwrap(), masked);
    assert_eq!(
        id,
        sha256_hex(&stored),
        "the id is the hash of what is stored"
    );
    assert_ne!(id, sha256_hex(config_text().as_bytes()));
    assert_eq!(p.ok("x", &["source", "verify", &id])["ok"], json!(true));
    // The same file masked again is the same source.
    let again = p.ok("alice", &["source", "add", "app.ini", "--mask-secrets"]);
    assert_eq!(
        (again["id"].as_str(), again["deduplicated"].as_bool()),
        (Some(id.as_str()), Some(true))
    );
    // Quotes are found in the masked text; an agent may cite them.
    let quote = "aws_access_key_id = [REDACTED:aws_access_key_id]";
    let ev = p.ok("agent", &["quote", &id, quote]);
    assert_eq!(ev["locator"], json!("L2-L2"));
    p.propose("The app names an AWS key id in app.ini.", &id);
    // A claim's text masked on request.
    let c = p.ok(
        "alice",
        &[
            "propose-claim",
            &format!("Uploads sign with {}.", key_id()),
            "-e",
            &id,
            "--mask-secrets",
        ],
    );
    let claim = std::fs::read_to_string(
        p.vouch_dir()
            .join("proposed")
            .join(format!("{}.yaml", c["proposal_id"].as_str().unwrap())),
    )
    .unwrap();
    assert!(
        claim.contains("Uploads sign with [REDACTED:aws_access_key_id]."),
        "{claim}"
    );
    // The log records the decision and what was masked, never the bytes.
    let log = std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl")).unwrap();
    let register = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == json!("source.register") && e["object_ids"][0] == json!(id))
        .expect("source.register");
    assert_eq!(register["data"]["secrets"]["decision"], json!("masked"));
    assert_eq!(
        register["data"]["secrets"]["findings"][1],
        json!({"field": "app.ini", "kind": "password_assignment", "line": 3})
    );
    nowhere_in(p.root(), &key_id());
    nowhere_in(p.root(), "Tr0ub4dor");
}

#[test]
fn a_person_stores_it_as_is_only_when_asked() {
    let p = Project::new();
    let v = p.ok(
        "alice",
        &[
            "source",
            "add",
            "--text",
            &config_text(),
            "--locator",
            "config/app.ini",
            "--allow-secrets",
        ],
    );
    let id = v["id"].as_str().unwrap();
    assert_eq!(id, sha256_hex(config_text().as_bytes()));
    let stored = std::fs::read(p.vouch_dir().join("sources").join(id).join("content")).unwrap();
    assert_eq!(stored, config_text().as_bytes());
    let log = std::fs::read_to_string(p.vouch_dir().join("audit.log.jsonl")).unwrap();
    assert!(log.contains("\"decision\":\"allowed\""), "{log}");
    // The log names the kinds, never the bytes it let through.
    assert!(
        !log.contains(&key_id()) && !log.contains("Tr0ub4dor"),
        "{log}"
    );
    // An agent quoting the secret is still refused; a person may, asked.
    let quote = format!("aws_access_key_id = {}", key_id());
    let r = jsonl(
        &p,
        "agent",
        "kb.register_evidence",
        json!({"source_id": id, "quote": quote}),
    );
    assert_eq!(r["ok"], json!(false), "{r}");
    assert_eq!(p.run("alice", &["quote", id, &quote]).code, 8);
    let ev = p.ok("alice", &["quote", id, &quote, "--allow-secrets"]);
    assert_eq!(ev["locator"], json!("L2-L2"));
}
