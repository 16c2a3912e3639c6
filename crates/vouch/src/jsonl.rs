//! JSONL over stdio (protocol §5, docs/methods.md): one request object per line,
//! `{id, method, params}` → `{id, ok, result | error{code, message}}`, in
//! request order. stdout carries frames only; warnings go to stderr. A bad
//! line gets an `invalid_request` answer and the server keeps serving.

use crate::errors::mapping;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use vouch_core::{Caller, Kb, methods};

fn error(id: Value, code: &str, message: impl Into<String>) -> Value {
    json!({"id": id, "ok": false, "error": {"code": code, "message": message.into()}})
}

/// Answer one request line.
pub fn handle_line(kb: &Kb, caller: &Caller, line: &[u8]) -> Value {
    handle_request(kb, caller, serde_json::from_slice(line))
}

/// Answer one request already parsed (or not) from its bytes.
pub(crate) fn handle_request(kb: &Kb, caller: &Caller, parsed: serde_json::Result<Value>) -> Value {
    let req: Value = match parsed {
        Ok(v) => v,
        Err(e) => {
            // serde_json stops at 128 levels, past any `limits.max_json_depth`.
            let hint = if e.to_string().contains("recursion limit") {
                " (nested deeper than 128 levels; config.yaml `limits.max_json_depth`)"
            } else {
                ""
            };
            return error(
                Value::Null,
                "invalid_request",
                format!("request is not valid JSON: {e}{hint}"),
            );
        }
    };
    let Value::Object(mut req) = req else {
        return error(
            Value::Null,
            "invalid_request",
            format!(
                "request must be a JSON object, not {}",
                methods::json_type(&req)
            ),
        );
    };
    let id = req.remove("id").unwrap_or(Value::Null);
    let method = match req.remove("method") {
        Some(Value::String(m)) => m,
        Some(other) => {
            return error(
                id,
                "invalid_request",
                format!(
                    "`method` must be a string, not {}",
                    methods::json_type(&other)
                ),
            );
        }
        None => return error(id, "invalid_request", "request has no `method`"),
    };
    let params = req.remove("params").unwrap_or(Value::Null);
    answer(kb, caller, id, &method, params)
}

/// Dispatch and wrap in the envelope; a panic becomes `internal_error`.
pub(crate) fn answer(kb: &Kb, caller: &Caller, id: Value, method: &str, params: Value) -> Value {
    let (res, notes) = vouch_core::stored::Store::collecting_notes(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            methods::dispatch(kb, caller, method, params)
        }))
    });
    let meta = notes.meta(kb.layout().root());
    crate::render::print_warnings(notes.warnings);
    let mut envelope = match res {
        Ok(Ok(result)) => json!({"id": id, "ok": true, "result": result}),
        Ok(Err(e)) => error(id, mapping(e.kind).wire_code, e.message),
        Err(_) => error(
            id,
            "internal_error",
            "the server hit an internal error; see stderr",
        ),
    };
    // What the call warned about and how partial its answer is reach the
    // caller, not only the server's stderr.
    if let (Some(meta), Some(frame)) = (meta, envelope.as_object_mut()) {
        frame.insert("_meta".into(), Value::Object(meta));
    }
    envelope
}

/// Serve until stdin closes.
pub(crate) fn serve(kb: &Kb, caller: &Caller) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut buf = Vec::new();
    let max_line = kb.settings().limits.jsonl_max_line_bytes as usize;
    loop {
        buf.clear();
        let (n, oversize) = read_line_limited(&mut input, &mut buf, max_line)?;
        if n == 0 {
            return Ok(());
        }
        let trimmed = buf.trim_ascii();
        if trimmed.is_empty() && !oversize {
            continue;
        }
        let response = if oversize {
            error(
                Value::Null,
                "invalid_request",
                format!(
                    "request line is over {max_line} bytes (config.yaml \
                     `limits.jsonl_max_line_bytes`)"
                ),
            )
        } else {
            handle_line(kb, caller, trimmed)
        };
        // One write a frame: stdout's line buffer holds 1 KiB, so a
        // context pack written through it was fifteen system calls.
        let mut frame = serde_json::to_vec(&response)?;
        frame.push(b'\n');
        let mut out = stdout.lock();
        out.write_all(&frame)?;
        out.flush()?;
    }
}

/// Read one line, keeping at most `max` bytes; the rest of an over-long line
/// is consumed and dropped. Returns (bytes consumed, oversize).
fn read_line_limited(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    let mut total = 0;
    let mut oversize = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok((total, oversize));
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !oversize {
            if buf.len() + take > max + 1 {
                oversize = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        input.consume(take);
        total += take;
        if done {
            return Ok((total, oversize));
        }
    }
}
