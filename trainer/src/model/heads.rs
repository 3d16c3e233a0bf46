//! The encoder with its pooler (`ErnieModel`, under `ernie.` or `bert.`) and the task heads: sequence
//! classification (`classifier.*` over the pooled `[CLS]`), token classification (`classifier.*` over every
//! token, no pooler, as transformers builds it), the two behind [`TaskModel`] for whoever holds "the
//! fine-tuned model", and masked-LM pretraining (`cls.predictions.*`, decoder tied to the word embeddings).

use tch::nn::{Init, Path};
use tch::{Kind, Tensor};

use super::dropout::dropout;
use super::embeddings::ErnieEmbeddings;
use super::encoder::{ErnieEncoder, Packing};
use super::key_mask;
use super::layers::{activation, Dense, LayerNorm};
use crate::ErnieConfig;
use contracts::task::Head;

/// The tensors of one forward pass, named after transformers' `forward` arguments: `[B, S]` Int64 on the
/// model's device. One value instead of four positional tensors, so the heads, the training loops and the
/// server cannot swap `token_type_ids` and `task_type_ids` (both optional, both `[B, S]`).
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub input_ids: &'a Tensor,
    /// 1 for real tokens, 0 for padding.
    pub attention_mask: &'a Tensor,
    pub token_type_ids: Option<&'a Tensor>,
    /// ERNIE 3.0's task-type ids (zeros when absent, as in PaddleNLP).
    pub task_type_ids: Option<&'a Tensor>,
}

/// What the encoder returns.
#[derive(Debug)]
pub struct ErnieModelOutput {
    /// `[B, S, H]` last hidden states (zeros at padded positions when the batch was unpadded, where
    /// transformers has values nobody should read); `[B, 1, H]` when only the `[CLS]` row was computed.
    pub sequence_output: Tensor,
    /// `[B, H]` tanh pooler over `[CLS]`; `None` for an encoder without a pooler.
    pub pooled_output: Option<Tensor>,
}

/// `ernie.*` / `bert.*`: embeddings, encoder and (unless a token head sits on it) the pooler.
#[derive(Debug)]
pub struct ErnieModel {
    pub embeddings: ErnieEmbeddings,
    pub encoder: ErnieEncoder,
    /// `None` under a token-classification head: transformers builds that model with
    /// `add_pooling_layer=False`, so its checkpoints have no pooler and ours must not either.
    pub pooler: Option<Dense>,
    /// Run the dense layers on real tokens only (see [`Packing`]); on by default, off to measure the gain.
    pub unpad: bool,
}

impl ErnieModel {
    /// `p` is the `ernie` (or `bert`) path.
    pub fn new(p: &Path, c: &ErnieConfig) -> Self {
        Self::with_pooler(p, c, true)
    }

    /// The encoder with or without its pooler (`add_pooling_layer` in transformers).
    pub fn with_pooler(p: &Path, c: &ErnieConfig, pooler: bool) -> Self {
        ErnieModel {
            embeddings: ErnieEmbeddings::new(&p.sub("embeddings"), c),
            encoder: ErnieEncoder::new(&p.sub("encoder"), c),
            pooler: pooler.then(|| {
                Dense::new(
                    &p.sub("pooler").sub("dense"),
                    c.hidden_size,
                    c.hidden_size,
                    c.initializer_range,
                )
            }),
            unpad: true,
        }
    }

    /// Full forward.
    pub fn forward_t(&self, x: Inputs, train: bool) -> ErnieModelOutput {
        self.run(x, train, false)
    }

    /// Like [`ErnieModel::forward_t`] but the last layer is computed for `[CLS]` only: use it when only the
    /// pooled output is needed (classification). `sequence_output` is then `[B, 1, H]`.
    pub fn forward_pooled_t(&self, x: Inputs, train: bool) -> ErnieModelOutput {
        self.run(x, train, true)
    }

    fn run(&self, x: Inputs, train: bool, cls_only: bool) -> ErnieModelOutput {
        let embedded =
            self.embeddings
                .forward_t(x.input_ids, x.token_type_ids, x.task_type_ids, train);
        let mask = key_mask(x.attention_mask);
        let packing = if self.unpad {
            Packing::new(x.attention_mask)
        } else {
            None
        };
        let hidden = match &packing {
            Some(p) => p.pack(&embedded),
            None => embedded,
        };
        let out = self
            .encoder
            .forward_t(hidden, mask.as_ref(), packing.as_ref(), train, cls_only);
        let (sequence_output, cls) = if cls_only {
            (out.unsqueeze(1), out)
        } else {
            let seq = match &packing {
                Some(p) => p.unpack(&out),
                None => out,
            };
            let cls = seq.select(1, 0);
            (seq, cls)
        };
        let pooled_output = self.pooler.as_ref().map(|p| p.forward(&cls).tanh());
        ErnieModelOutput {
            sequence_output,
            pooled_output,
        }
    }
}

