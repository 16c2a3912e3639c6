//! [`ModelEmbedder`]: a sentence-embedding model run with candle on the
//! CPU. Loaded on first use (a search that needs it), so commands that do
//! not embed never read the weights; every file is re-hashed on load, so a
//! weight file changed after import is refused, never run.

use crate::bert::{self, BertModel, DTYPE};
use crate::install;
use crate::mpnet::{self, MPNetModel};
use crate::spec::{Arch, CONFIG, ModelSpec, Pooling, TOKENIZER, WEIGHTS};
use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokenizers::Tokenizer;
use vouch_core::error::{Error, Result};
use vouch_core::retrieval::Embedder;

/// Documents longer than this many chunks are embedded from their start
/// only (a 64 KiB source is ~60 chunks; the first few carry its subject).
pub const MAX_CHUNKS: usize = 8;
/// Text beyond this many bytes is never tokenized (a 10 KB query is cut,
/// not refused).
const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Most sequences in one forward pass, and most tokens once padded:
/// sequences are sorted by length and cut into passes so that a long one
/// never pads many short ones (a 170-token source in a pass of claims
/// made that pass eight times as costly).
const BATCH: usize = 32;
const BATCH_TOKENS: usize = 2048;

/// A model installed under a models folder, run on the CPU as the core's
/// `Embedder`: loaded (and its files checked) at the first text it embeds.
pub struct ModelEmbedder {
    spec: &'static ModelSpec,
    root: PathBuf,
    threads: usize,
    identity: String,
    /// The model once loaded. A failed load is not kept: the next call
    /// tries again (after `vouch model import` repaired the files, a
    /// server recovers without a restart).
    loaded: Mutex<Option<Arc<Loaded>>>,
}

/// The network a model's weights run in.
enum Encoder {
    Bert(BertModel),
    MPNet(MPNetModel),
}

impl Encoder {
    fn device(&self) -> &Device {
        match self {
            Encoder::Bert(m) => &m.device,
            Encoder::MPNet(m) => &m.device,
        }
    }

    fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Encoder::Bert(m) => m.forward(ids, &ids.zeros_like()?, mask),
            Encoder::MPNet(m) => m.forward(ids, mask),
        }
    }
}

struct Loaded {
    model: Encoder,
    tokenizer: Tokenizer,
    cls: u32,
    sep: u32,
    pool: rayon::ThreadPool,
}

