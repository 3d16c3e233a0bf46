//! Command-line front ends for `paddock train | pretrain | eval | predict | validate | import-paddle |
//! export-paddle`: clap argument structs that
//! the `paddock` binary mounts as subcommands, and the functions that run them. Machine-readable output
//! goes to stdout (training events, `--json` predictions, metrics); messages go to stderr.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::collectives::Rank;
use crate::data::{validate_file, Columns, DataFormat, DataOptions, LabelMap};
use crate::events::EventSink;
use crate::predict::{default_max_len, encode_examples, Answer, Asked, Inference};
use crate::train::{train, EndStatus, JobConfig, JobFile, RunControl, StopFlag};
use crate::{pick_device, Error, Precision, Result};
use contracts::precision::{PrecisionChoice, Work};
use contracts::task::Task;

/// `train`: fine-tune or train from scratch as described by a job file.
#[derive(Debug, Clone, Args)]
pub struct TrainArgs {
    /// The job description (TOML); see trainer/README or `JobConfig`.
    #[arg(long, short = 'c')]
    pub config: PathBuf,
    /// Overrides `[data] train`.
    #[arg(long)]
    pub train: Option<PathBuf>,
    /// Overrides `[data] dev`.
    #[arg(long)]
    pub dev: Option<PathBuf>,
    /// Overrides `[data] test`.
    #[arg(long)]
    pub test: Option<PathBuf>,
    /// Overrides `[output] dir`.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Continue from a checkpoint directory, or `latest`.
    #[arg(long)]
    pub resume_from: Option<PathBuf>,
    /// Overrides `[model] pretrained`.
    #[arg(long)]
    pub pretrained: Option<PathBuf>,
    #[arg(long)]
    pub preset: Option<String>,
    #[arg(long)]
    pub max_seq_len: Option<usize>,
    #[arg(long)]
    pub epochs: Option<usize>,
    #[arg(long)]
    pub batch_size: Option<usize>,
    #[arg(long)]
    pub grad_accum_steps: Option<usize>,
    #[arg(long)]
    pub max_steps: Option<usize>,
    #[arg(long)]
    pub lr: Option<f64>,
    #[arg(long)]
    pub warmup_ratio: Option<f64>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub threads: Option<usize>,
    /// auto, cpu, cuda, cuda:N
    #[arg(long)]
    pub device: Option<String>,
    /// fp32, fp16, bf16
    #[arg(long)]
    pub precision: Option<String>,
    #[arg(long)]
    pub eval_every_steps: Option<usize>,
    #[arg(long)]
    pub log_every_steps: Option<usize>,
}

impl TrainArgs {
    /// The job file with the flags applied, validated.
    pub fn job(&self) -> Result<JobConfig> {
        let mut job = JobConfig::from_file(&self.config)?;
        macro_rules! set {
            ($flag:ident => $($field:tt)+) => {
                if let Some(v) = self.$flag.clone() {
                    job.$($field)+ = v;
                }
            };
        }
        set!(train => data.train);
        set!(output_dir => output.dir);
        set!(preset => model.preset);
        set!(max_seq_len => model.max_seq_len);
        set!(epochs => train.epochs);
        set!(batch_size => train.batch_size);
        set!(grad_accum_steps => train.grad_accum_steps);
        set!(lr => train.lr);
        set!(warmup_ratio => train.warmup_ratio);
        set!(seed => train.seed);
        set!(threads => train.threads);
        set!(device => train.device);
        set!(precision => train.precision);
        set!(eval_every_steps => train.eval_every_steps);
        set!(log_every_steps => train.log_every_steps);
        if self.dev.is_some() {
            job.data.dev = self.dev.clone();
        }
        if self.test.is_some() {
            job.data.test = self.test.clone();
        }
        if self.resume_from.is_some() {
            job.output.resume_from = self.resume_from.clone();
        }
        if self.pretrained.is_some() {
            job.model.pretrained = self.pretrained.clone();
        }
        if self.max_steps.is_some() {
            job.train.max_steps = self.max_steps;
        }
        job.validate()?;
        Ok(job)
    }
}

