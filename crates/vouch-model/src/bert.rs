//! The BERT encoder, vendored from candle-transformers 0.11.1
//! (`src/models/bert.rs`, MIT OR Apache-2.0, © the candle authors; see
//! LICENSE-candle) and cut to what sentence embedding needs: no tracing,
//! no dropout (inference only), no prediction heads. Vendoring it spares
//! the build the rest of candle-transformers (hundreds of models). The
//! parts MPNet has as BERT does (its sizes, the feed-forward half of a
//! layer, the padding bias, …) are here for `mpnet.rs` too.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HiddenAct {
    Gelu,
    GeluApproximate,
    Relu,
}

impl HiddenAct {
    pub(crate) fn forward(self, xs: &Tensor) -> Result<Tensor> {
        match self {
            HiddenAct::Gelu => xs.gelu_erf(),
            HiddenAct::GeluApproximate => xs.gelu(),
            HiddenAct::Relu => xs.relu(),
        }
    }
}

/// The sizes of a BERT-shaped encoder as a Hugging Face `config.json`
/// gives them: what this encoder and MPNet's both read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Sizes {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) hidden_act: HiddenAct,
    pub(crate) max_position_embeddings: usize,
    pub(crate) layer_norm_eps: f64,
}

/// The fields of a Hugging Face `config.json` this encoder reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Config {
    #[serde(flatten)]
    pub(crate) sizes: Sizes,
    pub(crate) type_vocab_size: usize,
}

/// The word and the position embeddings in an encoder's `embeddings`
/// folder `vb`.
pub(crate) fn word_and_position(vb: &VarBuilder, c: &Sizes) -> Result<(Embedding, Embedding)> {
    Ok((
        embedding(c.vocab_size, c.hidden_size, vb.pp("word_embeddings"))?,
        embedding(
            c.max_position_embeddings,
            c.hidden_size,
            vb.pp("position_embeddings"),
        )?,
    ))
}

/// `vb`, or its `prefix` folder when the checkpoint puts every tensor
/// under `<prefix>.` (some do).
pub(crate) fn unprefixed<'a>(vb: VarBuilder<'a>, prefix: &str) -> VarBuilder<'a> {
    if vb.contains_tensor(&format!("{prefix}.embeddings.word_embeddings.weight")) {
        vb.pp(prefix)
    } else {
        vb
    }
}

/// The bias an attention mask (1 for tokens, 0 for padding) adds to the
/// scores, `[batch, 1, 1, seq]`: padding gets a large negative score
/// before the softmax.
pub(crate) fn padding_bias(
    attention_mask: &Tensor,
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    let mask = attention_mask.unsqueeze(1)?.unsqueeze(1)?.to_dtype(dtype)?;
    (mask.ones_like()? - &mask)?.broadcast_mul(&Tensor::new(f32::MIN, device)?.to_dtype(dtype)?)
}

struct Embeddings {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
}

