//! `paddock serve-model`: one checkpoint behind HTTP, the process an endpoint's replicas run (locally or
//! in a container). Tokenization happens on the request's side (inline for short requests, on the
//! blocking pool for long ones), the model on its own thread (or one copy per thread with
//! `--inference-threads`) behind a dynamic batcher (`batcher`), and a bounded queue turns overload into
//! 429s. The model loads with the checkpoint's own tokenizer, label map and training length, and is
//! warmed up before `/health` says ready.
//!
//! API: `POST /predict` with `{"inputs": ["…", …]}` (or `{"inputs": "…"}`, `{"text": "…"}`; pairs
//! `{"text_a", "text_b"}` for a matching model; add `"return_logits": true` for logits) →
//! `{"labels", "predictions": [{"label", "label_id", "probabilities", "logits"?}], "batch_rows",
//! "batch_requests"}`, or for an entity model predictions `{"entities": [{"text", "label", "start",
//! "end", "score"}], "logits"?}` with character offsets; `GET /health`; `GET /metrics` (Prometheus).
//!
//! With `PADDOCK_MODEL_TOKEN` in its environment (at least 32 characters) every call but `/health`
//! must carry it as `Authorization: Bearer …`, compared in constant time. The server gives each replica
//! its own: a replica on a network others share (a cluster's nodes, a Docker bridge) then answers the
//! gateway and the parity gate only. The token never appears on the command line, which other users of
//! the host can read.

pub mod batcher;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use contracts::precision::PrecisionChoice;
use contracts::serving::{ErrorReply, Health, Input, PredictReply, PredictRequest};
use contracts::task::Task;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::sync::oneshot;
use trainer::predict::Asked;
use trainer::{Precision, Tokenizer};

use batcher::{BatchLimits, Batcher, Job, Refused};

/// The shortest bearer token taken (the server's are 64 hex digits).
const TOKEN_MIN_CHARS: usize = 32;

/// Longest input text accepted, in characters (it is truncated to the model's length anyway).
const MAX_TEXT_CHARS: usize = 10_000;
/// Request bodies up to this size are tokenized on the async worker (see `answer`).
const INLINE_TOKENIZE_BYTES: usize = 4096;

#[derive(Debug, Clone, Args)]
pub struct ServeModelArgs {
    #[command(flatten)]
    pub model: trainer::cli::ModelArgs,
    /// Address to listen on; port 0 picks a free one. Prints `listening on http://ADDR` once ready.
    #[arg(long, env = "PADDOCK_MODEL_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Most padded tokens (longest input × inputs) in one forward pass.
    #[arg(long, default_value_t = 8192)]
    pub max_batch_tokens: usize,
    /// Longest a request waits for others to share its forward pass, in milliseconds.
    #[arg(long, default_value_t = 5)]
    pub max_wait_ms: u64,
    /// Requests that may wait for the model; more get 429.
    #[arg(long, default_value_t = 256)]
    pub queue_capacity: usize,
    /// Most texts in one request.
    #[arg(long, default_value_t = 64)]
    pub max_inputs: usize,
    /// A request not answered within this many seconds gets 503.
    #[arg(long, default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Model copies, each on its own thread taking batches from the one queue. A libtorch model cannot
    /// be shared between threads, and libtorch's own intra-op threads spin between the small operations
    /// of a short-text forward pass (starving the HTTP and tokenizer threads), so on CPU several copies at
    /// `--threads 1` use the cores better than one copy with several threads. Each copy costs the
    /// model's memory.
    #[arg(long, default_value_t = 1)]
    pub inference_threads: usize,
}

/// What the request side knows about the loaded model.
struct Served {
    name: String,
    /// What the model does: which inputs it takes.
    task: Task,
    labels: Vec<String>,
    max_len: usize,
    /// What the forward passes run in (`fp32`, `bf16`, `fp16`): the parity gate checks it.
    precision: &'static str,
    /// Why: asked, or measured at start for `auto`.
    precision_choice: PrecisionChoice,
    /// `cpu` or `cuda`: the parity gate's slack for float32 depends on it.
    device: &'static str,
    tokenizer: Arc<Tokenizer>,
    batcher: Batcher,
    max_inputs: usize,
    timeout: Duration,
    metrics: PrometheusHandle,
    /// The bearer token every call but `/health` must carry, if one was given.
    token: Option<String>,
}