/// Runs `train`; events on stdout. Returns the process exit code: 0 when the run completed, stopped
/// early or was stopped on request (it can be resumed), 1 on failure.
pub fn run_train(args: &TrainArgs) -> Result<i32> {
    let events = EventSink::stdout();
    let job = match args.job() {
        Ok(job) => job,
        Err(e) => {
            events.failed(&e.to_string());
            return Err(e);
        }
    };
    let rank = rank_from_env(&events)?;
    let control = RunControl {
        stop: StopFlag::new(),
        halt_after_step: None,
        rank,
    };
    control.stop.install_signal_handlers()?;
    let outcome = train(&job, &events, &control)?;
    if outcome.status == EndStatus::Stopped {
        eprintln!(
            "stopped at step {}; resume with --resume-from {}",
            outcome.global_step,
            outcome
                .last_checkpoint
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "latest".into())
        );
    }
    Ok(0)
}

/// This process's place when a launch started it as one of several ranks (see `Rank::from_env`); a
/// bad variable fails the run on `events`.
fn rank_from_env(events: &EventSink) -> Result<Option<Rank>> {
    Rank::from_env(|name| std::env::var(name).ok()).inspect_err(|e| events.failed(&e.to_string()))
}

pub use crate::launch::{run_launch, LaunchArgs};
pub use crate::pretrain::PretrainArgs;

/// Runs `pretrain`; events on stdout. Exit code 0 when it completed or was stopped on request (the
/// checkpoint written on stop is usable), 1 on failure.
pub fn run_pretrain(args: &PretrainArgs) -> Result<i32> {
    let events = EventSink::stdout();
    let control = RunControl {
        stop: StopFlag::new(),
        halt_after_step: None,
        rank: rank_from_env(&events)?,
    };
    control.stop.install_signal_handlers()?;
    let outcome = crate::pretrain::pretrain(args, &events, &control)?;
    if let Some(dir) = &outcome.last_checkpoint {
        eprintln!(
            "pretrained checkpoint: {} (use it as [model] pretrained)",
            dir.display()
        );
    }
    Ok(0)
}

/// Options shared by the commands that read a model.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// A Hugging Face model directory or a Paddock checkpoint.
    #[arg(long)]
    pub model: PathBuf,
    /// Truncation length (default: what the model was trained with, else 512).
    #[arg(long)]
    pub max_seq_len: Option<usize>,
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// fp32, bf16, fp16, or auto (one layer of the model timed in fp32 and bf16 at start, bf16 kept
    /// only where it is faster).
    #[arg(long, default_value = "fp32")]
    pub precision: String,
    /// CPU threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// A model opened for inference by [`ModelArgs::open`].
pub struct Opened {
    pub loaded: crate::LoadedModel,
    pub precision: Precision,
    pub precision_choice: PrecisionChoice,
    /// Truncation length.
    pub max_len: usize,
    /// Rows per inference batch.
    pub batch_size: usize,
}

impl Opened {
    /// Batched inference with the model as opened.
    pub fn inference(&self) -> Inference<'_> {
        Inference {
            model: &self.loaded.model,
            device: self.loaded.vs.device(),
            precision: self.precision,
            pad_id: self.loaded.tokenizer.pad_id(),
            batch_size: self.batch_size,
        }
    }
}

impl ModelArgs {
    /// Loads the model on its device in the precision asked (measured for `auto`, on the model's own
    /// shape), its weights cast once, with the truncation length checked against its positions.
    pub fn open(&self) -> Result<Opened> {
        if self.threads > 0 {
            tch::set_num_threads(self.threads as i32);
        }
        let device = pick_device(&self.device)?;
        if self.batch_size == 0 {
            return Err(Error::Config("--batch-size must be > 0".into()));
        }
        let mut loaded = crate::checkpoint::load(&self.model, device, None)?;
        let max_positions = loaded.config.max_position_embeddings;
        let max_len = self
            .max_seq_len
            .unwrap_or_else(|| default_max_len(&self.model, max_positions));
        if !(8..=max_positions.max(8)).contains(&max_len) {
            return Err(Error::Config(format!(
                "--max-seq-len must be in 8..={max_positions} (got {max_len})"
            )));
        }
        let (precision, precision_choice) =
            crate::precision::choose(&self.precision, device, || {
                crate::precision::measure(
                    &loaded.config,
                    self.batch_size,
                    max_len,
                    Work::Serve,
                    device,
                    crate::precision::BATCHES,
                )
            })?;
        loaded.cast_weights(precision);
        Ok(Opened {
            loaded,
            precision,
            precision_choice,
            max_len,
            batch_size: self.batch_size,
        })
    }
}

