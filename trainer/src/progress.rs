//! The human-readable account of a run, on stderr next to the machine-readable events on stdout: a
//! progress bar when stderr is a terminal, otherwise one line per event — what a job's log on the
//! platform shows (the wrapper sends stderr to `train.log`). Each line starts with the time since the
//! run began: the start (model, data, steps), every logged step (step/total, loss, learning rate,
//! throughput), each evaluation (accuracy, macro-F1), each checkpoint saved or deleted, and the end.
//! Errors are not repeated here: the binary prints them itself when the run fails.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Instant;

use crate::events::{Event, Start, Task};

/// Where the account goes.
enum Output {
    /// An interactive terminal: a bar for the steps, lines above it for everything else.
    Bar(indicatif::ProgressBar),
    /// A file or a pipe: one line per event.
    Lines(Box<dyn Write + Send>),
}

struct State {
    output: Output,
    /// The run's total steps, learnt from its `start` event, for `step 10/30`.
    total_steps: usize,
}

/// The human side of an [`crate::events::EventSink`].
pub struct Progress {
    /// When the run began: lines carry the time since.
    started: Instant,
    state: Mutex<State>,
}

impl Progress {
    /// A bar when stderr is a terminal, lines otherwise.
    pub fn stderr() -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress::lines(Box::new(std::io::stderr()));
        }
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} steps {msg} (eta {eta})",
        ) {
            bar.set_style(style);
        }
        Progress::with(Output::Bar(bar))
    }

    /// One line per event to `out`.
    pub fn lines(out: Box<dyn Write + Send>) -> Progress {
        Progress::with(Output::Lines(out))
    }

    fn with(output: Output) -> Progress {
        Progress {
            started: Instant::now(),
            state: Mutex::new(State {
                output,
                total_steps: 0,
            }),
        }
    }

    /// Reports an event.
    pub fn event(&self, event: &Event) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Event::Start(start) = event {
            state.total_steps = start.total_steps;
        }
        let line = describe(event, state.total_steps);
        match &mut state.output {
            Output::Bar(bar) => match event {
                Event::Start(start) => {
                    bar.set_length(start.total_steps as u64);
                    if let Task::Train {
                        resumed_from_step, ..
                    } = start.task
                    {
                        bar.set_position(resumed_from_step as u64);
                    }
                }
                Event::Step {
                    step,
                    loss,
                    lr,
                    samples_per_s,
                    ..
                } => {
                    bar.set_position(*step as u64);
                    bar.set_message(format!(
                        "loss {loss:.4} lr {lr:.2e} {samples_per_s:.1} samples/s"
                    ));
                }
                Event::End { .. } | Event::Error { .. } => bar.finish_and_clear(),
                Event::Eval { .. } | Event::Checkpoint { .. } | Event::Unknown => {}
            },
            Output::Lines(_) => {}
        }
        if let Some(line) = line {
            if !matches!((&state.output, event), (Output::Bar(_), Event::Step { .. })) {
                self.write(&mut state.output, &line);
            }
        }
    }

    /// A line that no event carries (the model's shape, a checkpoint retention deleted).
    pub fn note(&self, line: &str) {
        if let Ok(mut state) = self.state.lock() {
            self.write(&mut state.output, line);
        }
    }

    fn write(&self, output: &mut Output, line: &str) {
        let stamped = format!(
            "[{}] {line}",
            elapsed_text(self.started.elapsed().as_secs())
        );
        match output {
            Output::Bar(bar) => bar.println(stamped),
            // Like the event stream, a closed stderr is no reason to stop training.
            Output::Lines(out) => {
                let _ = writeln!(out, "{stamped}").and_then(|_| out.flush());
            }
        }
    }
}

