//! The vectors: an `embeddings` table in `state.db`, keyed by (kind, id,
//! chunk) and holding each text's sha256 and the model's identity, and
//! the in-memory copy semantic search scans ([`crate::index::memory`]).
//!
//! Keeping them in step ([`ensure`]) compares every document of the FTS
//! index with what memory holds, by file signature. A changed document is
//! re-embedded only if its text changed: its own stored vectors, or any
//! document's with the same text under the same model, are reused — and
//! on a team server, what another replica's model made for the text
//! ([`crate::services::SharedVectors`]), before this one's model runs. Vectors
//! of another model are deleted, never compared. The check runs only when
//! the index changed since the last one (a counter the FTS sync and the
//! write hook move), so a search in a quiet server pays nothing for it.
//!
//! A search never embeds nor writes ([`for_read`]): it loads the vectors
//! on first use and takes the index's statuses, and what has no vector yet
//! is found by words only, named in a warning. The writing happens on the
//! write path and in background steps ([`ensure`]): after a write method
//! returns (its lock released) in a process that keeps vectors in memory,
//! in a server's background refresh, and — in a one-shot process, which
//! has no background — once before its first read by meaning.

use super::{Keep, KeeperState};
use crate::error::Result;
use crate::index::engine::{EngineConn, Sig};
use crate::index::memory::{DocKey, Vectors, kind_static};
use crate::index::{Budget, EmbedStats, IndexUpkeep, SEARCH_BUDGET};
use crate::services::Embedder;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Documents embedded per model call by a step with no deadline (a
/// server's background step, a rebuild that waits): the model sorts them
/// by length into passes (a larger call pads less), and `pending` moves
/// after each call, so a read while it works says how partial it is.
const BATCH: usize = 32;

/// At most this many documents per model call when a deadline applies (a
/// write's catch-up, a one-shot's before a read), fewer once the model's
/// pace says more would not fit: the call overruns its budget by one
/// small batch at most, never by minutes of a large one.
const BUDGET_BATCH: usize = 8;

/// The first call under a deadline, before the model's pace is known
/// (it may load the model too).
const BUDGET_FIRST: usize = 2;

/// How many documents the next model call takes: see [`BATCH`] and
/// [`BUDGET_BATCH`]; `per_doc` is the pace the last call showed.
fn batch_size(budget: Budget, per_doc: Option<Duration>) -> usize {
    match (budget, per_doc) {
        (Budget::Unlimited, _) => BATCH,
        (Budget::Until(_), None) => BUDGET_FIRST,
        (Budget::Until(until), Some(pace)) => {
            let left = until.saturating_duration_since(Instant::now());
            let fits = left.as_nanos() / pace.as_nanos().max(1);
            (fits as usize).clamp(1, BUDGET_BATCH)
        }
    }
}

/// Run `f` on the engine's main connection as the keeper last made it
/// current (embedding follows the index; it never syncs it).
fn with_main<R>(kb: &Keep, f: impl FnOnce(&dyn EngineConn) -> Result<R>) -> Result<R> {
    let mut f = Some(f);
    let mut out = None;
    kb.main.with_main(&mut |conn| {
        if let Some(f) = f.take() {
            out = Some(f(conn)?);
        }
        Ok(())
    })?;
    out.ok_or_else(|| crate::error::Error::internal("the index's main connection did not run"))
}

/// The sha256 of every text the index's documents give a model to embed
/// (hashed as the embedding schedule hashes it): what a team's shared
/// vectors must keep ([`crate::services::SharedVectors::prune`]).
pub(crate) fn text_shas(kb: &Keep) -> Result<HashSet<String>> {
    with_main(kb, |idx| {
        let mut keys: Vec<(&'static str, String)> = Vec::new();
        idx.each_listed(None, &mut |l| keys.push((l.key.0, l.key.1.to_string())))?;
        let mut shas = HashSet::with_capacity(keys.len());
        for (kind, id) in keys {
            if let Some(text) = idx.embedded_text(kind, &id)? {
                shas.insert(crate::ids::sha256_hex(text.as_bytes()));
            }
        }
        Ok(shas)
    })
}

/// Documents a step with no deadline takes at once after a batch the
/// model had no part in: their vectors come from the index or the team
/// (a round trip each batch, not a model call).
const WITHOUT_MODEL_BATCH: usize = 256;

/// Where a document's vectors came from in a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// This process's model made them.
    Model,
    /// The index held them for the same text (this document's, another's,
    /// or an earlier one of the same batch).
    Reused,
    /// Another replica's model made them ([`crate::services::SharedVectors`]).
    Team,
}

/// A document that needs vectors, with what is known of it.
struct Stale {
    key: DocKey,
    sig: Sig,
    status: Option<String>,
}

/// Bring the vectors in step with the index: load them on first use,
/// drop what was deleted, reuse vectors of unchanged text, embed the rest
/// until `budget` runs out. `progress(done, total)` hears of every batch.
/// Returns `None` when another thread is already doing it and `wait` is
/// false (a search then answers from the vectors as they are).
pub(crate) fn ensure(
    kb: &Keep,
    embedder: &Arc<dyn Embedder>,
    budget: Budget,
    wait: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Option<EmbedStats>> {
    let step = Step {
        kb,
        embedder,
        budget: Some(budget),
        wait,
        keep_copy: true,
    };
    in_step(step, progress)
}

/// The vectors as a read may use them: loaded on first use and carrying
/// the index's statuses (a claim superseded a moment ago is never returned
/// as it was), with nothing embedded and nothing written — documents
/// without a vector yet stay pending for the write path or a background
/// step. Never waits for a thread that is embedding once the vectors are
/// loaded: what that thread adds was not approved before this read began
/// (a write's own embedding finishes before the write returns).
pub(crate) fn for_read(kb: &Keep, embedder: &Arc<dyn Embedder>) -> Result<()> {
    let step = Step {
        kb,
        embedder,
        budget: None,
        wait: false,
        keep_copy: false,
    };
    in_step(step, &mut |_, _| {}).map(|_| ())
}

/// `f` on the vectors as a search reads them (loaded on first use): for
/// benchmarks that look at the scan itself. `None` with nothing embedded.
pub(crate) fn read_with<R>(
    kb: &Keep,
    embedder: &Arc<dyn Embedder>,
    f: impl FnOnce(&Vectors) -> R,
) -> Result<Option<R>> {
    for_read(kb, embedder)?;
    Ok(kb.index_state.read_vectors().as_ref().map(f))
}

/// Before a read by meaning: the vectors as they are ([`for_read`]) — a
/// read never runs the model on a document nor writes. Where a background
/// step keeps the vectors up to date (a server), a read that finds
/// documents without vectors (approved by another process, pulled by git)
/// asks that step to embed them now and waits for it within `budget`, so
/// a search sees every approval finished before it started; elsewhere the
/// keeper's catch-up before the command embedded them. What is still
/// pending is counted in the answer ([`crate::stored::CallNotes`]).
///
/// Documents the model failed on wait for no step: the read's answer says
/// so (a warning, with them counted as pending).
pub(crate) fn before_read(kb: &Keep, embedder: &Arc<dyn Embedder>, budget: Duration) -> Result<()> {
    match kb.index_upkeep() {
        IndexUpkeep::Background => {
            let until = Instant::now() + budget;
            loop {
                for_read(kb, embedder)?;
                let waiting = kb
                    .index_state
                    .read_vectors()
                    .as_ref()
                    .is_some_and(|v| v.pending > 0);
                if !waiting || Instant::now() >= until {
                    break;
                }
                ask_for_upkeep(kb);
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        IndexUpkeep::BeforeReads => for_read(kb, embedder)?,
    }
    let failed = kb
        .index_state
        .read_vectors()
        .as_ref()
        .map_or(0, Vectors::failed);
    if failed > 0 {
        kb.warn(format!(
            "semantic search: the model failed on {failed} objects and no embedding is running \
             for them; they are found by words only until their files change (`vouch index \
             rebuild` from the command line tries them again)"
        ));
    }
    Ok(())
}

/// Ask the background step (a server's keeper thread) for a round now.
pub(crate) fn ask_for_upkeep(kb: &Keep) {
    let mut asked = kb
        .index_state
        .upkeep_asked
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if !*asked {
        *asked = true;
        kb.index_state.upkeep_wake.notify_all();
    }
}

/// For the background step between rounds: returns after `at_most`, or as
/// soon as a search asks for documents to be embedded.
pub(crate) fn wait_for_upkeep(state: &KeeperState, at_most: Duration) {
    let asked = state.upkeep_asked.lock().unwrap_or_else(|e| e.into_inner());
    let (mut asked, _) = state
        .upkeep_wake
        .wait_timeout_while(asked, at_most, |asked| !*asked)
        .unwrap_or_else(|e| e.into_inner());
    *asked = false;
}

/// After a write method returned (its lock released): what it wrote gets
/// its vectors now, so the next search finds it by meaning without
/// embedding anything. Only in a process that holds vectors in memory (a
/// server, a review session); a one-shot writer leaves it to the next
/// catch-up rather than load the model for one claim.
pub(crate) fn after_write(kb: &Keep, embedder: &Arc<dyn Embedder>) {
    if kb.index_state.read_vectors().is_none() {
        return;
    }
    // The copy beside the index waits for a step with time to spare (the
    // background's, a command's before its read), not a write's reply.
    let step = Step {
        kb,
        embedder,
        budget: Some(Budget::Until(Instant::now() + SEARCH_BUDGET)),
        wait: false,
        keep_copy: false,
    };
    if let Err(e) = in_step(step, &mut |_, _| {}) {
        kb.warn(format!(
            "embeddings: not brought up to date after the write: {e}"
        ));
    }
}

/// What one bringing in step is asked to do: [`ensure`]'s and
/// [`for_read`]'s arguments, handed on as one.
struct Step<'a> {
    kb: &'a Keep<'a>,
    embedder: &'a Arc<dyn Embedder>,
    /// `None` is a read: see [`for_read`].
    budget: Option<Budget>,
    /// Wait behind another thread doing it rather than answer `None`.
    wait: bool,
    /// Write the copy beside the index when it is missing or far behind
    /// ([`keep_copy`]).
    keep_copy: bool,
}

fn in_step(step: Step<'_>, progress: &mut dyn FnMut(usize, usize)) -> Result<Option<EmbedStats>> {
    let (kb, copy) = (step.kb, step.keep_copy);
    let res = ensure_inner(step, progress);
    if copy && matches!(res, Ok(Some(_))) {
        keep_copy(kb);
    }
    if res.is_err() {
        // What changed may not all have been handled: look at everything
        // next time.
        *kb.index_state
            .doc_changes
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
    }
    res
}

fn ensure_inner(
    step: Step<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Option<EmbedStats>> {
    let Step {
        kb,
        embedder,
        budget,
        wait,
        keep_copy: _,
    } = step;
    let model = embedder.model_id().to_string();
    let read_only = budget.is_none();
    // A read that already looked at this generation has nothing to take
    // from the index: what is pending waits for a writer, not for it.
    let up_to_date = |v: &Vectors, generation: u64| {
        v.model == model && v.synced == generation && (read_only || v.pending == 0)
    };
    // A search's fast path: the vectors are in step with the index as the
    // keeper made it current — nothing to embed, and no lock a writer or
    // the watcher holds is taken. A write finished before this call bumped
    // the generation, which sends the search the slow way.
    if !wait {
        let generation = kb.index_state.generation();
        let v = kb.index_state.read_vectors();
        if let Some(v) = v.as_ref()
            && up_to_date(v, generation)
        {
            return Ok(Some(EmbedStats {
                documents: v.documents(),
                ..EmbedStats::default()
            }));
        }
    }
    let loaded = kb
        .index_state
        .read_vectors()
        .as_ref()
        .is_some_and(|v| v.model == model);
    let _one_at_a_time = if wait {
        kb.index_state
            .embedding
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    } else if read_only
        && !loaded
        && let Some(documents) = left_to_background(kb)?
    {
        // A server's read never makes the first load of many vectors
        // itself, nor waits for it (a million documents' take seconds,
        // past any search's budget): it asks the background step and
        // answers by words, saying how many documents it could not see.
        ask_for_upkeep(kb);
        say_not_loaded(kb, documents);
        return Ok(None);
    } else if read_only && !loaded {
        // A read with nothing loaded waits for the first load, within a
        // search's budget: the step holding the lock may be embedding for
        // minutes (a rebuild dropped the vectors under it).
        let until = Instant::now() + SEARCH_BUDGET;
        loop {
            match kb.index_state.embedding.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    say_not_loaded(kb, with_main(kb, |idx| idx.vector_documents())?);
                    return Ok(None);
                }
            }
        }
    } else if read_only {
        match kb.index_state.embedding.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            // Another thread is bringing them up to date: answer from
            // the vectors as they are.
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        }
    } else {
        let budget = budget.unwrap_or(Budget::Unlimited);
        // Another thread (a server's background refresh) is embedding:
        // a write's catch-up waits for it within its budget rather than
        // return before what it approved has vectors — under load that
        // refresh is exactly the one embedding it. A search must see every
        // approval finished before it started, by meaning as by words.
        loop {
            match kb.index_state.embedding.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if !budget.spent() => {
                    if matches!(budget, Budget::Unlimited) {
                        return Ok(None);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
            }
        }
    };
    let dim = embedder.dimensions();
    // Sync the FTS index first: it says which documents exist now.
    let generation = kb.index_state.generation();
    let (fresh, first) = {
        let have = kb.index_state.read_vectors();
        (
            have.as_ref().is_some_and(|v| up_to_date(v, generation)),
            have.as_ref().is_none_or(|v| v.model != model),
        )
    };
    // The first load, a slice at a time: the main connection is free
    // between slices for writes and reads (a million documents' vectors
    // take seconds to load). What changes meanwhile, the check below
    // finds by signature, as any change.
    let loaded = if fresh || !first {
        None
    } else {
        // Vectors of any other model are never compared with these (a
        // read leaves them for a writer to delete).
        if !read_only {
            with_main(kb, |idx| idx.keep_only(&model))?;
        }
        Some(load(kb, &model, dim)?)
    };
    // The check, on the main connection (the documents as the index
    // holds them, borrowed: nothing is copied for a document in step).
    let mut loaded = loaded;
    let checked = with_main(kb, |idx| {
        if fresh {
            return Ok(None);
        }
        // The documents that changed since the last look, when known and
        // nothing is left over from then; else every document.
        let changes = {
            let mut c = kb
                .index_state
                .doc_changes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let pending = kb
                .index_state
                .read_vectors()
                .as_ref()
                .is_some_and(|v| v.pending > 0);
            let known = if first || pending { None } else { c.take() };
            *c = Some(Vec::new());
            known
        };
        let scope = changes.as_ref().map(|keys| {
            keys.iter()
                .filter_map(|(k, id)| Some((kind_static(k)?, id.clone())))
                .collect::<HashSet<DocKey>>()
        });
        let mut guard = kb.index_state.write_vectors();
        if let Some(v) = loaded.take() {
            *guard = Some(v);
        }
        let vectors = guard.get_or_insert_with(|| empty_vectors(kb, &model, dim));
        // Which held documents the listing names; a failed one named is
        // still there.
        let mut met = vectors.met();
        let mut failed_listed: HashSet<DocKey> = HashSet::new();
        let mut stale = Vec::new();
        idx.each_listed(changes.as_deref(), &mut |doc| {
            let owned = || (doc.key.0, doc.key.1.to_string());
            let failed_at = match vectors.failed.is_empty() {
                true => None,
                false => vectors.failed.get(&owned()).copied(),
            };
            if failed_at.is_some() {
                failed_listed.insert(owned());
            }
            let stale_doc = || Stale {
                key: owned(),
                sig: doc.sig,
                status: doc.status.map(str::to_string),
            };
            // Old vectors answer until new ones are made, but under the
            // status the index has now: a claim just redacted or
            // superseded is never returned as it was.
            match vectors.restate(doc.key, doc.status, &mut met) {
                Some(had) if had == doc.sig => {}
                Some(_) if failed_at != Some(doc.sig) => stale.push(stale_doc()),
                Some(_) => {}
                None if failed_at == Some(doc.sig) => {}
                None => stale.push(stale_doc()),
            }
        })?;
        // Gone: held but not listed — among the changed documents, or
        // among all.
        let gone = vectors.unmet(&met, scope.as_ref());
        for k in &gone {
            vectors.remove(k)?;
        }
        // What the model failed on counts only while the document exists.
        vectors.failed.retain(|k, _| {
            failed_listed.contains(k) || scope.as_ref().is_some_and(|changed| !changed.contains(k))
        });
        // Said from now on, not only once the step ends: a read while it
        // embeds answers from the vectors as they are, and says so.
        vectors.pending = stale.len();
        Ok(Some((stale, gone.len())))
    })?;
    let Some((stale, removed)) = checked else {
        let v = kb.index_state.read_vectors();
        let documents = v.as_ref().map_or(0, Vectors::documents);
        return Ok(Some(EmbedStats {
            documents,
            ..EmbedStats::default()
        }));
    };
    let mut stats = EmbedStats {
        removed,
        ..EmbedStats::default()
    };
    if stats.removed > 0 && !read_only {
        // Rows of documents that no longer exist.
        with_main(kb, |idx| idx.prune())?;
    }
    let total = stale.len();
    let mut done = 0;
    let mut model_failed = false;
    let mut per_doc: Option<Duration> = None;
    let mut model_ran = true;
    while done < total {
        let Some(budget) = budget else { break };
        if budget.spent() || model_failed {
            break;
        }
        // A batch the model had no part in says the next one likely
        // needs it as little (a new replica taking the team's vectors);
        // the first batch counts as the model's.
        let size = match (budget, model_ran) {
            (Budget::Unlimited, false) => WITHOUT_MODEL_BATCH,
            _ => batch_size(budget, per_doc),
        };
        let batch = &stale[done..(done + size).min(total)];
        model_ran = false;
        // Texts and reusable vectors, under the index lock.
        let mut need: Vec<(usize, String, String)> = Vec::new();
        let mut ready: Vec<(usize, String, Vec<Vec<f32>>, Origin)> = Vec::new();
        with_main(kb, |idx| {
            for (i, s) in batch.iter().enumerate() {
                let Some(text) = idx.embedded_text(s.key.0, &s.key.1)? else {
                    continue;
                };
                let sha = crate::ids::sha256_hex(text.as_bytes());
                match idx.reusable(&model, dim, &sha, &s.key)? {
                    Some(chunks) => ready.push((i, sha, chunks, Origin::Reused)),
                    None => need.push((i, sha, text)),
                }
            }
            Ok(())
        })?;
        // What another replica's model made for these texts.
        if let Some(sharing) = kb.shared_vectors()
            && !need.is_empty()
        {
            let warn = |m: String| kb.warn(m);
            let shas: Vec<&str> = need.iter().map(|(_, sha, _)| sha.as_str()).collect();
            let found: HashMap<String, Vec<Vec<f32>>> = sharing
                .take(&warn, &model, dim, &shas)
                .into_iter()
                .collect();
            if !found.is_empty() {
                need.retain(|(i, sha, _)| match found.get(sha) {
                    Some(chunks) => {
                        ready.push((*i, sha.clone(), chunks.clone(), Origin::Team));
                        false
                    }
                    None => true,
                });
            }
        }
        // The model runs outside every lock: writers never wait for it.
        let mut failures: Vec<usize> = Vec::new();
        if !need.is_empty() {
            // One model call a distinct text: documents with the same text
            // (copies, templates) side by side in a batch share its vectors.
            let mut first_of: HashMap<&str, usize> = HashMap::new();
            let mut texts: Vec<&str> = Vec::new();
            let slot: Vec<usize> = need
                .iter()
                .map(|(_, sha, t)| {
                    *first_of.entry(sha.as_str()).or_insert_with(|| {
                        texts.push(t.as_str());
                        texts.len() - 1
                    })
                })
                .collect();
            let began = Instant::now();
            let embedded = embedder.embed_documents(&texts);
            per_doc = Some(began.elapsed() / texts.len() as u32);
            model_ran = true;
            drop(first_of);
            match embedded {
                Ok(vectors) => {
                    let mut made = vec![false; vectors.len()];
                    for ((i, sha, _), s) in need.into_iter().zip(slot) {
                        let chunks = vectors.get(s).map_or(&[][..], Vec::as_slice);
                        if chunks.iter().all(|c| c.len() == dim) && !chunks.is_empty() {
                            let origin = match std::mem::replace(&mut made[s], true) {
                                false => Origin::Model,
                                true => Origin::Reused,
                            };
                            ready.push((i, sha, chunks.to_vec(), origin));
                        } else {
                            failures.push(i);
                        }
                    }
                    // For the other replicas: their models need not run
                    // on these texts.
                    if let Some(sharing) = kb.shared_vectors() {
                        let made: Vec<(&str, &[Vec<f32>])> = ready
                            .iter()
                            .filter(|r| r.3 == Origin::Model)
                            .map(|(_, sha, chunks, _)| (sha.as_str(), chunks.as_slice()))
                            .collect();
                        sharing.keep(&|m| kb.warn(m), &model, dim, &made);
                    }
                }
                Err(e) => {
                    // Searches go on (by words); these wait for a change.
                    kb.warn(format!("embeddings: {e}"));
                    failures.extend(need.iter().map(|(i, _, _)| *i));
                    model_failed = true;
                }
            }
        }
        if !failures.is_empty() {
            let mut guard = kb.index_state.write_vectors();
            let vectors = guard.get_or_insert_with(|| empty_vectors(kb, &model, dim));
            for i in failures {
                vectors.failed.insert(batch[i].key.clone(), batch[i].sig);
            }
        }
        with_main(kb, |idx| {
            idx.in_one_write(&mut || {
                for (i, sha, chunks, _) in &ready {
                    let s = &batch[*i];
                    idx.put(&model, &s.key, s.sig, sha, chunks)?;
                }
                Ok(())
            })
        })?;
        let mut guard = kb.index_state.write_vectors();
        let vectors = guard.get_or_insert_with(|| empty_vectors(kb, &model, dim));
        for (i, _, chunks, origin) in ready {
            let s = &batch[i];
            vectors.insert(s.key.clone(), s.sig, s.status.clone(), &chunks)?;
            *match origin {
                Origin::Model => &mut stats.embedded,
                Origin::Reused => &mut stats.reused,
                Origin::Team => &mut stats.shared,
            } += 1;
        }
        done += batch.len();
        vectors.pending = total - done;
        drop(guard);
        progress(done, total);
    }
    let mut guard = kb.index_state.write_vectors();
    let vectors = guard.get_or_insert_with(|| empty_vectors(kb, &model, dim));
    vectors.pending = total - done;
    vectors.synced = generation;
    stats.pending = vectors.pending();
    stats.documents = vectors.documents();
    Ok(Some(stats))
}

/// The fewest documents worth a copy of their vectors beside the index:
/// fewer load from the engine in well under a second.
#[cfg(not(test))]
const COPY_FROM_DOCS: usize = 20_000;
#[cfg(test)]
const COPY_FROM_DOCS: usize = 3;

/// Whether the copy beside the index is missing or far enough behind
/// these vectors to be written again: more than a fiftieth of the rows
/// (and at least [`COPY_AGAIN_ROWS`]) changed since it was read or
/// written. What changed since is found by signature on every load.
fn copy_behind(v: &Vectors) -> bool {
    v.documents() >= COPY_FROM_DOCS
        && v.since_copy
            .is_none_or(|n| n > (v.rows_len() / 50).max(COPY_AGAIN_ROWS))
}

#[cfg(not(test))]
const COPY_AGAIN_ROWS: usize = 1_000;
#[cfg(test)]
const COPY_AGAIN_ROWS: usize = 2;

/// Write the copy of the vectors beside the index when it is behind and
/// nothing is pending ([`Vectors::write_copy`]): a later process reads it
/// in place instead of loading every vector from the engine. Under the
/// embedding lock (skipped when another step holds it), so no step
/// changes the vectors meanwhile; searches read on. A copy that cannot
/// be written is said (later loads take longer); nothing else depends on
/// it.
fn keep_copy(kb: &Keep) {
    let _one_at_a_time = match kb.index_state.embedding.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    let behind = |v: &Option<Vectors>| v.as_ref().is_some_and(|v| v.pending == 0 && copy_behind(v));
    if !behind(&kb.index_state.read_vectors()) {
        return;
    }
    // The stamp, and the documents in the order the check after a load
    // walks them — asked before the vectors are read (the main connection
    // is never waited for while they are held).
    let asked = with_main(kb, |idx| {
        let Some(stamp) = idx.copy_stamp()? else {
            return Ok(None);
        };
        let mut order: Vec<DocKey> = Vec::new();
        idx.each_listed(None, &mut |doc| {
            order.push((doc.key.0, doc.key.1.to_string()))
        })?;
        Ok(Some((stamp, order)))
    });
    let path = kb.layout().index_vectors();
    let written = asked.and_then(|asked| {
        let guard = kb.index_state.read_vectors();
        match (asked, guard.as_ref()) {
            (Some((stamp, order)), Some(v)) => v
                .write_copy(&path, &stamp, order.iter().map(|(k, id)| (*k, id.as_str())))
                .map_err(|e| crate::error::Error::io(&path, e)),
            _ => Ok(()),
        }
    });
    // Tried: not again before another fiftieth of the rows changed (a
    // background step's every round would otherwise try, and say so).
    if let Some(v) = kb.index_state.write_vectors().as_mut() {
        v.since_copy = Some(0);
    }
    if let Err(e) = written {
        kb.warn(format!(
            "embeddings: no copy of the vectors kept beside the index ({e}); the next process \
             loads them from it"
        ));
    }
}

/// Every stored vector of `model`: read in place from the copy beside the
/// index when the engine's stamp says it was made from this store
/// ([`Vectors::read_copy`]; what changed since is found by signature by
/// the check that follows), else loaded from the engine.
fn load(kb: &Keep, model: &str, dim: usize) -> Result<Vectors> {
    let stamp = with_main(kb, |idx| idx.copy_stamp())?;
    if let Some(stamp) = stamp {
        let path = kb.layout().index_vectors();
        let dir = kb.layout().index_dir().to_path_buf();
        match Vectors::read_copy(&path, dir, (model, dim, &stamp)) {
            Ok(Some(mut v)) => {
                v.since_copy = Some(0);
                return Ok(v);
            }
            Ok(None) => {}
            Err(e) => kb.warn(format!(
                "embeddings: the copy of the vectors at {} could not be read ({e}); loading \
                 them from the index",
                path.display()
            )),
        }
    }
    load_all(kb, empty_vectors(kb, model, dim))
}

/// Whether a first load is the background step's — in a process that
/// has one (a server), once the index holds more documents than load
/// within a search's budget — and if so how many documents it holds.
fn left_to_background(kb: &Keep) -> Result<Option<usize>> {
    if kb.index_upkeep() != IndexUpkeep::Background {
        return Ok(None);
    }
    let documents = with_main(kb, |idx| idx.vector_documents())?;
    Ok((documents > LOAD_IN_READ_MAX).then_some(documents))
}

/// The most documents whose vectors a server's read loads itself, if
/// none are loaded yet (about 2 s of loading; 1.3 million take 10 s).
/// Fifty in the unit tests, above every other test's knowledge base.
#[cfg(not(test))]
const LOAD_IN_READ_MAX: usize = 250_000;
#[cfg(test)]
const LOAD_IN_READ_MAX: usize = 50;

/// A read found no vectors loaded and another step still holding them:
/// it answers by words only, and says so — every document counted as
/// pending.
fn say_not_loaded(kb: &Keep, documents: usize) {
    kb.note_vectors_pending(documents);
    kb.warn(
        "semantic search: another step is loading or embedding the vectors; this answer is \
         found by words only"
            .to_string(),
    );
}

/// No vectors yet of `model`: past 64 MiB their rows move to a file in
/// the index's folder ([`crate::index::rows`]).
fn empty_vectors(kb: &Keep, model: &str, dim: usize) -> Vectors {
    Vectors::empty(model, dim).spill_into(
        kb.layout().index_dir().to_path_buf(),
        crate::index::rows::SPILL_BYTES,
    )
}

/// Every stored vector of its model, into `v` (statuses come from the
/// check that follows), [`LOAD_SLICE`] vectors a hold of the main
/// connection.
fn load_all(kb: &Keep, mut v: Vectors) -> Result<Vectors> {
    let (model, dim) = (v.model.clone(), v.dim);
    let mut after: Option<DocKey> = None;
    loop {
        let last = with_main(kb, |idx| {
            idx.vectors_of(
                &model,
                dim,
                (after.as_ref(), LOAD_SLICE),
                &mut |(key, sig, vector)| v.push_chunk(&key, sig, &vector),
            )
        })?;
        match last {
            Some(key) => after = Some(key),
            None => return Ok(v),
        }
    }
}

/// Vectors read from the engine a hold of its main connection on the
/// first load (about 50 ms of work). Two in the unit tests, so every test
/// that loads vectors loads them in slices, documents of several chunks
/// across a slice's end included.
#[cfg(not(test))]
const LOAD_SLICE: usize = 20_000;
#[cfg(test)]
const LOAD_SLICE: usize = 2;

#[cfg(test)]
#[path = "vectors_tests.rs"]
mod kept_in_step;

#[cfg(test)]
#[path = "shared_tests.rs"]
mod shared_tests;

#[cfg(test)]
#[path = "rebuild_tests.rs"]
mod after_rebuild;