impl Embeddings {
    fn load(vb: VarBuilder, config: &Config) -> Result<Self> {
        let c = &config.sizes;
        let (word, position) = word_and_position(&vb, c)?;
        Ok(Self {
            word,
            position,
            token_type: embedding(
                config.type_vocab_size,
                c.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            norm: layer_norm(c.hidden_size, c.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    fn forward(&self, input_ids: &Tensor, token_type_ids: &Tensor) -> Result<Tensor> {
        let (_batch, seq_len) = input_ids.dims2()?;
        let words = self.word.forward(input_ids)?;
        let types = self.token_type.forward(token_type_ids)?;
        let positions: Vec<u32> = (0..seq_len as u32).collect();
        let positions = Tensor::new(&positions[..], input_ids.device())?;
        let sum = (words + types)?.broadcast_add(&self.position.forward(&positions)?)?;
        self.norm.forward(&sum)
    }
}

struct SelfAttention {
    query: Linear,
    key: Linear,
    value: Linear,
    heads: usize,
    head_size: usize,
}

impl SelfAttention {
    fn load(vb: VarBuilder, c: &Sizes) -> Result<Self> {
        let head_size = c.hidden_size / c.num_attention_heads;
        let all = c.num_attention_heads * head_size;
        Ok(Self {
            query: linear(c.hidden_size, all, vb.pp("query"))?,
            key: linear(c.hidden_size, all, vb.pp("key"))?,
            value: linear(c.hidden_size, all, vb.pp("value"))?,
            heads: c.num_attention_heads,
            head_size,
        })
    }

    fn forward(&self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        attend(
            &self.query.forward(hidden)?,
            &self.key.forward(hidden)?,
            &self.value.forward(hidden)?,
            self.heads,
            self.head_size,
            mask,
        )
    }
}

/// Multi-head scaled dot-product attention over projected `q`, `k`, `v`
/// (`[batch, seq, heads · head_size]`), with `bias` added to the scores
/// before the softmax (the padding mask; MPNet adds its position bias).
pub(crate) fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    heads: usize,
    head_size: usize,
    bias: &Tensor,
) -> Result<Tensor> {
    let split = |xs: &Tensor| -> Result<Tensor> {
        let (b, n, _) = xs.dims3()?;
        xs.reshape((b, n, heads, head_size))?
            .transpose(1, 2)?
            .contiguous()
    };
    let (q, k, v) = (split(q)?, split(k)?, split(v)?);
    let scores = (q.matmul(&k.t()?)? / (head_size as f64).sqrt())?;
    let probs = candle_nn::ops::softmax(&scores.broadcast_add(bias)?, candle_core::D::Minus1)?;
    probs
        .matmul(&v)?
        .transpose(1, 2)?
        .contiguous()?
        .flatten_from(candle_core::D::Minus2)
}

/// A dense layer, then layer norm over (output + residual).
struct Output {
    dense: Linear,
    norm: LayerNorm,
}

impl Output {
    fn load(vb: VarBuilder, input: usize, c: &Sizes) -> Result<Self> {
        Ok(Self {
            dense: linear(input, c.hidden_size, vb.pp("dense"))?,
            norm: layer_norm(c.hidden_size, c.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    fn forward(&self, hidden: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.norm
            .forward(&(self.dense.forward(hidden)? + residual)?)
    }
}

/// A layer's feed-forward half, as BERT and MPNet both have it: widen,
/// activate, narrow, then layer norm over (that + its input).
pub(crate) struct FeedForward {
    intermediate: Linear,
    act: HiddenAct,
    out: Output,
}

impl FeedForward {
    /// From a layer's folder `vb` (`intermediate.dense`, `output.dense`,
    /// `output.LayerNorm`).
    pub(crate) fn load(vb: &VarBuilder, c: &Sizes) -> Result<Self> {
        Ok(Self {
            intermediate: linear(
                c.hidden_size,
                c.intermediate_size,
                vb.pp("intermediate").pp("dense"),
            )?,
            act: c.hidden_act,
            out: Output::load(vb.pp("output"), c.intermediate_size, c)?,
        })
    }

    pub(crate) fn forward(&self, attended: &Tensor) -> Result<Tensor> {
        let inner = self.act.forward(&self.intermediate.forward(attended)?)?;
        self.out.forward(&inner, attended)
    }
}

/// The layers of an encoder, `encoder.layer.<i>` under `vb`.
pub(crate) fn layers<L>(
    vb: &VarBuilder,
    c: &Sizes,
    load: impl Fn(VarBuilder, &Sizes) -> Result<L>,
) -> Result<Vec<L>> {
    (0..c.num_hidden_layers)
        .map(|i| load(vb.pp(format!("encoder.layer.{i}")), c))
        .collect()
}

struct Layer {
    attention: SelfAttention,
    attention_out: Output,
    feed_forward: FeedForward,
}

impl Layer {
    fn load(vb: VarBuilder, c: &Sizes) -> Result<Self> {
        Ok(Self {
            attention: SelfAttention::load(vb.pp("attention").pp("self"), c)?,
            attention_out: Output::load(vb.pp("attention").pp("output"), c.hidden_size, c)?,
            feed_forward: FeedForward::load(&vb, c)?,
        })
    }

    fn forward(&self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let attended = self
            .attention_out
            .forward(&self.attention.forward(hidden, mask)?, hidden)?;
        self.feed_forward.forward(&attended)
    }
}

pub(crate) struct BertModel {
    embeddings: Embeddings,
    layers: Vec<Layer>,
    pub(crate) device: Device,
}

impl BertModel {
    pub(crate) fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        let vb = unprefixed(vb, "bert");
        Ok(Self {
            embeddings: Embeddings::load(vb.pp("embeddings"), c)?,
            layers: layers(&vb, &c.sizes, Layer::load)?,
            device: vb.device().clone(),
        })
    }

    /// Hidden states `[batch, seq, hidden]`; `attention_mask` is 1 for
    /// tokens, 0 for padding.
    pub(crate) fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
    ) -> Result<Tensor> {
        let mut hidden = self.embeddings.forward(input_ids, token_type_ids)?;
        let mask = padding_bias(attention_mask, hidden.dtype(), &self.device)?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &mask)?;
        }
        Ok(hidden)
    }
}

pub(crate) const DTYPE: DType = DType::F32;
