//! The language model `vouch synthesize --llm` (and `kb.synthesize` with
//! `mode: llm`) may use: a command the person running vouch configured,
//! fed the request as JSON on stdin, its JSON reply read from stdout.
//!
//! Where the command comes from, and where it may not: `VOUCH_LLM_COMMAND`
//! (a JSON array of argv, or words split on whitespace), else
//! `synthesize.llm_command` in the user's own config
//! (`$XDG_CONFIG_HOME/vouch/config.yaml`, default `~/.config/...`). Never
//! from the repository's `.vouch/config.yaml`: a cloned repository must
//! not choose a program that runs on your machine (a key there is named in
//! a warning and ignored).
//!
//! The command starts with a cleared environment: [`LLM_ENV_ALLOWED`] plus
//! the names the person lists in `synthesize.llm_env`. An agent can
//! trigger it, and must not hand it the server's tokens or keys.

use serde_json::Value;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vouch_core::Kb;
use vouch_core::answer::llm::Llm;

/// Most bytes read from the command's stdout.
pub(crate) const MAX_REPLY_BYTES: usize = 1024 * 1024;
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) struct CommandLlm {
    pub argv: Vec<String>,
    pub timeout: Duration,
    /// Variables passed beyond [`LLM_ENV_ALLOWED`] (`synthesize.llm_env`).
    pub env: Vec<String>,
}

impl Llm for CommandLlm {
    fn complete(&self, request: &Value) -> Result<String, String> {
        let (program, args) = self.argv.split_first().ok_or("the command is empty")?;
        // A cleared environment plus the allow-list (see the module doc).
        let mut cmd = Command::new(program);
        cmd.env_clear();
        for (key, value) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if LLM_ENV_ALLOWED.contains(&name.as_ref()) || self.env.iter().any(|e| *e == name) {
                cmd.env(key, value);
            }
        }
        let mut child = cmd
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not start {program}: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let body = request.to_string();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(body.as_bytes());
        });
        let mut stdout = child.stdout.take().ok_or("no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            loop {
                match stdout.read(&mut chunk) {
                    Ok(0) | Err(_) => return (buf, false),
                    Ok(n) => {
                        if buf.len() + n > MAX_REPLY_BYTES {
                            return (buf, true);
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                }
            }
        });
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() >= self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "{program} did not answer within {} s",
                        self.timeout.as_secs()
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("{program}: {e}")),
            }
        };
        let _ = writer.join();
        let (out, too_long) = reader.join().map_err(|_| "reading the reply failed")?;
        if too_long {
            return Err(format!(
                "{program} printed more than {} bytes",
                MAX_REPLY_BYTES
            ));
        }
        if !status.success() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.by_ref().take(2000).read_to_string(&mut err);
            }
            return Err(format!(
                "{program} failed ({status}){}",
                if err.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", err.trim())
                }
            ));
        }
        String::from_utf8(out).map_err(|_| format!("{program} printed text that is not UTF-8"))
    }
}

/// The variables the language model command always receives: what finds
/// programs and files, and the locale. Others only when the person names
/// them in their own config (`synthesize.llm_env: [OPENAI_API_KEY]`);
/// everything else, every vouch token and key included, is withheld.
pub(crate) const LLM_ENV_ALLOWED: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM",
];

fn argv_of(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Array(a) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
        Value::String(s) => Some(s.split_whitespace().map(str::to_string).collect()),
        _ => None,
    }
    .filter(|a: &Vec<String>| !a.is_empty())
}

/// Give `kb` the configured language model command, if there is one.
pub(crate) fn attach(kb: &mut Kb) {
    if kb
        .settings()
        .extra
        .get("synthesize")
        .is_some_and(|s| s.get("llm_command").is_some())
    {
        kb.warn(format!(
            "{}: synthesize.llm_command is ignored here: a repository may not choose a program \
             that runs on your machine; set it in your own config ({}) or VOUCH_LLM_COMMAND",
            kb.layout().config().display(),
            crate::personal::shown()
        ));
    }
    let mut timeout = DEFAULT_TIMEOUT;
    let mut argv =
        std::env::var("VOUCH_LLM_COMMAND").ok().and_then(|s| {
            match serde_json::from_str::<Value>(&s) {
                Ok(v @ Value::Array(_)) => argv_of(&v),
                _ => argv_of(&Value::String(s)),
            }
        });
    let mut env = Vec::new();
    if let Some((_, cfg)) = crate::personal::read(kb) {
        let section = &cfg["synthesize"];
        env = section["llm_env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        if argv.is_none() {
            argv = argv_of(&section["llm_command"]);
        }
        if let Some(secs) = section["llm_timeout_secs"].as_u64() {
            timeout = Duration::from_secs(secs.clamp(1, 3600));
        }
    }
    if let Ok(secs) = std::env::var("VOUCH_LLM_TIMEOUT_SECS")
        && let Ok(secs) = secs.parse::<u64>()
    {
        timeout = Duration::from_secs(secs.clamp(1, 3600));
    }
    if let Some(argv) = argv {
        kb.set_llm(Arc::new(CommandLlm { argv, timeout, env }));
    }
}