/// The environment variable to set, and its value, before any thread
/// starts, or `None` when the user set it. candle asks how many threads to
/// split each matrix product into on every product, and unless
/// `RAYON_NUM_THREADS` is set it finds out by reading `/proc/cpuinfo`:
/// 48 reads per query, a fifth of a MiniLM query's time (8.3 → 6.7 ms
/// p50, `vouch-bench embeddings --claims 300`). Set once, the answer comes from the
/// environment. The value is the count rayon itself defaults to.
fn matmul_threads_env() -> Option<(&'static str, String)> {
    const KEY: &str = "RAYON_NUM_THREADS";
    if std::env::var_os(KEY).is_some() {
        return None;
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some((KEY, n.to_string()))
}

/// Set [`matmul_threads_env`] in this process's environment.
///
/// # Safety
/// Changing the environment races with any other thread reading it: call
/// this first thing in `main`, before a thread is started.
#[allow(unsafe_code)]
pub unsafe fn settle_matmul_threads() {
    if let Some((key, value)) = matmul_threads_env() {
        // SAFETY: the caller promises no other thread exists yet.
        unsafe { std::env::set_var(key, value) };
    }
}

/// One thread on machines with two cores or fewer (two measured slower
/// than one there: the second fights the server for the core), else two.
pub fn default_threads() -> usize {
    match std::thread::available_parallelism().map(|n| n.get()) {
        Ok(n) if n > 2 => 2,
        _ => 1,
    }
}

impl ModelEmbedder {
    /// The model `spec` installed under `root`; nothing is read until the
    /// first text is embedded.
    pub fn new(spec: &'static ModelSpec, root: &Path, threads: usize) -> ModelEmbedder {
        ModelEmbedder {
            spec,
            root: root.to_path_buf(),
            // Never more threads than the machine has (a hostile config
            // could ask for 65,535).
            threads: threads.clamp(
                1,
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            ),
            identity: spec.identity(),
            loaded: Mutex::new(None),
        }
    }

    /// The model it runs.
    pub fn spec(&self) -> &'static ModelSpec {
        self.spec
    }

    /// Load now (and report a damaged install now, not at first search).
    pub fn load(&self) -> Result<()> {
        self.loaded().map(|_| ())
    }

    fn loaded(&self) -> Result<Arc<Loaded>> {
        let mut slot = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let m = Arc::new(load(self.spec, &self.root, self.threads)?);
        *slot = Some(m.clone());
        Ok(m)
    }

    /// Token ids of `text` without special tokens, cut at the text limit.
    fn tokens(&self, m: &Loaded, text: &str) -> Result<Vec<u32>> {
        let mut cut = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let enc = m
            .tokenizer
            .encode(&text[..cut], false)
            .map_err(|e| Error::internal(format!("tokenizer: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// [CLS] window [SEP] (MPNet: <s> window </s>) for each window of at most `max_tokens - 2` ids;
    /// an empty text is one empty window (its vector is the model's answer
    /// for [CLS][SEP], so empty text never fails).
    fn windows(&self, m: &Loaded, ids: &[u32], max: usize) -> Vec<Vec<u32>> {
        let room = self.spec.max_tokens - 2;
        let mut out: Vec<Vec<u32>> = ids
            .chunks(room)
            .take(max)
            .map(|w| {
                let mut seq = Vec::with_capacity(w.len() + 2);
                seq.push(m.cls);
                seq.extend_from_slice(w);
                seq.push(m.sep);
                seq
            })
            .collect();
        if out.is_empty() {
            out.push(vec![m.cls, m.sep]);
        }
        out
    }

    /// One vector per sequence, batched by length so padding stays small.
    fn forward(&self, m: &Loaded, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| seqs[i].len());
        let mut batches: Vec<&[usize]> = Vec::new();
        let mut start = 0;
        for end in 1..=order.len() {
            // Sorted: the pass's longest is its last.
            let padded = seqs[order[end - 1]].len() * (end - start);
            let closing = end == order.len()
                || end - start == BATCH
                || seqs[order[end]].len() * (end + 1 - start) > BATCH_TOKENS;
            if closing || padded >= BATCH_TOKENS {
                batches.push(&order[start..end]);
                start = end;
            }
        }
        let mut out = vec![Vec::new(); seqs.len()];
        for batch in batches {
            let vectors = m
                .pool
                .install(|| self.forward_batch(m, batch.iter().map(|&i| &seqs[i])))
                .map_err(|e| Error::internal(format!("model {}: {e}", self.spec.name)))?;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn forward_batch<'a>(
        &self,
        m: &Loaded,
        seqs: impl Iterator<Item = &'a Vec<u32>> + Clone,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let n = seqs.clone().count();
        let len = seqs.clone().map(Vec::len).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for s in seqs {
            ids.extend_from_slice(s);
            ids.extend(std::iter::repeat_n(self.spec.pad_id, len - s.len()));
            mask.extend(std::iter::repeat_n(1u32, s.len()));
            mask.extend(std::iter::repeat_n(0u32, len - s.len()));
        }
        let device = m.model.device();
        let ids = Tensor::from_vec(ids, (n, len), device)?;
        let mask = Tensor::from_vec(mask, (n, len), device)?;
        let hidden = m.model.forward(&ids, &mask)?;
        let pooled = match self.spec.pooling {
            Pooling::Mean => {
                let mask = mask.to_dtype(DTYPE)?.unsqueeze(2)?;
                let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
                summed.broadcast_div(&mask.sum(1)?)?
            }
        };
        let pooled = if self.spec.normalize {
            let norm = pooled.sqr()?.sum_keepdim(1)?.sqrt()?;
            pooled.broadcast_div(&norm.clamp(1e-12, f64::MAX)?)?
        } else {
            pooled
        };
        pooled.to_vec2::<f32>()
    }
}

fn load(spec: &'static ModelSpec, root: &Path, threads: usize) -> Result<Loaded> {
    let config_bytes = install::read_verified(root, spec, CONFIG)?;
    let tokenizer_bytes = install::read_verified(root, spec, TOKENIZER)?;
    let weights = install::read_verified(root, spec, WEIGHTS)?;
    let bad_config =
        |e: serde_json::Error| Error::invalid(format!("model {}: config.json: {e}", spec.name));
    let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
        .map_err(|e| Error::invalid(format!("model {}: tokenizer.json: {e}", spec.name)))?;
    // The file asks for padding and truncation at 128 tokens; windows of
    // `max_tokens` (what sentence-transformers uses) are cut here instead.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| Error::invalid(format!("model {}: tokenizer.json: {e}", spec.name)))?;
    let token = |t: &str| {
        tokenizer.token_to_id(t).ok_or_else(|| {
            Error::invalid(format!(
                "model {}: the tokenizer has no {t} token",
                spec.name
            ))
        })
    };
    let (cls, sep) = (token(spec.cls_token)?, token(spec.sep_token)?);
    let device = Device::Cpu;
    let vb = VarBuilder::from_buffered_safetensors(weights, DTYPE, &device)
        .map_err(|e| Error::invalid(format!("model {}: {WEIGHTS}: {e}", spec.name)))?;
    let model = match spec.arch {
        Arch::Bert => {
            let config: bert::Config = serde_json::from_slice(&config_bytes).map_err(bad_config)?;
            BertModel::load(vb, &config).map(Encoder::Bert)
        }
        Arch::MPNet => {
            let config: mpnet::Config =
                serde_json::from_slice(&config_bytes).map_err(bad_config)?;
            MPNetModel::load(vb, &config).map(Encoder::MPNet)
        }
    }
    .map_err(|e| Error::invalid(format!("model {}: {e}", spec.name)))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("vouch-embed-{i}"))
        .build()
        .map_err(|e| Error::internal(format!("embedding threads: {e}")))?;
    Ok(Loaded {
        model,
        tokenizer,
        cls,
        sep,
        pool,
    })
}

impl Embedder for ModelEmbedder {
    fn model_id(&self) -> &str {
        &self.identity
    }
    fn dimensions(&self) -> usize {
        self.spec.dimensions
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let m = self.loaded()?;
        let m = m.as_ref();
        let text = format!("{}{text}", self.spec.query_prefix);
        let ids = self.tokens(m, &text)?;
        let seqs = self.windows(m, &ids, 1);
        Ok(self.forward(m, &seqs)?.remove(0))
    }
    fn lexical_weight(&self) -> f32 {
        self.spec.lexical_weight
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
        let m = self.loaded()?;
        let m = m.as_ref();
        let mut seqs = Vec::new();
        let mut owner = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let text = format!("{}{t}", self.spec.document_prefix);
            for w in self.windows(m, &self.tokens(m, &text)?, MAX_CHUNKS) {
                seqs.push(w);
                owner.push(i);
            }
        }
        let mut out = vec![Vec::new(); texts.len()];
        for (i, v) in owner.into_iter().zip(self.forward(m, &seqs)?) {
            out[i].push(v);
        }
        Ok(out)
    }
}
