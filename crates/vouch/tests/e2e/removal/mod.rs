//! What must go, through review (issue 42): a reviewed delete
//! (`kb.propose_delete`, `vouch propose-delete`) and a person's redaction
//! (`vouch redact`, `kb.propose_redact`) on every transport, and the
//! integrity checks (doctor, source_verify, the pull-request check) that
//! accept them and refuse the same done by hand.
//!
//! - `delete`: the delete on JSONL, MCP and HTTP, the reference refusal,
//!   doctor and the pull-request check;
//! - `redact`: a person's redaction, an agent's proposal of one on every
//!   transport, what each surface shows, and the checks.

pub(crate) use crate::attacks::events;
use crate::common::Project;
pub(crate) use crate::transports::{WireErr, envelope_result as envelope, eventually};
use serde_json::{Value, json};

mod delete;
mod redact;

/// Who calls: the agent over the transport, or alice, a person.
#[derive(Clone, Copy)]
enum Who {
    Agent,
    Alice,
}

/// A call as one of the two, over one transport.
type Call<'a> = dyn FnMut(Who, &str, Value) -> Result<Value, WireErr> + 'a;

/// `run` with a call that sends the agent's requests over each transport
/// in turn — JSONL and MCP on stdio, alice deciding at the command line
/// beside the server; HTTP, alice a reviewer with her own token — on a
/// fresh project from `setup`. What `run` answered on each, in that order,
/// with the project, its server stopped.
fn on_every_transport<T>(
    setup: impl Fn() -> Project,
    run: impl Fn(&Project, &mut Call) -> T,
) -> Vec<(T, Project)> {
    let alice = |p: &Project, method: &str, params: Value| {
        let r = p.run("alice", &["--json", "call", method, &params.to_string()]);
        if r.code == 0 {
            Ok(r.json())
        } else {
            Err((format!("exit {}", r.code), r.stderr))
        }
    };
    let mut out = Vec::new();
    let p = setup();
    let mut s = crate::common::stdio::jsonl(&p, "agent");
    let mut n = 0;
    let got = run(&p, &mut |who, method, params| match who {
        Who::Alice => alice(&p, method, params),
        Who::Agent => {
            n += 1;
            s.send_raw(&json!({"id": n, "method": method, "params": params}).to_string());
            envelope(s.read())
        }
    });
    s.finish();
    out.push((got, p));

    let p = setup();
    let mut cmd = p.command("agent");
    cmd.arg("serve");
    let mut m = crate::transports::mcp::Mcp::spawn(cmd);
    let got = run(&p, &mut |who, method, params| match who {
        Who::Alice => alice(&p, method, params),
        Who::Agent => m.call(method, params),
    });
    m.server.finish();
    out.push((got, p));

    let p = setup();
    p.reviewers(&["alice"]);
    let mut cmd = p.command("server");
    cmd.args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"])
        .args(["--token", "agent=tok1", "--token", "alice=tok2"]);
    let server = vouch_clients::HttpServer::spawn(cmd);
    let mut n = 0;
    let got = run(&p, &mut |who, method, params| {
        n += 1;
        let token = match who {
            Who::Agent => "tok1",
            Who::Alice => "tok2",
        };
        let req = json!({"id": n, "method": method, "params": params});
        envelope(server.rpc(Some(token), req.to_string().as_bytes()).json())
    });
    server.terminate();
    out.push((got, p));
    out
}
