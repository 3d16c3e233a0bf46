//! The runtime layer: Paddock's binary and its shared-library closure, copied into an image under
//! `/opt/paddock/{bin,lib}` so jobs and model servers run inside any environment. The closure comes from
//! `ldd` (the host's dynamic loader resolves it exactly as it would at run time), and then the libraries
//! beside it that are opened by name only when needed, which `ldd` cannot see: libtorch's
//! `libcaffe2_nvrtc.so` and `libtorch_cuda_linalg.so`, cuDNN 9's parts (`libcudnn_graph`, `_ops`,
//! `_engines_*`, …), NVRTC's `libnvrtc-builtins` — each missing one fails only on a GPU, at the first
//! operation that reaches it. So every shared library in a folder the closure draws from (outside the
//! system's own library folders) travels along, with its own closure, unless the host cannot load it
//! either. On bases without a libc
//! (busybox) glibc and the dynamic loader travel along, the loader at the path the binary's ELF interpreter
//! names; on Debian/Ubuntu bases the base's own glibc is used (mixing two glibcs in one process breaks),
//! so the base's glibc must be at least as new as the host's.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Where the runtime lives in the image.
pub const PREFIX: &str = "opt/paddock";

/// glibc's own libraries: shipped only to bases without a libc.
const GLIBC: &[&str] = &[
    "libc.so",
    "libm.so",
    "libpthread.so",
    "libdl.so",
    "librt.so",
    "libresolv.so",
    "libutil.so",
    "libmvec.so",
    "libanl.so",
    "libnsl.so",
    "libBrokenLocale.so",
    "libnss_",
    "ld-linux",
];

/// Libraries beside libtorch that only Python loads (the bindings and their helpers).
const PYTHON_ONLY: &[&str] = &["libtorch_python.so", "libshm.so", "libtorch_global_deps.so"];

/// Whether `dir` is one of the system's library folders, whose other libraries are not ours to ship.
fn is_system_dir(dir: &Path) -> bool {
    ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"]
        .iter()
        .any(|system| dir.starts_with(system))
}

/// Whether a file name is a shared library's (`libfoo.so`, `libfoo.so.9`, `libfoo.so.13.0`).
fn is_shared_library(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
}

/// One line of `ldd` output that names a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LddEntry {
    /// `libfoo.so.1 => /path/libfoo.so.1`
    Library { soname: String, path: PathBuf },
    /// The ELF interpreter, `/lib64/ld-linux-x86-64.so.2`.
    Interpreter { path: PathBuf },
}

/// Parses `ldd` output. Virtual objects (vdso) are skipped; unresolved libraries are an error naming them.
pub fn parse_ldd(output: &str) -> Result<Vec<LddEntry>, String> {
    let mut entries = Vec::new();
    let mut missing = Vec::new();
    for line in output.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("statically linked") || line.contains("not a dynamic executable") {
            continue;
        }
        let without_addr = match line.rfind(" (0x") {
            Some(i) => &line[..i],
            None => line,
        };
        if let Some((soname, path)) = without_addr.split_once(" => ") {
            let path = path.trim();
            if path == "not found" {
                missing.push(soname.trim().to_string());
            } else if !path.is_empty() {
                entries.push(LddEntry::Library {
                    soname: soname.trim().to_string(),
                    path: PathBuf::from(path),
                });
            }
            // "libfoo => (0x…)" has no file: a virtual object.
        } else if without_addr.starts_with('/') {
            entries.push(LddEntry::Interpreter {
                path: PathBuf::from(without_addr),
            });
        }
        // Anything else (linux-vdso.so.1) is provided by the kernel.
    }
    if missing.is_empty() {
        Ok(entries)
    } else {
        Err(format!("libraries not found: {}", missing.join(", ")))
    }
}

/// `ldd`'s closure of `file`, or what it could not resolve.
async fn ldd(file: &Path) -> Result<Vec<LddEntry>, String> {
    let output = tokio::process::Command::new("ldd")
        .arg(file)
        .output()
        .await
        .map_err(|e| format!("running ldd: {e}"))?;
    // ldd exits 1 for static binaries ("not a dynamic executable"), which is fine: no libraries.
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    parse_ldd(&text)
}

/// Libraries of the NVIDIA driver, which a GPU host has and the NVIDIA container runtime mounts into
/// containers: a library that links them (`libcaffe2_nvrtc.so` links `libcuda.so.1`) is loadable
/// wherever it can run, though not on a host without the driver.
const DRIVER_LIBRARIES: &[&str] = &["libcuda.so.", "libnvidia-ml.so."];

