include!("../build/libtorch_link.rs");

fn main() {
    emit_libtorch_link_args();
    compile_shim();
}

/// `csrc/shim.cpp`: what the trainer needs of libtorch that tch 0.26 does not wrap (see the file), and
/// `csrc/collectives.cpp`: c10d's Gloo process group, with the Gloo headers of the revision libtorch
/// was built with (`csrc/gloo`). Built against the same libtorch headers and C++ ABI as tch's own shim.
fn compile_shim() {
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
    let Some(lib) = libtorch_lib_dir() else {
        panic!("libtorch not found: set LIBTORCH, LIBTORCH_LIB or LIBTORCH_USE_PYTORCH=1 (scripts/env.sh does)");
    };
    let root = lib.parent().expect("libtorch lib/ has a parent");
    let abi = std::env::var("LIBTORCH_CXX11_ABI").unwrap_or_else(|_| "1".into());
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(root.join("include"))
        .include(root.join("include/torch/csrc/api/include"))
        .include("csrc/gloo")
        .flag("-std=c++17")
        .flag(format!("-D_GLIBCXX_USE_CXX11_ABI={abi}"))
        // ProcessGroupGloo.hpp declares nothing without it.
        .define("USE_C10D_GLOO", None)
        .file("csrc/shim.cpp")
        .file("csrc/collectives.cpp")
        .compile("paddock_torch_shim");
}
