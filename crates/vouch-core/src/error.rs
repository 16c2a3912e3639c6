//! Typed errors. Every failure the core reports carries an [`ErrorKind`] and a
//! message a person can act on; the app maps kinds to exit codes and wire codes
//! in one table (`vouch::errors`).

use std::fmt;
use std::path::Path;

/// What went wrong, coarse enough for an edge to map to a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Params were present but invalid (bad id, bad enum, out of range, ...).
    InvalidParams,
    /// A required param is absent or null.
    MissingParam,
    /// The method name is not in the registry.
    MethodNotFound,
    /// The object named by the request does not exist.
    NotFound,
    /// The request conflicts with the current state (already decided, id taken).
    Conflict,
    /// The review gate refused (self-approval, validation failure at approve).
    GateDenied,
    /// A file under `.vouch/` could not be parsed or is inconsistent.
    Corrupt,
    /// No `.vouch/` directory could be found.
    NoKb,
    /// Another process holds a lock vouch needed (a locked `state.db`).
    Busy,
    /// Something unexpected: I/O failure, SQLite failure.
    Internal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, message)
    }
    pub fn missing(param: &str) -> Self {
        Self::new(
            ErrorKind::MissingParam,
            format!("missing required param `{param}`"),
        )
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::GateDenied, message)
    }
    pub fn corrupt(path: &Path, detail: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Corrupt, format!("{}: {detail}", path.display()))
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// An I/O failure on a named path.
    pub fn io(path: &Path, err: std::io::Error) -> Self {
        Self::new(ErrorKind::Internal, format!("{}: {err}", path.display()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(err: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
        match err.sqlite_error_code() {
            Some(DatabaseBusy | DatabaseLocked) => Self::new(
                ErrorKind::Busy,
                format!(
                    "index (state.db) is locked by another process ({err}); \
                     retry when it finishes"
                ),
            ),
            _ => Error::internal(format!("index (state.db): {err}")),
        }
    }
}
