//! Files under `.vouch/`: where they live, how they are written, read and locked.

pub mod atomic;
pub mod layout;
pub mod lock;
pub mod nofollow;
pub mod yaml;

pub use layout::{Dir, Layout};
