//! vouch-core: everything that knows what a vouch knowledge base is — the
//! object model, the files under `.vouch/`, the review gate, the audit log,
//! the derived index and the `kb.*` method registry. It never prints and
//! never reads the environment; the `vouch` app crate owns all I/O with people
//! and transports.

#![warn(unreachable_pub, missing_docs)]

pub mod answer;
pub mod audit;
pub mod capture;
pub mod clock;
pub mod error;
pub mod fail;
pub mod health;
pub mod ids;
pub mod index;
pub mod insight;
pub mod interop;
pub mod kb;
#[cfg(test)]
mod layers;
pub mod methods;
pub mod model;
pub mod params;
pub mod reads;
pub mod retrieval;
pub mod review;
pub mod rules;
pub mod secrets;
pub mod services;
pub mod settings;
pub mod sources;
pub mod store;
pub mod stored;
#[cfg(test)]
pub(crate) mod testing;

pub use error::{Error, ErrorKind, Result};
pub use index::IndexUpkeep;
pub use kb::{Caller, Kb, Role, Transport};
