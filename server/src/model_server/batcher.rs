//! The inference thread and its dynamic batcher. The model lives on one OS thread (libtorch uses its own
//! pool for the math); requests reach it through a bounded channel as already-tokenized rows, and it
//! fills each forward pass up to a token budget — the padded size, longest row × rows — or until the
//! oldest waiting request has waited `max_wait`, whichever comes first. Under load batches fill at once;
//! at low load a request waits at most `max_wait`. The channel's bound is the overload guard: a full
//! queue is refused at the door (HTTP 429), never buffered without limit.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
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
        let (batch, next) = gather(&queue, first, limits);
        carry = next;
        forward(inference, labels, batch);
    }
}

/// The batch that starts with `first`: every request already waiting joins at once, then more are
/// awaited until `first` has waited `max_wait`, as long as the padded size stays within the budget. The
/// request that would break the budget comes back to start the next batch. Under load the queue is
/// never empty, so batches fill without waiting; `first.enqueued` is then long past, which is why the
/// deadline only limits waiting and never stops taking what is already there.
fn gather(queue: &Receiver<Job>, first: Job, limits: BatchLimits) -> (Vec<Job>, Option<Job>) {
    let longest_of = |job: &Job| job.rows.iter().map(|r| r.input_ids.len()).max().unwrap_or(1);
    let deadline = first.enqueued + limits.max_wait;
    let mut longest = longest_of(&first);
    let mut rows = first.rows.len();
    let mut batch = vec![first];
    loop {
        let job = match queue.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                match queue.recv_timeout(deadline - now) {
                    Ok(job) => job,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        let job_longest = longest_of(&job);
        if longest.max(job_longest) * (rows + job.rows.len()) > limits.max_batch_tokens {
            return (batch, Some(job));
        }
        longest = longest.max(job_longest);
        rows += job.rows.len();
        batch.push(job);
    }
    (batch, None)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn job(tokens: usize, enqueued: Instant) -> Job {
        let (reply, _) = oneshot::channel();
        Job {
            rows: vec![Features {
                input_ids: vec![1; tokens],
                token_type_ids: vec![0; tokens],
                label: None,
            }],
            reply,
            enqueued,
        }
    }

    #[test]
    fn requests_already_waiting_join_even_when_the_first_waited_past_its_deadline() {
        let (batcher, queue) = channel(64);
        let long_ago = Instant::now() - Duration::from_secs(1);
        for _ in 0..10 {
            batcher.submit(job(20, long_ago)).unwrap();
        }
        let limits = BatchLimits {
            max_batch_tokens: 20 * 6,
            max_wait: Duration::from_millis(2),
        };
        let first = queue.recv().unwrap();
        let (batch, next) = gather(&queue, first, limits);
        assert_eq!(batch.len(), 6, "filled up to the token budget at once");
        let (batch, next) = gather(&queue, next.expect("the seventh starts the next batch"), limits);
        assert_eq!(batch.len(), 4);
        assert!(next.is_none());
    }

    #[test]
    fn a_lone_request_waits_for_company_until_its_deadline() {
        let (batcher, queue) = channel(8);
        let budget = BatchLimits {
            max_batch_tokens: 30,
            max_wait: Duration::from_secs(60),
        };
        // Nothing else comes within 1 ms: the batch is the request alone.
        batcher.submit(job(10, Instant::now())).unwrap();
        let first = queue.recv().unwrap();
        let quick = BatchLimits {
            max_wait: Duration::from_millis(1),
            ..budget
        };
        let (batch, next) = gather(&queue, first, quick);
        assert_eq!((batch.len(), next.is_none()), (1, true));
        // Within a long max_wait the batcher is still waiting when a later request arrives; this one
        // does not fit the budget, so it comes back at once as the start of the next batch.
        batcher.submit(job(10, Instant::now())).unwrap();
        let first = queue.recv().unwrap();
        let sender = batcher.clone();
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            sender.submit(job(25, Instant::now())).unwrap();
        });
        let (batch, next) = gather(&queue, first, budget);
        late.join().unwrap();
        assert_eq!(batch.len(), 1);
        assert_eq!(next.expect("the late request was seen").rows[0].input_ids.len(), 25);
    }
}
