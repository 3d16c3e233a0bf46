//! The ERNIE 3.0 / BERT encoder and its task heads, written so that every VarStore path is the Hugging Face
//! state-dict name (`ernie.encoder.layer.0.attention.self.query.weight`, `classifier.weight`, ...): a
//! transformers checkpoint loads without renaming and a Paddock checkpoint is a transformers checkpoint.
//!
//! # Layout
//! - [`layers`]: `Dense` / `LayerNorm` parameter holders with transformers' initialisation.
//! - [`embeddings`]: word + position + token-type (+ task-type) embeddings.
//! - [`encoder`]: post-LN transformer layers (fused scaled-dot-product attention, exact GELU).
//! - [`heads`]: the tanh pooler, `ErnieModel`, `ErnieForSequenceClassification`, `ErnieForMaskedLM`.
//!
//! Shapes: `B` batch, `S` sequence length, `H` hidden size, `L` labels, `V` vocabulary.

pub mod embeddings;
pub mod encoder;
pub mod heads;
pub mod layers;

pub use heads::{ErnieForMaskedLM, ErnieForSequenceClassification, ErnieModel, ErnieModelOutput};

use tch::{Kind, Tensor};

/// Turns a `[B, S]` 0/1 attention mask into the additive `[B, 1, 1, S]` mask of transformers
/// (`(1 - mask) * finfo(dtype).min`), in the dtype of the scores.
pub fn additive_mask(attention_mask: &Tensor, kind: Kind) -> Tensor {
    let min = match kind {
        Kind::Double => f64::MIN,
        Kind::Half => -65504.0,
        Kind::BFloat16 => -3.3895313892515355e38,
        _ => f32::MIN as f64,
    };
    let (b, s) = attention_mask
        .size2()
        .expect("attention_mask must be [batch, seq]");
    (attention_mask.to_kind(kind).neg() + 1.0)
        .multiply_scalar(min)
        .view([b, 1, 1, s])
}
