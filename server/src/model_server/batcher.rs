//! The inference threads and their dynamic batcher. A model copy lives on each inference thread; requests
//! reach them through one bounded channel as already-tokenized rows. One thread at a time gathers a batch
//! while the others compute theirs: it fills the forward pass up to a token budget — the padded size,
//! longest row × rows — or until the oldest waiting request has waited `max_wait`, whichever comes first.
//! Under load batches fill at once; at low load a request waits at most `max_wait`. When other copies are
//! idle at that moment, the gatherer keeps only its share and leaves the rest to them, so a burst is
//! computed on every core instead of on one. The channel's bound is the overload guard: a full queue is
//! refused at the door (HTTP 429), never buffered without limit.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use trainer::data::batch::Features;
use trainer::predict::Inference;

/// One request's rows and where its answer goes.
pub struct Job {
    pub rows: Vec<Features>,
    pub reply: oneshot::Sender<Result<Batched, String>>,
    pub enqueued: Instant,
}

/// A request's rows' logits (as `trainer::predict::Outputs`) and the size of the forward pass they were
/// part of. The request's side reads them into answers: it holds what an entity model's answers need
/// (the texts and their tokens' places), which the inference threads need not see.
pub struct Batched {
    pub logits: Vec<Vec<f32>>,
    pub num_labels: usize,
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

/// A bounded queue of `capacity` requests, and the receiving side every inference thread shares.
pub fn channel(capacity: usize) -> (Batcher, Queue) {
    let (queue, receiver) = mpsc::sync_channel(capacity.max(1));
    (
        Batcher { queue },
        Queue {
            gathering: Mutex::new(Gathering {
                receiver,
                pending: VecDeque::new(),
            }),
            idle: AtomicUsize::new(0),
        },
    )
}

/// The receiving side, shared by the inference threads.
pub struct Queue {
    gathering: Mutex<Gathering>,
    /// Inference threads waiting for their turn to gather: copies with nothing to compute.
    idle: AtomicUsize,
}

/// What the gathering thread owns while it holds the lock.
struct Gathering {
    receiver: Receiver<Job>,
    /// Requests taken from the channel but left for the next batch (over the budget, or another copy's
    /// share), oldest first: they go before anything still in the channel.
    pending: VecDeque<Job>,
}

/// Runs on an inference thread until every [`Batcher`] is dropped.
pub fn run(inference: &Inference<'_>, limits: BatchLimits, queue: &Queue) {
    while let Some(batch) = next_batch(queue, limits) {
        forward(inference, batch);
    }
}

/// This thread's next batch (`None` once the channel is closed and drained): waits for its turn, gathers,
/// and leaves the idle copies their share.
fn next_batch(queue: &Queue, limits: BatchLimits) -> Option<Vec<Job>> {
    queue.idle.fetch_add(1, Ordering::SeqCst);
    let mut g = queue.gathering.lock().unwrap_or_else(|p| p.into_inner());
    queue.idle.fetch_sub(1, Ordering::SeqCst);
    let first = match g.pending.pop_front() {
        Some(job) => job,
        None => g.receiver.recv().ok()?,
    };
    let mut batch = gather(&mut g, first, limits);
    let others = queue.idle.load(Ordering::SeqCst);
    if others > 0 && batch.len() > 1 {
        let rest = batch.split_off(batch.len().div_ceil(others + 1));
        for job in rest.into_iter().rev() {
            g.pending.push_front(job);
        }
    }
    Some(batch)
}

/// The batch that starts with `first`: every request already waiting joins at once, then more are
/// awaited until `first` has waited `max_wait`, as long as the padded size stays within the budget. The
/// request that would break the budget stays pending to start the next batch. Under load the queue is
/// never empty, so batches fill without waiting; `first.enqueued` is then long past, which is why the
/// deadline only limits waiting and never stops taking what is already there.
fn gather(g: &mut Gathering, first: Job, limits: BatchLimits) -> Vec<Job> {
    let longest_of = |job: &Job| {
        job.rows
            .iter()
            .map(|r| r.input_ids.len())
            .max()
            .unwrap_or(1)
    };
    let deadline = first.enqueued + limits.max_wait;
    let mut longest = longest_of(&first);
    let mut rows = first.rows.len();
    let mut batch = vec![first];
    loop {
        let job = match g.pending.pop_front() {
            Some(job) => job,
            None => match g.receiver.try_recv() {
                Ok(job) => job,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    match g.receiver.recv_timeout(deadline - now) {
                        Ok(job) => job,
                        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                    }
                }
            },
        };
        let job_longest = longest_of(&job);
        if longest.max(job_longest) * (rows + job.rows.len()) > limits.max_batch_tokens {
            g.pending.push_front(job);
            break;
        }
        longest = longest.max(job_longest);
        rows += job.rows.len();
        batch.push(job);
    }
    batch
}

