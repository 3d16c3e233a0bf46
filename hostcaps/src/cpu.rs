//! How this CPU does bfloat16 arithmetic, in the three ways that change what pays:
//!
//! - **AMX** (Sapphire Rapids and later Xeons): oneDNN runs bf16 matmuls on tile units, several times
//!   faster than float32;
//! - **AVX512-BF16 alone** (Cooper Lake, Zen 4, and virtual machines that do not pass AMX through): the
//!   instructions exist, and whether libtorch's bf16 path beats float32 depends on the CPU: on a 2-core
//!   Xeon VM it served ERNIE at 0.57–0.85× of float32, on a 2-core AMD EPYC at 1.13–1.72× (issue 34);
//! - **neither**: bf16 is emulated, slower still, and Paddock refuses it on the CPU.
//!
//! Which of the first two pays for a given model is measured (`trainer::precision_probe`); this module
//! only says what the hardware and the kernel allow, so the measurement is skipped where it cannot win.

use crate::{is_hidden, Capability};
use serde::{Deserialize, Serialize};

/// What the CPU offers for bfloat16, after the override ([`crate::HIDE_ENV`]) took its share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bf16 {
    /// No bfloat16 instructions: libtorch emulates it.
    None,
    /// AVX512-BF16 without usable AMX tiles.
    Avx512,
    /// AMX tiles with bf16, enabled by the kernel.
    Amx,
}

impl Bf16 {
    /// Whether bf16 runs natively at all (bf16 on the CPU is refused otherwise).
    pub fn is_native(self) -> bool {
        self != Bf16::None
    }

    /// The name shown in pages, logs and benchmarks.
    pub fn name(self) -> &'static str {
        match self {
            Bf16::None => "none",
            Bf16::Avx512 => "avx512_bf16",
            Bf16::Amx => "amx",
        }
    }

    /// `detected` as it stands once `hide_bf16` (no native bf16 at all) and `hide_amx` (tiles only)
    /// are applied: the override only ever lowers the tier.
    pub fn with_hidden(detected: Bf16, hide_bf16: bool, hide_amx: bool) -> Bf16 {
        match detected {
            _ if hide_bf16 => Bf16::None,
            Bf16::Amx if hide_amx => Bf16::Avx512,
            tier => tier,
        }
    }
}

/// The variable oneDNN, inside libtorch, reads once to cap the instructions it uses.
pub const ONEDNN_ISA_ENV: &str = "ONEDNN_MAX_CPU_ISA";

/// The cap that makes libtorch agree with the override: hiding `amx` from Paddock alone would still
/// let oneDNN run bf16 on the tiles, and a measurement would then find AMX's speed on a "machine without
/// AMX". `paddock` sets it first thing (a value the operator set is kept); `None` when nothing is hidden.
pub fn onednn_cap() -> Option<&'static str> {
    if is_hidden(Capability::Bf16) {
        Some("AVX512_CORE")
    } else if is_hidden(Capability::Amx) {
        Some("AVX512_CORE_BF16")
    } else {
        None
    }
}

/// This CPU's tier, with the override applied.
pub fn bf16() -> Bf16 {
    Bf16::with_hidden(
        bf16_detected(),
        is_hidden(Capability::Bf16),
        is_hidden(Capability::Amx),
    )
}

/// What the CPU and the kernel say, ignoring the override: for tests that compare against
/// `/proc/cpuinfo`, and for benchmarks that print the machine they ran on.
pub fn bf16_detected() -> Bf16 {
    if !avx512_bf16_detected() {
        return Bf16::None;
    }
    if amx_detected() {
        Bf16::Amx
    } else {
        Bf16::Avx512
    }
}

