//! The ERNIE 3.0 / BERT encoder and its task heads, written so that every VarStore path is the Hugging Face
//! state-dict name (`ernie.encoder.layer.0.attention.self.query.weight`, `classifier.weight`, ...): a
//! transformers checkpoint loads without renaming and a Paddock checkpoint is a transformers checkpoint.
//!
//! # Layout
//! - [`layers`]: `Dense` / `LayerNorm` parameter holders with transformers' initialisation.
//! - [`dropout`]: dropout whose CPU mask is drawn in parallel (libtorch's is serial).
//! - [`embeddings`]: word + position + token-type (+ task-type) embeddings.
//! - [`encoder`]: post-LN transformer layers (fused scaled-dot-product attention, exact GELU).
//! - [`heads`]: the tanh pooler, `ErnieModel`, `ErnieForSequenceClassification`,
//!   `ErnieForTokenClassification` (the two as a [`TaskModel`]), `ErnieForMaskedLM`.
//!
//! Shapes: `B` batch, `S` sequence length, `H` hidden size, `L` labels, `V` vocabulary.

pub mod dropout;
pub mod embeddings;
pub mod encoder;
pub mod heads;
pub mod layers;

pub use heads::{
    ErnieForMaskedLM, ErnieForSequenceClassification, ErnieForTokenClassification, ErnieModel,
    ErnieModelOutput, Inputs, TaskModel,
};

use tch::Tensor;

/// The attention mask libtorch's fused attention wants: `[B, 1, 1, S]` booleans, true where a key may be
/// attended to; `None` when no position is padding. transformers' additive float mask
/// (`(1 - mask) * finfo(dtype).min`) gives the same probabilities — masked keys get zero weight either way —
/// but a float mask sends libtorch 2.13's CPU attention down a path several times slower (measured with
/// `make bench-train`: 45 against 327 inference samples/s for the nano shape on padded batches), and any
/// mask at all costs the fused path when nothing is padded.
pub fn key_mask(attention_mask: &Tensor) -> Option<Tensor> {
    let (b, s) = attention_mask
        .size2()
        .expect("attention_mask must be [batch, seq]");
    let keep = attention_mask.ne(0);
    if b * s == 0 || keep.all().int64_value(&[]) == 1 {
        return None;
    }
    Some(keep.view([b, 1, 1, s]))
}
