//! Hugging Face model directories in and out: `config.json`, the tokenizer files, and the weights as
//! `model.safetensors` (or sharded safetensors, or a pickled `pytorch_model.bin`).
//!
//! Loading maps file names onto the VarStore (old `gamma`/`beta` LayerNorm names, checkpoints of the bare
//! encoder without the `ernie.`/`bert.` prefix), tolerates surplus tensors (MLM heads, extra layers), fails
//! with the list of missing names when the encoder is incomplete, and initialises a missing pooler or
//! classifier. Saving writes a complete directory into a temporary sibling and renames it into place, so
//! a reader never sees a half-written checkpoint.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use crate::{ErnieConfig, Error, Precision, Result, TaskModel, Tokenizer};

/// A fine-tuned model read from a checkpoint directory, ready to run on `vs.device()`.
pub struct LoadedModel {
    pub vs: VarStore,
    pub model: TaskModel,
    pub config: ErnieConfig,
    pub tokenizer: Tokenizer,
    pub report: LoadReport,
}

impl LoadedModel {
    /// For inference only: holds the weights in `precision`'s type, so that a reduced-precision model
    /// runs as it is. Autocast (what training uses, to keep float32 master weights) would cast every
    /// weight again on every forward pass, which costs more than it saves on the small batches of an
    /// endpoint (measured with `make bench-serve`: bf16 autocast served 0.76–0.86× the float32 QPS).
    pub fn cast_weights(&mut self, precision: Precision) {
        match precision {
            Precision::Fp32 => {}
            Precision::Fp16 => self.vs.half(),
            Precision::Bf16 => self.vs.bfloat16(),
        }
    }
}

/// How the file's tensors matched the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Model parameters the file lacks (all of them were freshly initialised).
    pub missing: Vec<String>,
    /// Tensors in the file the model does not use (MLM heads, surplus layers, ...).
    pub unexpected: Vec<String>,
    /// Parameters left at their fresh initialisation: the missing ones plus a classifier reset because
    /// the label count changed.
    pub initialised: Vec<String>,
}

/// What [`save`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedCheckpoint {
    pub dir: PathBuf,
    /// Total size of the files written.
    pub bytes: u64,
    /// Hex sha256 of `model.safetensors`.
    pub sha256: String,
    /// `(file name, size)` of every file, sorted by name.
    pub files: Vec<(String, u64)>,
}

/// Parameter-name prefixes that may be absent from a checkpoint and are then initialised: a task head
/// is routinely missing from pretrained encoders.
pub const INITIALISABLE: &[&str] = &["ernie.pooler.", "bert.pooler.", "classifier.", "cls."];

/// A HF-layout directory's `config.json` and tokenizer, refused together when the tokenizer has ids the
/// embedding table has no row for (they would index out of range on the first batch that uses them).
pub fn config_and_tokenizer(dir: &Path) -> Result<(ErnieConfig, Tokenizer)> {
    let config = ErnieConfig::from_file(&dir.join("config.json"))?;
    let tokenizer = Tokenizer::from_dir(dir)?;
    if tokenizer.vocab_size() > config.vocab_size {
        return Err(Error::Checkpoint(format!(
            "{}: the tokenizer has {} tokens but config.json says vocab_size {}",
            dir.display(),
            tokenizer.vocab_size(),
            config.vocab_size
        )));
    }
    Ok((config, tokenizer))
}

/// Reads a HF-layout directory. `labels` replaces the config's label names; when their number differs
/// from `num_labels` a fresh classifier is initialised.
pub fn load(dir: &Path, device: Device, labels: Option<&[String]>) -> Result<LoadedModel> {
    let (mut config, tokenizer) = config_and_tokenizer(dir)?;
    let mut reset = Vec::new();
    if let Some(labels) = labels {
        if labels.is_empty() {
            return Err(Error::Config("the label list is empty".into()));
        }
        if labels.len() != config.num_labels {
            reset.push("classifier.".to_string());
        }
        config.set_labels(labels);
    }
    let vs = VarStore::new(device);
    let model = TaskModel::new(&vs.root(), &config);
    let reset: Vec<&str> = reset.iter().map(String::as_str).collect();
    let report = load_weights(&vs, dir, INITIALISABLE, &reset)?;
    Ok(LoadedModel {
        vs,
        model,
        config,
        tokenizer,
        report,
    })
}

