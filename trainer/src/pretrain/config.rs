//! `paddock pretrain`'s options: one documented clap struct (flags only; a recipe is a script line), its
//! range checks naming the flag at fault, and its translation into the pieces the rest of the crate
//! already understands (the model section of a training job, the optimizer settings, the corpus source).

use std::path::PathBuf;

use clap::Args;

use super::corpus::{CorpusFormat, CorpusSource};
use super::masking::MaskingPolicy;
use crate::train::config::ModelSection;
use crate::train::optimizer::AdamWConfig;
use crate::{Error, Result};

/// `pretrain`: masked-LM pretraining with whole-word masking on an unlabelled corpus.
#[derive(Debug, Clone, Args)]
pub struct PretrainArgs {
    /// Corpus file(s): `.txt` with one text per line, or CSV/TSV/JSONL with a text column (repeatable).
    #[arg(long, required = true)]
    pub corpus: Vec<PathBuf>,
    /// auto (`.txt` as lines, else by extension), lines, csv, tsv, jsonl
    #[arg(long, default_value = "auto")]
    pub format: String,
    #[arg(long, default_value = "text")]
    pub text_column: String,
    /// Convert GBK/GB18030 input to UTF-8 instead of refusing it.
    #[arg(long)]
    pub convert_encoding: bool,
    /// Checkpoints go to `DIR/checkpoints/step-NNNNNNN/` (Hugging Face layout, `ErnieForMaskedLM`).
    #[arg(long)]
    pub output_dir: PathBuf,

    /// Continue pretraining a Hugging Face model directory (its shape and tokenizer); otherwise a preset
    /// is trained from scratch with a vocabulary built from the corpus.
    #[arg(long)]
    pub pretrained: Option<PathBuf>,
    /// From scratch: reuse the tokenizer of this model directory instead of building a vocabulary.
    #[arg(long, conflicts_with = "pretrained")]
    pub tokenizer: Option<PathBuf>,
    /// From scratch: an ERNIE 3.0 shape (base, medium, mini, micro, nano).
    #[arg(long, default_value = "nano")]
    pub preset: String,
    /// From scratch: the vocabulary built from the corpus has at most this many tokens.
    #[arg(long, default_value_t = 8000)]
    pub vocab_size: usize,
    #[arg(long)]
    pub num_hidden_layers: Option<usize>,
    #[arg(long)]
    pub hidden_size: Option<usize>,
    #[arg(long)]
    pub num_attention_heads: Option<usize>,
    #[arg(long)]
    pub intermediate_size: Option<usize>,
    #[arg(long)]
    pub hidden_dropout: Option<f64>,
    #[arg(long)]
    pub attention_dropout: Option<f64>,
    /// Tokens per row after truncation, [CLS]/[SEP] included.
    #[arg(long, default_value_t = 128)]
    pub max_seq_len: usize,

    /// Fraction of each row's whole (jieba) words that are masked.
    #[arg(long, default_value_t = 0.15)]
    pub mask_rate: f64,
    #[arg(long, default_value_t = 1)]
    pub epochs: usize,
    /// Stop after this many optimizer steps (the schedule is planned for it).
    #[arg(long)]
    pub max_steps: Option<usize>,
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
    /// Peak learning rate.
    #[arg(long, default_value_t = 5e-4)]
    pub lr: f64,
    /// Fraction of the steps spent warming up linearly; then linear decay to 0.
    #[arg(long, default_value_t = 0.06)]
    pub warmup_ratio: f64,
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f64,
    /// Clip the global gradient norm to this; 0 disables clipping.
    #[arg(long, default_value_t = 1.0)]
    pub max_grad_norm: f64,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// CPU threads for libtorch (0: libtorch's default).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// auto, cpu, cuda, cuda:N
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// fp32 or bf16 (fp16 would need loss scaling, which pretraining does not do).
    #[arg(long, default_value = "fp32")]
    pub precision: String,
    /// Emit a `step` event every N optimizer steps.
    #[arg(long, default_value_t = 10)]
    pub log_every_steps: usize,
    /// Also write a checkpoint every N steps (0: only at the end); only the newest is kept.
    #[arg(long, default_value_t = 0)]
    pub save_every_steps: usize,
}