/// Options shared by the commands that read a data file.
#[derive(Debug, Clone, Args)]
pub struct DataArgs {
    #[arg(long)]
    pub data: PathBuf,
    /// auto (from the extension), csv, tsv, jsonl, conll
    #[arg(long, default_value = "auto")]
    pub format: String,
    #[arg(long, default_value = "text")]
    pub text_column: String,
    #[arg(long, default_value = "text_pair")]
    pub text_pair_column: String,
    #[arg(long, default_value = "label")]
    pub label_column: String,
    /// Names for the label column's values, as `0=负面,1=正面`: the rows are read with the names.
    #[arg(long, default_value = "")]
    pub label_names: String,
    /// Convert GBK/GB18030 input to UTF-8 instead of refusing it.
    #[arg(long)]
    pub convert_encoding: bool,
}

impl DataArgs {
    fn options(&self, require_labels: bool, task: Task) -> Result<DataOptions> {
        let format: DataFormat = serde_json::from_value(serde_json::Value::String(
            self.format.to_lowercase(),
        ))
        .map_err(|_| {
            Error::Config(format!(
                "--format `{}` is not one of auto, csv, tsv, jsonl, conll",
                self.format
            ))
        })?;
        Ok(DataOptions {
            format,
            columns: Columns {
                text: self.text_column.clone(),
                text_pair: self.text_pair_column.clone(),
                label: self.label_column.clone(),
                label_names: contracts::data::parse_label_names(&self.label_names)
                    .map_err(|e| Error::Config(format!("--label-names: {e}")))?,
                ..Columns::default()
            },
            convert_encoding: self.convert_encoding,
            require_labels,
            task,
        })
    }
}

/// `eval`: metrics of a model on a labelled file.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub data: DataArgs,
    /// Print the metrics as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `eval`.
pub fn run_eval(args: &EvalArgs) -> Result<i32> {
    let m = args.model.open()?;
    let names = m.loaded.config.labels();
    let labels = LabelMap::new(names.clone())?;
    let validated = validate_file(
        &args.data.data,
        &args.data.options(true, m.loaded.config.task())?,
        Some(&labels),
        None,
        None,
    )?;
    let examples = validated.into_examples(Some(&labels))?;
    let task = m.loaded.config.task();
    let rows = encode_examples(task, &m.loaded.tokenizer, &examples, &names, m.max_len)?;
    let metrics = m.inference().evaluate(&rows, &names, task)?;
    let mut out = std::io::stdout().lock();
    let io = |e| Error::io("<stdout>", e);
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&metrics).unwrap_or_default()
        )
        .map_err(io)?;
    } else {
        writeln!(out, "rows      {}", metrics.count).map_err(io)?;
        if let Some(e) = &metrics.entities {
            writeln!(
                out,
                "entity F1 {:.4} (precision {:.4}, recall {:.4}; {} found of {} entities)",
                e.f1, e.precision, e.recall, e.predicted, e.gold
            )
            .map_err(io)?;
        }
        writeln!(out, "accuracy  {:.4}", metrics.accuracy).map_err(io)?;
        writeln!(out, "macro-F1  {:.4}", metrics.macro_f1).map_err(io)?;
        if let Some(l) = metrics.loss {
            writeln!(out, "loss      {l:.4}").map_err(io)?;
        }
        writeln!(
            out,
            "{:<20} {:>9} {:>9} {:>9} {:>8}",
            "label", "precision", "recall", "f1", "support"
        )
        .map_err(io)?;
        for c in &metrics.per_class {
            writeln!(
                out,
                "{:<20} {:>9.4} {:>9.4} {:>9.4} {:>8}",
                c.label, c.precision, c.recall, c.f1, c.support
            )
            .map_err(io)?;
        }
    }
    Ok(0)
}

/// `predict`: labels for texts given on the command line or one per line of a file; for a matching
/// model, pairs (`--text A --pair B`, or `A<TAB>B` lines).
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["text", "file"])))]
pub struct PredictArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// A text to classify (repeatable).
    #[arg(long)]
    pub text: Vec<String>,
    /// The second text of each `--text`, for a matching model (repeatable, one per `--text`).
    #[arg(long)]
    pub pair: Vec<String>,
    /// A UTF-8 file with one text per line (for a matching model, the pair's two texts separated by a
    /// tab).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Convert a GBK/GB18030 `--file` to UTF-8 instead of refusing it.
    #[arg(long)]
    pub convert_encoding: bool,
    /// One JSON object per input, in input order: label, label_id, probabilities and logits, or for an
    /// entity model its entities and each token's logits.
    #[arg(long)]
    pub json: bool,
}