/// Fills the variables of `vs` from the weights in `dir`. Parameters whose names start with one of
/// `initialisable` may be absent; those starting with one of `reset` keep their fresh values even when
/// present. Any other absent parameter, and any shape mismatch, is an error naming the tensors.
pub fn load_weights(
    vs: &VarStore,
    dir: &Path,
    initialisable: &[&str],
    reset: &[&str],
) -> Result<LoadReport> {
    let (file, tensors) = read_weights(dir)?;
    let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    let prefix = vars
        .iter()
        .find_map(|(n, _)| ["ernie.", "bert."].into_iter().find(|p| n.starts_with(p)));
    let mut by_name: HashMap<String, (String, Tensor)> = HashMap::new();
    for (name, t) in tensors {
        let canonical = canonical_name(&name, prefix);
        by_name.insert(canonical, (name, t));
    }
    let mut report = LoadReport::default();
    let mut mismatched = Vec::new();
    let mut absent = Vec::new();
    for (name, var) in &vars {
        if reset.iter().any(|p| name.starts_with(p)) {
            if let Some((original, _)) = by_name.remove(name) {
                report.unexpected.push(original);
            }
            report.initialised.push(name.clone());
            continue;
        }
        match by_name.remove(name) {
            Some((original, src)) => {
                if src.size() != var.size() {
                    mismatched.push(format!(
                        "{original}: file {:?}, model {:?}",
                        src.size(),
                        var.size()
                    ));
                    continue;
                }
                tch::no_grad(|| {
                    let mut var = var.shallow_clone();
                    var.f_copy_(&src.to_kind(var.kind()))
                })
                .map_err(|e| {
                    Error::Checkpoint(format!("{}: copying {original}: {e}", file.display()))
                })?;
            }
            None if initialisable.iter().any(|p| name.starts_with(p)) => {
                report.missing.push(name.clone());
                report.initialised.push(name.clone());
            }
            None => absent.push(name.clone()),
        }
    }
    if !mismatched.is_empty() {
        return Err(Error::Checkpoint(format!(
            "{}: tensor shapes do not match config.json: {}",
            file.display(),
            mismatched.join("; ")
        )));
    }
    if !absent.is_empty() {
        let mut sample: Vec<&String> = by_name.values().map(|(n, _)| n).collect();
        sample.sort();
        sample.truncate(5);
        return Err(Error::Checkpoint(format!(
            "{}: {} required tensor(s) missing: {} (the file's unused names include: {})",
            file.display(),
            absent.len(),
            absent.join(", "),
            if sample.is_empty() {
                "none".to_string()
            } else {
                sample
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )));
    }
    let mut unexpected: Vec<String> = by_name
        .into_values()
        .map(|(n, _)| n)
        .filter(|n| !is_buffer(n))
        .collect();
    report.unexpected.append(&mut unexpected);
    report.unexpected.sort();
    Ok(report)
}

/// Non-parameter buffers older transformers versions saved; they carry no information.
fn is_buffer(name: &str) -> bool {
    name.ends_with("embeddings.position_ids") || name.ends_with("embeddings.token_type_ids")
}

/// Maps a checkpoint tensor name onto the VarStore naming: current LayerNorm names and, for bare-encoder
/// checkpoints (`embeddings.…`, `encoder.…`, `pooler.…`), the model's prefix.
fn canonical_name(name: &str, prefix: Option<&str>) -> String {
    let mut n = name.to_string();
    if let Some(stem) = n.strip_suffix("LayerNorm.gamma") {
        n = format!("{stem}LayerNorm.weight");
    } else if let Some(stem) = n.strip_suffix("LayerNorm.beta") {
        n = format!("{stem}LayerNorm.bias");
    }
    if let Some(prefix) = prefix {
        if ["embeddings.", "encoder.", "pooler."]
            .iter()
            .any(|p| n.starts_with(p))
        {
            n = format!("{prefix}{n}");
        }
    }
    n
}

/// Reads every tensor of the directory's weights (on the CPU), preferring safetensors.
fn read_weights(dir: &Path) -> Result<(PathBuf, Vec<(String, Tensor)>)> {
    let single = dir.join("model.safetensors");
    if single.exists() {
        return Ok((single.clone(), read_safetensors(&single)?));
    }
    let index = dir.join("model.safetensors.index.json");
    if index.exists() {
        let text = std::fs::read_to_string(&index).map_err(|e| Error::io(&index, e))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::Checkpoint(format!("{}: {e}", index.display())))?;
        let map = value["weight_map"].as_object().ok_or_else(|| {
            Error::Checkpoint(format!("{}: no weight_map object", index.display()))
        })?;
        let mut shards: Vec<&str> = map.values().filter_map(|v| v.as_str()).collect();
        shards.sort();
        shards.dedup();
        let mut all = Vec::new();
        for shard in shards {
            all.extend(read_safetensors(&dir.join(shard))?);
        }
        return Ok((index, all));
    }
    let bin = dir.join("pytorch_model.bin");
    if bin.exists() {
        // libtorch reads only some pickles (not Python's `torch.save(state_dict)`); keep the first line of
        // its error, not the C++ backtrace, and say how to convert.
        let tensors = Tensor::loadz_multi_with_device(&bin, Device::Cpu).map_err(|e| {
            let first = e.to_string().lines().next().unwrap_or_default().to_string();
            Error::Checkpoint(format!(
                "{}: libtorch cannot read this pickled state dict ({first}); convert it to model.safetensors \
                 (transformers: `AutoModel.from_pretrained(dir).save_pretrained(dir, safe_serialization=True)`)",
                bin.display()
            ))
        })?;
        return Ok((bin, tensors));
    }
    Err(Error::Checkpoint(format!(
        "{} has no model.safetensors, model.safetensors.index.json or pytorch_model.bin",
        dir.display()
    )))
}

