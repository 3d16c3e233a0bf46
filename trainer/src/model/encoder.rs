//! `encoder.layer.{i}`: post-LN transformer layers. Self-attention runs through libtorch's fused
//! `scaled_dot_product_attention` with a boolean key mask (see [`super::key_mask`]), except when training
//! on the CPU with attention dropout: libtorch's CPU kernel takes no dropout and falls back to the unfused
//! steps, which are then written out here so that the dropout is [`super::dropout`]'s parallel one. The
//! feed-forward uses the exact (erf) GELU.
//!
//! Two exact shortcuts make it faster than transformers on the same padded batch, without changing any
//! output that transformers defines for real tokens:
//! - **Unpadding** ([`Packing`]): the dense layers (query/key/value, attention output, feed-forward, the
//!   LayerNorms) run only on the real tokens of the batch, packed as `[N, H]`; keys, values and queries are
//!   scattered back to `[B, S, ...]` just for the attention product, where padded keys are masked anyway.
//! - **`[CLS]`-only last layer** (`cls_only_last`): classification reads only the first position of the last
//!   layer, so that layer computes queries, attention output and feed-forward for `[CLS]` alone (keys and
//!   values still cover every token).

use tch::{Kind, Tensor};

use super::dropout::dropout;
use super::layers::{activation, Dense, LayerNorm};
use crate::ErnieConfig;

/// Below this share of real tokens the batch is packed; above it the gather/scatter copies cost more than
/// the skipped padding saves.
const PACK_BELOW: f64 = 0.92;

/// Where the real tokens of a padded `[B, S]` batch are, for packing hidden states to `[N, H]`.
#[derive(Debug)]
pub struct Packing {
    /// `[N]` indices of the real tokens in the flattened `B * S` positions.
    index: Tensor,
    /// `[B]` index of each sequence's first position (`[CLS]`) in the packed tensor.
    cls: Tensor,
    batch: i64,
    seq: i64,
}

impl Packing {
    /// `None` when packing would not pay, or when a sequence's first position is padding (transformers
    /// still pools that position, so the padded layout must be kept to stay identical).
    pub fn new(attention_mask: &Tensor) -> Option<Packing> {
        let (batch, seq) = attention_mask.size2().ok()?;
        let real = attention_mask.ne(0);
        let lengths = real.sum_dim_intlist(1, false, Kind::Int64);
        let n = lengths.sum(Kind::Int64).int64_value(&[]);
        let first_all_real = real.select(1, 0).all().int64_value(&[]) == 1;
        if !first_all_real || n as f64 >= PACK_BELOW * (batch * seq) as f64 {
            return None;
        }
        let index = real.view([-1]).nonzero().squeeze_dim(1);
        // Packed offset of each row's first real token = number of real tokens in the rows before it.
        let cls = lengths.cumsum(0, Kind::Int64) - &lengths;
        Some(Packing {
            index,
            cls,
            batch,
            seq,
        })
    }

    /// `[B, S, H]` → `[N, H]`.
    pub fn pack(&self, x: &Tensor) -> Tensor {
        let h = *x.size().last().expect("hidden dimension");
        x.reshape([self.batch * self.seq, h])
            .index_select(0, &self.index)
    }

    /// `[N, H]` → `[B, S, H]` with zeros at padded positions.
    pub fn unpack(&self, x: &Tensor) -> Tensor {
        let h = x.size()[1];
        Tensor::zeros([self.batch * self.seq, h], (x.kind(), x.device()))
            .index_copy(0, &self.index, x)
            .view([self.batch, self.seq, h])
    }
}

#[derive(Debug)]
pub struct ErnieSelfAttention {
    pub query: Dense,
    pub key: Dense,
    pub value: Dense,
    heads: i64,
    head_dim: i64,
    dropout: f64,
}

impl ErnieSelfAttention {
    fn new(p: &tch::nn::Path, c: &ErnieConfig) -> Self {
        let (h, r) = (c.hidden_size, c.initializer_range);
        ErnieSelfAttention {
            query: Dense::new(&p.sub("query"), h, h, r),
            key: Dense::new(&p.sub("key"), h, h, r),
            value: Dense::new(&p.sub("value"), h, h, r),
            heads: c.num_attention_heads as i64,
            head_dim: (c.hidden_size / c.num_attention_heads) as i64,
            dropout: c.attention_probs_dropout_prob,
        }
    }

    /// `[B, S, k*H]` → k tensors `[B, heads, S, head_dim]` (views, no copy).
    fn split_heads(&self, x: &Tensor, k: i64) -> Vec<Tensor> {
        let (b, s, _) = x.size3().expect("[B, S, kH]");
        let x = x
            .view([b, s, k, self.heads, self.head_dim])
            .permute([2, 0, 3, 1, 4]);
        (0..k).map(|i| x.get(i)).collect()
    }

