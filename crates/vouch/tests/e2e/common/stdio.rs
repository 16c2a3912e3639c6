//! `vouch serve` on stdio for a test project: the shared client
//! ([`vouch_clients::StdioServer`]) started in the project's environment,
//! and one-shot JSONL sessions.

use super::Project;
use serde_json::Value;
pub use vouch_clients::StdioServer;

/// `vouch serve --transport jsonl` in `p`, as `agent`.
pub fn jsonl(p: &Project, agent: &str) -> StdioServer {
    let mut cmd = p.command(agent);
    cmd.args(["serve", "--transport", "jsonl"]);
    StdioServer::spawn(cmd)
}

/// Requests to a fresh `vouch serve --transport jsonl` as `agent`, all
/// written before its stdin closes; every line it answered, parsed.
pub fn jsonl_session(p: &Project, agent: &str, requests: &[Value]) -> Vec<Value> {
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    p.run_with_stdin(agent, &["serve", "--transport", "jsonl"], &input)
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