impl PretrainArgs {
    /// Checks every range; the error lists each bad flag, e.g. `--lr must be > 0 (got 0)`.
    pub fn validate(&self) -> Result<()> {
        let mut problems = Vec::new();
        let mut check = |ok: bool, msg: String| {
            if !ok {
                problems.push(msg)
            }
        };
        check(!self.corpus.is_empty(), "--corpus is required".into());
        check(
            self.epochs > 0,
            format!("--epochs must be > 0 (got {})", self.epochs),
        );
        check(
            self.max_steps != Some(0),
            "--max-steps must be > 0 when given".into(),
        );
        check(
            self.batch_size > 0,
            format!("--batch-size must be > 0 (got {})", self.batch_size),
        );
        check(
            self.lr > 0.0 && self.lr.is_finite(),
            format!("--lr must be > 0 (got {})", self.lr),
        );
        check(
            (0.0..1.0).contains(&self.warmup_ratio),
            format!(
                "--warmup-ratio must be in [0, 1) (got {})",
                self.warmup_ratio
            ),
        );
        check(
            self.weight_decay >= 0.0,
            format!("--weight-decay must be >= 0 (got {})", self.weight_decay),
        );
        check(
            self.max_grad_norm >= 0.0,
            format!("--max-grad-norm must be >= 0 (got {})", self.max_grad_norm),
        );
        check(
            self.mask_rate > 0.0 && self.mask_rate < 1.0,
            format!("--mask-rate must be in (0, 1) (got {})", self.mask_rate),
        );
        check(
            self.log_every_steps > 0,
            format!(
                "--log-every-steps must be > 0 (got {})",
                self.log_every_steps
            ),
        );
        check(
            (8..=2048).contains(&self.max_seq_len),
            format!(
                "--max-seq-len must be in 8..=2048 (got {})",
                self.max_seq_len
            ),
        );
        check(
            self.vocab_size >= 100,
            format!("--vocab-size must be >= 100 (got {})", self.vocab_size),
        );
        check(
            !self.output_dir.as_os_str().is_empty(),
            "--output-dir must not be empty".into(),
        );
        check(
            crate::ErnieConfig::preset_names().contains(&self.preset.as_str()),
            format!(
                "--preset must be one of {} (got `{}`)",
                crate::ErnieConfig::preset_names().join(", "),
                self.preset
            ),
        );
        for (name, p) in [
            ("--hidden-dropout", self.hidden_dropout),
            ("--attention-dropout", self.attention_dropout),
        ] {
            if let Some(p) = p {
                check(
                    (0.0..1.0).contains(&p),
                    format!("{name} must be in [0, 1) (got {p})"),
                );
            }
        }
        if let (Some(h), Some(a)) = (self.hidden_size, self.num_attention_heads) {
            check(
                a > 0 && h % a == 0,
                format!("--hidden-size ({h}) must be a multiple of --num-attention-heads ({a})"),
            );
        }
        match crate::Precision::parse(&self.precision) {
            Ok(crate::Precision::Fp16) => check(
                false,
                "--precision fp16 is not supported by pretrain (use fp32 or bf16)".into(),
            ),
            Ok(_) => {}
            Err(e) => check(false, format!("--precision: {e}")),
        }
        if let Err(e) = CorpusFormat::parse(&self.format, "--format") {
            check(
                false,
                e.to_string().trim_start_matches("config: ").to_string(),
            );
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(problems.join("; ")))
        }
    }

    /// The model options in the training job's terms, so that `train::model_init` builds the shape.
    pub fn model_section(&self) -> ModelSection {
        ModelSection {
            pretrained: self.pretrained.clone(),
            preset: self.preset.clone(),
            vocab_size: self.vocab_size,
            num_hidden_layers: self.num_hidden_layers,
            hidden_size: self.hidden_size,
            num_attention_heads: self.num_attention_heads,
            intermediate_size: self.intermediate_size,
            hidden_dropout: self.hidden_dropout,
            attention_dropout: self.attention_dropout,
            max_seq_len: self.max_seq_len,
        }
    }

    pub fn adamw(&self) -> AdamWConfig {
        AdamWConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: self.weight_decay,
        }
    }

    pub fn masking(&self) -> MaskingPolicy {
        MaskingPolicy {
            rate: self.mask_rate,
            ..MaskingPolicy::default()
        }
    }

    pub fn corpus_source(&self) -> Result<CorpusSource> {
        Ok(CorpusSource {
            files: self.corpus.clone(),
            format: CorpusFormat::parse(&self.format, "--format")?,
            text_column: self.text_column.clone(),
            convert_encoding: self.convert_encoding,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: PretrainArgs,
    }

    fn parse(extra: &[&str]) -> PretrainArgs {
        let mut argv = vec!["x", "--corpus", "c.txt", "--output-dir", "out"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).unwrap().args
    }

    #[test]
    fn defaults_are_valid_and_bad_flags_are_named() {
        parse(&[]).validate().unwrap();
        let err = parse(&[
            "--lr",
            "0",
            "--mask-rate",
            "1.5",
            "--precision",
            "fp16",
            "--format",
            "xml",
            "--epochs",
            "0",
        ])
        .validate()
        .unwrap_err()
        .to_string();
        for flag in ["--lr", "--mask-rate", "--precision", "--format", "--epochs"] {
            assert!(err.contains(flag), "{flag} missing from: {err}");
        }
        assert!(
            Cli::try_parse_from(["x", "--output-dir", "o"]).is_err(),
            "--corpus is required"
        );
    }
}
