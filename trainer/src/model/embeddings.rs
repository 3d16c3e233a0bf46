//! `ernie.embeddings` / `bert.embeddings`: the sum of word, absolute position, token-type and (ERNIE with
//! `use_task_id`) task-type embeddings, followed by LayerNorm and dropout.

use tch::nn::{Init, Path};
use tch::{Kind, Tensor};

use super::dropout::dropout;
use super::layers::LayerNorm;
use crate::ErnieConfig;

#[derive(Debug)]
pub struct ErnieEmbeddings {
    pub word_embeddings: Tensor,
    pub position_embeddings: Tensor,
    pub token_type_embeddings: Tensor,
    pub task_type_embeddings: Option<Tensor>,
    pub layer_norm: LayerNorm,
    /// Row of `word_embeddings` that receives no gradient (`nn.Embedding(padding_idx=pad_token_id)`).
    pad_token_id: i64,
    dropout: f64,
}

fn table(p: &Path, name: &str, rows: usize, hidden: usize, range: f64) -> Tensor {
    p.sub(name).var(
        "weight",
        &[rows as i64, hidden as i64],
        Init::Randn {
            mean: 0.0,
            stdev: range,
        },
    )
}

impl ErnieEmbeddings {
    pub fn new(p: &Path, c: &ErnieConfig) -> Self {
        let r = c.initializer_range;
        let word_embeddings = table(p, "word_embeddings", c.vocab_size, c.hidden_size, r);
        // transformers zeroes the padding row at initialisation.
        tch::no_grad(|| {
            let _ = word_embeddings.get(c.pad_token_id).zero_();
        });
        ErnieEmbeddings {
            word_embeddings,
            position_embeddings: table(
                p,
                "position_embeddings",
                c.max_position_embeddings,
                c.hidden_size,
                r,
            ),
            token_type_embeddings: table(
                p,
                "token_type_embeddings",
                c.type_vocab_size,
                c.hidden_size,
                r,
            ),
            task_type_embeddings: c.use_task_id.then(|| {
                table(
                    p,
                    "task_type_embeddings",
                    c.task_type_vocab_size,
                    c.hidden_size,
                    r,
                )
            }),
            layer_norm: LayerNorm::new(&p.sub("LayerNorm"), c.hidden_size, c.layer_norm_eps),
            pad_token_id: c.pad_token_id,
            dropout: c.hidden_dropout_prob,
        }
    }

    /// `input_ids` `[B, S]` → `[B, S, H]`. Missing token-type / task-type ids mean all zeros.
    pub fn forward_t(
        &self,
        input_ids: &Tensor,
        token_type_ids: Option<&Tensor>,
        task_type_ids: Option<&Tensor>,
        train: bool,
    ) -> Tensor {
        let seq = input_ids.size()[1];
        let words = Tensor::embedding(
            &self.word_embeddings,
            input_ids,
            self.pad_token_id,
            false,
            false,
        );
        // Position rows 0..S broadcast over the batch; no index tensor is materialised.
        let positions = self.position_embeddings.narrow(0, 0, seq);
        let types = match token_type_ids {
            Some(t) => Tensor::embedding(&self.token_type_embeddings, t, -1, false, false),
            None => self.token_type_embeddings.get(0),
        };
        // Summed in transformers' order (words + types, then positions, then tasks) for bitwise-close parity.
        let mut x = words + types + positions;
        if let Some(task) = &self.task_type_embeddings {
            x = match task_type_ids {
                Some(t) => x + Tensor::embedding(task, t, -1, false, false),
                None => x + task.get(0),
            };
        }
        dropout(&self.layer_norm.forward(&x), self.dropout, train)
    }

    /// Element type of the embeddings (the model's parameter dtype).
    pub fn kind(&self) -> Kind {
        self.word_embeddings.kind()
    }
}
