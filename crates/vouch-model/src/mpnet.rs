//! The MPNet encoder (what sentence-transformers' all-mpnet-base-v2 runs),
//! written from the Hugging Face `MPNetModel` for inference only: candle
//! has none. It differs from BERT in three places:
//! - positions are RoBERTa's: a token's position id is its index plus
//!   `pad_token_id + 1`, padding keeps `pad_token_id`;
//! - no token types;
//! - every layer's attention scores get a bias learned per head for each
//!   of 32 buckets of relative distance (exact up to 8 either way, then
//!   logarithmic up to 128), computed once and shared by all layers.

use crate::bert::{FeedForward, Sizes, layers, padding_bias, unprefixed, word_and_position};
use candle_core::{Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};
use serde::Deserialize;

/// The fields of MPNet's `config.json` this encoder reads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Config {
    #[serde(flatten)]
    pub(crate) sizes: Sizes,
    pub(crate) relative_attention_num_buckets: usize,
    pub(crate) pad_token_id: u32,
}

/// Distances beyond this share the last bucket.
const MAX_DISTANCE: f64 = 128.0;

/// The bucket of `relative` (= key position − query position), as
/// `MPNetEncoder.relative_position_bucket` computes it: half the buckets
/// for each direction; within one, distances below a quarter of all
/// buckets have a bucket each, longer ones share buckets that grow
/// logarithmically up to `MAX_DISTANCE`.
pub(crate) fn relative_bucket(relative: i64, buckets: usize) -> u32 {
    let half = (buckets / 2) as i64;
    let n = -relative;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.abs();
    let exact = half / 2;
    bucket += if n < exact {
        n
    } else {
        let scaled = ((n as f64 / exact as f64).ln() / (MAX_DISTANCE / exact as f64).ln()
            * (half - exact) as f64) as i64;
        (exact + scaled).min(half - 1)
    };
    bucket as u32
}

struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    norm: LayerNorm,
    heads: usize,
    head_size: usize,
}

impl Attention {
    fn load(vb: VarBuilder, c: &Sizes) -> Result<Self> {
        let h = c.hidden_size;
        let attn = vb.pp("attn");
        Ok(Self {
            q: linear(h, h, attn.pp("q"))?,
            k: linear(h, h, attn.pp("k"))?,
            v: linear(h, h, attn.pp("v"))?,
            o: linear(h, h, attn.pp("o"))?,
            norm: layer_norm(h, c.layer_norm_eps, vb.pp("LayerNorm"))?,
            heads: c.num_attention_heads,
            head_size: h / c.num_attention_heads,
        })
    }

    /// `bias`: `[batch, heads, seq, seq]`, the position bias plus the
    /// padding mask.
    fn forward(&self, hidden: &Tensor, bias: &Tensor) -> Result<Tensor> {
        let context = crate::bert::attend(
            &self.q.forward(hidden)?,
            &self.k.forward(hidden)?,
            &self.v.forward(hidden)?,
            self.heads,
            self.head_size,
            bias,
        )?;
        self.norm.forward(&(self.o.forward(&context)? + hidden)?)
    }
}

struct Layer {
    attention: Attention,
    feed_forward: FeedForward,
}

impl Layer {
    fn load(vb: VarBuilder, c: &Sizes) -> Result<Self> {
        Ok(Self {
            attention: Attention::load(vb.pp("attention"), c)?,
            feed_forward: FeedForward::load(&vb, c)?,
        })
    }

    fn forward(&self, hidden: &Tensor, bias: &Tensor) -> Result<Tensor> {
        self.feed_forward
            .forward(&self.attention.forward(hidden, bias)?)
    }
}

pub(crate) struct MPNetModel {
    word: Embedding,
    position: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    relative_bias: Embedding,
    buckets: usize,
    pad: u32,
    pub(crate) device: Device,
}