fn read_safetensors(path: &Path) -> Result<Vec<(String, Tensor)>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| Error::io(path, e))?;
    let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| {
        Error::Checkpoint(format!(
            "{}: not a valid safetensors file: {e}",
            path.display()
        ))
    })?;
    let mut out = Vec::with_capacity(st.len());
    for (name, view) in st.tensors() {
        let kind = kind_of(view.dtype()).ok_or_else(|| {
            Error::Checkpoint(format!(
                "{}: {name}: unsupported dtype {:?}",
                path.display(),
                view.dtype()
            ))
        })?;
        let shape: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
        let t = Tensor::f_from_data_size(view.data(), &shape, kind)
            .map_err(|e| Error::Checkpoint(format!("{}: {name}: {e}", path.display())))?;
        out.push((name, t));
    }
    Ok(out)
}

fn kind_of(d: safetensors::Dtype) -> Option<Kind> {
    use safetensors::Dtype as D;
    Some(match d {
        D::F32 => Kind::Float,
        D::F16 => Kind::Half,
        D::BF16 => Kind::BFloat16,
        D::F64 => Kind::Double,
        D::I64 => Kind::Int64,
        D::I32 => Kind::Int,
        D::U8 => Kind::Uint8,
        D::BOOL => Kind::Bool,
        _ => return None,
    })
}

fn dtype_of(k: Kind) -> Option<safetensors::Dtype> {
    use safetensors::Dtype as D;
    Some(match k {
        Kind::Float => D::F32,
        Kind::Half => D::F16,
        Kind::BFloat16 => D::BF16,
        Kind::Double => D::F64,
        Kind::Int64 => D::I64,
        Kind::Int => D::I32,
        _ => return None,
    })
}

/// Writes `config.json`, `model.safetensors` and the tokenizer files into `dir`, replacing it atomically:
/// everything goes into a temporary sibling directory that is renamed into place only when complete.
/// `architectures` is the task's head (`…ForSequenceClassification`, …), or `…ForMaskedLM` for a store
/// without a classifier.
pub fn save(
    dir: &Path,
    vs: &VarStore,
    config: &ErnieConfig,
    tokenizer: &Tokenizer,
) -> Result<SavedCheckpoint> {
    save_only(dir, vs, config, tokenizer, &|_| true)
}

/// [`save`] restricted to the variables whose names pass `keep`: a masked-LM model is saved without its
/// pooler, which pretraining never trains (transformers' `ErnieForMaskedLM` has none either), so that
/// fine-tuning initialises it freshly instead of inheriting random weights that look trained.
pub fn save_only(
    dir: &Path,
    vs: &VarStore,
    config: &ErnieConfig,
    tokenizer: &Tokenizer,
    keep: &dyn Fn(&str) -> bool,
) -> Result<SavedCheckpoint> {
    let saved = replace_dir(dir, |tmp| write_dir(tmp, vs, config, tokenizer, keep))?;
    Ok(SavedCheckpoint {
        dir: dir.to_path_buf(),
        ..saved
    })
}

