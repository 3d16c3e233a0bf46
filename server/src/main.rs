//! Entry point of the `paddock` binary: parses the command line, sets up logging ([`server::logging`])
//! and dispatches.

use std::process::ExitCode;

use clap::Parser;
use server::config::{Cli, Command};

/// A client command's own exit code (a job's outcome, an exec's status), or its error.
fn exit_with(result: anyhow::Result<i32>) -> anyhow::Result<()> {
    match result {
        Ok(0) => Ok(()),
        Ok(code) => std::process::exit(code),
        Err(e) => Err(e),
    }
}

fn main() -> ExitCode {
    // Before libtorch starts (oneDNN reads it once) and before any thread does: a hidden capability is
    // hidden from libtorch too, in this process and the ones it starts.
    if let Some(cap) = hostcaps::cpu::onednn_cap() {
        if std::env::var_os(hostcaps::cpu::ONEDNN_ISA_ENV).is_none() {
            std::env::set_var(hostcaps::cpu::ONEDNN_ISA_ENV, cap);
        }
    }
    let cli = Cli::parse();
    let log_file = match &cli.command {
        Command::Serve(config) => config
            .log_file
            .as_deref()
            .map(|path| (path, config.log_max_bytes)),
        _ => None,
    };
    if let Err(e) = server::logging::init(log_file) {
        eprintln!("error: cannot open the log file: {e}");
        return ExitCode::FAILURE;
    }
    // A misspelt capability override would hide nothing and let a test pass only on the CPU it ran on.
    if let Err(e) = hostcaps::check_override() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    // Before anything asks libtorch about CUDA (it keeps its first answer), and only where a GPU may
    // be used: see hostcaps::cuda.
    if let Err(why) = hostcaps::cuda::load_where_gpus_may_be(hostcaps::cuda::driver_present()) {
        tracing::warn!(%why, "libtorch's CUDA library cannot be loaded: no GPU can be used");
    }
    // The trainer's commands are synchronous and own their threads (libtorch's pool): no async runtime.
    let trainer_result = match &cli.command {
        Command::Train(args) => Some(trainer::cli::run_train(args)),
        Command::Launch(args) => Some(trainer::cli::run_launch(args)),
        Command::Pretrain(args) => Some(trainer::cli::run_pretrain(args)),
        Command::Eval(args) => Some(trainer::cli::run_eval(args)),
        Command::Predict(args) => Some(trainer::cli::run_predict(args)),
        Command::Validate(args) => Some(trainer::cli::run_validate(args)),
        Command::ImportPaddle(args) => Some(trainer::cli::run_import_paddle(args)),
        Command::ExportPaddle(args) => Some(trainer::cli::run_export_paddle(args)),
        Command::ProbePrecision(args) => Some(trainer::cli::run_probe_precision(args)),
        _ => None,
    };
    if let Command::LogSink(args) = &cli.command {
        return match server::log_sink::run(args) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(result) = trainer_result {
        return match result {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(config) => {
                server::serve::run(*config, server::serve::shutdown_signal()).await
            }
            Command::Migrate(db) => {
                domain::db::open(&db.url()).await?;
                println!("database {} is up to date", db.url());
                Ok(())
            }
            Command::Version => {
                println!("paddock {}", env!("CARGO_PKG_VERSION"));
                // What GPUs and drivers this build runs on, read from the libtorch it loaded.
                match hostcaps::cuda::cuda_runtime() {
                    Some(runtime) if trainer::device::cuda_hooks_registered() => {
                        println!("runtime: {}", runtime.describe())
                    }
                    Some(runtime) => println!(
                        "runtime: {}, but libtorch cannot use it (its CUDA hooks are not registered)",
                        runtime.describe()
                    ),
                    None => println!(
                        "runtime: CPU only ({})",
                        hostcaps::cuda::load_runtime()
                            .err()
                            .unwrap_or("no CUDA runtime")
                    ),
                }
                // Whether bf16 can pay on this CPU (`paddock probe-precision` measures it).
                println!("CPU bfloat16: {}", hostcaps::cpu::bf16().name());
                Ok(())
            }
            Command::Admin(command) => server::admin::run(command).await,
            Command::ServeModel(args) => {
                server::model_server::run(args, server::serve::shutdown_signal()).await
            }
            Command::RunInImage { folder } => exit_with(Ok(
                domain::executor::slurm::in_image::run_on_node(&folder).await,
            )),
            Command::Env(args) => exit_with(server::environments::run(args).await),
            Command::Job(args) => exit_with(server::jobs::run(args).await),
            Command::Ckpt(args) => exit_with(server::jobs::run_ckpt(args).await),
            Command::Sweep(args) => exit_with(server::sweeps::run(args).await),
            Command::Endpoint(args) => exit_with(server::endpoints::run(args).await),
            Command::Model(args) => exit_with(server::pretrained::run(args).await),
            Command::Train(_)
            | Command::Launch(_)
            | Command::Pretrain(_)
            | Command::Eval(_)
            | Command::Predict(_)
            | Command::Validate(_)
            | Command::ImportPaddle(_)
            | Command::ExportPaddle(_)
            | Command::ProbePrecision(_)
            | Command::LogSink(_) => {
                unreachable!("trainer commands are dispatched before the runtime starts")
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