impl PredictArgs {
    /// The inputs, as `(text, pair)`: a pair for every input of a `task` that needs one, none otherwise.
    fn inputs(&self, task: Task) -> Result<Vec<(String, Option<String>)>> {
        let Some(path) = &self.file else {
            return match (task.pairs(), self.pair.len()) {
                (true, n) if n == self.text.len() => Ok(self
                    .text
                    .iter()
                    .cloned()
                    .zip(self.pair.iter().cloned().map(Some))
                    .collect()),
                (true, n) => Err(Error::Config(format!(
                    "this {task} model compares two texts: give one --pair for each --text ({} texts, {n} pairs)",
                    self.text.len()
                ))),
                (false, 0) => Ok(self.text.iter().map(|t| (t.clone(), None)).collect()),
                (false, _) => Err(Error::Config(format!(
                    "--pair is for a matching model; this one is a {task} model"
                ))),
            };
        };
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let (text, _) =
            crate::data::encoding::decode(&bytes, self.convert_encoding).map_err(|p| {
                Error::Data {
                    line: Some(p.line),
                    field: None,
                    message: format!("{}: {}", path.display(), p.message),
                }
            })?;
        text.lines()
            .enumerate()
            .map(|(i, line)| {
                let line = line.trim_end_matches('\r');
                if !task.pairs() {
                    return Ok((line.to_string(), None));
                }
                match line.split_once('\t') {
                    Some((a, b)) => Ok((a.to_string(), Some(b.to_string()))),
                    None => Err(Error::Data {
                        line: Some(i + 1),
                        field: None,
                        message: format!(
                            "{}: line {} has no tab: a {task} model takes the two texts of a pair separated by a tab",
                            path.display(),
                            i + 1
                        ),
                    }),
                }
            })
            .collect()
    }
}

/// Runs `predict`.
pub fn run_predict(args: &PredictArgs) -> Result<i32> {
    let m = args.model.open()?;
    let names = m.loaded.config.labels();
    let task = m.loaded.config.task();
    let items = args.inputs(task)?;
    let mut out = std::io::stdout().lock();
    let io = |e| Error::io("<stdout>", e);
    let texts: Vec<String> = items
        .iter()
        .map(|(text, pair)| match pair {
            Some(b) => format!("{text}\t{b}"),
            None => text.clone(),
        })
        .collect();
    let asked = Asked::new(task, &m.loaded.tokenizer, items, m.max_len)?;
    for (answer, text) in m.inference().answer(&asked, &names)?.iter().zip(&texts) {
        let line = match (args.json, answer) {
            (true, answer) => serde_json::to_string(answer).unwrap_or_default(),
            (false, Answer::Label(p)) => {
                format!("{}\t{:.4}\t{text}", p.label, p.probabilities[p.label_id])
            }
            (false, Answer::Entities(p)) => {
                let said: Vec<String> = p
                    .entities
                    .iter()
                    .map(|e| format!("{}:{}@{}-{}", e.label, e.text, e.start, e.end))
                    .collect();
                format!("{}\t{text}", said.join(" "))
            }
        };
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(0)
}

/// `validate`: the validation report of a data file, as JSON on stdout.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// Count tokens with this model's tokenizer, and check labels against the model's.
    #[arg(long, conflicts_with = "vocab")]
    pub model: Option<PathBuf>,
    /// Count tokens with this WordPiece vocabulary (`vocab.txt`, lower-cased like bert-base-chinese).
    /// Without it or --model, tokens are counted by BERT's basic split (a lower bound).
    #[arg(long)]
    pub vocab: Option<PathBuf>,
    /// Known label names, comma-separated (labels outside them are errors).
    #[arg(long, value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Warn about rows longer than this many tokens (they will be truncated).
    #[arg(long)]
    pub max_seq_len: Option<usize>,
    /// The file holds texts only (prediction input).
    #[arg(long)]
    pub unlabelled: bool,
    /// What the rows are for: `classification`, or `matching` (the pair column is then required);
    /// with --model, the model's task.
    #[arg(long)]
    pub task: Option<Task>,
}

