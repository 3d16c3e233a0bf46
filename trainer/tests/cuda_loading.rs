//! libtorch's CUDA library is loaded at run time where a GPU may be used (`hostcaps::cuda`), not linked.
//! libtorch keeps its first answer about CUDA for the life of the process, so the order of the steps
//! is what is tested, in a process of its own (one test in this binary). Every branch runs on every
//! machine: the driver's presence is given, not read.

use trainer::device::{cuda_hooks_registered, Cuda};

#[test]
fn libtorch_cuda_is_loaded_only_where_a_gpu_may_be_used_and_then_registered_with_aten() {
    assert!(
        !hostcaps::cuda::runtime_loaded(),
        "libtorch_cuda.so is linked: every process pays for it"
    );
    std::env::remove_var(hostcaps::HIDE_ENV);

    // A host without an NVIDIA driver: nothing is loaded, and the CPU is what there is.
    std::env::remove_var("CUDA_VISIBLE_DEVICES");
    let no_driver = Cuda::probe_with(false);
    assert_eq!(no_driver.devices, 0);
    assert!(!hostcaps::cuda::runtime_loaded());

    // A driver, but every GPU hidden on purpose (as the server runs its checks): still nothing.
    std::env::set_var("CUDA_VISIBLE_DEVICES", "");
    let hidden = Cuda::probe_with(true);
    assert!(hidden.hidden_on_purpose && hidden.devices == 0);
    assert!(!hostcaps::cuda::runtime_loaded());
    std::env::remove_var("CUDA_VISIBLE_DEVICES");

    // A driver: libtorch's CUDA library is loaded before libtorch is asked, so ATen's CUDA hooks are
    // the real ones (on a machine with GPUs, `devices` counts them; here it may be none).
    let with_driver = Cuda::probe_with(true);
    assert!(hostcaps::cuda::runtime_loaded());
    assert!(cuda_hooks_registered(), "{}", with_driver.why_none);
    let runtime = hostcaps::cuda::cuda_runtime().expect("the wheel's libtorch has CUDA");
    if with_driver.devices == 0 {
        assert!(
            !with_driver.why_none.contains("asked about CUDA before"),
            "{}",
            with_driver.why_none
        );
    }
    assert!(runtime.min_driver().is_some(), "{runtime:?}");
}
