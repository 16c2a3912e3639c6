//! SQLite's failures as the core's [`Error`]: the one place outside this
//! engine's queries that needs to know `rusqlite`'s error type, kept here so
//! that no file above the engine names it (`layers` checks).

use crate::error::{Error, ErrorKind};

impl From<rusqlite::Error> for Error {
    fn from(err: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
        let reported = match err.sqlite_error_code() {
            Some(DatabaseBusy | DatabaseLocked) => Self::new(
                ErrorKind::Busy,
                format!(
                    "index (state.db) is locked by another process ({err}); \
                     retry when it finishes"
                ),
            ),
            _ => Error::internal(format!("index (state.db): {err}")),
        };
        reported.caused_by(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_sqlite_error_is_internal_and_keeps_its_cause() {
        let sql: Error = rusqlite::Error::InvalidQuery.into();
        assert_eq!(sql.kind, ErrorKind::Internal);
        assert!(
            sql.message.starts_with("index (state.db): "),
            "{}",
            sql.message
        );
        assert!(sql.source().is_some_and(|s| s.is::<rusqlite::Error>()));
    }

    #[test]
    fn a_locked_database_is_busy() {
        let locked = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        let err: Error = locked.into();
        assert_eq!(err.kind, ErrorKind::Busy);
        assert!(
            err.message.contains("locked by another process"),
            "{}",
            err.message
        );
    }
}