/// `ErnieForSequenceClassification` / `BertForSequenceClassification`: pooler → dropout → `classifier`.
#[derive(Debug)]
pub struct ErnieForSequenceClassification {
    pub ernie: ErnieModel,
    pub classifier: Dense,
    dropout: f64,
}

impl ErnieForSequenceClassification {
    /// `p` is the VarStore root; parameters are created under `ernie.` (or `bert.` when
    /// `model_type == "bert"`) and `classifier.`, exactly the Hugging Face state-dict names.
    pub fn new(p: &Path, config: &ErnieConfig) -> Self {
        ErnieForSequenceClassification {
            ernie: ErnieModel::new(&p.sub(config.base_prefix()), config),
            classifier: classifier(p, config),
            dropout: config.classifier_dropout_prob(),
        }
    }

    /// The type the weights are held in (float32, unless cast for inference).
    pub fn kind(&self) -> Kind {
        self.ernie.embeddings.kind()
    }

    /// `[B, S]` Int64 inputs on the model's device → logits `[B, L]` (Float; under autocast or with weights
    /// cast for inference possibly half — callers convert with `.to_kind(Kind::Float)`).
    pub fn forward_t(&self, x: Inputs, train: bool) -> Tensor {
        let pooled = self
            .ernie
            .forward_pooled_t(x, train)
            .pooled_output
            .expect("a sequence classifier's encoder has its pooler");
        self.classifier
            .forward(&dropout(&pooled, self.dropout, train))
    }
}

/// `classifier.*`: hidden size → labels, the same layer under either head.
fn classifier(p: &Path, config: &ErnieConfig) -> Dense {
    Dense::new(
        &p.sub("classifier"),
        config.hidden_size,
        config.num_labels,
        config.initializer_range,
    )
}

/// `ErnieForTokenClassification` / `BertForTokenClassification`: every token's hidden state → dropout →
/// `classifier`; the encoder has no pooler.
#[derive(Debug)]
pub struct ErnieForTokenClassification {
    pub ernie: ErnieModel,
    pub classifier: Dense,
    dropout: f64,
}

impl ErnieForTokenClassification {
    /// `p` is the VarStore root: `ernie.` (or `bert.`) without `pooler.`, and `classifier.`.
    pub fn new(p: &Path, config: &ErnieConfig) -> Self {
        ErnieForTokenClassification {
            ernie: ErnieModel::with_pooler(&p.sub(config.base_prefix()), config, false),
            classifier: classifier(p, config),
            dropout: config.classifier_dropout_prob(),
        }
    }

    /// `[B, S]` inputs → logits `[B, S, L]` (padded positions hold values nobody should read).
    pub fn forward_t(&self, x: Inputs, train: bool) -> Tensor {
        let hidden = self.ernie.forward_t(x, train).sequence_output;
        self.classifier
            .forward(&dropout(&hidden, self.dropout, train))
    }
}

/// The fine-tuned model of any task: the head its configuration's task asks for. Training, evaluation,
/// prediction and serving hold this, so they work for every task without naming a head.
#[derive(Debug)]
pub enum TaskModel {
    Sequence(ErnieForSequenceClassification),
    Token(ErnieForTokenClassification),
}

impl TaskModel {
    /// The head `config` names ([`ErnieConfig::model_head`]), its parameters created under the
    /// VarStore root `p`.
    pub fn new(p: &Path, config: &ErnieConfig) -> Self {
        match config.model_head() {
            Head::Sequence => TaskModel::Sequence(ErnieForSequenceClassification::new(p, config)),
            Head::Token => TaskModel::Token(ErnieForTokenClassification::new(p, config)),
        }
    }

    pub fn head(&self) -> Head {
        match self {
            TaskModel::Sequence(_) => Head::Sequence,
            TaskModel::Token(_) => Head::Token,
        }
    }

    /// The encoder under the head.
    pub fn ernie(&self) -> &ErnieModel {
        match self {
            TaskModel::Sequence(m) => &m.ernie,
            TaskModel::Token(m) => &m.ernie,
        }
    }

