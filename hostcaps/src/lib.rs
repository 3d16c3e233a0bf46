//! What this machine can do, asked in one place: bfloat16 on the CPU (AMX, AVX512-BF16 or neither), CUDA devices for libtorch,
//! NVIDIA GPUs for containers. Behaviour that depends on the hardware asks here (or, for CUDA, asks here
//! before asking libtorch), so that one switch can take a capability away everywhere at once.
//!
//! # The override
//! `PADDOCK_HIDE_CAPABILITIES` (comma-separated names: `bf16`, `amx`, `cuda`, `gpus`, or `all`) makes
//! Paddock behave as if the machine lacked them. It can only take away, never add: a suite run with `bf16`
//! hidden walks the branch every CPU without AVX512-BF16 takes, one with `amx` hidden the branch of a CPU
//! that has AVX512-BF16 but no tiles, on any machine, while the branch that needs the instructions still
//! runs only where they exist. Child processes inherit it (the trainer and model
//! servers a `paddock serve` starts), so the server's forms and the processes they start agree, and the
//! server passes it into the containers it starts for the same reason.
//!
//! Tests that must walk both branches in one process take the capability as a parameter instead (for
//! example `trainer::device::Precision::check_with`); the variable is for whole processes.
//!
//! # Layout
//! This file: [`Capability`] and the override ([`hidden`], [`is_hidden`], [`override_for_child`]).
//! `cpu`: how the CPU does bfloat16 ([`cpu::bf16`]). `cuda`: what Paddock's own CUDA runtime is and needs
//! ([`cuda::cuda_runtime`]: its version and GPU architectures, read from the loaded libraries) and the host's
//! NVIDIA driver ([`cuda::nvidia_driver`]), and CUDA's table of drivers. Whether CUDA devices or GPUs are there is asked of libtorch and
//! `nvidia-smi` by their callers, after [`is_hidden`].

pub mod cpu;
pub mod cuda;

/// The environment variable that hides capabilities.
pub const HIDE_ENV: &str = "PADDOCK_HIDE_CAPABILITIES";

/// A capability whose presence changes what Paddock does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Native bfloat16 arithmetic on the CPU (AVX512-BF16; every CPU with AMX has it). Without it libtorch
    /// emulates bf16, slower than float32, so bf16 on the CPU is refused. Hiding it hides AMX too.
    Bf16,
    /// AMX tiles: where bf16 on the CPU is expected to beat float32 (see [`cpu`]).
    Amx,
    /// CUDA devices visible to libtorch (the trainer and model servers).
    Cuda,
    /// NVIDIA GPUs as `nvidia-smi` reports them (GPU inventory, environment and job placement).
    Gpus,
}

impl Capability {
    pub const ALL: [Capability; 4] = [
        Capability::Bf16,
        Capability::Amx,
        Capability::Cuda,
        Capability::Gpus,
    ];

    /// The name used in [`HIDE_ENV`].
    pub fn name(self) -> &'static str {
        match self {
            Capability::Bf16 => "bf16",
            Capability::Amx => "amx",
            Capability::Cuda => "cuda",
            Capability::Gpus => "gpus",
        }
    }
}

/// Parses a value of [`HIDE_ENV`]. Blank entries are ignored; an unknown name is an error, because a
/// misspelt override that hid nothing would let a test pass only because of the machine it ran on.
pub fn parse_hidden(value: &str) -> Result<Vec<Capability>, String> {
    let mut hidden = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name.to_ascii_lowercase().as_str() {
            "all" => hidden.extend(Capability::ALL),
            lower => match Capability::ALL.into_iter().find(|c| c.name() == lower) {
                Some(c) => hidden.push(c),
                None => {
                    return Err(format!(
                        "{HIDE_ENV}: `{name}` is not a capability; use a comma-separated list of {}, or all",
                        Capability::ALL.map(Capability::name).join(", ")
                    ))
                }
            },
        }
    }
    Ok(hidden)
}

/// Checks [`HIDE_ENV`]. `paddock` calls this first thing, so a typo stops the process with a clear message
/// instead of silently hiding nothing.
pub fn check_override() -> Result<(), String> {
    override_value()
        .map(|v| parse_hidden(&v))
        .transpose()
        .map(drop)
}

/// The capabilities [`HIDE_ENV`] hides (none when it is unset). An invalid value hides every
/// capability: [`check_override`] has already refused it in `paddock`, and a library user who skipped
/// that check gets the branch that works on every machine rather than one that depends on theirs.
pub fn hidden() -> Vec<Capability> {
    match override_value() {
        None => Vec::new(),
        Some(v) => parse_hidden(&v).unwrap_or_else(|_| Capability::ALL.to_vec()),
    }
}

/// Whether `capability` is hidden by [`HIDE_ENV`].
pub fn is_hidden(capability: Capability) -> bool {
    hidden().contains(&capability)
}

/// The override to pass on to a process that does not inherit this one's environment (a container), as
/// `NAME=value`; `None` when nothing is hidden.
pub fn override_for_child() -> Option<String> {
    let hidden = hidden();
    (!hidden.is_empty()).then(|| {
        format!(
            "{HIDE_ENV}={}",
            hidden
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(",")
        )
    })
}

fn override_value() -> Option<String> {
    std::env::var(HIDE_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_any_case_and_all_means_every_one() {
        assert_eq!(parse_hidden("").unwrap(), vec![]);
        assert_eq!(
            parse_hidden(" BF16 , ,cuda").unwrap(),
            vec![Capability::Bf16, Capability::Cuda]
        );
        assert_eq!(parse_hidden("all").unwrap(), Capability::ALL.to_vec());
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_names_that_exist() {
        let err = parse_hidden("bf16,avx512").unwrap_err();
        assert!(
            err.contains("`avx512`") && err.contains("bf16, amx, cuda, gpus"),
            "{err}"
        );
    }
}
