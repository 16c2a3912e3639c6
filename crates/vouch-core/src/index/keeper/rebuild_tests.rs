//! The vectors after a rebuild: kept, their file signatures forgotten,
//! each document looked at again by its text.

use super::kept_in_step::{approved_claim, embed_all, kb_counting};
use crate::kb::Kb;
use std::sync::atomic::Ordering::SeqCst;

/// Each stored vector's row id and text hash, with its document's id.
fn stored_rows(kb: &Kb) -> Vec<(i64, String, String)> {
    crate::index::sqlite::with_index(&crate::testing::sqlite(kb), |idx| {
        let mut stmt = idx
            .conn
            .prepare("SELECT rowid, id, content_sha256 FROM embeddings ORDER BY rowid")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<std::result::Result<_, _>>()?;
        Ok(rows)
    })
    .unwrap()
}

/// A number the index answers.
fn count(kb: &Kb, sql: &str) -> i64 {
    crate::index::sqlite::with_index(&crate::testing::sqlite(kb), |idx| {
        Ok(idx.conn.query_row(sql, [], |r| r.get(0))?)
    })
    .unwrap()
}

/// A statement run on the index for one document's id.
fn change(kb: &Kb, sql: &str, id: &str) {
    crate::index::sqlite::with_index(&crate::testing::sqlite(kb), |idx| {
        Ok(idx.conn.execute(sql, [id])?)
    })
    .unwrap();
}

/// A rebuild forgets every vector's file signature, not its vectors: the
/// next round looks at each document again by its text. Where the text
/// is the same, only the signature is written (the vector's row stays as
/// it was: at a million documents, rewriting them was gigabytes); a file
/// rewritten in place under its old size and time — what a rebuild is
/// asked to repair — is embedded again.
#[test]
fn after_a_rebuild_the_same_texts_keep_their_rows_and_a_text_changed_in_place_is_embedded() {
    let (_dir, kb, words, embedder) = kb_counting();
    let a = approved_claim(&kb, "alpha bravo charlie");
    approved_claim(&kb, "delta echo foxtrot");
    embed_all(&kb, &embedder);
    let before = stored_rows(&kb);
    assert_eq!(before.len(), 3, "two claims and their source: {before:?}");
    // The claim rewritten in place: the same size, its time set back.
    let path = kb.layout().file(crate::store::Dir::Claims, &a).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("alpha bravo charlie", "alpha bravo charlix"),
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    kb.index().rebuild(&kb).unwrap();
    assert_eq!(
        count(&kb, "SELECT count(*) FROM vector_sigs"),
        0,
        "forgotten"
    );
    assert_eq!(count(&kb, "SELECT count(*) FROM embeddings"), 3, "kept");
    let embedded = words.documents.load(SeqCst);
    embed_all(&kb, &embedder);
    assert_eq!(
        words.documents.load(SeqCst) - embedded,
        1,
        "only the claim rewritten"
    );
    let after = stored_rows(&kb);
    for row in &before {
        match row.1 == a {
            false => assert!(after.contains(row), "{row:?} rewritten: {after:?}"),
            true => assert!(
                after.iter().any(|r| r.1 == a && r.2 != row.2),
                "{a} still has its old text's vector: {after:?}"
            ),
        }
    }
    // Every vector current again, under its document's signature.
    assert_eq!(
        count(
            &kb,
            "SELECT count(*) FROM vector_sigs s JOIN docs d ON d.kind = s.kind AND d.id = s.id
             WHERE (s.mtime_ns, s.size) = (d.mtime_ns, d.size)"
        ),
        3
    );
}

/// `vouch-bench fill-vectors` run again after a rebuild (which forgets
/// every vector's file signature): its random vectors take their
/// documents' signatures back, so the keeper's next round embeds none of
/// those documents for real (hours at a million claims).
#[test]
fn filled_vectors_are_current_again_after_a_rebuild_and_a_fill() {
    let (_dir, kb, words, embedder) = kb_counting();
    approved_claim(&kb, "alpha bravo charlie");
    let b = approved_claim(&kb, "delta echo foxtrot");
    embed_all(&kb, &embedder);
    change(&kb, "DELETE FROM embeddings WHERE id = ?1", &b);
    let index: &crate::index::sqlite::SqliteIndex = kb.index().as_any().downcast_ref().unwrap();
    let filled = |kb: &Kb| index.fill_random_vectors(kb).unwrap().unwrap().0;
    assert_eq!(filled(&kb), 1);
    kb.index().rebuild(&kb).unwrap();
    assert_eq!(filled(&kb), 0, "nothing left to fill");
    let before = words.documents.load(SeqCst);
    embed_all(&kb, &embedder);
    assert_eq!(words.documents.load(SeqCst), before, "no document embedded");
}

/// A stored vector of the right text but the wrong length (a damaged row)
/// is never kept as the document's vectors: the model's are written over
/// it, not only the signature.
#[test]
fn a_damaged_vector_of_the_same_text_is_written_again() {
    let (_dir, kb, words, embedder) = kb_counting();
    let b = approved_claim(&kb, "delta echo foxtrot");
    embed_all(&kb, &embedder);
    change(
        &kb,
        "UPDATE embeddings SET vector = x'00' WHERE id = ?1",
        &b,
    );
    kb.index().rebuild(&kb).unwrap();
    let embedded = words.documents.load(SeqCst);
    embed_all(&kb, &embedder);
    assert_eq!(
        words.documents.load(SeqCst) - embedded,
        1,
        "the damaged one"
    );
    let bytes = count(
        &kb,
        &format!("SELECT length(vector) FROM embeddings WHERE id = '{b}'"),
    );
    assert_eq!(bytes as usize, 4 * embedder.dimensions());
}
