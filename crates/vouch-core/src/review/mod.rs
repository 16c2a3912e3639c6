//! The review gate and what surrounds it (protocol §3–§4): proposals and
//! decisions (`gate`), lifecycle changes of reviewed knowledge
//! (`lifecycle`) and agents' work sessions (`sessions`) — the only writers
//! of knowledge.

pub mod gate;
pub mod lifecycle;
pub mod sessions;
