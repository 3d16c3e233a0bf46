//! PaddleNLP's ERNIE forward pass, written from its source and run straight on the arrays of
//! `model_state.pdparams` as Paddle lays them out (Linear weights `[in, out]`, Paddle's names, its
//! LayerNorm epsilon, `-1e4` added to masked attention scores), in float64 (each array widened as it is
//! used, so a large model is not held twice).
//!
//! It is the other side of the parity gate: an import is kept only when Paddock's model, run on the
//! converted weights, gives what this gives on the originals, so a wrong name, a missed transpose, a
//! dropped task-type table or a different activation shows up as a difference in logits before anyone
//! trains on the result. It shares no code with `crate::model` on purpose. The project's tests check it
//! against Paddle itself (`trainer/tests/paddle.rs`).

use std::collections::BTreeMap;

use tch::{Kind, Tensor};

use super::config::{PaddleConfig, PADDLE_LAYER_NORM_EPS};
use crate::{Error, Result};
use contracts::task::Head;

/// What the network answers for one batch.
pub struct Outputs {
    /// `[B, H]`: the tanh pooler over `[CLS]`, when the arrays have a pooler (a Paddock export of a
    /// token classifier has none: transformers' has none to export).
    pub pooled: Option<Tensor>,
    /// `[B, labels]` from a sequence classifier or `[B, S, labels]` from a token classifier, when the
    /// model has one.
    pub logits: Option<Tensor>,
}

/// The arrays of a PaddleNLP ERNIE, by Paddle name, as float tensors in Paddle's layout.
pub struct PaddleErnie<'a> {
    config: &'a PaddleConfig,
    params: &'a BTreeMap<String, Tensor>,
    /// `ernie.` for a task model, empty for the bare encoder.
    prefix: &'static str,
}

impl<'a> PaddleErnie<'a> {
    pub fn new(config: &'a PaddleConfig, params: &'a BTreeMap<String, Tensor>) -> Self {
        let prefix = if params.keys().any(|k| k.starts_with("ernie.")) {
            "ernie."
        } else {
            ""
        };
        PaddleErnie {
            config,
            params,
            prefix,
        }
    }

    /// The array `name` (without the prefix), in float64.
    fn get(&self, name: &str) -> Result<Tensor> {
        self.exact(&format!("{}{name}", self.prefix))
    }

    fn exact(&self, full: &str) -> Result<Tensor> {
        self.params
            .get(full)
            .map(|t| t.to_kind(Kind::Double))
            .ok_or_else(|| Error::Checkpoint(format!("model_state.pdparams has no `{full}`")))
    }

    /// `x · W + b` with `W` as Paddle stores it, `[in, out]`.
    fn linear(&self, x: &Tensor, name: &str) -> Result<Tensor> {
        Ok(x.matmul(&self.get(&format!("{name}.weight"))?) + self.get(&format!("{name}.bias"))?)
    }

    fn layer_norm(&self, x: &Tensor, name: &str) -> Result<Tensor> {
        let weight = self.get(&format!("{name}.weight"))?;
        let bias = self.get(&format!("{name}.bias"))?;
        let mean = x.mean_dim(-1, true, Kind::Double);
        let centred = x - mean;
        let variance = centred.square().mean_dim(-1, true, Kind::Double);
        Ok(centred / (variance + PADDLE_LAYER_NORM_EPS).sqrt() * weight + bias)
    }

    /// `paddle.nn.functional.<hidden_act>`, as `nn.TransformerEncoderLayer` looks it up.
    fn activation(&self, x: &Tensor) -> Result<Tensor> {
        Ok(match self.config.hidden_act.as_str() {
            "gelu" => x * 0.5 * (1.0 + (x / std::f64::consts::SQRT_2).erf()),
            "relu" => x.relu(),
            "silu" | "swish" => x * x.sigmoid(),
            "tanh" => x.tanh(),
            "sigmoid" => x.sigmoid(),
            other => {
                return Err(Error::Config(format!(
                    "hidden_act `{other}` is not one Paddock runs (gelu, relu, silu, swish, tanh, sigmoid)"
                )))
            }
        })
    }

    /// The model's answer for a batch of `[B, S]` ids, token types and 0/1 attention mask.
    pub fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
    ) -> Result<Outputs> {
        let (batch, seq) = input_ids.size2()?;
        let h = self.config.hidden_size as i64;
        let heads = self.config.num_attention_heads as i64;
        let head = h / heads;
        let rows = |table: &Tensor, ids: &Tensor| table.index_select(0, &ids.view([-1]));
        let positions = Tensor::arange(seq, (Kind::Int64, input_ids.device()))
            .unsqueeze(0)
            .expand([batch, seq], false);
        let mut x = rows(&self.get("embeddings.word_embeddings.weight")?, input_ids)
            + rows(
                &self.get("embeddings.position_embeddings.weight")?,
                &positions.contiguous(),
            )
            + rows(
                &self.get("embeddings.token_type_embeddings.weight")?,
                token_type_ids,
            );
        if self.config.use_task_id {
            let tasks = Tensor::full(
                [batch * seq],
                self.config.task_id,
                (Kind::Int64, input_ids.device()),
            );
            x += rows(&self.get("embeddings.task_type_embeddings.weight")?, &tasks);
        }
        let mut x = self.layer_norm(&x.view([batch, seq, h]), "embeddings.layer_norm")?;
        // `(1 - mask) * -1e4` on every key position, as ErnieModel turns a 2-D mask into an additive one.
        let additive = (attention_mask.to_kind(Kind::Double).neg() + 1.0) * -1e4;
        let additive = additive.view([batch, 1, 1, seq]);
        let split = |t: Tensor| t.view([batch, seq, heads, head]).permute([0, 2, 1, 3]);
        for layer in 0..self.config.num_hidden_layers {
            let at = |part: &str| format!("encoder.layers.{layer}.{part}");
            let q = split(self.linear(&x, &at("self_attn.q_proj"))?);
            let k = split(self.linear(&x, &at("self_attn.k_proj"))?);
            let v = split(self.linear(&x, &at("self_attn.v_proj"))?);
            let scores = q.matmul(&k.transpose(-1, -2)) * (head as f64).powf(-0.5) + &additive;
            let context = scores
                .softmax(-1, Kind::Double)
                .matmul(&v)
                .permute([0, 2, 1, 3])
                .contiguous()
                .view([batch, seq, h]);
            let attended = self.linear(&context, &at("self_attn.out_proj"))?;
            x = self.layer_norm(&(x + attended), &at("norm1"))?;
            let inner = self.activation(&self.linear(&x, &at("linear1"))?)?;
            let out = self.linear(&inner, &at("linear2"))?;
            x = self.layer_norm(&(x + out), &at("norm2"))?;
        }
        let pooled = match self
            .params
            .contains_key(&format!("{}pooler.dense.weight", self.prefix))
        {
            true => Some(self.linear(&x.select(1, 0), "pooler.dense")?.tanh()),
            false => None,
        };
        let classify = |features: &Tensor| -> Result<Tensor> {
            Ok(features.matmul(&self.exact("classifier.weight")?)
                + self.exact("classifier.bias")?)
        };
        let logits = match self.config.head(self.params) {
            None => None,
            Some(Head::Token) => Some(classify(&x)?),
            Some(Head::Sequence) => Some(classify(pooled.as_ref().ok_or_else(|| {
                Error::Checkpoint("a sequence classifier without its pooler".into())
            })?)?),
        };
        Ok(Outputs { pooled, logits })
    }
}