/// Fills a fresh temporary sibling of `dir` with `write` and renames it into place only when `write`
/// succeeded, replacing what was there: a reader sees the old directory or the new one, never half of
/// one, and a failure leaves nothing behind.
pub fn replace_dir<T>(dir: &Path, write: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
    let name = dir
        .file_name()
        .ok_or_else(|| Error::Checkpoint(format!("{} is not a directory name", dir.display())))?
        .to_string_lossy()
        .into_owned();
    let stamp = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let tmp = parent.join(format!(".{name}.tmp-{stamp}"));
    let result = std::fs::create_dir(&tmp)
        .map_err(|e| Error::io(&tmp, e))
        .and_then(|()| write(&tmp))
        .and_then(|value| {
            // A directory cannot be renamed over a non-empty one: move the old one aside first.
            let old = parent.join(format!(".{name}.old-{stamp}"));
            let had_old = dir.exists();
            if had_old {
                std::fs::rename(dir, &old).map_err(|e| Error::io(dir, e))?;
            }
            if let Err(e) = std::fs::rename(&tmp, dir) {
                if had_old {
                    let _ = std::fs::rename(&old, dir);
                }
                return Err(Error::io(dir, e));
            }
            if had_old {
                let _ = std::fs::remove_dir_all(&old);
            }
            Ok(value)
        });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

fn write_dir(
    tmp: &Path,
    vs: &VarStore,
    config: &ErnieConfig,
    tokenizer: &Tokenizer,
    keep: &dyn Fn(&str) -> bool,
) -> Result<SavedCheckpoint> {
    let vars: BTreeMap<String, Tensor> = vs
        .variables()
        .into_iter()
        .filter(|(n, _)| keep(n))
        .collect();
    let arch_base = if config.model_type == "bert" {
        "Bert"
    } else {
        "Ernie"
    };
    let architecture = if vars.keys().any(|k| k.starts_with("classifier.")) {
        config.model_head().architecture(&config.model_type)
    } else if vars.keys().any(|k| k.starts_with("cls.")) {
        format!("{arch_base}ForMaskedLM")
    } else {
        format!("{arch_base}Model")
    };
    let mut config = config.clone();
    config.architectures = vec![architecture];
    let labels = config.labels();
    config.set_labels(&labels);
    if tokenizer.vocab_size() > config.vocab_size {
        return Err(Error::Checkpoint(format!(
            "the tokenizer has {} tokens but the config's vocab_size is {}",
            tokenizer.vocab_size(),
            config.vocab_size
        )));
    }
    let config_path = tmp.join("config.json");
    std::fs::write(&config_path, config.to_json_string()?)
        .map_err(|e| Error::io(&config_path, e))?;
    tokenizer.save(tmp)?;

    let mut buffers: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> =
        Vec::with_capacity(vars.len());
    for (name, t) in &vars {
        let t = t.detach().to_device(Device::Cpu).contiguous();
        let dtype = dtype_of(t.kind()).ok_or_else(|| {
            Error::Checkpoint(format!("{name}: cannot store dtype {:?}", t.kind()))
        })?;
        let numel = t.numel();
        let mut bytes = vec![0u8; numel * t.kind().elt_size_in_bytes()];
        t.f_copy_data_u8(&mut bytes, numel)?;
        let shape = t.size().iter().map(|&d| d as usize).collect();
        buffers.push((name.clone(), dtype, shape, bytes));
    }
    let views = buffers
        .iter()
        .map(|(n, d, s, b)| {
            safetensors::tensor::TensorView::new(*d, s.clone(), b)
                .map(|v| (n.clone(), v))
                .map_err(|e| Error::Checkpoint(format!("{n}: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let metadata = Some(HashMap::from([("format".to_string(), "pt".to_string())]));
    let weights = tmp.join("model.safetensors");
    let bytes = safetensors::tensor::serialize(views, &metadata)
        .map_err(|e| Error::Checkpoint(format!("serialising safetensors: {e}")))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    std::fs::write(&weights, &bytes).map_err(|e| Error::io(&weights, e))?;

    let mut files = Vec::new();
    for entry in std::fs::read_dir(tmp).map_err(|e| Error::io(tmp, e))? {
        let entry = entry.map_err(|e| Error::io(tmp, e))?;
        let len = entry
            .metadata()
            .map_err(|e| Error::io(entry.path(), e))?
            .len();
        files.push((entry.file_name().to_string_lossy().into_owned(), len));
    }
    files.sort();
    // Flush everything before the rename makes the directory visible.
    for (f, _) in &files {
        let p = tmp.join(f);
        std::fs::File::open(&p)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(&p, e))?;
    }
    Ok(SavedCheckpoint {
        dir: tmp.to_path_buf(),
        bytes: files.iter().map(|f| f.1).sum(),
        sha256,
        files,
    })
}
