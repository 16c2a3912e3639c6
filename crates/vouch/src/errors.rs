//! The one table that maps a core [`ErrorKind`] to every edge: CLI exit
//! code, JSONL/MCP wire code, HTTP status.

use vouch_core::ErrorKind;

pub(crate) struct Mapping {
    pub exit_code: i32,
    pub wire_code: &'static str,
    pub http_status: u16,
}

pub(crate) const fn mapping(kind: ErrorKind) -> Mapping {
    use ErrorKind::*;
    let (exit_code, wire_code, http_status) = match kind {
        InvalidParams => (2, "invalid_request", 400),
        MissingParam => (2, "missing_param", 400),
        MethodNotFound => (2, "method_not_found", 404),
        NotFound => (3, "invalid_request", 404),
        Conflict => (4, "invalid_request", 409),
        GateDenied => (5, "invalid_request", 403),
        HoldsSecret => (8, "invalid_request", 422),
        Corrupt => (6, "internal_error", 500),
        NoKb => (7, "internal_error", 500),
        Busy => (4, "internal_error", 503),
        Internal => (1, "internal_error", 500),
    };
    Mapping {
        exit_code,
        wire_code,
        http_status,
    }
}

/// Exit code when a proposal did not validate (`valid: false`), and when
/// `export-check` / `import-check` find a bundle's problems.
pub(crate) const EXIT_INVALID_PROPOSAL: i32 = 2;

/// Documented in `vouch --help` and the README.
pub(crate) const EXIT_CODES_HELP: &str = "Exit codes: 0 ok; 1 internal error; 2 invalid input \
(bad params, invalid proposal, unknown method, a bundle with problems); 3 not found; \
4 conflict (already decided, id taken, import conflicts with --on-conflict fail, \
export onto a file that is not a bundle); 5 refused \
by the review gate; 6 corrupt file or failed verification (audit verify, source verify, \
lint or doctor with error findings); 7 no .vouch/ found; 8 refused: what would be stored \
holds a secret (--mask-secrets or --allow-secrets store it).";