fn avx512_bf16_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// AMX tiles with bf16 that this process may use: the CPU has them (CPUID leaf 7: AMX-BF16 and
/// AMX-TILE), the kernel saves their state (XCR0's tile bits) and supports handing them out (Linux asks
/// each process to request tile data, `ARCH_REQ_XCOMP_PERM`, which oneDNN does; a kernel older than 5.16
/// cannot grant it). A hypervisor that does not pass AMX through clears the CPUID bits.
fn amx_detected() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        // SAFETY: CPUID leaf 7 exists on every CPU with AVX512-BF16 (checked by the caller), and
        // XGETBV is valid once CPUID.1:ECX.OSXSAVE says the OS enabled XSAVE.
        unsafe {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            let leaf7 = __cpuid_count(7, 0);
            let (amx_bf16, amx_tile) = (leaf7.edx & (1 << 22) != 0, leaf7.edx & (1 << 24) != 0);
            let osxsave = __cpuid(1).ecx & (1 << 27) != 0;
            if !(amx_bf16 && amx_tile && osxsave) {
                return false;
            }
            const TILE_STATE: u64 = (1 << 17) | (1 << 18);
            if xcr0() & TILE_STATE != TILE_STATE {
                return false;
            }
        }
        kernel_supports_tile_data()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[target_feature(enable = "xsave")]
unsafe fn xcr0() -> u64 {
    std::arch::x86_64::_xgetbv(0)
}

/// `arch_prctl(ARCH_GET_XCOMP_SUPP)`: the extended states the kernel can grant; bit 18 is tile data.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn kernel_supports_tile_data() -> bool {
    const ARCH_GET_XCOMP_SUPP: libc::c_long = 0x1021;
    const XFEATURE_XTILEDATA: u32 = 18;
    let mut supported: u64 = 0;
    // SAFETY: the kernel writes one u64 through the pointer, which lives for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_GET_XCOMP_SUPP,
            &mut supported as *mut u64,
        )
    };
    rc == 0 && supported & (1 << XFEATURE_XTILEDATA) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpuinfo_flags() -> Option<Vec<String>> {
        let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        let flags = info.lines().find(|l| l.starts_with("flags"))?;
        Some(flags.split_whitespace().map(String::from).collect())
    }

    /// The kernel lists a flag only where the CPU has it and the kernel enabled it, so its view and
    /// ours agree whatever the CPU.
    #[test]
    fn detection_agrees_with_proc_cpuinfo() {
        let Some(flags) = cpuinfo_flags() else {
            return;
        };
        let has = |f: &str| flags.iter().any(|g| g == f);
        let listed = match (has("avx512_bf16"), has("amx_bf16") && has("amx_tile")) {
            (false, _) => Bf16::None,
            (true, false) => Bf16::Avx512,
            (true, true) => Bf16::Amx,
        };
        assert_eq!(bf16_detected(), listed, "flags: {flags:?}");
    }

    /// Every tier under every override, whatever this CPU is: the override only lowers.
    #[test]
    fn the_override_lowers_each_tier_and_never_raises_one() {
        use Bf16::*;
        for (detected, hide_bf16, hide_amx, expected) in [
            (Amx, false, false, Amx),
            (Amx, false, true, Avx512),
            (Amx, true, false, None),
            (Amx, true, true, None),
            (Avx512, false, false, Avx512),
            (Avx512, false, true, Avx512),
            (Avx512, true, false, None),
            (None, false, false, None),
            (None, false, true, None),
        ] {
            let tier = Bf16::with_hidden(detected, hide_bf16, hide_amx);
            assert_eq!(
                tier, expected,
                "{detected:?} bf16 hidden {hide_bf16} amx hidden {hide_amx}"
            );
            assert!(tier <= detected);
        }
        assert!(!None.is_native() && Avx512.is_native() && Amx.is_native());
    }

    /// The process's own answer follows its override (`PADDOCK_HIDE_CAPABILITIES=amx make test` and
    /// `=bf16` walk the lower tiers on any machine).
    #[test]
    fn this_process_sees_the_detected_tier_less_what_it_hides() {
        let expected = Bf16::with_hidden(
            bf16_detected(),
            is_hidden(Capability::Bf16),
            is_hidden(Capability::Amx),
        );
        assert_eq!(bf16(), expected);
        assert!(
            bf16() <= bf16_detected(),
            "a tier the CPU lacks was reported"
        );
    }
}
