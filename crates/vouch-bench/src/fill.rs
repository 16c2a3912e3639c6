//! `vouch-bench fill-vectors`: a vector for every document of a large
//! knowledge base that has none, so the search by meaning can be timed
//! at a million documents without the hours MiniLM takes to embed them on
//! two cores. The vectors are random unit vectors stored under the model
//! the knowledge base already has vectors of: the scan's time and memory
//! do not depend on what the vectors say (how much of the exact top 10
//! the sign-bit shortlist keeps on real vectors is `scan-recall`'s
//! measure). For benchmarks only: searches by meaning on such a
//! knowledge base find nonsense. The SQLite index writes them
//! (`SqliteIndex::fill_random_vectors`); this only asks.

use std::path::Path;
use vouch_core::Kb;
use vouch_core::clock::SystemClock;

/// Fill `kb`'s index; prints how many documents got vectors.
pub fn fill_vectors(kb: &Path) {
    let kb = Kb::open(
        &kb.join(".vouch"),
        std::sync::Arc::new(SystemClock::default()),
    )
    .expect("open the knowledge base");
    let index: &vouch_core::index::sqlite::SqliteIndex = kb
        .index()
        .as_any()
        .downcast_ref()
        .expect("the SQLite index");
    match index.fill_random_vectors(&kb).expect("fill the vectors") {
        Some((filled, dim, model)) => {
            println!("{filled} documents got random vectors of {dim} dimensions under {model}")
        }
        None => panic!("no vectors yet: embed at least one document with the model first"),
    }
}
