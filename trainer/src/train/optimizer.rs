//! AdamW written out over tensors rather than tch's `nn::AdamW`, because resuming exactly needs the
//! moment estimates saved and restored, and tch's optimizer keeps them out of reach. The update is
//! PyTorch's `torch.optim.AdamW` (decoupled decay, bias-corrected moments, eps outside the square
//! root); biases and LayerNorm weights get no weight decay, as in the transformers recipe. Also here:
//! global-norm gradient clipping and the dynamic loss scaler used with fp16.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::nn::VarStore;
use tch::{Kind, Tensor};

use crate::{Error, Result};

/// Optimizer hyper-parameters (the learning rate is given per step by the schedule).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamWConfig {
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
}

struct Param {
    name: String,
    var: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    decay: bool,
}

/// AdamW over the trainable variables of one VarStore.
pub struct AdamW {
    cfg: AdamWConfig,
    params: Vec<Param>,
    /// Optimizer steps taken (the bias-correction exponent).
    step: i64,
}

/// Whether a parameter is exempt from weight decay: biases and LayerNorm parameters.
pub fn no_decay(name: &str) -> bool {
    name.ends_with(".bias") || name.contains("LayerNorm") || name.contains("layer_norm")
}

impl AdamW {
    /// Tracks every trainable variable of `vs`, in name order (so saved state lines up by name, not by
    /// creation order).
    pub fn new(vs: &VarStore, cfg: AdamWConfig) -> Self {
        let vars: BTreeMap<String, Tensor> = vs.variables().into_iter().collect();
        let params = vars
            .into_iter()
            .filter(|(_, v)| v.requires_grad())
            .map(|(name, var)| Param {
                decay: !no_decay(&name),
                exp_avg: Tensor::zeros_like(&var),
                exp_avg_sq: Tensor::zeros_like(&var),
                name,
                var,
            })
            .collect();
        AdamW {
            cfg,
            params,
            step: 0,
        }
    }

    pub fn step_count(&self) -> i64 {
        self.step
    }

    /// Names of the parameters that get weight decay and those that do not.
    pub fn decay_groups(&self) -> (Vec<&str>, Vec<&str>) {
        let (d, n): (Vec<&Param>, Vec<&Param>) = self.params.iter().partition(|p| p.decay);
        (
            d.iter().map(|p| p.name.as_str()).collect(),
            n.iter().map(|p| p.name.as_str()).collect(),
        )
    }

    /// Clears every gradient.
    pub fn zero_grad(&mut self) {
        for p in &mut self.params {
            let mut g = p.var.grad();
            if g.defined() {
                let _ = g.detach_().zero_();
            }
        }
    }

    /// Gives every parameter a gradient (of zeros) if it has none yet: ranks that sum their gradients
    /// need the same tensors on every rank, also where a rank had no rows or a parameter no use.
    pub fn materialize_grads(&mut self) {
        for p in &self.params {
            if !p.var.grad().defined() {
                (p.var.sum(Kind::Float) * 0.0).backward();
            }
        }
    }

    /// Every gradient in one float32 buffer, in the parameters' (name) order.
    pub fn flat_grads(&self) -> Tensor {
        tch::no_grad(|| {
            let parts: Vec<Tensor> = self
                .params
                .iter()
                .map(|p| {
                    let g = p.var.grad();
                    if g.defined() {
                        g.to_kind(Kind::Float).flatten(0, -1)
                    } else {
                        Tensor::zeros([p.var.numel() as i64], (Kind::Float, p.var.device()))
                    }
                })
                .collect();
            Tensor::cat(&parts, 0)
        })
    }

    /// Sets the gradients from a buffer laid out as [`AdamW::flat_grads`] lays them out.
    pub fn set_grads(&mut self, flat: &Tensor) {
        tch::no_grad(|| {
            let mut at = 0i64;
            for p in &self.params {
                let n = p.var.numel() as i64;
                let mut g = p.var.grad();
                if g.defined() {
                    let part = flat.narrow(0, at, n).view_as(&g).to_kind(g.kind());
                    g.copy_(&part);
                }
                at += n;
            }
        })
    }

    /// Multiplies every gradient by `factor` (loss-scale removal, accumulation averaging).
    pub fn scale_grads(&mut self, factor: f64) {
        tch::no_grad(|| {
            for p in &self.params {
                let mut g = p.var.grad();
                if g.defined() {
                    let _ = g.g_mul_scalar_(factor);
                }
            }
        })
    }

    /// The global L2 norm of the gradients (as if concatenated), in f64.
    pub fn grad_norm(&self) -> f64 {
        tch::no_grad(|| {
            let norms: Vec<Tensor> = self
                .params
                .iter()
                .map(|p| p.var.grad())
                .filter(Tensor::defined)
                .map(|g| g.to_kind(Kind::Float).norm())
                .collect();
            if norms.is_empty() {
                return 0.0;
            }
            f64::try_from(Tensor::stack(&norms, 0).norm()).unwrap_or(f64::NAN)
        })
    }

