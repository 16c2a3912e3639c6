//! Moving knowledge in and out of a knowledge base: bundles (protocol §8),
//! and, in time, the knowledge-file format and vouch 1.x's shapes.

pub mod bundle;
pub mod knowledge;