/// Loads the model (one copy per inference thread), warms it up, then serves until `shutdown` resolves.
pub async fn run(
    args: ServeModelArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    if args.max_batch_tokens == 0 || args.max_inputs == 0 || args.inference_threads == 0 {
        anyhow::bail!(
            "--max-batch-tokens, --max-inputs and --inference-threads must be at least 1"
        );
    }
    let token = match std::env::var(domain::executor::TOKEN_ENV) {
        Ok(token) if token.chars().count() < TOKEN_MIN_CHARS => anyhow::bail!(
            "{} must be at least {TOKEN_MIN_CHARS} characters",
            domain::executor::TOKEN_ENV
        ),
        Ok(token) => Some(token),
        Err(std::env::VarError::NotPresent) => None,
        Err(e) => anyhow::bail!("{}: {e}", domain::executor::TOKEN_ENV),
    };
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets(&[
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ])
        .context("metrics buckets")?
        .install_recorder()
        .context("installing the metrics recorder")?;
    let (batcher, queue) = batcher::channel(args.queue_capacity);
    let queue = Arc::new(queue);
    let limits = BatchLimits {
        max_batch_tokens: args.max_batch_tokens,
        max_wait: Duration::from_millis(args.max_wait_ms),
    };
    let start_copy = |copy: usize, model_args: trainer::cli::ModelArgs| {
        let (ready_tx, ready_rx) = oneshot::channel();
        let queue = queue.clone();
        std::thread::Builder::new()
            .name(format!("inference-{copy}"))
            .spawn(move || inference_thread(model_args, limits, &queue, ready_tx))
            .context("starting an inference thread")?;
        anyhow::Ok(ready_rx)
    };
    let model_dir = args.model.model.clone();
    let loaded_copy = |ready: oneshot::Receiver<Result<Loaded, String>>| {
        let model_dir = model_dir.clone();
        async move {
            ready
                .await
                .context("an inference thread ended")?
                .map_err(|e| anyhow::anyhow!("cannot serve {}: {e}", model_dir.display()))
        }
    };
    // The first copy settles the precision (`auto` measures); the others load in what it chose, so that
    // every forward pass of the replica runs in one precision. Ready once every copy is loaded and warm.
    let loaded = loaded_copy(start_copy(0, args.model.clone())?).await?;
    let mut others_args = args.model.clone();
    others_args.precision = loaded.precision.as_str().into();
    let others = (1..args.inference_threads)
        .map(|copy| start_copy(copy, others_args.clone()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for ready in others {
        loaded_copy(ready).await?;
    }
    let served = Arc::new(Served {
        name: args
            .model
            .model
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        task: loaded.task,
        labels: loaded.labels,
        max_len: loaded.max_len,
        precision: loaded.precision.as_str(),
        precision_choice: loaded.precision_choice,
        device: loaded.device,
        tokenizer: Arc::new(loaded.tokenizer),
        batcher,
        max_inputs: args.max_inputs,
        timeout: Duration::from_secs(args.request_timeout_secs.max(1)),
        metrics,
        token,
    });
    let app = Router::new()
        .route("/predict", post(predict))
        .route("/metrics", get(metrics_text))
        .route_layer(axum::middleware::from_fn_with_state(
            served.clone(),
            bearer_required,
        ))
        .route("/health", get(health))
        .layer(axum::extract::DefaultBodyLimit::max(4 << 20))
        .with_state(served);
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("cannot listen on {}", args.bind))?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .context("model server failed")
}

/// What a loaded model copy tells the request side.
struct Loaded {
    task: Task,
    labels: Vec<String>,
    /// Longest input, in tokens.
    max_len: usize,
    tokenizer: Tokenizer,
    precision: Precision,
    precision_choice: PrecisionChoice,
    /// `cpu` or `cuda`.
    device: &'static str,
}

/// One model copy: loads the checkpoint in its precision, warms up, says so on `ready`, then serves
/// batches from the shared queue until every [`Batcher`] is gone.
fn inference_thread(
    model_args: trainer::cli::ModelArgs,
    limits: BatchLimits,
    queue: &batcher::Queue,
    ready: oneshot::Sender<Result<Loaded, String>>,
) {
    let opened = match model_args.open() {
        Ok(opened) => opened,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
    };
    let loaded = &opened.loaded;
    let task = loaded.config.task();
    let inference = opened.inference();
    // Warm-up: the first forward pass allocates and picks kernels; users should not pay for it.
    let warm_up = (
        "预热 warm-up".to_string(),
        task.pairs().then(|| "预热".to_string()),
    );
    let warm = Asked::new(task, &loaded.tokenizer, vec![warm_up], opened.max_len)
        .and_then(|asked| inference.run(&asked.rows));
    if let Err(e) = warm {
        let _ = ready.send(Err(format!("warm-up failed: {e}")));
        return;
    }
    let _ = ready.send(Ok(Loaded {
        task,
        labels: loaded.config.labels(),
        max_len: opened.max_len,
        tokenizer: loaded.tokenizer.clone(),
        precision: opened.precision,
        precision_choice: opened.precision_choice.clone(),
        device: match inference.device {
            tch::Device::Cpu => "cpu",
            _ => "cuda",
        },
    }));
    batcher::run(&inference, limits, queue);
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let mut response = (
        status,
        Json(ErrorReply {
            code: code.into(),
            message: message.into(),
        }),
    )
        .into_response();
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    response
}

async fn predict(State(served): State<Arc<Served>>, body: axum::body::Bytes) -> Response {
    let started = Instant::now();
    let response = answer(&served, &body).await;
    let status = response.status();
    metrics::counter!("paddock_model_requests_total", "status" => status.as_u16().to_string())
        .increment(1);
    metrics::histogram!("paddock_model_request_seconds").record(started.elapsed().as_secs_f64());
    response
}

async fn answer(served: &Served, body: &[u8]) -> Response {
    let parsed: PredictRequest = match serde_json::from_slice(body) {
        Ok(parsed) => parsed,
        Err(e) => {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!("expected {{\"inputs\": [\"…\"]}}: {e}"),
            )
        }
    };
    let return_logits = parsed.return_logits;
    let inputs = match parsed.into_inputs() {
        Some(inputs) => inputs,
        None => {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                "give either \"inputs\" (an input or a list) or \"text\"",
            )
        }
    };
    if inputs.is_empty() || inputs.len() > served.max_inputs {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_inputs",
            format!("give 1 to {} inputs per request", served.max_inputs),
        );
    }
    if let Some(i) = inputs.iter().position(|input| !input.fits(served.task)) {
        let want = if served.task.pairs() {
            "a pair {\"text_a\": …, \"text_b\": …}"
        } else {
            "a text"
        };
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_inputs",
            format!("inputs[{i}]: this {} model takes {want}", served.task),
        );
    }
    if let Some(i) = inputs.iter().position(|input| {
        input
            .texts()
            .iter()
            .any(|t| t.trim().is_empty() || t.chars().count() > MAX_TEXT_CHARS)
    }) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_inputs",
            format!("inputs[{i}] must be non-empty and at most {MAX_TEXT_CHARS} characters"),
        );
    }
    // Tokenizing is CPU work, never done on the inference threads. A short request (the usual one or
    // few sentences) takes tens of microseconds: cheaper on this async worker than a hand-off to the
    // blocking pool, which under a burst of such requests starts a thread for each of them and crowds
    // the cores the model needs. Long requests go to the blocking pool so that they do not hold up the
    // worker's other connections.
    let tokenizer = served.tokenizer.clone();
    let (task, max_len) = (served.task, served.max_len);
    let encode = move || {
        let items: Vec<(String, Option<String>)> =
            inputs.into_iter().map(Input::into_texts).collect();
        Asked::new(task, &tokenizer, items, max_len)
    };
    let asked = if body.len() <= INLINE_TOKENIZE_BYTES {
        Ok(encode())
    } else {
        tokio::task::spawn_blocking(encode).await
    };
    let mut asked = match asked {
        Ok(Ok(asked)) => asked,
        Ok(Err(e)) => {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_inputs",
                e.to_string(),
            )
        }
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    };
    let (reply, answer) = oneshot::channel();
    match served.batcher.submit(Job {
        rows: std::mem::take(&mut asked.rows),
        reply,
        enqueued: Instant::now(),
    }) {
        Ok(()) => {}
        Err(Refused::Overloaded) => {
            metrics::counter!("paddock_model_rejected_total").increment(1);
            return error(
                StatusCode::TOO_MANY_REQUESTS,
                "overloaded",
                "the model's queue is full; retry shortly",
            );
        }
        Err(Refused::Stopped) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "stopped",
                "the model is not running",
            )
        }
    }
    let batched = match tokio::time::timeout(served.timeout, answer).await {
        Ok(Ok(Ok(batched))) => batched,
        Ok(Ok(Err(e))) => return error(StatusCode::INTERNAL_SERVER_ERROR, "inference_failed", e),
        Ok(Err(_)) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "stopped",
                "the model stopped",
            )
        }
        Err(_) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                "the model did not answer in time",
            )
        }
    };
    metrics::histogram!("paddock_model_batch_rows").record(batched.batch_rows as f64);
    let predictions = asked
        .answers(&batched.logits, batched.num_labels, &served.labels)
        .into_iter()
        .map(|answer| match return_logits {
            true => answer,
            false => answer.without_logits(),
        })
        .collect();
    Json(PredictReply {
        labels: served.labels.clone(),
        predictions,
        batch_rows: batched.batch_rows as u32,
        batch_requests: batched.batch_requests as u32,
    })
    .into_response()
}

/// Lets a call through when no token was given or it carries the token.
async fn bearer_required(
    State(served): State<Arc<Served>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use subtle::ConstantTimeEq;
    if let Some(token) = &served.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            let reply = ErrorReply {
                code: "token_refused".into(),
                message: "this replica answers its Paddock server only".into(),
            };
            return (StatusCode::UNAUTHORIZED, Json(reply)).into_response();
        }
    }
    next.run(request).await
}

async fn health(State(served): State<Arc<Served>>) -> Json<Health> {
    Json(Health {
        status: "ready".into(),
        model: served.name.clone(),
        task: served.task,
        labels: served.labels.clone(),
        max_seq_len: served.max_len,
        precision: served.precision.into(),
        precision_choice: Some(served.precision_choice.clone()),
        device: served.device.into(),
    })
}

async fn metrics_text(State(served): State<Arc<Served>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        served.metrics.render(),
    )
}