/// Runs `validate`; exit code 0 when the file has no errors, 2 when it has.
pub fn run_validate(args: &ValidateArgs) -> Result<i32> {
    let (tokenizer, model_labels, model_task) = match (&args.model, &args.vocab) {
        (Some(dir), _) => {
            let config = crate::ErnieConfig::from_file(&dir.join("config.json"))?;
            (
                Some(crate::Tokenizer::from_dir(dir)?),
                Some(config.labels()),
                Some(config.task()),
            )
        }
        (None, Some(vocab)) => (
            Some(crate::Tokenizer::from_vocab_file(vocab, true)?),
            None,
            None,
        ),
        (None, None) => (None, None, None),
    };
    let task = args.task.or(model_task).unwrap_or_default();
    let labels = match (args.labels.is_empty(), model_labels) {
        (false, _) => Some(LabelMap::new(args.labels.clone())?),
        (true, Some(l)) => Some(LabelMap::new(l)?),
        (true, None) => None,
    };
    let count = |text: &str, pair: Option<&str>| token_count(tokenizer.as_ref(), text, pair);
    let measure = crate::data::Measure {
        tokenizer: if tokenizer.is_some() {
            crate::data::Tokenization::Wordpiece
        } else {
            crate::data::Tokenization::Basic
        },
        count: &count,
    };
    let v = validate_file(
        &args.data.data,
        &args.data.options(!args.unlabelled, task)?,
        labels.as_ref(),
        Some(measure),
        args.max_seq_len,
    )?;
    let json = serde_json::to_string_pretty(&v.report).unwrap_or_default();
    writeln!(std::io::stdout().lock(), "{json}").map_err(|e| Error::io("<stdout>", e))?;
    Ok(if v.report.ok { 0 } else { 2 })
}

/// Tokens of a row as the model sees it, `[CLS] text [SEP] (pair [SEP])`: WordPiece with a tokenizer, else
/// BERT's basic split. Counting never fails a validation (a text the tokenizer refuses counts as 0).
fn token_count(tokenizer: Option<&crate::Tokenizer>, text: &str, pair: Option<&str>) -> usize {
    match tokenizer {
        Some(t) => t
            .encode(text, pair, usize::MAX / 2)
            .map_or(0, |e| e.input_ids.len()),
        None => {
            let words = |s: &str| crate::tokenizer::basic_tokens(s).map_or(0, |w| w.len());
            let specials = if pair.is_some() { 3 } else { 2 };
            words(text) + pair.map_or(0, words) + specials
        }
    }
}

