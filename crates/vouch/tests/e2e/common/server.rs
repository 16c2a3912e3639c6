//! `vouch` commands with a pinned environment, a fresh KB, and `vouch serve
//! --transport http` on a free loopback port (the shared client,
//! [`vouch_clients::HttpServer`]).

use std::path::Path;
use std::process::Command;
pub use vouch_clients::HttpServer;

/// A command with a clean, pinned environment (no limits or tokens inherited
/// from the caller's shell).
pub fn vouch(kb: &Path) -> Command {
    let mut c = super::command();
    c.env("VOUCH_TIMESTAMP", "2026-01-02T03:04:05Z")
        .env("VOUCH_SEED", "42")
        .arg("--kb")
        .arg(kb)
        .current_dir(kb);
    c
}

pub fn init_kb() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    super::output_ok(vouch(dir.path()).arg("init").arg(dir.path()));
    dir
}

/// `vouch serve --transport http` on `kb` (pinned environment), on a free
/// loopback port, with `env` and `extra` arguments added.
pub fn http_server(kb: &Path, env: &[(&str, &str)], extra: &[&str]) -> HttpServer {
    let mut cmd = vouch(kb);
    cmd.args(["serve", "--transport", "http", "--bind", "127.0.0.1:0"])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    HttpServer::spawn(cmd)
}
