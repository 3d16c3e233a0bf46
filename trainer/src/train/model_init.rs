//! Building the model and tokenizer a job starts from: a Hugging Face directory (pretrained weights, a
//! fresh classifier when the label set differs), a checkpoint being resumed, or an ERNIE 3.0 preset
//! trained from scratch with a vocabulary built from the training corpus. Dropout overrides from the job
//! apply in every case, which is why this reads the pieces itself instead of calling `checkpoint::load`.

use std::path::Path;

use tch::nn::VarStore;
use tch::Device;

use super::config::ModelSection;
use crate::checkpoint::{self, load_weights, INITIALISABLE};
use crate::{ErnieConfig, Error, Result, TaskModel, Tokenizer};
use contracts::task::Task;

/// A model with its store, config and tokenizer.
pub struct Built {
    pub vs: VarStore,
    pub model: TaskModel,
    pub config: ErnieConfig,
    pub tokenizer: Tokenizer,
    /// Human-readable origin for the `start` event.
    pub origin: String,
}

/// The job's dropout overrides, applied to a configuration read from anywhere.
pub fn apply_overrides(config: &mut ErnieConfig, m: &ModelSection) {
    if let Some(p) = m.hidden_dropout {
        config.hidden_dropout_prob = p;
    }
    if let Some(p) = m.attention_dropout {
        config.attention_probs_dropout_prob = p;
    }
}

/// Loads `dir` (a Hugging Face directory or a Paddock checkpoint) for a `task` job with `labels`. With
/// `exact`, the classifier must be present for the same task and labels (resuming); otherwise a
/// differing label set or head gets a freshly initialised classifier: a sentiment classifier's weights
/// are no start for a token head of the same shape.
pub fn from_dir(
    dir: &Path,
    m: &ModelSection,
    task: Task,
    labels: &[String],
    device: Device,
    exact: bool,
) -> Result<Built> {
    let (mut config, tokenizer) = checkpoint::config_and_tokenizer(dir)?;
    let same_labels = config.labels() == labels;
    if exact && !(same_labels && config.task() == task) {
        return Err(Error::Checkpoint(format!(
            "{}: the checkpoint is a {} model with labels {:?}, the job a {} one with labels {:?}",
            dir.display(),
            config.task(),
            config.labels(),
            task,
            labels
        )));
    }
    let other_head = config.head().is_some_and(|h| h != task.head());
    let reset: &[&str] = if labels.len() != config.num_labels || other_head {
        &["classifier."]
    } else {
        &[]
    };
    config.set_labels(labels);
    config.task = Some(task);
    apply_overrides(&mut config, m);
    if m.max_seq_len > config.max_position_embeddings {
        return Err(Error::Config(format!(
            "model.max_seq_len ({}) exceeds the model's max_position_embeddings ({})",
            m.max_seq_len, config.max_position_embeddings
        )));
    }
    let vs = VarStore::new(device);
    let model = TaskModel::new(&vs.root(), &config);
    let initialisable: &[&str] = if exact { &[] } else { INITIALISABLE };
    let report = load_weights(&vs, dir, initialisable, reset)?;
    if !report.initialised.is_empty() {
        tracing::info!("initialised fresh: {}", report.initialised.join(", "));
    }
    Ok(Built {
        vs,
        model,
        config,
        tokenizer,
        origin: dir.display().to_string(),
    })
}

/// A preset shape with random weights, a vocabulary built from `corpus` and the head of `task`.
pub fn from_scratch<'a>(
    m: &ModelSection,
    task: Task,
    corpus: impl Iterator<Item = &'a str>,
    labels: &[String],
    device: Device,
) -> Result<Built> {
    let tokenizer = Tokenizer::build_from_corpus(corpus, m.vocab_size)?;
    let mut config = scratch_config(m, tokenizer.vocab_size(), labels)?;
    config.task = Some(task);
    let vs = VarStore::new(device);
    let model = TaskModel::new(&vs.root(), &config);
    Ok(Built {
        vs,
        model,
        config,
        tokenizer,
        origin: format!("preset:{} (from scratch)", m.preset),
    })
}

/// The configuration of a from-scratch model: the preset's shape with the job's overrides (sizes,
/// dropout), `vocab_size` tokens and `labels`; checked against `max_seq_len`. Pretraining builds its
/// masked-LM model from the same function, so a pretrained encoder has exactly the shape a job asks for.
pub fn scratch_config(
    m: &ModelSection,
    vocab_size: usize,
    labels: &[String],
) -> Result<ErnieConfig> {
    let mut config = ErnieConfig::preset(&m.preset, vocab_size, labels.len())?;
    if let Some(v) = m.num_hidden_layers {
        config.num_hidden_layers = v;
    }
    if let Some(v) = m.hidden_size {
        config.hidden_size = v;
    }
    if let Some(v) = m.num_attention_heads {
        config.num_attention_heads = v;
    }
    if let Some(v) = m.intermediate_size {
        config.intermediate_size = v;
    }
    config.set_labels(labels);
    apply_overrides(&mut config, m);
    config.validate()?;
    if m.max_seq_len > config.max_position_embeddings {
        return Err(Error::Config(format!(
            "model.max_seq_len ({}) exceeds the preset's max_position_embeddings ({})",
            m.max_seq_len, config.max_position_embeddings
        )));
    }
    Ok(config)
}
