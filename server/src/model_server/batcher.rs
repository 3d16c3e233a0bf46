//! The inference thread and its dynamic batcher. The model lives on one OS thread (libtorch uses its own
//! pool for the math); requests reach it through a bounded channel as already-tokenized rows, and it
//! fills each forward pass up to a token budget — the padded size, longest row × rows — or until the
//! oldest waiting request has waited `max_wait`, whichever comes first. Under load batches fill at once;
//! at low load a request waits at most `max_wait`. The channel's bound is the overload guard: a full
//! queue is refused at the door (HTTP 429), never buffered without limit.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use trainer::data::batch::Features;
use trainer::predict::{to_predictions, Inference, Prediction};

/// One request's rows and where its answer goes.
pub struct Job {
    pub rows: Vec<Features>,
    pub reply: oneshot::Sender<Result<Batched, String>>,
    pub enqueued: Instant,
}

/// A request's predictions and the size of the forward pass they were part of.
pub struct Batched {
    pub predictions: Vec<Prediction>,
    /// Rows in the whole forward pass (across requests): the batch-size histogram.
    pub batch_rows: usize,
    /// Requests that shared it.
    pub batch_requests: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    /// Most padded tokens (longest row × rows) in one forward pass.
    pub max_batch_tokens: usize,
    /// Longest time the first request of a batch waits for company.
    pub max_wait: Duration,
}

/// The sending side, cloned into every request handler.
#[derive(Clone)]
pub struct Batcher {
    queue: SyncSender<Job>,
}

/// Why a request was not queued.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The queue is full: answer 429 and let the client retry.
    Overloaded,
    /// The inference thread is gone.
    Stopped,
}

impl Batcher {
    /// Queues a request without waiting.
    pub fn submit(&self, job: Job) -> Result<(), Refused> {
        self.queue.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => Refused::Overloaded,
            TrySendError::Disconnected(_) => Refused::Stopped,
        })
    }
}

/// A bounded queue of `capacity` requests, and its receiving end for [`run`].
pub fn channel(capacity: usize) -> (Batcher, Receiver<Job>) {
    let (queue, receiver) = mpsc::sync_channel(capacity.max(1));
    (Batcher { queue }, receiver)
}

/// Runs on the inference thread until every [`Batcher`] is dropped.
pub fn run(
    inference: &Inference<'_>,
    labels: &[String],
    limits: BatchLimits,
    queue: Receiver<Job>,
) {
    let mut carry: Option<Job> = None;
    loop {
        let first = match carry.take() {
            Some(job) => job,
            None => match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        let mut batch = vec![first];
        let mut longest = batch[0]
            .rows
            .iter()
            .map(|r| r.input_ids.len())
            .max()
            .unwrap_or(1);
        let mut rows = batch[0].rows.len();
        let deadline = batch[0].enqueued + limits.max_wait;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match queue.recv_timeout(deadline - now) {
                Ok(job) => {
                    let job_longest = job
                        .rows
                        .iter()
                        .map(|r| r.input_ids.len())
                        .max()
                        .unwrap_or(1);
                    let padded = longest.max(job_longest) * (rows + job.rows.len());
                    if padded > limits.max_batch_tokens {
                        // It starts the next batch instead.
                        carry = Some(job);
                        break;
                    }
                    longest = longest.max(job_longest);
                    rows += job.rows.len();
                    batch.push(job);
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        forward(inference, labels, batch);
    }
}

/// One forward pass over every row of `batch`; each request gets its own rows' predictions back.
fn forward(inference: &Inference<'_>, labels: &[String], batch: Vec<Job>) {
    let all: Vec<Features> = batch.iter().flat_map(|j| j.rows.iter().cloned()).collect();
    let batch_rows = all.len();
    let batch_requests = batch.len();
    let result = inference
        .logits(&all)
        .map(|logits| to_predictions(&logits, labels));
    match result {
        Ok(mut predictions) => {
            for job in batch {
                let rest = predictions.split_off(job.rows.len().min(predictions.len()));
                let mine = std::mem::replace(&mut predictions, rest);
                let _ = job.reply.send(Ok(Batched {
                    predictions: mine,
                    batch_rows,
                    batch_requests,
                }));
            }
        }
        Err(e) => {
            let message = e.to_string();
            for job in batch {
                let _ = job.reply.send(Err(message.clone()));
            }
        }
    }
}
