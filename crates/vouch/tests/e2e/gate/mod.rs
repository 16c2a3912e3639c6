//! The review gate, sources, lifecycle, sessions and audit through the real
//! binary: each bad input gets a clear error and writes nothing.

use crate::common::*;
use serde_json::{Value, json};

mod lifecycle;
mod proposals;
mod store;
