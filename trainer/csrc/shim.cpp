// What the trainer needs of libtorch that tch 0.26 does not wrap. Exceptions must not cross into Rust,
// so each entry point catches them.
// - Autocast for a chosen device and dtype. tch wraps only the deprecated `at::autocast::set_enabled`,
//   which means CUDA and float16; bfloat16 (on CUDA, or on CPUs with AVX512-BF16/AMX, where it is
//   several times faster than float32 for matmuls) needs the device-typed calls below.
// - Deterministic CUDA kernels for training.
// - Whether ATen's CUDA hooks are registered (libtorch_cuda.so is loaded at run time, not linked).
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cstdio>
#include <exception>

namespace {
c10::DeviceType device_of(int cuda) { return cuda ? at::kCUDA : at::kCPU; }

void write_error(char *err, size_t len, const char *what) {
  if (err != nullptr && len > 0) {
    std::snprintf(err, len, "%s", what);
  }
}
} // namespace

extern "C" {

// Turns autocast on for the device (CUDA when `cuda`, else CPU) with bfloat16 (`bf16`) or float16,
// and enters one nesting level. On success returns 0 and stores the state to restore in
// `prev_enabled` / `prev_dtype` (opaque to the caller); on failure returns -1 with the message in
// `err` and changes nothing.
int paddock_autocast_enter(int cuda, int bf16, int *prev_enabled, int *prev_dtype, char *err,
                           size_t err_len) {
  try {
    const auto device = device_of(cuda);
    const bool enabled = at::autocast::is_autocast_enabled(device);
    const auto before = at::autocast::get_autocast_dtype(device);
    at::autocast::set_autocast_dtype(device, bf16 ? at::kBFloat16 : at::kHalf);
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::increment_nesting();
    *prev_enabled = enabled ? 1 : 0;
    *prev_dtype = static_cast<int>(before);
    return 0;
  } catch (const std::exception &e) {
    write_error(err, err_len, e.what());
    return -1;
  }
}

// Leaves the nesting level entered by `paddock_autocast_enter` and restores the state it saved. The
// cast cache (float32 weights cast once per forward) is dropped when the outermost level ends, as
// torch.autocast does, so updated weights are cast afresh on the next step.
void paddock_autocast_exit(int cuda, int prev_enabled, int prev_dtype) {
  try {
    const auto device = device_of(cuda);
    if (at::autocast::decrement_nesting() == 0) {
      at::autocast::clear_cache();
    }
    at::autocast::set_autocast_enabled(device, prev_enabled != 0);
    at::autocast::set_autocast_dtype(device, static_cast<c10::ScalarType>(prev_dtype));
  } catch (const std::exception &) {
    // Restoring thread-local flags does not throw in practice; nothing useful to report from a guard.
  }
}

// The CUDA runtime version ATen's CUDA hooks were built against (13000 for CUDA 13.0), or -1 where the
// hooks are ATen's CPU-only placeholder: libtorch_cuda.so is not loaded, or was loaded after ATen was
// first asked about CUDA (it keeps its first answer).
long paddock_cuda_hooks_runtime_version() {
  try {
    return at::detail::getCUDAHooks().versionCUDART();
  } catch (const std::exception &) {
    return -1;
  }
}

// Deterministic kernels for training on CUDA, so that a run resumed from a checkpoint replays the
// steps the first run took (the CPU kernels are deterministic already): deterministic algorithms
// (warning, not failing, where an operation has none), cuDNN's deterministic choice and no
// benchmarking. cuBLAS needs `CUBLAS_WORKSPACE_CONFIG` too, which the caller sets. Returns 0, or -1
// with the message in `err`.
int paddock_deterministic(char *err, size_t err_len) {
  try {
    auto &context = at::globalContext();
    context.setDeterministicAlgorithms(true, /*warn_only=*/true);
    context.setDeterministicCuDNN(true);
    context.setBenchmarkCuDNN(false);
    return 0;
  } catch (const std::exception &e) {
    write_error(err, err_len, e.what());
    return -1;
  }
}
}
