//! `vouch-conformance --server "CMD …"`: run the kit against a kb.* server.

use std::process::ExitCode;
use std::time::Duration;

use vouch_conformance::{Config, area_names, run};

const USAGE: &str = "\
vouch-conformance: a black-box conformance kit for kb.* servers (vouch SPEC 0.1)

Usage: vouch-conformance [OPTIONS]

  --server CMD        the JSONL server, run by `sh -c` in each fresh KB directory
  --mcp-server CMD    the MCP (stdio) server, same contract
  --mcp-url URL       an MCP server already running on streamable HTTP
                      (http:// only, no https): the mcp-http area drives it
                      as it is, adding only a source and one pending proposal
  --token TOKEN       the bearer token sent to --mcp-url
  --init CMD          run first in each new empty directory to create .vouch/
  --approve CMD       a person approves proposal {id} (exit 0 = approved)
  --reject CMD        a person rejects proposal {id} with {reason}
  --area NAME         only this area (repeatable); --list-areas lists them
  --timeout SECS      wait this long for one response (default 30)
  --json              print the report as JSON
  -h, --help          this text

Exit status: 0 when no check failed, 1 when one did, 2 on a usage error.
See docs/conformance.md for the contract a server must meet.";

fn main() -> ExitCode {
    let mut cfg = Config::default();
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let r = match a.as_str() {
            "--server" => val("--server").map(|v| cfg.server = Some(v)),
            "--mcp-server" => val("--mcp-server").map(|v| cfg.mcp_server = Some(v)),
            "--mcp-url" => val("--mcp-url").map(|v| cfg.mcp_url = Some(v)),
            "--token" => val("--token").map(|v| cfg.token = Some(v)),
            "--init" => val("--init").map(|v| cfg.init = Some(v)),
            "--approve" => val("--approve").map(|v| cfg.approve = Some(v)),
            "--reject" => val("--reject").map(|v| cfg.reject = Some(v)),
            "--area" => val("--area").map(|v| cfg.areas.push(v)),
            "--timeout" => val("--timeout").and_then(|v| {
                v.parse::<u64>()
                    .map(|s| cfg.timeout = Duration::from_secs(s))
                    .map_err(|_| format!("--timeout: not a number of seconds: {v}"))
            }),
            "--json" => {
                json = true;
                Ok(())
            }
            "--list-areas" => {
                for n in area_names() {
                    println!("{n}");
                }
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => Err(format!("unknown argument {other:?}")),
        };
        if let Err(e) = r {
            eprintln!("vouch-conformance: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    if cfg.server.is_none() && cfg.mcp_server.is_none() && cfg.mcp_url.is_none() {
        eprintln!("vouch-conformance: give --server, --mcp-server and/or --mcp-url\n\n{USAGE}");
        return ExitCode::from(2);
    }
    if let Some(Err(e)) = cfg.mcp_url.as_deref().map(vouch_conformance::check_url) {
        eprintln!("vouch-conformance: --mcp-url: {e}");
        return ExitCode::from(2);
    }
    if cfg.token.is_some() && cfg.mcp_url.is_none() {
        eprintln!("vouch-conformance: --token is sent to --mcp-url; give one\n\n{USAGE}");
        return ExitCode::from(2);
    }
    let names = area_names();
    if let Some(bad) = cfg.areas.iter().find(|a| !names.contains(&a.as_str())) {
        eprintln!("vouch-conformance: unknown area {bad:?}; --list-areas lists them");
        return ExitCode::from(2);
    }
    let report = run(&cfg);
    if json {
        println!("{:#}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
