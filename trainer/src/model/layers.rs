//! The two parameterised building blocks, `Dense` (HF `nn.Linear`) and `LayerNorm`, initialised the way
//! transformers' `_init_weights` does: weights ~ N(0, initializer_range), biases 0, LayerNorm 1 / 0.

use tch::nn::{Init, Path};
use tch::Tensor;

/// A linear layer with parameters `weight` `[out, in]` and `bias` `[out]`.
#[derive(Debug)]
pub struct Dense {
    pub weight: Tensor,
    pub bias: Tensor,
}

impl Dense {
    pub fn new(p: &Path, input: usize, output: usize, init_range: f64) -> Self {
        let weight = p.var(
            "weight",
            &[output as i64, input as i64],
            Init::Randn {
                mean: 0.0,
                stdev: init_range,
            },
        );
        let bias = p.var("bias", &[output as i64], Init::Const(0.0));
        Dense { weight, bias }
    }

    /// `x @ weight^T + bias` over the last dimension (one fused addmm in libtorch).
    pub fn forward(&self, x: &Tensor) -> Tensor {
        x.linear(&self.weight, Some(&self.bias))
    }
}

/// Layer normalisation over the last dimension with parameters `weight` and `bias`.
#[derive(Debug)]
pub struct LayerNorm {
    pub weight: Tensor,
    pub bias: Tensor,
    eps: f64,
    size: i64,
}

impl LayerNorm {
    pub fn new(p: &Path, size: usize, eps: f64) -> Self {
        let weight = p.var("weight", &[size as i64], Init::Const(1.0));
        let bias = p.var("bias", &[size as i64], Init::Const(0.0));
        LayerNorm {
            weight,
            bias,
            eps,
            size: size as i64,
        }
    }

    pub fn forward(&self, x: &Tensor) -> Tensor {
        x.layer_norm(
            [self.size],
            Some(&self.weight),
            Some(&self.bias),
            self.eps,
            true,
        )
    }
}

/// Applies the configured activation (`gelu` is the exact erf form, as in transformers).
pub fn activation(name: &str, x: &Tensor) -> Tensor {
    match name {
        "gelu_new" | "gelu_pytorch_tanh" => x.gelu("tanh"),
        "relu" => x.relu(),
        "silu" | "swish" => x.silu(),
        "tanh" => x.tanh(),
        "sigmoid" => x.sigmoid(),
        _ => x.gelu("none"),
    }
}