    /// One matmul for several projections: the weights are concatenated (a small copy) so the input is
    /// read once.
    fn fused(&self, x: &Tensor, parts: &[&Dense]) -> Tensor {
        let w = Tensor::cat(&parts.iter().map(|d| &d.weight).collect::<Vec<_>>(), 0);
        let b = Tensor::cat(&parts.iter().map(|d| &d.bias).collect::<Vec<_>>(), 0);
        x.linear(&w, Some(&b))
    }

    /// Context for the query positions. `hidden` is `[B, S, H]`, or `[N, H]` with `packing`; `cls_only`
    /// computes the `[CLS]` query alone. `mask` is the boolean `[B, 1, 1, S]` key mask (`None`: no padding). Returns the context in the
    /// layout of the queries: `[B, S, H]`, `[N, H]`, or `[B, H]` / `[B, 1, H]` for `cls_only`.
    fn forward_t(
        &self,
        hidden: &Tensor,
        cls_query: Option<&Tensor>,
        mask: Option<&Tensor>,
        packing: Option<&Packing>,
        train: bool,
    ) -> Tensor {
        let unpack = |x: Tensor| match packing {
            Some(p) => p.unpack(&x),
            None => x,
        };
        let (query, key, value) = match cls_query {
            None => {
                let qkv = unpack(self.fused(hidden, &[&self.query, &self.key, &self.value]));
                let mut parts = self.split_heads(&qkv, 3).into_iter();
                (
                    parts.next().unwrap(),
                    parts.next().unwrap(),
                    parts.next().unwrap(),
                )
            }
            Some(cls) => {
                let kv = unpack(self.fused(hidden, &[&self.key, &self.value]));
                let mut parts = self.split_heads(&kv, 2).into_iter();
                let q = self.query.forward(cls);
                let b = q.size()[0];
                let q = self.split_heads(&q.reshape([b, 1, -1]), 1).pop().unwrap();
                (q, parts.next().unwrap(), parts.next().unwrap())
            }
        };
        let p = if train { self.dropout } else { 0.0 };
        let context = attention(&query, &key, &value, mask, p);
        let (b, _, q, _) = context.size4().expect("[B, heads, Q, d]");
        let context = context
            .transpose(1, 2)
            .reshape([b, q, self.heads * self.head_dim]);
        match (cls_query, packing) {
            (Some(cls), _) => context.reshape(cls.size()),
            (None, Some(p)) => p.pack(&context),
            (None, None) => context,
        }
    }
}

/// Attention of `[B, heads, Q, d]` queries over `[B, heads, S, d]` keys and values, with dropout `p` on the
/// probabilities. libtorch's fused CPU kernel takes no dropout (it falls back to the unfused steps), so with
/// dropout on the CPU those steps are written out here ([`attention_unfused`]) and the dropout is
/// [`dropout`]'s parallel one; otherwise the fused kernel runs.
fn attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    mask: Option<&Tensor>,
    p: f64,
) -> Tensor {
    if p > 0.0 && query.device() == tch::Device::Cpu {
        attention_unfused(query, key, value, mask, p)
    } else {
        Tensor::scaled_dot_product_attention(query, key, value, mask, p, false, None, false)
    }
}

/// `softmax(q·kᵀ/√d + mask) · v` with dropout on the probabilities, which are computed in float32 (under
/// autocast too).
fn attention_unfused(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    mask: Option<&Tensor>,
    p: f64,
) -> Tensor {
    let d = *query.size().last().expect("head dimension") as f64;
    let scores = query.matmul(&key.transpose(-2, -1)) * (1.0 / d.sqrt());
    // Finite, so that a row whose keys are all padding is uniform rather than NaN (bf16 has float32's
    // range, so the value survives autocast).
    let scores = match mask {
        Some(m) => scores.masked_fill(&m.logical_not(), -1e30),
        None => scores,
    };
    dropout(&scores.softmax(-1, Kind::Float), p, true).matmul(value)
}

/// `output.dense` → dropout → `output.LayerNorm(x + residual)`, shared by attention and feed-forward.
#[derive(Debug)]
pub struct ResidualOutput {
    pub dense: Dense,
    pub layer_norm: LayerNorm,
    dropout: f64,
}

impl ResidualOutput {
    fn new(p: &tch::nn::Path, input: usize, c: &ErnieConfig) -> Self {
        ResidualOutput {
            dense: Dense::new(&p.sub("dense"), input, c.hidden_size, c.initializer_range),
            layer_norm: LayerNorm::new(&p.sub("LayerNorm"), c.hidden_size, c.layer_norm_eps),
            dropout: c.hidden_dropout_prob,
        }
    }

    fn forward_t(&self, x: &Tensor, residual: &Tensor, train: bool) -> Tensor {
        let y = dropout(&self.dense.forward(x), self.dropout, train);
        self.layer_norm.forward(&(y + residual))
    }
}

/// One transformer layer: `attention.self`, `attention.output`, `intermediate.dense`, `output`.
#[derive(Debug)]
pub struct ErnieLayer {
    pub attention: ErnieSelfAttention,
    pub attention_output: ResidualOutput,
    pub intermediate: Dense,
    pub output: ResidualOutput,
    act: String,
}

