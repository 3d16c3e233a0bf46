//! A PaddleNLP ERNIE directory (`config.json` or `model_config.json`, `model_state.pdparams`, `vocab.txt`,
//! `tokenizer_config.json`) into a Hugging Face one Paddock trains from, evaluates and serves.
//!
//! Every array is accounted for: each name must be one of ERNIE's, each shape what the config implies,
//! nothing the model needs may be missing (a bare encoder's classifier aside), what it does not use is
//! listed (a token classifier's pooler), and the converted model must answer as the original does
//! ([`parity`]) before anything is written. The output directory appears whole or not at all.

use std::collections::BTreeMap;
use std::path::Path;

use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use super::config::PaddleConfig;
use super::names::{self, Layout};
use super::parity;
use super::pickle::{self, Array};
use crate::{checkpoint, Error, Result, TaskModel, Tokenizer};
use contracts::task::Head;
pub use contracts::types::{MappedTensor, PaddleImport};

/// The weights file of a PaddleNLP model.
pub const WEIGHTS: &str = "model_state.pdparams";

/// Imports the PaddleNLP model in `from` into `out` (replaced whole when it exists).
pub fn import(from: &Path, out: &Path) -> Result<PaddleImport> {
    let config = PaddleConfig::from_dir(from)?;
    let path = from.join(WEIGHTS);
    if !path.is_file() {
        return Err(Error::Checkpoint(format!(
            "{} has no {WEIGHTS}: a PaddleNLP model directory holds its weights there",
            from.display()
        )));
    }
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let arrays = pickle::load_state_dict(&bytes)
        .map_err(|e| Error::Checkpoint(format!("{}: {e}", path.display())))?;
    // A base-sized model is about 470 MB: each copy is let go as soon as the next one exists.
    drop(bytes);
    let at = |m: String| Error::Checkpoint(format!("{}: {m}", path.display()));

    let mut params = BTreeMap::new();
    let mut mapped = Vec::with_capacity(arrays.len());
    let mut saved_as = Vec::new();
    for (name, array) in arrays {
        let (hf, layout) = names::to_hf(&name).ok_or_else(|| {
            at(format!(
                "`{name}` is not a parameter of a PaddleNLP ERNIE ({}); another architecture cannot \
                 be imported",
                super::config::ARCHITECTURES.join(", ")
            ))
        })?;
        let (tensor, kind) = tensor_of(&array).map_err(|m| at(format!("`{name}`: {m}")))?;
        if !saved_as.contains(&kind) {
            saved_as.push(kind);
        }
        let transposed = layout == Layout::Transposed;
        if transposed && tensor.dim() != 2 {
            return Err(at(format!(
                "`{name}` is a Linear weight but has shape {:?}",
                array.shape
            )));
        }
        let mut shape = array.shape;
        if transposed {
            shape.reverse();
        }
        mapped.push(MappedTensor {
            paddle: name.clone(),
            hugging_face: in_store(&hf),
            shape,
            transposed,
        });
        params.insert(name, tensor);
    }

    let classifier = params.contains_key("classifier.weight");
    if let Some(named) = config.named_head() {
        if named.is_some() != classifier {
            return Err(at(format!(
                "config.json says {} but the file {} a classifier",
                config.architectures[0],
                if classifier { "has" } else { "has no" }
            )));
        }
    }
    let head = config.head(&params);
    let num_labels = match params.get("classifier.weight") {
        Some(w) if w.dim() == 2 => Some(w.size()[1] as usize),
        Some(w) => return Err(at(format!("`classifier.weight` has shape {:?}", w.size()))),
        None => None,
    };
    let hf_config = config.to_hf(head.zip(num_labels))?;
    // PaddleNLP's token classifier keeps the encoder's pooler, which its answers never use and
    // transformers' `ErnieForTokenClassification` does not have: accounted for as unused, not loaded.
    let (unused, mapped): (Vec<MappedTensor>, Vec<MappedTensor>) = mapped
        .into_iter()
        .partition(|m| head == Some(Head::Token) && m.hugging_face.starts_with("ernie.pooler."));
    let unused: Vec<String> = unused.into_iter().map(|m| m.paddle).collect();
    let tokenizer = Tokenizer::from_dir(from)?;
    if tokenizer.vocab_size() > hf_config.vocab_size {
        return Err(Error::Checkpoint(format!(
            "{}: vocab.txt has {} tokens but the config says vocab_size {}",
            from.display(),
            tokenizer.vocab_size(),
            hf_config.vocab_size
        )));
    }

    let vs = VarStore::new(Device::Cpu);
    let model = TaskModel::new(&vs.root(), &hf_config);
    let mut vars = vs.variables();
    for m in &mapped {
        let Some(var) = vars.remove(&m.hugging_face) else {
            let hint = if m.paddle.contains("task_type_embeddings") {
                " (the config says use_task_id false)"
            } else {
                " (or it appears twice, with and without the `ernie.` prefix)"
            };
            return Err(at(format!(
                "`{}` has no place in the model the config describes{hint}",
                m.paddle
            )));
        };
        let src = &params[&m.paddle];
        let src = if m.transposed {
            src.tr()
        } else {
            src.shallow_clone()
        };
        if src.size() != var.size() {
            let mut expected = var.size();
            if m.transposed {
                expected.reverse();
            }
            return Err(at(format!(
                "`{}` has shape {:?} but the config implies {expected:?}",
                m.paddle,
                params[&m.paddle].size()
            )));
        }
        tch::no_grad(|| var.shallow_clone().f_copy_(&src))?;
    }
    // A bare encoder's fresh classifier is neither missing nor saved: fine-tuning makes its own.
    let kept = |n: &str| classifier || !n.starts_with("classifier.");
    let mut missing: Vec<String> = vars
        .into_keys()
        .filter(|n| kept(n))
        .map(|n| names::to_paddle(&n).map(|(p, _)| p).unwrap_or(n))
        .collect();
    if !missing.is_empty() {
        missing.sort();
        return Err(at(format!(
            "{} parameter(s) the config describes are missing: {}",
            missing.len(),
            missing.join(", ")
        )));
    }

    let parity = parity::check(&config, &params, &model, &tokenizer)?;
    drop(params);
    checkpoint::save_only(out, &vs, &hf_config, &tokenizer, &kept)?;
    Ok(PaddleImport {
        architecture: hf_config.architectures[0].clone(),
        task: head.map(|_| hf_config.task()),
        unused,
        labels: if classifier {
            hf_config.labels()
        } else {
            Vec::new()
        },
        saved_as,
        hidden_act: hf_config.hidden_act.clone(),
        use_task_id: hf_config.use_task_id,
        tensors: mapped,
        parity,
    })
}

