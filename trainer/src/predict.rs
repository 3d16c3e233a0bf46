//! Inference with a fine-tuned model of any task: batched forward passes over encoded rows (sorted by
//! length so each batch pads little), each row's logits put back in input order with the summed loss of
//! the gold answers; predictions (label and probabilities) and evaluation of the same against gold. Used
//! by training (dev/test evaluation), the `eval` / `predict` commands and the model server.

use std::path::Path;

use contracts::task::{Head, Task};
use tch::{Device, Kind};

use crate::data::batch::{collate, sorted_batches, Features, Gold, IGNORED};
use crate::data::entities::{
    entities_of_tokens, spans_of_tags, tag_tokens, types_of_labels, EntitySpan, Tag,
};
use crate::metrics::Metrics;
use crate::tokenizer::Piece;
use crate::{Precision, Result, TaskModel, Tokenizer};
use tokenizers::utils::parallelism::MaybeParallelIterator;

/// One input's answer (with its logits): what `paddock predict --json` prints and the model server
/// answers.
pub use contracts::serving::{Answer, Entity, EntityPrediction, Prediction};

/// A model ready for inference.
pub struct Inference<'a> {
    pub model: &'a TaskModel,
    pub device: Device,
    pub precision: Precision,
    pub pad_id: i64,
    pub batch_size: usize,
}

/// What a model said of some rows, in their order.
#[derive(Debug, Clone, PartialEq)]
pub struct Outputs {
    /// Each row's logits: `num_labels` values for a sequence head; for a token head `num_labels` per
    /// token of the row, token after token (`[CLS]` and `[SEP]` included).
    pub logits: Vec<Vec<f32>>,
    pub num_labels: usize,
    /// The summed cross-entropy of the rows' gold answers and how many answers it sums: `None` unless
    /// every row had one.
    pub loss: Option<(f64, usize)>,
}

impl Outputs {
    /// Each row's predicted label ids: one for a sequence head, one per token for a token head.
    pub fn predicted(&self) -> Vec<Vec<usize>> {
        let l = self.num_labels.max(1);
        self.logits
            .iter()
            .map(|row| row.chunks(l).map(argmax).collect())
            .collect()
    }

    /// The mean loss per gold answer.
    pub fn mean_loss(&self) -> Option<f64> {
        self.loss
            .filter(|&(_, n)| n > 0)
            .map(|(sum, n)| sum / n as f64)
    }
}

fn argmax(values: &[f32]) -> usize {
    values
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i)
}

impl Inference<'_> {
    /// Runs the model over `rows`.
    pub fn run(&self, rows: &[Features]) -> Result<Outputs> {
        let lengths: Vec<usize> = rows.iter().map(|r| r.input_ids.len()).collect();
        let mut logits: Vec<Vec<f32>> = vec![Vec::new(); rows.len()];
        let mut num_labels = 0;
        let mut loss = Some((0.0, 0));
        tch::no_grad(|| -> Result<()> {
            for idx in sorted_batches(&lengths, self.batch_size) {
                let refs: Vec<&Features> = idx.iter().map(|&i| &rows[i]).collect();
                let b = collate(&refs, self.pad_id, self.device);
                let forward = || self.model.forward_t(b.inputs(), false);
                // Weights cast for inference (`LoadedModel::cast_weights`) run as they are; float32 weights
                // (training's evaluations) run under autocast when a reduced precision is asked for.
                let out = if self.model.kind() == Kind::Float {
                    self.precision.autocast(self.device, forward)?
                } else {
                    forward()
                };
                let out = out.to_kind(Kind::Float);
                loss = match (loss, &b.labels) {
                    (Some((sum, n)), Some(gold)) => {
                        let scored: usize = refs.iter().map(|r| r.scored()).sum();
                        Some((
                            sum + f64::try_from(TaskModel::loss_sum(&out, gold))?,
                            n + scored,
                        ))
                    }
                    _ => None,
                };
                let out = out.to_device(Device::Cpu).contiguous();
                num_labels = *out.size().last().unwrap_or(&0) as usize;
                let flat: Vec<f32> = Vec::try_from(out.view(-1))?;
                // A row's logits: `L` values, or `seq × L` of which its own tokens are the first.
                let per_row = flat.len() / idx.len().max(1);
                for (j, &i) in idx.iter().enumerate() {
                    let take = match self.model.head() {
                        Head::Sequence => num_labels,
                        Head::Token => lengths[i] * num_labels,
                    };
                    logits[i] = flat[j * per_row..j * per_row + take].to_vec();
                }
            }
            Ok(())
        })?;
        if rows.is_empty() {
            loss = None;
        }
        Ok(Outputs {
            logits,
            num_labels,
            loss,
        })
    }

    /// The answers to `asked`, in order.
    pub fn answer(&self, asked: &Asked, labels: &[String]) -> Result<Vec<Answer>> {
        let out = self.run(&asked.rows)?;
        Ok(asked.answers(&out.logits, out.num_labels, labels))
    }

    /// Metrics of the model on labelled `rows` (mean loss included).
    pub fn evaluate(&self, rows: &[Features], labels: &[String], task: Task) -> Result<Metrics> {
        let out = self.run(rows)?;
        Ok(score(task, labels, rows, &out.predicted(), out.mean_loss()))
    }
}

