//! The HTTP/1.1 client of the shared clients crate, under the path the
//! tests name it by.

pub use vouch_clients::http::*;
