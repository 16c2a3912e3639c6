//! Typed errors. Every failure the core reports carries an [`ErrorKind`] and a
//! message a person can act on; the app maps kinds to exit codes and wire codes
//! in one table (`vouch::errors`).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

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
    /// What the call would store holds a secret (crate::secrets): refused
    /// unless a person asked for it masked or as is.
    HoldsSecret,
    /// A file under `.vouch/` could not be parsed or is inconsistent.
    Corrupt,
    /// No `.vouch/` directory could be found.
    NoKb,
    /// Another process holds a lock vouch needed (a locked `state.db`).
    Busy,
    /// Something unexpected: I/O failure, SQLite failure.
    Internal,
}

/// A failure the core reports: its kind and a message a person can act on.
#[derive(Debug, Clone)]
pub struct Error {
    /// What went wrong, which the app maps to an exit code and a wire code.
    pub kind: ErrorKind,
    /// What happened and what to do about it, for a person.
    pub message: String,
    /// The lower-level failure this one reports (I/O, SQLite), kept for
    /// [`std::error::Error::source`].
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// Errors are equal when they say the same: kind and message.
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for Error {}

/// The core's result type, failing with [`Error`] unless told otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` saying `message`, with no cause.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same error, keeping `source` as its cause.
    pub fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// [`ErrorKind::InvalidParams`]: a param is present but wrong.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, message)
    }
    /// [`ErrorKind::MissingParam`], naming the param.
    pub fn missing(param: &str) -> Self {
        Self::new(
            ErrorKind::MissingParam,
            format!("missing required param `{param}`"),
        )
    }
    /// [`ErrorKind::NotFound`]: the named object does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    /// [`ErrorKind::Conflict`]: the request clashes with the current state.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    /// [`ErrorKind::GateDenied`]: the review gate refused.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::GateDenied, message)
    }
    /// [`ErrorKind::Corrupt`]: a file under `.vouch/` that cannot be used,
    /// named by its path.
    pub fn corrupt(path: &Path, detail: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Corrupt, format!("{}: {detail}", path.display()))
    }
    /// [`ErrorKind::Internal`]: something unexpected.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// An I/O failure on a named path.
    pub fn io(path: &Path, err: std::io::Error) -> Self {
        Self::new(ErrorKind::Internal, format!("{}: {err}", path.display())).caused_by(err)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn an_error_keeps_its_cause_and_compares_by_what_it_says() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "nope");
        let e = Error::io(Path::new("claims/a.yaml"), io);
        assert_eq!(e.message, "claims/a.yaml: nope");
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(|e| e.kind()),
            Some(std::io::ErrorKind::PermissionDenied)
        );
        assert_eq!(e.source().map(|s| s.to_string()), Some("nope".into()));
        assert_eq!(e, Error::internal("claims/a.yaml: nope"));
        assert!(Error::internal("x").source().is_none());
    }
}
