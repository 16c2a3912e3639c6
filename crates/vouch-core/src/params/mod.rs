//! Params and results of the `kb.*` methods (protocol §5, docs/methods.md),
//! one file per group of methods. Doc comments here become the JSON Schema
//! descriptions agents see over MCP.

mod bundles;
mod health;
mod insight;
mod lifecycle;
mod propose;
mod reads;
mod removal;
mod sessions;
mod sources;
mod vocab;

pub use bundles::*;
pub use health::*;
pub use insight::*;
pub use lifecycle::*;
pub use propose::*;
pub use reads::*;
pub use removal::*;
pub use sessions::*;
pub use sources::*;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of a method that takes none: pass `{}` (or null).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}
