// Shared by the build scripts of every package that links libtorch (`trainer`, `server`), via `include!`.
//
// Why: `cargo:rustc-link-arg` only reaches the binaries and tests of the package whose build script
// prints it, so each linking package needs the same two instructions:
// - an rpath to libtorch's `lib/`, so `paddock` and the test binaries run without `LD_LIBRARY_PATH`;
// - `--no-as-needed -ltorch_cuda`, because nothing references `torch_cuda` symbols directly and the
//   linker would drop it, leaving `tch::Cuda::is_available()` false on a GPU machine. mold (our linker,
//   scripts/mold-gcc) keeps a library's first `--as-needed` state when it is named again, and torch-sys
//   names `torch_cuda` first under rustc's `--as-needed`, so for mold the library is also made needed by
//   an undefined reference to one of its C symbols (`-u`; GNU ld ignores that one after the library).
//   Both together give `libtorch_cuda.so` in `DT_NEEDED` with either linker; `paddock version` (its
//   `runtime:` line lists the GPU architectures, read from the loaded libtorch_cuda) is the test.

fn libtorch_lib_dir() -> Option<std::path::PathBuf> {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-env-changed=LIBTORCH_LIB");
    println!("cargo:rerun-if-env-changed=LIBTORCH_USE_PYTORCH");
    if let Ok(lib) = std::env::var("LIBTORCH_LIB") {
        return Some(std::path::PathBuf::from(lib).join("lib"));
    }
    if let Ok(root) = std::env::var("LIBTORCH") {
        return Some(std::path::PathBuf::from(root).join("lib"));
    }
    if std::env::var_os("LIBTORCH_USE_PYTORCH").is_some() {
        let python = std::env::var("PYTHON_SYS_EXECUTABLE").unwrap_or_else(|_| "python3".into());
        let out = std::process::Command::new(python)
            .args(["-c", "import os, torch; print(os.path.dirname(torch.__file__))"])
            .output()
            .ok()?;
        let root = String::from_utf8(out.stdout).ok()?;
        return Some(std::path::PathBuf::from(root.trim()).join("lib"));
    }
    None
}

fn emit_libtorch_link_args() {
    let Some(lib) = libtorch_lib_dir() else { return };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    if lib.join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-search=native={}", lib.display());
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
        // A C function of AOTInductor's shim, whose ABI PyTorch keeps stable across releases.
        println!("cargo:rustc-link-arg=-Wl,-u,aoti_torch_create_cuda_guard");
    }
}