    /// Clips the gradients to global norm `max_norm` (when > 0); returns the norm before clipping.
    pub fn clip_grad_norm(&mut self, max_norm: f64) -> f64 {
        let norm = self.grad_norm();
        if max_norm > 0.0 && norm.is_finite() {
            let coef = max_norm / (norm + 1e-6);
            if coef < 1.0 {
                self.scale_grads(coef);
            }
        }
        norm
    }

    /// One AdamW update at learning rate `lr`.
    pub fn step(&mut self, lr: f64) {
        self.step += 1;
        let AdamWConfig {
            beta1,
            beta2,
            eps,
            weight_decay,
        } = self.cfg;
        let bc1 = 1.0 - beta1.powi(self.step as i32);
        let bc2_sqrt = (1.0 - beta2.powi(self.step as i32)).sqrt();
        tch::no_grad(|| {
            for p in &mut self.params {
                let g = p.var.grad();
                if !g.defined() {
                    continue;
                }
                let g = g.to_kind(p.var.kind());
                if p.decay && weight_decay > 0.0 {
                    let _ = p.var.g_mul_scalar_(1.0 - lr * weight_decay);
                }
                let _ = p.exp_avg.lerp_(&g, 1.0 - beta1);
                let _ = p.exp_avg_sq.g_mul_scalar_(beta2);
                let _ = p.exp_avg_sq.g_add_(&(&g * &g * (1.0 - beta2)));
                let denom = p.exp_avg_sq.sqrt() / bc2_sqrt + eps;
                let _ = p.var.g_add_(&(&p.exp_avg / denom * (-lr / bc1)));
            }
        })
    }

    /// Writes the moment estimates to a safetensors file (`exp_avg.NAME`, `exp_avg_sq.NAME`); the step
    /// count is part of the trainer state.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut named: Vec<(String, Tensor)> = Vec::with_capacity(self.params.len() * 2);
        for p in &self.params {
            named.push((
                format!("exp_avg.{}", p.name),
                p.exp_avg.to_device(tch::Device::Cpu),
            ));
            named.push((
                format!("exp_avg_sq.{}", p.name),
                p.exp_avg_sq.to_device(tch::Device::Cpu),
            ));
        }
        Tensor::write_safetensors(&named, path).map_err(|e| {
            Error::Checkpoint(format!(
                "{}: cannot write optimizer state: {e}",
                path.display()
            ))
        })
    }

    /// Restores state written by [`AdamW::save`]; every parameter must be present with its shape.
    pub fn load(&mut self, path: &Path, step: i64) -> Result<()> {
        let tensors: BTreeMap<String, Tensor> = Tensor::read_safetensors(path)
            .map_err(|e| {
                Error::Checkpoint(format!(
                    "{}: cannot read optimizer state: {e}",
                    path.display()
                ))
            })?
            .into_iter()
            .collect();
        let bad = |what: String| Error::Checkpoint(format!("{}: {what}", path.display()));
        tch::no_grad(|| {
            for p in &mut self.params {
                for (prefix, slot) in [
                    ("exp_avg", &mut p.exp_avg),
                    ("exp_avg_sq", &mut p.exp_avg_sq),
                ] {
                    let key = format!("{prefix}.{}", p.name);
                    let t = tensors
                        .get(&key)
                        .ok_or_else(|| bad(format!("optimizer state lacks `{key}`")))?;
                    if t.size() != slot.size() {
                        return Err(bad(format!(
                            "`{key}` has shape {:?}, expected {:?}",
                            t.size(),
                            slot.size()
                        )));
                    }
                    slot.copy_(t);
                }
            }
            Ok(())
        })?;
        self.step = step;
        Ok(())
    }
}

/// Dynamic loss scaling for fp16 (PyTorch's `GradScaler` policy): multiply the loss by `scale`, skip the
/// step and halve the scale when gradients overflow, double it after `growth_interval` clean steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossScaler {
    pub scale: f64,
    pub clean_steps: u64,
    pub growth_interval: u64,
    /// Steps skipped since the last one taken: an overflow in the forward pass itself is not cured by
    /// any scale, and a run that skips every step learns nothing while it seems to train.
    #[serde(default)]
    pub skipped_in_a_row: u64,
}

/// Skipped steps in a row after which fp16 is given up ([`LossScaler::gave_up`]): the scale has been
/// halved from 65536 down to 1 and twice as many steps again have overflowed.
pub const MAX_SKIPPED_IN_A_ROW: u64 = 32;

impl Default for LossScaler {
    fn default() -> Self {
        LossScaler {
            scale: 65536.0,
            clean_steps: 0,
            growth_interval: 2000,
            skipped_in_a_row: 0,
        }
    }
}