/// The closure of a library found beside the closure, if the host's loader can load it (the driver's
/// own libraries aside): a file that is no shared object, or one whose other libraries are missing,
/// is `None`.
async fn loadable(library: &Path) -> Option<Vec<LddEntry>> {
    let output = tokio::process::Command::new("ldd")
        .arg(library)
        .output()
        .await
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let without_driver: String = text
        .lines()
        .filter(|l| !(l.contains("not found") && DRIVER_LIBRARIES.iter().any(|d| l.contains(d))))
        .map(|l| format!("{l}\n"))
        .collect();
    parse_ldd(&without_driver).ok()
}

/// The shared libraries in `dir` that are not in `entries` yet and that Paddock may load.
fn companions(dir: &Path, entries: &[LddEntry]) -> Result<Vec<PathBuf>> {
    let listed =
        std::fs::read_dir(dir).map_err(|e| Error::host(format!("listing {}", dir.display()), e))?;
    let mut found = Vec::new();
    for entry in listed.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let known = entries.iter().any(|e| match e {
            LddEntry::Library { soname, path: p } => *soname == name || *p == path,
            LddEntry::Interpreter { .. } => false,
        });
        let is_file = entry
            .file_type()
            .is_ok_and(|t| t.is_file() || t.is_symlink())
            && path.is_file();
        if is_file && !known && is_shared_library(&name) && !PYTHON_ONLY.contains(&name.as_str()) {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// The files of a runtime layer: image path (relative, no leading `/`) → host file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeFiles {
    pub files: Vec<(String, PathBuf)>,
}

impl RuntimeFiles {
    /// Runs `ldd` on `binary` and collects the closure, with the libraries opened by name beside it
    /// (see the module); `with_libc` includes glibc and the loader.
    pub async fn collect(binary: &Path, with_libc: bool) -> Result<Self> {
        let context = format!("collecting the runtime layer of {}", binary.display());
        let meta = tokio::fs::metadata(binary)
            .await
            .map_err(|e| Error::host(&context, e))?;
        if !meta.is_file() {
            return Err(Error::host(&context, "not a regular file"));
        }
        let mut entries = ldd(binary).await.map_err(|e| Error::host(&context, e))?;
        let mut searched = std::collections::BTreeSet::new();
        loop {
            let dirs: Vec<PathBuf> = entries
                .iter()
                .filter_map(|e| match e {
                    LddEntry::Library { path, .. } => path.parent().map(Path::to_path_buf),
                    LddEntry::Interpreter { .. } => None,
                })
                .filter(|dir| !is_system_dir(dir) && !searched.contains(dir))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            if dirs.is_empty() {
                break;
            }
            for dir in dirs {
                for library in companions(&dir, &entries)? {
                    // A library the host's loader cannot complete (an MPI bootstrap without MPI) could
                    // not load in the image either: it stays behind.
                    if let Some(closure) = loadable(&library).await {
                        let soname = library
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        entries.push(LddEntry::Library {
                            soname,
                            path: library,
                        });
                        entries.extend(closure);
                    }
                }
                searched.insert(dir);
            }
        }
        Ok(Self::from_entries(binary, &entries, with_libc))
    }

    /// Lays out the closure: binary in `bin/`, libraries in `lib/` under their soname, the interpreter at
    /// its own absolute path. Pure, for tests.
    pub fn from_entries(binary: &Path, entries: &[LddEntry], with_libc: bool) -> Self {
        let name = binary
            .file_name()
            .map_or("paddock".into(), |n| n.to_string_lossy().to_string());
        let mut files = vec![(format!("{PREFIX}/bin/{name}"), binary.to_path_buf())];
        for entry in entries {
            match entry {
                LddEntry::Library { soname, path } => {
                    let is_glibc = GLIBC.iter().any(|g| soname.starts_with(g));
                    if with_libc || !is_glibc {
                        files.push((format!("{PREFIX}/lib/{soname}"), path.clone()));
                    }
                }
                LddEntry::Interpreter { path } if with_libc => {
                    let image_path = path.to_string_lossy().trim_start_matches('/').to_string();
                    files.push((image_path, path.clone()));
                }
                LddEntry::Interpreter { .. } => {}
            }
        }
        files.sort();
        files.dedup_by(|a, b| a.0 == b.0);
        RuntimeFiles { files }
    }

    /// The files split into image layers of at most `limit` bytes each (a larger file gets a layer of its
    /// own): libraries first, in path order, and the binaries last, alone. Why layers: Docker's classic
    /// builder extracts a build's whole context to a temporary directory and then copies each step's files
    /// through a container into a new layer, so a single multi-gigabyte `COPY` (libtorch with its CUDA
    /// libraries is about 3 GB) needs three times its size free at once; built in bounded steps it needs
    /// the final size plus about three layers. Binaries last: a new Paddock release changes only the last
    /// layer, and the library layers before it stay in Docker's cache.
    pub fn layers(&self, limit: u64) -> Result<Vec<RuntimeFiles>> {
        let mut sized = Vec::with_capacity(self.files.len());
        for (image_path, host) in &self.files {
            let len = std::fs::metadata(host)
                .map_err(|e| Error::host(format!("reading {}", host.display()), e))?
                .len();
            sized.push((image_path.as_str(), len));
        }
        Ok(split_layers(&sized, limit)
            .into_iter()
            .map(|layer| RuntimeFiles {
                files: layer.into_iter().map(|i| self.files[i].clone()).collect(),
            })
            .collect())
    }

    /// SHA-256 over every file's image path, size and contents (read in chunks on a blocking thread): part
    /// of the image build cache key, so a new Paddock binary or libtorch gives a new image.
    pub async fn digest(&self) -> Result<String> {
        let files = self.files.clone();
        tokio::task::spawn_blocking(move || {
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1 << 20];
            for (image_path, host) in &files {
                let context = format!("hashing {}", host.display());
                let mut file = std::fs::File::open(host).map_err(|e| Error::host(&context, e))?;
                let len = file.metadata().map_err(|e| Error::host(&context, e))?.len();
                hasher.update(image_path.as_bytes());
                hasher.update([0]);
                hasher.update(len.to_le_bytes());
                loop {
                    let n = std::io::Read::read(&mut file, &mut buf)
                        .map_err(|e| Error::host(&context, e))?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                }
            }
            Ok(hex::encode(hasher.finalize()))
        })
        .await
        .map_err(|e| Error::host("hashing the runtime layer", e))?
    }
}