/// The metrics of a `task` model that predicted `pred` (as [`Outputs::predicted`]) for `rows`: the one
/// place a task's answers are judged, for a process alone and for ranks that predicted a share each.
pub fn score(
    task: Task,
    labels: &[String],
    rows: &[Features],
    pred: &[Vec<usize>],
    loss: Option<f64>,
) -> Metrics {
    match task {
        Task::Ner => score_entities(labels, rows, pred, loss),
        Task::Classification | Task::Matching => {
            let gold: Vec<usize> = rows
                .iter()
                .map(|r| match r.gold {
                    Gold::Class(c) if c >= 0 => c as usize,
                    // Out of range on purpose: counted wrong, never a panic.
                    _ => usize::MAX,
                })
                .collect();
            let pred: Vec<usize> = pred
                .iter()
                .map(|p| p.first().copied().unwrap_or(usize::MAX))
                .collect();
            Metrics::compute(labels, &gold, &pred, loss)
        }
    }
}

/// Entity metrics from tags: each row's gold and predicted tags on the tokens that carry a gold tag
/// (the words' first pieces, within the truncation), read as BIO spans of those tokens and compared
/// exactly, as transformers' token-classification recipe feeds seqeval.
fn score_entities(
    labels: &[String],
    rows: &[Features],
    pred: &[Vec<usize>],
    loss: Option<f64>,
) -> Metrics {
    let spans = |tags: Vec<&String>| -> Vec<EntitySpan> {
        let parsed: Vec<Tag> = tags
            .into_iter()
            .map(|t| Tag::parse(t).unwrap_or(Tag::parse("O").expect("O is a tag")))
            .collect();
        spans_of_tags(&parsed)
            .0
            .into_iter()
            .map(|(start, end, label)| EntitySpan { start, end, label })
            .collect()
    };
    let (mut right, mut scored) = (0usize, 0usize);
    let (mut gold_spans, mut pred_spans) = (Vec::new(), Vec::new());
    let outside = "O".to_string();
    for (row, predicted) in rows.iter().zip(pred) {
        let Gold::Tags(gold) = &row.gold else {
            gold_spans.push(Vec::new());
            pred_spans.push(Vec::new());
            continue;
        };
        let (mut g, mut p) = (Vec::new(), Vec::new());
        for (i, &tag) in gold.iter().enumerate() {
            if tag == IGNORED {
                continue;
            }
            let guess = predicted.get(i).copied().unwrap_or(usize::MAX);
            scored += 1;
            right += usize::from(guess as i64 == tag);
            g.push(labels.get(tag as usize).unwrap_or(&outside));
            p.push(labels.get(guess).unwrap_or(&outside));
        }
        gold_spans.push(spans(g));
        pred_spans.push(spans(p));
    }
    let types = types_of_labels(labels);
    let accuracy = if scored == 0 {
        0.0
    } else {
        right as f64 / scored as f64
    };
    Metrics::of_entities(&types, &gold_spans, &pred_spans, accuracy, loss)
}

/// Encodes `examples` for a `task` model whose label names are `labels`, each with its gold answer:
/// its label's id, or for entities the tags of its tokens.
pub fn encode_examples(
    task: Task,
    tokenizer: &Tokenizer,
    examples: &[crate::data::Example],
    labels: &[String],
    max_len: usize,
) -> Result<Vec<Features>> {
    if task != Task::Ner {
        let items: Vec<(String, Option<String>)> = examples
            .iter()
            .map(|e| (e.text.clone(), e.text_pair.clone()))
            .collect();
        let gold: Vec<Option<usize>> = examples.iter().map(|e| e.label).collect();
        return encode_rows(tokenizer, &items, Some(&gold), max_len);
    }
    examples
        .into_maybe_par_iter()
        .map(|e| {
            let (encoded, pieces) = tokenizer.encode_pieces(&e.text, max_len)?;
            Ok(Features {
                input_ids: encoded.input_ids,
                token_type_ids: encoded.token_type_ids,
                gold: Gold::Tags(tag_tokens(&e.text, &e.entities, &pieces, labels)),
            })
        })
        .collect()
}

