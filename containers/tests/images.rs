//! Images against the real daemon: the local busybox base, env images cached by build hash and rebuilt
//! reproducibly, a spec change giving a new image, the runtime layer running on a libc-less base, and plain
//! errors for pulls that cannot work (no registry is reachable here).

mod common;

use std::sync::Mutex;

use common::{log_to, Guard};
use containers::build::{BuildOptions, BuiltImage};
use containers::catalog::BUSYBOX_BASE;
use containers::mirror::Mirror;
use containers::spec::RuntimeLayer;
use containers::{labels, EnvSpec, Error};

/// Held by every test that builds on the busybox base. Their builds share steps, so Docker's classic
/// builder shares those intermediate images as cache; one test removing its images (by id, with their
/// untagged parents) while another builds or rebuilds would take cache from under it, and "built again
/// → the same image" would then depend on timing. One at a time, each test sees the cache it made.
static BUILDS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The tests here read back what their pulls and builds logged, so each starts with a log beside its guard.
async fn guard_and_log() -> Option<(Guard, Mutex<Vec<String>>)> {
    Some((Guard::start().await?, Mutex::new(Vec::new())))
}

/// Where every test that builds on the busybox base starts: [`BUILDS`] held, a guard, the log its builds
/// write to, and the base's image ID. Bound in this order, the guard is dropped (and cleans up) before the
/// lock is released. The log starts empty: on a fresh Docker engine the base is built by whichever of
/// these tests gets the lock first, and its build's lines (a "Successfully built" among them) must not
/// count as that test's own.
async fn on_busybox_base() -> Option<(
    tokio::sync::MutexGuard<'static, ()>,
    Guard,
    Mutex<Vec<String>>,
    String,
)> {
    let builds = BUILDS.lock().await;
    let (g, lines) = guard_and_log().await?;
    let base_log = Mutex::new(Vec::new());
    let base_id = g
        .docker
        .ensure_busybox_base(&mut log_to(&base_log))
        .await
        .unwrap_or_else(|e| panic!("busybox base: {e}\n{:#?}", base_log.lock().unwrap()));
    Some((builds, g, lines, base_id))
}

/// This test's own tag `name`: the prefix in it keeps parallel tests apart, and the guard removes it at
/// the end whether or not a build got as far as making it.
fn own_tag(g: &Guard, name: &str) -> String {
    let tag = format!("paddock-test/{}:{name}", g.prefix);
    g.image(&tag);
    tag
}

/// Options that build this test's image under [`own_tag`] `name`, labelling what the build creates with
/// the test's prefix so that the guard finds it.
fn own_image(g: &Guard, name: &str) -> BuildOptions {
    BuildOptions {
        tag: Some(own_tag(g, name)),
        instance: Some(g.prefix.clone()),
        ..Default::default()
    }
}

/// `options` again with the build forced, so that a reused image can only come from Docker's step cache.
fn force_rebuild(options: &BuildOptions) -> BuildOptions {
    BuildOptions {
        force: true,
        ..options.clone()
    }
}

/// A spec whose runtime layer is `binary` with its libraries, and options for this test's image `name`
/// with a one-byte bound on the runtime layers: every library gets a layer, and so a build stage, of its
/// own, so that the tests see several stages from one small binary.
fn stage_per_library(g: &Guard, binary: &str, name: &str) -> (EnvSpec, BuildOptions) {
    let mut spec = g.spec();
    spec.runtime = Some(RuntimeLayer {
        binary: binary.into(),
    });
    let options = BuildOptions {
        runtime_layer_bytes: Some(1),
        ..own_image(g, name)
    };
    (spec, options)
}