/// Indices of `files` (image path, bytes) grouped into layers as [`RuntimeFiles::layers`] describes. Pure.
pub fn split_layers(files: &[(&str, u64)], limit: u64) -> Vec<Vec<usize>> {
    let is_binary = |path: &str| path.starts_with(&format!("{PREFIX}/bin/"));
    let mut layers: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut bytes = 0u64;
    for (i, (path, len)) in files.iter().enumerate() {
        if is_binary(path) {
            continue;
        }
        if !current.is_empty() && bytes.saturating_add(*len) > limit {
            layers.push(std::mem::take(&mut current));
            bytes = 0;
        }
        current.push(i);
        bytes = bytes.saturating_add(*len);
    }
    if !current.is_empty() {
        layers.push(current);
    }
    let binaries: Vec<usize> = (0..files.len())
        .filter(|&i| is_binary(files[i].0))
        .collect();
    if !binaries.is_empty() {
        layers.push(binaries);
    }
    layers
}

#[cfg(test)]
mod tests {
    use super::*;

    const LDD: &str = "\
\tlinux-vdso.so.1 (0x00007ffd0b5f2000)
\tlibtorch_cpu.so => /opt/libtorch/lib/libtorch_cpu.so (0x00007f3a1c000000)
\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f3a1bc00000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f3a1bb21000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f3a1b940000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f3a2a1f1000)
";

    #[test]
    fn parses_ldd_output() {
        let entries = parse_ldd(LDD).unwrap();
        assert_eq!(entries.len(), 5);
        assert_eq!(
            entries[0],
            LddEntry::Library {
                soname: "libtorch_cpu.so".into(),
                path: "/opt/libtorch/lib/libtorch_cpu.so".into()
            }
        );
        assert_eq!(
            entries[4],
            LddEntry::Interpreter {
                path: "/lib64/ld-linux-x86-64.so.2".into()
            }
        );
        assert_eq!(parse_ldd("\tstatically linked\n").unwrap(), vec![]);
        assert_eq!(parse_ldd("\tnot a dynamic executable\n").unwrap(), vec![]);
    }

    #[test]
    fn missing_libraries_are_named() {
        let err = parse_ldd("\tlibtorch.so => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n")
            .unwrap_err();
        assert_eq!(err, "libraries not found: libtorch.so");
    }

    #[test]
    fn shared_libraries_and_system_folders_are_told_apart() {
        for name in [
            "libtorch.so",
            "libcudnn_graph.so.9",
            "libnvrtc-builtins.so.13.0",
        ] {
            assert!(is_shared_library(name), "{name}");
        }
        for name in [
            "libcudart_static.a",
            "libnvshmem_device.bc",
            "libshm",
            "sonar.txt",
        ] {
            assert!(!is_shared_library(name), "{name}");
        }
        assert!(is_system_dir(Path::new("/usr/lib/x86_64-linux-gnu")));
        assert!(is_system_dir(Path::new("/lib64")));
        assert!(!is_system_dir(Path::new(
            "/srv/venv/lib/python3.11/site-packages/torch/lib"
        )));
        assert!(!is_system_dir(Path::new("/opt/libtorch/lib")));
    }

    /// Beside a library of the closure (in a folder of its own, as libtorch's are), a library that
    /// only `dlopen` reaches is collected; one the host cannot load, and Python's, are not.
    #[tokio::test]
    async fn libraries_opened_by_name_travel_along() {
        let dir = tempfile::tempdir().unwrap();
        let libc = parse_ldd(&String::from_utf8_lossy(
            &std::process::Command::new("ldd")
                .arg("/bin/sh")
                .output()
                .unwrap()
                .stdout,
        ))
        .unwrap()
        .into_iter()
        .find_map(|e| match e {
            LddEntry::Library { soname, path } if soname.starts_with("libc.so") => Some(path),
            _ => None,
        })
        .unwrap();
        // Real shared objects under other names: glibc's libc is one, and loads on its own.
        for name in ["libtorch.so", "libcudnn_graph.so.9", "libtorch_python.so"] {
            std::fs::copy(&libc, dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("libbroken.so"), b"not an ELF file").unwrap();
        std::fs::write(dir.path().join("libstatic.a"), b"!<arch>").unwrap();
        let closure = vec![LddEntry::Library {
            soname: "libtorch.so".into(),
            path: dir.path().join("libtorch.so"),
        }];
        let found = companions(dir.path(), &closure).unwrap();
        let names: Vec<String> = found
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["libbroken.so", "libcudnn_graph.so.9"]);
        // The broken one is no shared object: collect() leaves it behind.
        assert!(loadable(&dir.path().join("libbroken.so")).await.is_none());
        assert!(loadable(&dir.path().join("libcudnn_graph.so.9"))
            .await
            .is_some());
    }

    #[test]
    fn layout_with_and_without_libc() {
        let entries = parse_ldd(LDD).unwrap();
        let paths = |with_libc| -> Vec<String> {
            RuntimeFiles::from_entries(Path::new("/usr/local/bin/paddock"), &entries, with_libc)
                .files
                .into_iter()
                .map(|(p, _)| p)
                .collect()
        };
        assert_eq!(
            paths(false),
            [
                "opt/paddock/bin/paddock",
                "opt/paddock/lib/libstdc++.so.6",
                "opt/paddock/lib/libtorch_cpu.so"
            ]
        );
        assert_eq!(
            paths(true),
            [
                "lib64/ld-linux-x86-64.so.2",
                "opt/paddock/bin/paddock",
                "opt/paddock/lib/libc.so.6",
                "opt/paddock/lib/libm.so.6",
                "opt/paddock/lib/libstdc++.so.6",
                "opt/paddock/lib/libtorch_cpu.so"
            ]
        );
    }

    #[tokio::test]
    async fn closure_of_a_real_binary() {
        // /bin/sh is dynamic on every Debian host; its closure includes libc and the loader.
        let files = RuntimeFiles::collect(Path::new("/bin/sh"), true)
            .await
            .unwrap();
        assert!(
            files
                .files
                .iter()
                .any(|(p, _)| p == "opt/paddock/lib/libc.so.6"),
            "{files:?}"
        );
        assert!(
            files
                .files
                .iter()
                .any(|(p, _)| p.starts_with("lib") && p.contains("ld-linux")),
            "{files:?}"
        );
        let digest = files.digest().await.unwrap();
        assert_eq!(digest, files.digest().await.unwrap());
        assert!(
            RuntimeFiles::collect(Path::new("/nonexistent/paddock"), false)
                .await
                .is_err()
        );
    }

    #[test]
    fn layers_are_bounded_and_end_with_the_binaries() {
        let files = [
            ("lib64/ld-linux-x86-64.so.2", 1),
            ("opt/paddock/bin/paddock", 300),
            ("opt/paddock/lib/libc10.so", 2),
            ("opt/paddock/lib/libcublasLt.so.13", 500),
            ("opt/paddock/lib/libtorch.so", 1),
            ("opt/paddock/lib/libtorch_cpu.so", 400),
            ("opt/paddock/lib/libtorch_cuda.so", 450),
        ];
        assert_eq!(
            split_layers(&files, 500),
            vec![vec![0, 2], vec![3], vec![4, 5], vec![6], vec![1]]
        );
        // Everything fits: one layer of libraries, one of the binary.
        assert_eq!(
            split_layers(&files, u64::MAX),
            vec![vec![0, 2, 3, 4, 5, 6], vec![1]]
        );
        // A static binary alone is one layer.
        assert_eq!(split_layers(&files[1..2], 10), vec![vec![0]]);
        assert!(split_layers(&[], 10).is_empty());
    }
}
