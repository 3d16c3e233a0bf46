//! What the host CPU can do for the numeric modes Paddock offers. bfloat16 autocast only pays on a CPU with
//! native bfloat16 instructions (AVX512-BF16, and AMX where present); elsewhere libtorch emulates it,
//! slower than float32. The trainer refuses bf16 on such a CPU when a run starts
//! (`trainer::device::cpu_has_bf16`, the same test); asking here lets a form say so before anything runs.

/// Whether this host's CPU has native bfloat16 arithmetic.
pub fn has_native_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    /// The answer agrees with the kernel's view of the CPU.
    #[test]
    fn agrees_with_proc_cpuinfo() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return;
        };
        let flags = info
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap_or_default();
        let listed = flags.split_whitespace().any(|f| f == "avx512_bf16");
        assert_eq!(super::has_native_bf16(), listed);
    }
}
