//! A stand-alone binary with the trainer's commands (`train`, `pretrain`, `eval`, `predict`, `validate`), the same
//! ones the `paddock` binary mounts; handy for working on the trainer without building the server.

use clap::{Parser, Subcommand};
use trainer::cli;

#[derive(Parser)]
#[command(
    name = "paddock-trainer",
    version,
    about = "ERNIE / BERT text classification on libtorch"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train from a job.toml; JSON-lines events on stdout.
    Train(cli::TrainArgs),
    /// Runs `train` as several ranks on this machine (data parallelism); the run's events on stdout.
    Launch(cli::LaunchArgs),
    /// Masked-LM pretraining with whole-word masking on a corpus; JSON-lines events on stdout.
    Pretrain(cli::PretrainArgs),
    /// Metrics of a model on a labelled file.
    Eval(cli::EvalArgs),
    /// Classify texts.
    Predict(cli::PredictArgs),
    /// Validation report of a data file (JSON).
    Validate(cli::ValidateArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Train(a) => cli::run_train(a),
        Command::Launch(a) => cli::run_launch(a),
        Command::Pretrain(a) => cli::run_pretrain(a),
        Command::Eval(a) => cli::run_eval(a),
        Command::Predict(a) => cli::run_predict(a),
        Command::Validate(a) => cli::run_validate(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
