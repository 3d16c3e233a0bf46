//! Graceful stop: SIGTERM (what `docker stop` and the platform send) and SIGINT set a flag that the
//! training loop checks between optimizer steps; it then finishes the step, writes a checkpoint and
//! emits `end` with status `stopped`. A second signal is not special-cased: the platform escalates to
//! SIGKILL itself after its grace period.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{Error, Result};

/// A shared stop request.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn new() -> Self {
        StopFlag::default()
    }

    /// Sets the flag on SIGTERM and SIGINT for the rest of the process.
    pub fn install_signal_handlers(&self) -> Result<()> {
        for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
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