    pub fn ernie_mut(&mut self) -> &mut ErnieModel {
        match self {
            TaskModel::Sequence(m) => &mut m.ernie,
            TaskModel::Token(m) => &mut m.ernie,
        }
    }

    /// The type the weights are held in (float32, unless cast for inference).
    pub fn kind(&self) -> Kind {
        self.ernie().embeddings.kind()
    }

    /// Logits: `[B, L]` for a sequence head, `[B, S, L]` for a token head (the same caveats on their
    /// type as [`ErnieForSequenceClassification::forward_t`]).
    pub fn forward_t(&self, x: Inputs, train: bool) -> Tensor {
        match self {
            TaskModel::Sequence(m) => m.forward_t(x, train),
            TaskModel::Token(m) => m.forward_t(x, train),
        }
    }

    /// Summed cross-entropy of `logits` against `labels` (`[B]` for a sequence head, `[B, S]` for a
    /// token head), positions labelled -100 left out: summed, not averaged, so the caller divides by
    /// the labels of the whole step (across micro-batches and ranks) and every label weighs the same.
    pub fn loss_sum(logits: &Tensor, labels: &Tensor) -> Tensor {
        cross_entropy(logits, labels, tch::Reduction::Sum)
    }
}

/// Cross-entropy of `logits` (`[…, C]`, in float32 whatever they were computed in) against `labels`
/// (`[…]`), positions labelled -100 (transformers' `ignore_index`) left out.
fn cross_entropy(logits: &Tensor, labels: &Tensor, reduction: tch::Reduction) -> Tensor {
    let c = *logits.size().last().expect("logits have a class dimension");
    logits
        .reshape([-1, c])
        .to_kind(Kind::Float)
        .cross_entropy_loss::<Tensor>(&labels.reshape([-1]), None, reduction, -100, 0.0)
}

/// `ErnieForMaskedLM` / `BertForMaskedLM`: `cls.predictions.transform.{dense, LayerNorm}` and a decoder whose
/// weight is the word-embedding table (tied, as in transformers) plus `cls.predictions.bias`.
#[derive(Debug)]
pub struct ErnieForMaskedLM {
    pub ernie: ErnieModel,
    pub transform: Dense,
    pub transform_norm: LayerNorm,
    /// `cls.predictions.bias` `[V]`; transformers' `cls.predictions.decoder.bias` is the same tensor.
    pub decoder_bias: Tensor,
    act: String,
}

impl ErnieForMaskedLM {
    /// `p` is the VarStore root (`ernie.*` / `bert.*` and `cls.predictions.*`).
    pub fn new(p: &Path, config: &ErnieConfig) -> Self {
        let pred = p.sub("cls").sub("predictions");
        let tr = pred.sub("transform");
        ErnieForMaskedLM {
            ernie: ErnieModel::new(&p.sub(config.base_prefix()), config),
            transform: Dense::new(
                &tr.sub("dense"),
                config.hidden_size,
                config.hidden_size,
                config.initializer_range,
            ),
            transform_norm: LayerNorm::new(
                &tr.sub("LayerNorm"),
                config.hidden_size,
                config.layer_norm_eps,
            ),
            decoder_bias: pred.var("bias", &[config.vocab_size as i64], Init::Const(0.0)),
            act: config.hidden_act.clone(),
        }
    }

    /// Vocabulary logits `[B, S, V]` for every position.
    pub fn forward_t(&self, x: Inputs, train: bool) -> Tensor {
        self.predict(&self.ernie.forward_t(x, train).sequence_output)
    }

    /// Vocabulary logits `[N, V]` for the flattened positions `positions` (`[N]` Int64 indices into `B * S`),
    /// which avoids the `[B, S, V]` projection when only masked tokens are scored.
    pub fn forward_masked_t(&self, x: Inputs, positions: &Tensor, train: bool) -> Tensor {
        let out = self.ernie.forward_t(x, train);
        let h = out.sequence_output.size()[2];
        let picked = out
            .sequence_output
            .reshape([-1, h])
            .index_select(0, positions);
        self.predict(&picked)
    }

    fn predict(&self, hidden: &Tensor) -> Tensor {
        let x = self
            .transform_norm
            .forward(&activation(&self.act, &self.transform.forward(hidden)));
        x.linear(
            &self.ernie.embeddings.word_embeddings,
            Some(&self.decoder_bias),
        )
    }

    /// Masked-LM cross-entropy; `labels` uses -100 for positions that are not scored (transformers' rule).
    pub fn loss(logits: &Tensor, labels: &Tensor) -> Tensor {
        cross_entropy(logits, labels, tch::Reduction::Mean)
    }
}
