//! A Paddock checkpoint (Hugging Face layout) as a PaddleNLP directory that
//! `ErnieForSequenceClassification.from_pretrained` (or `ErnieForTokenClassification`'s) loads:
//! `config.json`, `model_state.pdparams`, `vocab.txt`, `tokenizer_config.json`,
//! `special_tokens_map.json`. The same name table and the same parity gate as the import, run on the
//! arrays about to be written. A token classifier goes out without a pooler (transformers' has none);
//! PaddleNLP then starts one at random, which none of that model's answers use.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::config::{PaddleConfig, PADDLE_LAYER_NORM_EPS};
use super::import::WEIGHTS;
use super::names::{self, Layout};
use super::parity::{self, ParityReport};
use super::pickle::{self, Array, Dtype};
use crate::{checkpoint, Error, Result};

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportReport {
    pub architecture: String,
    pub labels: Vec<String>,
    /// Arrays written to `model_state.pdparams`.
    pub tensors: usize,
    pub parity: ParityReport,
}

/// Exports the checkpoint in `checkpoint_dir` into `out` (replaced whole when it exists).
pub fn export(checkpoint_dir: &Path, out: &Path) -> Result<ExportReport> {
    let loaded = checkpoint::load(checkpoint_dir, Device::Cpu, None)?;
    // A checkpoint without a trained classifier (a pretrained encoder) goes out as `ErnieModel`.
    let classifier = !loaded
        .report
        .initialised
        .iter()
        .any(|n| n.starts_with("classifier."));
    let head = classifier.then(|| loaded.model.head());
    let config_json = PaddleConfig::from_hf(&loaded.config, head)?;
    let paddle_config = PaddleConfig::from_json_str(&config_json.to_string())?;

    let mut state = BTreeMap::new();
    let mut params = BTreeMap::new();
    for (name, var) in loaded.vs.variables() {
        if !classifier && name.starts_with("classifier.") {
            continue;
        }
        let (paddle, layout) = names::to_paddle(&name).ok_or_else(|| {
            Error::Checkpoint(format!("`{name}` has no PaddleNLP ERNIE counterpart"))
        })?;
        // PaddleNLP's bare `ErnieModel` saves its names without the `ernie.` prefix.
        let paddle = match (classifier, paddle.strip_prefix("ernie.")) {
            (false, Some(bare)) => bare.to_string(),
            _ => paddle,
        };
        let t = var.detach().to_device(Device::Cpu).to_kind(Kind::Float);
        let t = match layout {
            Layout::Transposed => t.tr(),
            Layout::Same => t,
        }
        .contiguous();
        state.insert(paddle.clone(), array_of(&t)?);
        params.insert(paddle, t);
    }
    let eps = loaded.config.layer_norm_eps;
    let parity = parity::check(&paddle_config, &params, &loaded.model, &loaded.tokenizer).map_err(
        |e| match e {
            Error::Checkpoint(m) if eps != PADDLE_LAYER_NORM_EPS => Error::Checkpoint(format!(
                "{m} (PaddleNLP's ERNIE normalises with epsilon {PADDLE_LAYER_NORM_EPS:e} whatever its config \
                 says; this model was trained with {eps:e})"
            )),
            other => other,
        },
    )?;
    let bytes = pickle::save_state_dict(&state);
    let lowercase = loaded.tokenizer.lowercase();
    checkpoint::replace_dir(out, |dir| {
        let write = |name: &str, data: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, data).map_err(|e| Error::io(&path, e))
        };
        let pretty = |v: &serde_json::Value| serde_json::to_vec_pretty(v).expect("JSON value");
        write("config.json", &pretty(&config_json))?;
        write(WEIGHTS, &bytes)?;
        let mut vocab = loaded.tokenizer.vocab().join("\n");
        vocab.push('\n');
        write("vocab.txt", vocab.as_bytes())?;
        let specials = serde_json::json!({
            "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        });
        let mut tokenizer_config = specials.clone();
        tokenizer_config["do_lower_case"] = lowercase.into();
        tokenizer_config["tokenizer_class"] = "ErnieTokenizer".into();
        write("tokenizer_config.json", &pretty(&tokenizer_config))?;
        write("special_tokens_map.json", &pretty(&specials))
    })?;
    Ok(ExportReport {
        architecture: config_json["architectures"][0]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        labels: if classifier {
            loaded.config.labels()
        } else {
            Vec::new()
        },
        tensors: state.len(),
        parity,
    })
}

fn array_of(t: &Tensor) -> Result<Array> {
    let numel = t.numel();
    let mut data = vec![0u8; numel * 4];
    t.f_copy_data_u8(&mut data, numel)?;
    Ok(Array {
        dtype: Dtype { kind: 'f', size: 4 },
        shape: t.size().iter().map(|&d| d as usize).collect(),
        data,
    })
}