/// Where a Hugging Face name lives in Paddock's VarStore: a bare encoder's names gain `ernie.`.
fn in_store(hf: &str) -> String {
    if hf.starts_with("ernie.") || hf.starts_with("classifier.") {
        hf.to_string()
    } else {
        format!("ernie.{hf}")
    }
}

/// A float32 tensor of an array, in its own (Paddle) layout, and the type it was saved in. Paddle saves
/// bfloat16 as `uint16` (numpy has no bfloat16), so a 16-bit unsigned parameter is read as bfloat16.
fn tensor_of(array: &Array) -> std::result::Result<(Tensor, String), String> {
    let (kind, name) = match (array.dtype.kind, array.dtype.size) {
        ('f', 4) => (Kind::Float, "float32"),
        ('f', 2) => (Kind::Half, "float16"),
        ('u', 2) => (Kind::BFloat16, "bfloat16"),
        ('f', 8) => (Kind::Double, "float64"),
        _ => {
            return Err(format!(
                "holds {} numbers; a parameter holds floats",
                array.dtype
            ))
        }
    };
    let shape: Vec<i64> = array.shape.iter().map(|&d| d as i64).collect();
    let t = Tensor::f_from_data_size(&array.data, &shape, kind).map_err(|e| e.to_string())?;
    Ok((t.to_kind(Kind::Float), name.to_string()))
}