/// `import-paddle`: a PaddleNLP ERNIE directory into a Hugging Face one Paddock trains from and serves.
#[derive(Debug, Clone, Args)]
pub struct ImportPaddleArgs {
    /// The PaddleNLP directory: config.json (or model_config.json), model_state.pdparams, vocab.txt,
    /// tokenizer_config.json.
    #[arg(long = "from")]
    pub from: PathBuf,
    /// Where the Hugging Face directory is written (replaced whole if it exists).
    #[arg(long)]
    pub output_dir: PathBuf,
    /// Print the report (tensors mapped, parity on sample texts) as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `export-paddle`: a Paddock checkpoint into a PaddleNLP directory.
#[derive(Debug, Clone, Args)]
pub struct ExportPaddleArgs {
    /// The checkpoint directory (config.json, model.safetensors, vocab.txt).
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Where the PaddleNLP directory is written (replaced whole if it exists).
    #[arg(long)]
    pub output_dir: PathBuf,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `import-paddle`.
pub fn run_import_paddle(args: &ImportPaddleArgs) -> Result<i32> {
    let report = crate::paddle::import(&args.from, &args.output_dir)?;
    print_report(args.json, &report, |out| {
        let (from, to) = (args.from.display(), args.output_dir.display());
        writeln!(out, "imported     {from} -> {to}")?;
        writeln!(out, "architecture {}", report.architecture)?;
        if !report.labels.is_empty() {
            writeln!(out, "labels       {}", report.labels.join(", "))?;
        }
        let transposed = report.tensors.iter().filter(|t| t.transposed).count();
        writeln!(
            out,
            "tensors      {} mapped ({transposed} Linear weights transposed), saved as {}",
            report.tensors.len(),
            report.saved_as.join(", ")
        )?;
        write_parity(out, &report.parity)
    })
}

/// Runs `export-paddle`.
pub fn run_export_paddle(args: &ExportPaddleArgs) -> Result<i32> {
    let report = crate::paddle::export(&args.checkpoint, &args.output_dir)?;
    print_report(args.json, &report, |out| {
        let (from, to) = (args.checkpoint.display(), args.output_dir.display());
        writeln!(out, "exported     {from} -> {to}")?;
        writeln!(out, "architecture {}", report.architecture)?;
        writeln!(out, "tensors      {}", report.tensors)?;
        write_parity(out, &report.parity)
    })
}

/// Prints `report` as one JSON object (`--json`) or as the lines `text` writes.
fn print_report<T: serde::Serialize>(
    json: bool,
    report: &T,
    text: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    let written = match json {
        true => writeln!(out, "{}", serde_json::to_string(report).unwrap_or_default()),
        false => text(&mut out),
    };
    written.map_err(|e| Error::io("<stdout>", e))?;
    Ok(0)
}

fn write_parity(out: &mut dyn Write, p: &crate::paddle::ParityReport) -> std::io::Result<()> {
    writeln!(
        out,
        "parity       {} within {:.0e} of Paddle's computation: largest difference {:.2e}",
        p.compared.as_str(),
        p.tolerance,
        p.max_abs_diff
    )?;
    for s in &p.samples {
        let text = match &s.pair {
            Some(pair) => format!("{} / {pair}", s.text),
            None => s.text.clone(),
        };
        writeln!(out, "  {:.2e}  {text}", s.max_abs_diff)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_their_special_tokens_with_or_without_a_vocabulary() {
        assert_eq!(token_count(None, "我爱北京", None), 6);
        assert_eq!(
            token_count(None, "我爱北京", Some("hello world!")),
            4 + 3 + 3
        );
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "爱", "un", "##aff", "##able",
        ];
        let t = crate::Tokenizer::from_vocab(vocab.iter().map(|s| s.to_string()).collect(), true)
            .unwrap();
        // "unaffable" is one basic token but three WordPiece tokens.
        assert_eq!(token_count(None, "我爱unaffable", None), 5);
        assert_eq!(token_count(Some(&t), "我爱unaffable", None), 7);
    }
}

/// `probe-precision`: whether bfloat16 pays on this machine for a model's shape, measured as `auto`
/// measures it at a run's start.
#[derive(Debug, Clone, Args)]
pub struct ProbePrecisionArgs {
    /// serve (inference, weights cast once) or train (forward and backward under autocast).
    #[arg(long, default_value = "serve", value_parser = ["serve", "train"])]
    pub work: String,
    /// A model directory whose `config.json` gives the shape; without it, the `--preset` shape.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A preset's shape (base, medium, mini, micro, nano, tiny).
    #[arg(long, default_value = "base")]
    pub preset: String,
    /// Rows per timed batch (at most 8).
    #[arg(long, default_value_t = crate::precision::MAX_ROWS)]
    pub batch: usize,
    /// Tokens per row (at most 128).
    #[arg(long, default_value_t = crate::precision::MAX_TOKENS)]
    pub seq_len: usize,
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// CPU threads (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Print the measurement as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `probe-precision`.
pub fn run_probe_precision(args: &ProbePrecisionArgs) -> Result<i32> {
    if args.threads > 0 {
        tch::set_num_threads(args.threads as i32);
    }
    let device = pick_device(&args.device)?;
    let config = match &args.model {
        Some(dir) => crate::ErnieConfig::from_file(&dir.join("config.json"))?,
        None => crate::ErnieConfig::preset(&args.preset, 1000, 2)?,
    };
    let work = if args.work == "train" {
        Work::Train
    } else {
        Work::Serve
    };
    let probe = crate::precision::measure(
        &config,
        args.batch,
        args.seq_len,
        work,
        device,
        crate::precision::BATCHES,
    )?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&probe).map_err(|e| Error::Config(e.to_string()))?
        )
    } else {
        writeln!(
            out,
            "CPU bfloat16: {}\none layer (hidden {}, {} heads, feed-forward {}), {} rows × {} tokens, {} on the {}:\n  \
             fp32 {:.2} ms, bf16 {:.2} ms per batch: bf16 {:.2}× fp32; `auto` would run {}",
            hostcaps::cpu::bf16().name(),
            probe.hidden_size,
            probe.num_attention_heads,
            probe.intermediate_size,
            probe.batch,
            probe.seq_len,
            probe.work.name(),
            probe.device,
            probe.fp32_ms,
            probe.bf16_ms,
            probe.speedup(),
            if probe.bf16_pays() { "bf16" } else { "fp32" },
        )
    };
    written.map_err(|e| Error::Config(format!("cannot write the result: {e}")))?;
    Ok(0)
}
