// Shared by the build scripts of every package that links libtorch (`trainer`, `server`), via `include!`.
//
// Why: `cargo:rustc-link-arg` only reaches the binaries and tests of the package whose build script
// prints it, so each linking package needs the same instruction: an rpath to libtorch's `lib/`, so
// `paddock` and the test binaries run without `LD_LIBRARY_PATH`.
//
// `libtorch_cuda.so` is deliberately left out of `DT_NEEDED` (nothing references its symbols, and the
// linkers' `--as-needed` drops it): it is loaded at run time where a GPU may be used
// (`hostcaps::cuda::load_runtime`), so the server, the CLI and every process on a CPU host start
// without its 0.3 s and 400 MB.

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
}
