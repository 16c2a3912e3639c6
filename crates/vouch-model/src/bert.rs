//! The BERT encoder, vendored from candle-transformers 0.11.1
//! (`src/models/bert.rs`, MIT OR Apache-2.0, © the candle authors; see
//! LICENSE-candle) and cut to what sentence embedding needs: no tracing,
//! no dropout (inference only), no prediction heads. Vendoring it spares
//! the build the rest of candle-transformers (hundreds of models).

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

/// The fields of a Hugging Face `config.json` this encoder reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Config {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) hidden_act: HiddenAct,
    pub(crate) max_position_embeddings: usize,
    pub(crate) type_vocab_size: usize,
    pub(crate) layer_norm_eps: f64,
}

struct Embeddings {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
}

impl Embeddings {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            word: embedding(c.vocab_size, c.hidden_size, vb.pp("word_embeddings"))?,
            position: embedding(
                c.max_position_embeddings,
                c.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_type: embedding(
                c.type_vocab_size,
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
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
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
    fn load(vb: VarBuilder, input: usize, c: &Config) -> Result<Self> {
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

struct Layer {
    attention: SelfAttention,
    attention_out: Output,
    intermediate: Linear,
    act: HiddenAct,
    out: Output,
}

impl Layer {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            attention: SelfAttention::load(vb.pp("attention").pp("self"), c)?,
            attention_out: Output::load(vb.pp("attention").pp("output"), c.hidden_size, c)?,
            intermediate: linear(
                c.hidden_size,
                c.intermediate_size,
                vb.pp("intermediate").pp("dense"),
            )?,
            act: c.hidden_act,
            out: Output::load(vb.pp("output"), c.intermediate_size, c)?,
        })
    }

    fn forward(&self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let attended = self
            .attention_out
            .forward(&self.attention.forward(hidden, mask)?, hidden)?;
        let inner = self.act.forward(&self.intermediate.forward(&attended)?)?;
        self.out.forward(&inner, &attended)
    }
}

pub(crate) struct BertModel {
    embeddings: Embeddings,
    layers: Vec<Layer>,
    pub(crate) device: Device,
}

impl BertModel {
    pub(crate) fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        // Some checkpoints prefix every tensor with `bert.`.
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let layers = (0..c.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), c))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            embeddings: Embeddings::load(vb.pp("embeddings"), c)?,
            layers,
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
        let dtype = hidden.dtype();
        // Padding gets a large negative score before the softmax.
        let mask = attention_mask.unsqueeze(1)?.unsqueeze(1)?.to_dtype(dtype)?;
        let mask = (mask.ones_like()? - &mask)?
            .broadcast_mul(&Tensor::new(f32::MIN, &self.device)?.to_dtype(dtype)?)?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &mask)?;
        }
        Ok(hidden)
    }
}

pub(crate) const DTYPE: DType = DType::F32;