/// Inputs encoded for a model, with what it takes to read its answers: for an entity model, each text
/// and where its tokens lie in it. Encoding and reading are apart so that the model server can tokenize
/// on the request's side, batch the rows with other requests', and read its own rows' logits back.
#[derive(Debug, Clone)]
pub struct Asked {
    pub rows: Vec<Features>,
    /// Empty unless the model finds entities: then one text and its tokens' pieces per row.
    texts: Vec<(String, Vec<Option<Piece>>)>,
}

impl Asked {
    /// Encodes `(text, pair)` inputs for a `task` model with its `tokenizer`, truncated to `max_len`.
    pub fn new(
        task: Task,
        tokenizer: &Tokenizer,
        inputs: Vec<(String, Option<String>)>,
        max_len: usize,
    ) -> Result<Asked> {
        if task.head() == Head::Sequence {
            return Ok(Asked {
                rows: encode_rows(tokenizer, &inputs, None, max_len)?,
                texts: Vec::new(),
            });
        }
        let encoded: Vec<_> = inputs
            .into_maybe_par_iter()
            .map(|(text, _)| {
                let (e, pieces) = tokenizer.encode_pieces(&text, max_len)?;
                Ok((
                    Features::unlabelled(e.input_ids, e.token_type_ids),
                    (text, pieces),
                ))
            })
            .collect::<Result<_>>()?;
        let (rows, texts) = encoded.into_iter().unzip();
        Ok(Asked { rows, texts })
    }

    /// Each row's answer from its `logits` (as [`Outputs::logits`], `num_labels` per sequence or
    /// token); `labels` are the model's label names (an entity model's BIO tags).
    pub fn answers(
        &self,
        logits: &[Vec<f32>],
        num_labels: usize,
        labels: &[String],
    ) -> Vec<Answer> {
        if self.texts.is_empty() {
            return logits
                .iter()
                .map(|row| Answer::Label(prediction(row, labels)))
                .collect();
        }
        let l = num_labels.max(1);
        self.texts
            .iter()
            .zip(logits)
            .map(|((text, pieces), logits)| {
                let tokens: Vec<Vec<f32>> = logits.chunks(l).map(<[f32]>::to_vec).collect();
                let (tags, scores): (Vec<usize>, Vec<f32>) = tokens
                    .iter()
                    .map(|token| {
                        let best = argmax(token);
                        (best, softmax(token)[best])
                    })
                    .unzip();
                let entities = entities_of_tokens(text, &tags, Some(&scores), pieces, labels)
                    .into_iter()
                    .map(|(span, score)| Entity {
                        text: text
                            .chars()
                            .skip(span.start)
                            .take(span.end - span.start)
                            .collect(),
                        label: span.label,
                        start: span.start,
                        end: span.end,
                        score,
                    })
                    .collect();
                Answer::Entities(EntityPrediction {
                    entities,
                    logits: Some(tokens),
                })
            })
            .collect()
    }
}

/// A sequence head's prediction from one row's logits.
fn prediction(logits: &[f32], labels: &[String]) -> Prediction {
    let label_id = argmax(logits);
    Prediction {
        label: labels
            .get(label_id)
            .cloned()
            .unwrap_or_else(|| label_id.to_string()),
        label_id,
        probabilities: softmax(logits),
        logits: Some(logits.to_vec()),
    }
}

/// Probabilities from logits, computed in f64 so that large logits neither overflow nor lose the
/// small probabilities.
fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let exp: Vec<f64> = logits.iter().map(|&x| (x as f64 - max).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.iter().map(|e| (e / sum) as f32).collect()
}

/// Encodes `(text, pair, label)` rows with `tokenizer`, truncated to `max_len`.
pub fn encode_rows(
    tokenizer: &Tokenizer,
    rows: &[(String, Option<String>)],
    labels: Option<&[Option<usize>]>,
    max_len: usize,
) -> Result<Vec<Features>> {
    let encoded = tokenizer.encode_batch(rows, max_len)?;
    Ok(encoded
        .into_iter()
        .enumerate()
        .map(|(i, e)| Features {
            input_ids: e.input_ids,
            token_type_ids: e.token_type_ids,
            gold: match labels.and_then(|l| l[i]) {
                Some(l) => Gold::Class(l as i64),
                None => Gold::None,
            },
        })
        .collect())
}

/// The truncation length to use with a checkpoint: what it was trained with (from
/// `trainer_state.json`), else 512 capped by the model's position table.
pub fn default_max_len(dir: &Path, max_positions: usize) -> usize {
    crate::train::state::TrainerState::read(dir)
        .map(|s| s.max_seq_len)
        .unwrap_or(512)
        .min(max_positions)
}
