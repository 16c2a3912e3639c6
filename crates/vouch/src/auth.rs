//! Comparing secrets: what the HTTP server's bearer tokens and the review
//! pages' sign-in and sessions share, below both.

use sha2::{Digest, Sha256};

/// A secret's sha256: what is kept and compared, never the secret.
pub(crate) fn digest(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// Constant-time equality of two digests: always 32 byte comparisons, so
/// the time reveals neither where they differ nor anything about the
/// secret's length (both sides are hashes).
pub(crate) fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for i in 0..32 {
        diff |= a[i] ^ b[i];
    }
    std::hint::black_box(diff) == 0
}