/// Builds `spec` with its log in `lines`, which the tests read back (steps streamed, cache hits, stages).
async fn build(
    g: &Guard,
    spec: &EnvSpec,
    options: &BuildOptions,
    lines: &Mutex<Vec<String>>,
) -> Result<BuiltImage, Error> {
    g.docker
        .build_env_image(spec, options, &mut log_to(lines))
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn busybox_base_builds_idempotently() {
    // The shared tag first, so that removing the test's own tag below only untags.
    let Some((_builds, g, lines, shared)) = on_busybox_base().await else {
        return;
    };
    let tag = own_tag(&g, "base");
    let build_base = async || {
        g.docker
            .build_busybox_base(
                std::path::Path::new("/bin/busybox"),
                &tag,
                &mut log_to(&lines),
            )
            .await
            .unwrap()
    };
    let first = build_base().await;
    let second = build_base().await;
    assert_eq!(first, second);
    assert_eq!(first, shared, "same busybox, same recipe: same image");
    let info = g.docker.image_info(BUSYBOX_BASE).await.unwrap();
    assert_eq!(info.labels[labels::IMAGE_KIND], "base");
    assert!(info.tags.contains(&tag), "{:?}", info.tags);
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn env_image_is_cached_and_reproducible() {
    let Some((_builds, g, lines, _)) = on_busybox_base().await else {
        return;
    };
    let options = own_image(&g, "env");
    let mut spec = g.spec();
    spec.env
        .insert("TRICKY".into(), r#"$HOME "quoted" \ back"#.into());

    let first = build(&g, &spec, &options, &lines).await.unwrap();
    g.image(&first.image_id);
    assert!(!first.cached);
    assert!(
        lines.lock().unwrap().iter().any(|l| l.contains("Step 1/")),
        "build log streamed: {lines:?}"
    );
    let info = g.docker.image_info(&first.image_id).await.unwrap();
    assert_eq!(info.labels[labels::BUILD_HASH], first.build_hash);
    assert!(
        info.env
            .contains(&r#"TRICKY=$HOME "quoted" \ back"#.to_string()),
        "{:?}",
        info.env
    );

    // Same spec: the labelled image is reused without building.
    let again = build(&g, &spec, &options, &lines).await.unwrap();
    assert!(again.cached);
    assert_eq!(again.image_id, first.image_id);

    // Forced rebuild: byte-identical context and Dockerfile, so every step hits Docker's cache.
    lines.lock().unwrap().clear();
    let forced = build(&g, &spec, &force_rebuild(&options), &lines)
        .await
        .unwrap();
    assert!(
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("Using cache")),
        "{lines:?}"
    );
    assert!(!forced.cached);
    assert_eq!(
        forced.image_id, first.image_id,
        "a forced rebuild of the same spec gives the same image ID; log: {lines:#?}"
    );

    // Without the step cache the layer contents are still identical (fixed mtimes/owners/modes); the image
    // ID is not, because the classic builder stamps the build time into the image config (see `build`).
    let fresh = build(
        &g,
        &spec,
        &BuildOptions {
            no_cache: true,
            ..force_rebuild(&options)
        },
        &lines,
    )
    .await
    .unwrap();
    g.image(&fresh.image_id);
    let fresh_info = g.docker.image_info(&fresh.image_id).await.unwrap();
    assert_eq!(fresh.build_hash, first.build_hash);
    assert_eq!(
        fresh_info.layers, info.layers,
        "layer contents must be reproducible"
    );
    eprintln!(
        "no-cache rebuild: image ID {} (first {}), layers identical",
        fresh.image_id, first.image_id
    );

    // A spec change that affects the image: new hash, new image.
    let mut changed = spec.clone();
    changed.env.insert("EXTRA".into(), "1".into());
    assert_ne!(changed.spec_hash(), spec.spec_hash());
    let other = build(&g, &changed, &options, &lines).await.unwrap();
    g.image(&other.image_id);
    assert_ne!(other.build_hash, first.build_hash);
    assert_ne!(other.image_id, first.image_id);

    // A resource-only change: new spec hash, same image.
    let mut resized = spec.clone();
    resized.memory = "128m".into();
    assert_ne!(resized.spec_hash(), spec.spec_hash());
    let same = build(&g, &resized, &options, &lines).await.unwrap();
    assert_eq!(same.build_hash, fresh.build_hash);
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn runtime_layer_runs_on_a_base_without_libc() {
    let Some((_builds, g, lines, base_id)) = on_busybox_base().await else {
        return;
    };
    // GNU ls links libselinux, libpcre2 and glibc: the busybox base has none of them.
    let (spec, options) = stage_per_library(&g, "/usr/bin/ls", "runtime");
    let built = build(&g, &spec, &options, &lines).await.unwrap();
    g.image(&built.image_id);
    let stages = built.dockerfile.matches("COPY runtime/ /").count();
    assert!(stages >= 3, "{}", built.dockerfile);
    assert_eq!(
        built.dockerfile.matches("USER ").count(),
        1,
        "{}",
        built.dockerfile
    );
    // The image holds one layer per stage's copy on top of the base and the layout.
    let layers = g.docker.image_info(&built.image_id).await.unwrap().layers;
    let base = g.docker.image_info(&base_id).await.unwrap().layers;
    assert_eq!(layers.len(), base.len() + 1 + stages, "{layers:?}");
    // Built again with the same inputs: every stage hits the cache, the same image comes back.
    let again = build(&g, &spec, &force_rebuild(&options), &lines)
        .await
        .unwrap();
    assert_eq!(again.image_id, built.image_id);

    let container = g
        .docker
        .provision(&g.request("runtime", &built.image_id))
        .await
        .unwrap();
    let out = g
        .docker
        .exec(&container.name, &["/opt/paddock/bin/ls", "--version"])
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert!(out.stdout.contains("GNU coreutils"), "{out:?}");
    let out = g
        .docker
        .exec(
            &container.name,
            &[
                "/bin/sh",
                "-c",
                "echo $LD_LIBRARY_PATH; ls /opt/paddock/lib",
            ],
        )
        .await
        .unwrap();
    assert!(out.stdout.starts_with("/opt/paddock/lib\n"), "{out:?}");
    assert!(
        out.stdout.contains("libc.so.6") && out.stdout.contains("libselinux.so.1"),
        "{out:?}"
    );
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unavailable_images_fail_quickly_and_plainly() {
    let Some((g, lines)) = guard_and_log().await else {
        return;
    };
    let reference = format!("registry.invalid/{}/nothing:1", g.prefix);
    match g.docker.pull_image(&reference, &mut log_to(&lines)).await {
        Err(Error::PullFailed { image, message }) => {
            assert_eq!(image, reference);
            assert!(!message.is_empty());
        }
        other => panic!("expected PullFailed, got {other:?}"),
    }
    // Local Paddock images are never pulled: the error says to build them.
    match g
        .docker
        .ensure_image(
            &format!("paddock/{}:missing", g.prefix),
            None,
            &mut log_to(&lines),
        )
        .await
    {
        Err(e @ Error::NotFound { .. }) => assert!(e.to_string().contains("build it first"), "{e}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    // An unknown base in a spec: the build stops at the pull, creating nothing.
    let mut spec = g.spec();
    spec.base_image = format!("{}-unknown/image:1", g.prefix);
    let err = build(&g, &spec, &BuildOptions::default(), &lines)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::PullFailed { .. }), "{err:?}");
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_specs_create_nothing() {
    let Some((g, lines)) = guard_and_log().await else {
        return;
    };
    let mut spec = g.spec();
    spec.memory = "lots".into();
    spec.workspace_volume = "../../etc".into();
    spec.name = "x; rm -rf /".into();
    match build(&g, &spec, &BuildOptions::default(), &lines).await {
        Err(Error::InvalidSpec(errors)) => {
            let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
            assert_eq!(fields, ["name", "memory", "workspace_volume"]);
        }
        other => panic!("expected InvalidSpec, got {other:?}"),
    }
    assert!(lines.lock().unwrap().is_empty(), "nothing was built");
    g.finish().await;
}

#[tokio::test]
async fn unreachable_docker_is_its_own_error() {
    let err = containers::Docker::connect_to("unix:///nonexistent/paddock-docker.sock")
        .await
        .unwrap_err();
    assert!(err.is_unreachable(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn preflight_on_this_host() {
    let Some(g) = Guard::start().await else {
        return;
    };
    let cpu = g.spec();
    g.docker
        .preflight(&cpu)
        .await
        .expect("CPU environments pass on any host");
    let mut many = g.spec();
    many.gpus = containers::GpuRequest::Count(99);
    match g.docker.preflight(&many).await {
        // Without GPUs the message says there are none; with some, that 99 is more than there are.
        Err(Error::Preflight(problems)) => {
            assert!(
                problems[0].contains("no NVIDIA GPU") || problems[0].contains("requests 99 GPUs"),
                "{problems:?}"
            )
        }
        other => panic!("expected a preflight refusal, got {other:?}"),
    }
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_stage_takes_the_stages_before_it_along() {
    let Some((_builds, g, lines, _)) = on_busybox_base().await else {
        return;
    };
    // `true` needs only glibc and the loader: three stages at a one-byte bound (loader, libc, binary).
    // The last one fails: WORKDIR cannot be a directory where the base has a file.
    let (mut spec, options) = stage_per_library(&g, "/bin/true", "failing");
    spec.working_dir = "/bin/busybox".into();
    let err = build(&g, &spec, &options, &lines).await.unwrap_err();
    assert!(matches!(err, Error::BuildFailed { .. }), "{err}");
    let lines = lines.into_inner().unwrap();
    let stages: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("Successfully built "))
        .collect();
    assert_eq!(
        stages.len(),
        2,
        "two stages built before the failing one: {lines:#?}"
    );
    for stage in stages {
        assert!(
            matches!(
                g.docker.image_info(stage).await,
                Err(Error::NotFound { .. })
            ),
            "stage image {stage} was removed: {lines:#?}"
        );
    }
    g.finish().await;
}

/// A registry that holds one image, as a mirror of Docker Hub would: the Docker Registry HTTP API v2's
/// read side (`/v2/`, manifests, blobs) over plain HTTP, which Docker speaks to loopback addresses. It
/// counts the requests for its manifest, so a test can tell that a pull went through it.
mod registry {
    use std::collections::HashMap;
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use axum::http::{header, StatusCode, Uri};
    use axum::response::{IntoResponse, Response};
    use futures_util::StreamExt;
    use sha2::{Digest, Sha256};

    const MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

    pub struct Registry {
        pub port: u16,
        pub manifest_requests: Arc<AtomicUsize>,
    }

    fn digest(bytes: &[u8]) -> String {
        format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
    }

    /// `image` as `docker save` writes it, turned into what a registry serves under `repository:tag`.
    pub async fn serve(
        docker: &containers::Docker,
        image: &str,
        repository: &str,
        tag: &str,
    ) -> Registry {
        let mut saved = Vec::new();
        let mut stream = docker.api().export_image(image);
        while let Some(chunk) = stream.next().await {
            saved.extend_from_slice(&chunk.unwrap());
        }
        let mut files = HashMap::new();
        for entry in tar::Archive::new(saved.as_slice()).entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            files.insert(path, bytes);
        }
        let index: serde_json::Value = serde_json::from_slice(&files["manifest.json"]).unwrap();
        let config = files[index[0]["Config"].as_str().unwrap()].clone();
        let mut blobs = HashMap::new();
        let mut layers = Vec::new();
        for layer in index[0]["Layers"].as_array().unwrap() {
            // Served as saved, uncompressed: Docker detects the compression of what it downloads.
            let bytes = files[layer.as_str().unwrap()].clone();
            layers.push(serde_json::json!({
                "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "size": bytes.len(),
                "digest": digest(&bytes),
            }));
            blobs.insert(digest(&bytes), bytes);
        }
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": {
                "mediaType": "application/vnd.docker.container.image.v1+json",
                "size": config.len(),
                "digest": digest(&config),
            },
            "layers": layers,
        }))
        .unwrap();
        blobs.insert(digest(&config), config);

        let manifest_requests = Arc::new(AtomicUsize::new(0));
        let counter = manifest_requests.clone();
        // Docker asks by tag, then again by the digest the first answer gave.
        let manifest_paths = [
            format!("/v2/{repository}/manifests/{tag}"),
            format!("/v2/{repository}/manifests/{}", digest(&manifest)),
        ];
        let blob_prefix = format!("/v2/{repository}/blobs/");
        let (blobs, manifest) = (Arc::new(blobs), Arc::new(manifest));
        let app = axum::Router::new().fallback(move |uri: Uri| {
            let (blobs, manifest, counter) = (blobs.clone(), manifest.clone(), counter.clone());
            let (manifest_paths, blob_prefix) = (manifest_paths.clone(), blob_prefix.clone());
            async move {
                let path = uri.path();
                let found = |content_type: &str, bytes: Vec<u8>| -> Response {
                    let digest = digest(&bytes);
                    (
                        [
                            (header::CONTENT_TYPE, content_type.to_string()),
                            (
                                header::HeaderName::from_static("docker-content-digest"),
                                digest,
                            ),
                        ],
                        bytes,
                    )
                        .into_response()
                };
                if path == "/v2/" || path == "/v2" {
                    return found("application/json", b"{}".to_vec());
                }
                if manifest_paths.iter().any(|p| p == path) {
                    counter.fetch_add(1, Ordering::SeqCst);
                    return found(MANIFEST, manifest.to_vec());
                }
                match path.strip_prefix(&blob_prefix).and_then(|d| blobs.get(d)) {
                    Some(bytes) => found("application/octet-stream", bytes.clone()),
                    None => StatusCode::NOT_FOUND.into_response(),
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Registry {
            port,
            manifest_requests,
        }
    }
}

#[tokio::test]
async fn a_docker_hub_image_comes_through_the_mirror_under_its_own_name() {
    let Some((_builds, g, lines, base_id)) = on_busybox_base().await else {
        return;
    };
    // A Docker Hub name (no registry in it), which no registry reachable here has.
    let reference = format!("{}/busybox:mirrored", g.prefix);
    let registry = registry::serve(
        &g.docker,
        BUSYBOX_BASE,
        &format!("hub/{}/busybox", g.prefix),
        "mirrored",
    )
    .await;
    let mirror = Mirror::parse(&format!("127.0.0.1:{}/hub", registry.port)).unwrap();
    let mirrored = mirror.rewrite(&reference).unwrap();
    g.image(&reference);
    g.image(&mirrored);

    let id = g
        .docker
        .ensure_image(&reference, Some(&mirror), &mut log_to(&lines))
        .await
        .unwrap();
    assert_eq!(id, base_id, "the same image, by content");
    assert!(
        registry
            .manifest_requests
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 1,
        "pulled from the mirror"
    );
    let info = g.docker.image_info(&reference).await.unwrap();
    assert_eq!(info.id, base_id, "tagged under the name the spec gave");
    let log = lines.lock().unwrap().join("\n");
    assert!(
        log.contains(&mirrored),
        "the build log says where it came from: {log}"
    );

    // Present now, it is not pulled again.
    let before = registry
        .manifest_requests
        .load(std::sync::atomic::Ordering::SeqCst);
    g.docker
        .ensure_image(&reference, Some(&mirror), &mut log_to(&lines))
        .await
        .unwrap();
    assert_eq!(
        registry
            .manifest_requests
            .load(std::sync::atomic::Ordering::SeqCst),
        before
    );
    g.finish().await;
}