/// One forward pass over every row of `batch`; each request gets its own rows' logits back.
fn forward(inference: &Inference<'_>, batch: Vec<Job>) {
    let all: Vec<Features> = batch.iter().flat_map(|j| j.rows.iter().cloned()).collect();
    let batch_rows = all.len();
    let batch_requests = batch.len();
    match inference.run(&all) {
        Ok(out) => {
            let mut logits = out.logits;
            for job in batch {
                let rest = logits.split_off(job.rows.len().min(logits.len()));
                let mine = std::mem::replace(&mut logits, rest);
                let _ = job.reply.send(Ok(Batched {
                    logits: mine,
                    num_labels: out.num_labels,
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
            rows: vec![Features::unlabelled(vec![1; tokens], vec![0; tokens])],
            reply,
            enqueued,
        }
    }

    fn lengths(batch: &[Job]) -> Vec<usize> {
        batch.iter().map(|j| j.rows[0].input_ids.len()).collect()
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
        let batch = next_batch(&queue, limits).unwrap();
        assert_eq!(batch.len(), 6, "filled up to the token budget at once");
        let batch = next_batch(&queue, limits).unwrap();
        assert_eq!(batch.len(), 4, "the seventh started the next batch");
        drop(batcher);
        assert!(next_batch(&queue, limits).is_none(), "closed and drained");
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
        let quick = BatchLimits {
            max_wait: Duration::from_millis(1),
            ..budget
        };
        assert_eq!(next_batch(&queue, quick).unwrap().len(), 1);
        // Within a long max_wait the batcher is still waiting when a later request arrives; this one
        // does not fit the budget, so the batch ends at once and it starts the next one.
        batcher.submit(job(10, Instant::now())).unwrap();
        let sender = batcher.clone();
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            sender.submit(job(25, Instant::now())).unwrap();
        });
        assert_eq!(lengths(&next_batch(&queue, budget).unwrap()), vec![10]);
        late.join().unwrap();
        // (Closed, so that this batch does not wait its minute for company.)
        drop(batcher);
        assert_eq!(lengths(&next_batch(&queue, budget).unwrap()), vec![25]);
    }

    #[test]
    fn idle_copies_get_their_share_of_a_burst_in_order() {
        let (batcher, queue) = channel(64);
        let now = Instant::now() - Duration::from_secs(1);
        for tokens in 1..=8 {
            batcher.submit(job(tokens, now)).unwrap();
        }
        let limits = BatchLimits {
            max_batch_tokens: 8192,
            max_wait: Duration::from_millis(2),
        };
        // One other copy is waiting for its turn: this one keeps half.
        queue.idle.store(1, Ordering::SeqCst);
        let mine = next_batch(&queue, limits).unwrap();
        queue.idle.store(0, Ordering::SeqCst);
        assert_eq!(lengths(&mine), vec![1, 2, 3, 4]);
        let theirs = next_batch(&queue, limits).unwrap();
        assert_eq!(lengths(&theirs), vec![5, 6, 7, 8], "the rest, oldest first");
    }
}