impl MPNetModel {
    pub(crate) fn load(vb: VarBuilder, config: &Config) -> Result<Self> {
        let vb = unprefixed(vb, "mpnet");
        let emb = vb.pp("embeddings");
        let c = &config.sizes;
        let (word, position) = word_and_position(&emb, c)?;
        Ok(Self {
            word,
            position,
            norm: layer_norm(c.hidden_size, c.layer_norm_eps, emb.pp("LayerNorm"))?,
            layers: layers(&vb, c, Layer::load)?,
            relative_bias: embedding(
                config.relative_attention_num_buckets,
                c.num_attention_heads,
                vb.pp("encoder").pp("relative_attention_bias"),
            )?,
            buckets: config.relative_attention_num_buckets,
            pad: config.pad_token_id,
            device: vb.device().clone(),
        })
    }

    /// Hidden states `[batch, seq, hidden]`; `attention_mask` is 1 for
    /// tokens, 0 for padding (which follows the tokens).
    pub(crate) fn forward(&self, input_ids: &Tensor, attention_mask: &Tensor) -> Result<Tensor> {
        let (batch, seq) = input_ids.dims2()?;
        // RoBERTa positions: pad + 1 + index for tokens, pad for padding.
        let mask_rows = attention_mask.to_vec2::<u32>()?;
        let positions: Vec<u32> = mask_rows
            .iter()
            .flat_map(|row| {
                row.iter().enumerate().map(|(i, &m)| {
                    if m == 0 {
                        self.pad
                    } else {
                        self.pad + 1 + i as u32
                    }
                })
            })
            .collect();
        let positions = Tensor::from_vec(positions, (batch, seq), &self.device)?;
        let hidden = (self.word.forward(input_ids)? + self.position.forward(&positions)?)?;
        let mut hidden = self.norm.forward(&hidden)?;
        let dtype = hidden.dtype();

        // The relative position bias, [1, heads, seq, seq], once for all
        // layers, plus the padding mask, [batch, 1, 1, seq].
        let buckets: Vec<u32> = (0..seq as i64)
            .flat_map(|q| (0..seq as i64).map(move |k| relative_bucket(k - q, self.buckets)))
            .collect();
        let buckets = Tensor::from_vec(buckets, (seq, seq), &self.device)?;
        let position_bias = self
            .relative_bias
            .forward(&buckets)?
            .permute((2, 0, 1))?
            .unsqueeze(0)?
            .to_dtype(dtype)?;
        let mask = padding_bias(attention_mask, dtype, &self.device)?;
        let bias = position_bias.broadcast_add(&mask)?.contiguous()?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &bias)?;
        }
        Ok(hidden)
    }
}

#[cfg(test)]
mod tests {
    use super::relative_bucket;

    #[test]
    fn buckets_are_exact_near_logarithmic_far_and_split_by_direction() {
        // Keys before the query (negative relative) use buckets 0..16,
        // keys after it 16..32; the first 8 distances are exact.
        assert_eq!(relative_bucket(0, 32), 0);
        assert_eq!(relative_bucket(1, 32), 17);
        assert_eq!(relative_bucket(-1, 32), 1);
        assert_eq!(relative_bucket(-7, 32), 7);
        assert_eq!(relative_bucket(7, 32), 16 + 7);
        // Beyond 8: 8 + floor(8 · ln(n/8) / ln 16), at most 15.
        assert_eq!(relative_bucket(-8, 32), 8);
        assert_eq!(relative_bucket(-15, 32), 9);
        assert_eq!(relative_bucket(-16, 32), 10);
        assert_eq!(relative_bucket(-32, 32), 12);
        assert_eq!(relative_bucket(-63, 32), 13);
        assert_eq!(relative_bucket(-64, 32), 14);
        assert_eq!(relative_bucket(-127, 32), 15);
        assert_eq!(relative_bucket(-500, 32), 15);
        assert_eq!(relative_bucket(500, 32), 31);
    }
}