/// `00:01:23`; hours grow past 99 if they must.
fn elapsed_text(secs: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

/// `1.3 MiB`.
fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The line an event is told as (`None` for errors: the binary prints those).
pub fn describe(event: &Event, total_steps: usize) -> Option<String> {
    Some(match event {
        Event::Start(Start {
            model,
            device,
            precision,
            precision_choice: _,
            epochs,
            total_steps,
            batch_size,
            parameters,
            output_dir,
            task,
        }) => match task {
            Task::Train {
                labels,
                train_rows,
                dev_rows,
                grad_accum_steps,
                resumed_from_step,
            } => {
                let resumed = if *resumed_from_step > 0 {
                    format!(", resuming after step {resumed_from_step}")
                } else {
                    String::new()
                };
                format!(
                    "start: {model} ({parameters} parameters) on {device} in {precision}; {train_rows} training rows, \
                     {dev_rows} dev rows, labels {}; {epochs} epoch(s) of batches of {batch_size} × {grad_accum_steps} \
                     accumulated: {total_steps} steps{resumed}; output in {output_dir}",
                    labels.join(", ")
                )
            }
            Task::Pretrain {
                corpus_rows,
                skipped_rows,
                vocab_size,
                max_seq_len,
                mask_rate,
            } => format!(
                "start: pretraining {model} ({parameters} parameters) on {device} in {precision}; {corpus_rows} corpus rows \
                 ({skipped_rows} skipped), vocabulary {vocab_size}, max length {max_seq_len}, {:.0}% of words masked; \
                 {epochs} epoch(s) of batches of {batch_size}: {total_steps} steps; output in {output_dir}",
                mask_rate * 100.0
            ),
        },
        Event::Step {
            step,
            epoch,
            loss,
            lr,
            samples_per_s,
            tokens_per_s,
            grad_norm,
        } => format!(
            "step {step}/{total_steps} (epoch {epoch:.2}): loss {loss:.4}, lr {lr:.2e}, {samples_per_s:.1} samples/s, \
             {tokens_per_s:.0} tokens/s, grad norm {grad_norm:.3}"
        ),
        Event::Eval {
            step,
            split,
            metrics,
            ..
        } => {
            let loss = metrics.loss.map(|l| format!(", loss {l:.4}")).unwrap_or_default();
            match &metrics.entities {
                Some(e) => format!(
                    "{split} at step {step}: entity F1 {:.4} (precision {:.4}, recall {:.4}; {} found of {}){loss} over {} texts",
                    e.f1, e.precision, e.recall, e.predicted, e.gold, metrics.count
                ),
                None => format!(
                    "{split} at step {step}: accuracy {:.4}, macro-F1 {:.4}{loss} over {} rows",
                    metrics.accuracy, metrics.macro_f1, metrics.count
                ),
            }
        }
        Event::Checkpoint {
            path,
            step,
            bytes,
            best,
            ..
        } => format!(
            "saved checkpoint {path} at step {step} ({}){}",
            bytes_text(*bytes),
            if *best { ", the best so far" } else { "" }
        ),
        Event::End {
            status,
            step,
            best_checkpoint,
            best_metric,
        } => {
            let best = match (best_checkpoint, best_metric) {
                (Some(path), Some(m)) => format!("; best checkpoint {path} ({m:.4})"),
                (Some(path), None) => format!("; best checkpoint {path}"),
                _ => String::new(),
            };
            format!("end: {} at step {step}{best}", status.as_str().replace('_', " "))
        }
        Event::Error { .. } | Event::Unknown => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::tests::Shared;
    use crate::metrics::Metrics;

    #[test]
    fn each_event_is_one_stamped_line_and_steps_know_their_total() {
        let buf = Shared::default();
        let progress = Progress::lines(Box::new(buf.clone()));
        progress.event(&Event::Start(Start {
            model: "preset:nano (from scratch)".into(),
            device: "Cpu".into(),
            precision: "fp32".into(),
            precision_choice: None,
            epochs: 2,
            total_steps: 34,
            batch_size: 16,
            parameters: 12345,
            output_dir: "output".into(),
            task: Task::Train {
                labels: vec!["neg".into(), "pos".into()],
                train_rows: 270,
                dev_rows: 30,
                grad_accum_steps: 1,
                resumed_from_step: 0,
            },
        }));
        progress.note("model: 2 layers");
        progress.event(&Event::Step {
            step: 10,
            epoch: 0.59,
            loss: 0.68941,
            lr: 4e-4,
            samples_per_s: 312.54,
            tokens_per_s: 9000.0,
            grad_norm: 1.5,
        });
        progress.event(&Event::Error {
            message: "boom".into(),
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines.iter().all(|l| l.starts_with("[00:00:0")), "{text}");
        assert!(
            lines[0].contains("270 training rows") && lines[0].contains("34 steps"),
            "{text}"
        );
        assert!(lines[0].contains("labels neg, pos"), "{text}");
        assert!(lines[1].ends_with("model: 2 layers"));
        assert!(
            lines[2].contains("step 10/34 (epoch 0.59): loss 0.6894, lr 4.00e-4, 312.5 samples/s"),
            "{text}"
        );
    }

    #[test]
    fn evaluations_checkpoints_and_the_end_read_as_sentences() {
        let metrics = Metrics::compute(
            &["neg".to_string(), "pos".to_string()],
            &[0, 1, 1, 0],
            &[0, 1, 0, 0],
            Some(0.5),
        );
        let eval = Event::Eval {
            step: 20,
            epoch: 1.0,
            split: "dev".into(),
            metrics: metrics.clone(),
        };
        assert_eq!(
            describe(&eval, 34).unwrap(),
            format!(
                "dev at step 20: accuracy 0.7500, macro-F1 {:.4}, loss 0.5000 over 4 rows",
                metrics.macro_f1
            )
        );
        let saved = Event::Checkpoint {
            path: "output/checkpoints/step-0000020".into(),
            step: 20,
            epoch: Some(2.0),
            metrics: Some(metrics),
            sha256: "ab".into(),
            bytes: 1_363_148,
            best: true,
        };
        assert_eq!(
            describe(&saved, 34).unwrap(),
            "saved checkpoint output/checkpoints/step-0000020 at step 20 (1.3 MiB), the best so far"
        );
        let end = Event::End {
            status: crate::events::EndStatus::EarlyStopped,
            step: 30,
            best_checkpoint: Some("output/checkpoints/step-0000020".into()),
            best_metric: Some(0.75),
        };
        assert_eq!(
            describe(&end, 34).unwrap(),
            "end: early stopped at step 30; best checkpoint output/checkpoints/step-0000020 (0.7500)"
        );
        assert_eq!(elapsed_text(3725), "01:02:05");
        assert_eq!(bytes_text(512), "512 B");
    }
}
