//! The areas of the kit, in the order they run. Each starts from its own
//! empty knowledge base.

mod audit;
mod basics;
mod bundles;
mod gate;
mod mcp;
mod mcp_http;
mod reads;
mod retrieval;
mod stress;
mod write;

use crate::Config;
use crate::check::Ctx;
use crate::kb::Kb;
use crate::server::Server;

pub type Area = fn(&Config, &mut Ctx);

pub const ALL: &[(&str, Area)] = &[
    ("envelope", basics::envelope),
    ("capabilities", basics::capabilities),
    ("sources", basics::sources),
    ("propose", write::propose),
    ("gate", gate::gate),
    ("lifecycle", gate::lifecycle),
    ("reads", reads::reads),
    ("search", retrieval::search),
    ("synthesis", retrieval::synthesis),
    ("knowledge-files", retrieval::knowledge_files),
    ("semantic", retrieval::semantic),
    ("sessions", write::sessions),
    ("audit", audit::audit),
    ("bundles", bundles::bundles),
    ("concurrency", stress::concurrency),
    ("robustness", stress::robustness),
    ("mcp", mcp::mcp),
    ("mcp-http", mcp_http::mcp_http),
];

/// A fresh KB with the JSONL server running in it, or `None` after
/// recording why the area cannot run (a skip without `--server`, a failure
/// when the server cannot start).
pub fn open(cfg: &Config, ctx: &mut Ctx) -> Option<(Kb, Server)> {
    if cfg.server.is_none() {
        ctx.record(
            "setup",
            crate::check::skip("this area needs --server (JSONL)"),
        );
        return None;
    }
    let mut kb = match Kb::new(cfg) {
        Ok(kb) => kb,
        Err(e) => {
            ctx.record("setup", Err(e.into()));
            return None;
        }
    };
    match kb.serve() {
        Ok(mut s) => {
            if s.alive() {
                Some((kb, s))
            } else {
                let tail = s.stderr_tail();
                ctx.record(
                    "setup",
                    Err(format!("server does not answer kb.capabilities: {tail}").into()),
                );
                None
            }
        }
        Err(m) => {
            ctx.record("setup", Err(m));
            None
        }
    }
}