impl LossScaler {
    /// Records whether this step's gradients were finite and adapts the scale; returns whether the
    /// optimizer step should be taken.
    pub fn update(&mut self, finite: bool) -> bool {
        if finite {
            self.skipped_in_a_row = 0;
            self.clean_steps += 1;
            if self.clean_steps >= self.growth_interval {
                self.scale *= 2.0;
                self.clean_steps = 0;
            }
        } else {
            self.scale = (self.scale / 2.0).max(1.0);
            self.clean_steps = 0;
            self.skipped_in_a_row += 1;
        }
        finite
    }

    /// Whether fp16 overflows on every step whatever the scale ([`MAX_SKIPPED_IN_A_ROW`]).
    pub fn gave_up(&self) -> bool {
        self.skipped_in_a_row >= MAX_SKIPPED_IN_A_ROW
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::nn::{self, Module};

    #[test]
    fn matches_the_closed_form_first_step_and_skips_decay_on_bias() {
        let vs = VarStore::new(tch::Device::Cpu);
        let lin = nn::linear(vs.root().sub("dense"), 3, 2, Default::default());
        let ln = nn::layer_norm(vs.root().sub("LayerNorm"), vec![2], Default::default());
        let cfg = AdamWConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.1,
        };
        let mut opt = AdamW::new(&vs, cfg);
        let (decay, no) = opt.decay_groups();
        assert_eq!(decay, ["dense.weight"]);
        assert_eq!(no, ["LayerNorm.bias", "LayerNorm.weight", "dense.bias"]);

        let before_w = lin.ws.copy();
        let before_b = lin.bs.as_ref().unwrap().copy();
        let x = Tensor::from_slice(&[1.0f32, -2.0, 0.5]).view([1, 3]);
        let loss = ln.forward(&lin.forward(&x)).sum(Kind::Float) + lin.forward(&x).sum(Kind::Float);
        opt.zero_grad();
        loss.backward();
        let gw = lin.ws.grad().copy();
        let lr = 0.01;
        opt.step(lr);
        // First step: m̂ = g, v̂ = g², so the update is lr·g/(|g|+eps) plus decoupled decay for weights.
        let expected_w = &before_w * (1.0 - lr * 0.1) - &gw / (gw.abs() + 1e-8) * lr;
        assert!(lin.ws.allclose(&expected_w, 1e-6, 1e-7, false));
        let gb = lin.bs.as_ref().unwrap().grad().copy();
        let expected_b = &before_b - &gb / (gb.abs() + 1e-8) * lr;
        assert!(lin
            .bs
            .as_ref()
            .unwrap()
            .allclose(&expected_b, 1e-6, 1e-7, false));
    }

    #[test]
    fn state_round_trips_through_safetensors() {
        let dir = tempfile::tempdir().unwrap();
        let vs = VarStore::new(tch::Device::Cpu);
        let lin = nn::linear(vs.root().sub("dense"), 4, 2, Default::default());
        let cfg = AdamWConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
        };
        let mut opt = AdamW::new(&vs, cfg);
        lin.forward(&Tensor::ones([2, 4], (Kind::Float, tch::Device::Cpu)))
            .sum(Kind::Float)
            .backward();
        opt.step(1e-3);
        let path = dir.path().join("optimizer.safetensors");
        opt.save(&path).unwrap();
        let mut other = AdamW::new(&vs, cfg);
        other.load(&path, opt.step_count()).unwrap();
        for (a, b) in opt.params.iter().zip(&other.params) {
            assert!(a.exp_avg.equal(&b.exp_avg) && a.exp_avg_sq.equal(&b.exp_avg_sq));
        }
        assert_eq!(other.step_count(), 1);
    }

    #[test]
    fn clipping_bounds_the_global_norm() {
        let vs = VarStore::new(tch::Device::Cpu);
        let lin = nn::linear(vs.root().sub("dense"), 4, 4, Default::default());
        let mut opt = AdamW::new(
            &vs,
            AdamWConfig {
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.0,
            },
        );
        (lin.forward(&Tensor::ones([8, 4], (Kind::Float, tch::Device::Cpu))) * 100.0)
            .sum(Kind::Float)
            .backward();
        let before = opt.clip_grad_norm(1.0);
        assert!(before > 1.0);
        assert!((opt.grad_norm() - 1.0).abs() < 1e-4);
    }

    #[test]
    fn scaler_backs_off_and_grows() {
        let mut s = LossScaler {
            growth_interval: 2,
            ..Default::default()
        };
        assert!(!s.update(false));
        assert_eq!(s.scale, 32768.0);
        assert!(s.update(true) && s.update(true));
        assert_eq!(s.scale, 65536.0);
        // Overflow on every step: the scale bottoms out at 1, and after enough skips in a row the
        // scaler gives up; one clean step starts the count again.
        for _ in 0..MAX_SKIPPED_IN_A_ROW - 1 {
            assert!(!s.update(false));
        }
        assert!(!s.gave_up() && s.scale == 1.0);
        assert!(s.update(true));
        assert_eq!(s.skipped_in_a_row, 0);
        for _ in 0..MAX_SKIPPED_IN_A_ROW {
            s.update(false);
        }
        assert!(s.gave_up());
    }
}
