//! The learning-rate schedule: linear warm-up from 0 to the peak over the first steps, then linear decay
//! to 0 at the last step (transformers' `get_linear_schedule_with_warmup`). A pure function of the step,
//! so a resumed run needs only the step number to continue the same curve.

/// Linear warm-up and decay over `total_steps`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearSchedule {
    pub peak_lr: f64,
    pub warmup_steps: usize,
    pub total_steps: usize,
}

impl LinearSchedule {
    pub fn new(peak_lr: f64, warmup_ratio: f64, total_steps: usize) -> Self {
        let warmup_steps = (warmup_ratio * total_steps as f64).ceil() as usize;
        LinearSchedule {
            peak_lr,
            warmup_steps,
            total_steps,
        }
    }

    /// The learning rate for the optimizer step that follows `done` completed steps.
    pub fn lr(&self, done: usize) -> f64 {
        if done < self.warmup_steps {
            return self.peak_lr * done as f64 / self.warmup_steps.max(1) as f64;
        }
        let rest = self.total_steps.saturating_sub(self.warmup_steps).max(1);
        self.peak_lr * (self.total_steps.saturating_sub(done) as f64 / rest as f64).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warms_up_then_decays_to_zero() {
        let s = LinearSchedule::new(1.0, 0.1, 100);
        assert_eq!(s.warmup_steps, 10);
        assert_eq!(s.lr(0), 0.0);
        assert!((s.lr(5) - 0.5).abs() < 1e-12);
        assert_eq!(s.lr(10), 1.0);
        assert!((s.lr(55) - 0.5).abs() < 1e-12);
        assert_eq!(s.lr(100), 0.0);
        let flat = LinearSchedule::new(2.0, 0.0, 4);
        assert_eq!(flat.lr(0), 2.0);
    }
}
