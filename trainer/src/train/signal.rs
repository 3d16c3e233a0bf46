//! Graceful stop: SIGTERM (what `docker stop` and the platform send), SIGINT and SIGUSR1 (what Slurm's
//! srun passes on to every process of a run across nodes, a TERM being a kill to it) set a flag that
//! the training loop checks between optimizer steps; it then finishes the step, writes a checkpoint
//! and emits `end` with status `stopped`. A second signal is not special-cased: the platform escalates
//! to SIGKILL itself after its grace period.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{Error, Result};

/// The signals that ask a run (a rank, or a launch of ranks) to stop.
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGUSR1,
];

/// A shared stop request.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn new() -> Self {
        StopFlag::default()
    }

    /// Sets the flag on the [`STOP_SIGNALS`] for the rest of the process.
    pub fn install_signal_handlers(&self) -> Result<()> {
        for sig in STOP_SIGNALS {
            signal_hook::flag::register(sig, Arc::clone(&self.0)).map_err(|e| {
                Error::Config(format!("cannot install a handler for signal {sig}: {e}"))
            })?;
        }
        Ok(())
    }

    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