impl ErnieLayer {
    fn new(p: &tch::nn::Path, c: &ErnieConfig) -> Self {
        let att = p.sub("attention");
        ErnieLayer {
            attention: ErnieSelfAttention::new(&att.sub("self"), c),
            attention_output: ResidualOutput::new(&att.sub("output"), c.hidden_size, c),
            intermediate: Dense::new(
                &p.sub("intermediate").sub("dense"),
                c.hidden_size,
                c.intermediate_size,
                c.initializer_range,
            ),
            output: ResidualOutput::new(&p.sub("output"), c.intermediate_size, c),
            act: c.hidden_act.clone(),
        }
    }

    /// The layer output for every position of `hidden`, or for `cls_query` (the `[CLS]` rows) alone.
    fn forward_t(
        &self,
        hidden: &Tensor,
        cls_query: Option<&Tensor>,
        mask: Option<&Tensor>,
        packing: Option<&Packing>,
        train: bool,
    ) -> Tensor {
        let context = self
            .attention
            .forward_t(hidden, cls_query, mask, packing, train);
        let residual = cls_query.unwrap_or(hidden);
        let attended = self.attention_output.forward_t(&context, residual, train);
        let inner = activation(&self.act, &self.intermediate.forward(&attended));
        self.output.forward_t(&inner, &attended, train)
    }
}

/// The stack of `encoder.layer.{i}`.
#[derive(Debug)]
pub struct ErnieEncoder {
    pub layers: Vec<ErnieLayer>,
}

impl ErnieEncoder {
    pub fn new(p: &tch::nn::Path, c: &ErnieConfig) -> Self {
        let p = p.sub("layer");
        ErnieEncoder {
            layers: (0..c.num_hidden_layers)
                .map(|i| ErnieLayer::new(&p.sub(i), c))
                .collect(),
        }
    }

    /// `hidden` is `[B, S, H]` (or `[N, H]` packed by `packing`), `mask` the boolean key mask `[B, 1, 1, S]`,
    /// or `None` when no position is padding.
    /// Returns the last hidden states in the input's layout, or only the `[CLS]` rows `[B, H]` when
    /// `cls_only_last`.
    pub fn forward_t(
        &self,
        hidden: Tensor,
        mask: Option<&Tensor>,
        packing: Option<&Packing>,
        train: bool,
        cls_only_last: bool,
    ) -> Tensor {
        let n = self.layers.len();
        let cls_rows = |h: &Tensor| match packing {
            Some(p) => h.index_select(0, &p.cls),
            None => h.select(1, 0),
        };
        let mut hidden = hidden;
        for (i, layer) in self.layers.iter().enumerate() {
            hidden = if cls_only_last && i + 1 == n {
                let cls = cls_rows(&hidden);
                layer.forward_t(&hidden, Some(&cls), mask, packing, train)
            } else {
                layer.forward_t(&hidden, None, mask, packing, train)
            };
        }
        if cls_only_last && n == 0 {
            hidden = cls_rows(&hidden);
        }
        hidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    fn qkv_and_mask() -> (Tensor, Tensor, Tensor, Tensor) {
        tch::manual_seed(11);
        let t = || Tensor::randn([2, 3, 5, 4], (Kind::Float, Device::Cpu));
        let mask = Tensor::from_slice(&[1i64, 1, 1, 1, 1, 1, 1, 1, 0, 0])
            .view([2, 5])
            .ne(0)
            .view([2, 1, 1, 5]);
        (t(), t(), t(), mask)
    }

    /// The written-out steps are libtorch's attention: with a keep-everything dropout they give the fused
    /// kernel's numbers, padded keys included.
    #[test]
    fn the_unfused_attention_is_the_fused_one() {
        let (q, k, v, mask) = qkv_and_mask();
        let fused =
            Tensor::scaled_dot_product_attention(&q, &k, &v, Some(&mask), 0.0, false, None, false);
        // p = 1e-9 keeps every element (the keep threshold rounds to 2^16) with scale 1.
        let unfused = attention_unfused(&q, &k, &v, Some(&mask), 1e-9);
        let diff = (&fused - &unfused).abs().max().double_value(&[]);
        assert!(diff < 1e-5, "largest difference {diff}");
    }

    #[test]
    fn attention_dropout_drops_on_the_cpu_and_only_when_asked() {
        let (q, k, v, mask) = qkv_and_mask();
        let plain = attention(&q, &k, &v, Some(&mask), 0.0);
        let dropped = attention(&q, &k, &v, Some(&mask), 0.5);
        assert!(!plain.allclose(&dropped, 1e-4, 1e-4, false));
        assert_eq!(dropped.isfinite().all().int64_value(&[]), 1);
        // A sequence whose keys are all padding stays finite.
        let none = mask.zeros_like();
        let out = attention_unfused(&q, &k, &v, Some(&none), 0.1);
        assert_eq!(out.isfinite().all().int64_value(&[]), 1);
    }
}
