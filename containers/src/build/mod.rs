//! Environment images. [`Docker::build_env_image`] turns a spec into an image: it resolves the base
//! (pulling with progress if remote), reads the base's users through a probe container, collects the runtime
//! layer, renders a deterministic Dockerfile, and computes the build hash — SHA-256 over the Dockerfile, the
//! generated user files, the base image ID and the runtime files' digest. An image labelled with that hash
//! is reused; otherwise the context is streamed to Docker's classic builder and the log is passed to the
//! caller line by line. A large runtime layer is added in bounded layers, each by its own build on the image
//! of the one before, so that a build never needs much more free disk than the image itself
//! ([`RuntimeFiles::layers`]); only the last stage is tagged and labelled.
//!
//! Reproducibility: a forced rebuild of the same inputs returns the same image ID, because every step hits
//! the builder's cache (the tar and Dockerfile are byte-identical). Without the cache (`no_cache`, or after
//! `docker system prune`) the layer *contents* are identical — fixed mtimes, owners and modes in the tar,
//! no timestamps in generated files, and the user/home/workspace files added as a tar (`ADD layout.tar`)
//! because `COPY --chown` stamps the directories it creates with the build time (the integration test
//! `env_image_is_cached_and_reproducible` checks the layer digests) — but the image ID still differs, because the classic builder records
//! the build time in each step's image config (`created`, and the history entries), and the image ID is the
//! digest of that config. BuildKit's `SOURCE_DATE_EPOCH` would fix it, but needs Docker ≥ 23 and a BuildKit
//! gRPC session; Debian 12's engine is 20.10. A `RUN apt-get install` step (extra OS packages) is not
//! reproducible at all without the cache: the mirror's package versions and the installed files' times
//! change; pin versions (`name=version`) to narrow that. Paddock therefore treats the first image ID as the lock and
//! shows a rebuild that changes it.

mod context;
mod dockerfile;
mod images;
mod probe;
mod runtime;
pub mod users;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

pub use context::{Context, FIXED_MTIME};
pub use dockerfile::{
    quote, with_labels, RUNTIME_LIBRARY_PATH, RUNTIME_PATH, STORE_DIR, WORKSPACE_DIR,
};
pub use images::{split_tag, ImageInfo};
pub use probe::PROBE_LABEL;
pub use runtime::{parse_ldd, LddEntry, RuntimeFiles};

use crate::error::{Error, Result};
use crate::labels;
use crate::spec::EnvSpec;
use crate::Docker;

/// Bumped when the build recipe changes meaning, so old cached images are not reused.
pub const BUILD_RECIPE_VERSION: &str = "paddock.build.v2";
/// Default size bound of one runtime layer (see [`RuntimeFiles::layers`]).
pub const RUNTIME_LAYER_BYTES: u64 = 512 << 20;
/// Lines of build output kept for [`Error::BuildFailed`].
const LOG_TAIL_LINES: usize = 30;

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Tag for the image; default `paddock/env:<first 16 hex of the build hash>`.
    pub tag: Option<String>,
    /// Build even when an image with this build hash exists (Docker's step cache still applies).
    pub force: bool,
    /// Also bypass Docker's step cache (a fully fresh build; see the module docs for what that changes).
    pub no_cache: bool,
    /// Instance label for the temporary probe container, so leftovers can be attributed and cleaned.
    pub instance: Option<String>,
    /// Size bound of one runtime layer; default [`RUNTIME_LAYER_BYTES`].
    pub runtime_layer_bytes: Option<u64>,
    /// Where a missing Docker Hub base image is pulled from (see [`crate::mirror`]).
    pub mirror: Option<crate::mirror::Mirror>,
}

/// The result of a build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    /// `sha256:…`: the lock recorded on the environment version.
    pub image_id: String,
    pub build_hash: String,
    pub tag: String,
    /// True when an existing image was reused without building.
    pub cached: bool,
    /// The generated Dockerfiles of the stages, one after the other (for the UI's "how was this built").
    pub dockerfile: String,
}

impl Docker {
    /// Builds (or reuses) the image for `spec`, sending build output to `log` line by line.
    pub async fn build_env_image(
        &self,
        spec: &EnvSpec,
        options: &BuildOptions,
        log: &mut (dyn FnMut(&str) + Send),
    ) -> Result<BuiltImage> {
        let errors = spec.validate_against(&self.host_limits().await?);
        if !errors.is_empty() {
            return Err(Error::InvalidSpec(errors));
        }
        let base_id = self
            .ensure_image(&spec.base_image, options.mirror.as_ref(), log)
            .await?;

        // What the base brings: its users, and whether it has a glibc loader for the runtime binary.
        let runtime_binary = spec.runtime.as_ref().map(|r| Path::new(&r.binary));
        let probe = probe::Probe::create(self, &base_id, options.instance.as_deref()).await?;
        let probed = async {
            let passwd = probe.read_file("/etc/passwd").await?;
            let group = probe.read_file("/etc/group").await?;
            let runtime = match runtime_binary {
                None => None,
                Some(binary) => {
                    // Ask the host's loader path first (without libc) to learn the interpreter's path.
                    let host = RuntimeFiles::collect(binary, true).await?;
                    let interpreter = host
                        .files
                        .iter()
                        .find(|(p, _)| !p.starts_with(runtime::PREFIX))
                        .map(|(p, _)| p.clone());
                    let base_has_loader = match &interpreter {
                        Some(path) => probe.exists(&format!("/{path}")).await?,
                        None => true, // static binary: nothing to ship
                    };
                    Some(if base_has_loader {
                        RuntimeFiles::collect(binary, false).await?
                    } else {
                        host
                    })
                }
            };
            Ok::<_, Error>((passwd, group, runtime))
        }
        .await;
        probe.remove().await?;
        let (passwd, group, runtime) = probed?;
        let passwd = users::merge_passwd(passwd.as_deref());
        let group = users::merge_group(group.as_deref());
        let runtime_digest = match &runtime {
            Some(files) => Some(files.digest().await?),
            None => None,
        };
        let runtime_layers = match &runtime {
            Some(files) => {
                files.layers(options.runtime_layer_bytes.unwrap_or(RUNTIME_LAYER_BYTES))?
            }
            None => Vec::new(),
        };

        let plan = dockerfile::Plan {
            from: &base_id,
            packages: spec.os_packages.iter().map(String::as_str).collect(),
            runtime_layers: runtime_layers.len(),
            env: &spec.env,
            working_dir: spec.working_dir.trim_end_matches('/').max("/"),
        };
        let mut stages = dockerfile::render(&plan);
        let build_hash = {
            let mut h = Sha256::new();
            let mut parts = vec![
                BUILD_RECIPE_VERSION.to_string(),
                base_id.clone(),
                passwd.clone(),
                group.clone(),
                runtime_digest.clone().unwrap_or_else(|| "-".into()),
            ];
            parts.extend(stages.iter().cloned());
            // Which files go in which layer (the digest covers their contents).
            parts.extend(runtime_layers.iter().map(|layer| {
                format!("{:?}", layer.files.iter().map(|f| &f.0).collect::<Vec<_>>())
            }));
            for part in &parts {
                h.update(part.as_bytes());
                h.update([0]);
            }
            hex::encode(h.finalize())
        };
        let tag = options
            .tag
            .clone()
            .unwrap_or_else(|| format!("paddock/env:{}", &build_hash[..16]));
        let image_labels = BTreeMap::from([
            (labels::BUILD_HASH, build_hash.clone()),
            (labels::IMAGE_KIND, "env".to_string()),
        ]);
        let last = stages.len() - 1;
        stages[last] = dockerfile::with_labels(&stages[last], &image_labels);
        let dockerfile = stages.join("\n");

        // One environment build at a time in this process. Concurrent first builds on the same base each
        // create their own copy of the shared first steps (nothing is cached yet); the classic builder
        // later picks any one of those copies as "the" cache entry, so a rebuild can miss the chain it
        // built before and produce a new image ID. Serialized, the second build hits the first's cache —
        // or, for the same spec, finds its image by build hash below.
        static BUILDING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        let _building = BUILDING.lock().await;
        if !options.force {
            if let Some(image_id) = self.find_image_by_build_hash(&build_hash).await? {
                log(&format!(
                    "Reusing image {image_id} (build hash {})",
                    &build_hash[..16]
                ));
                self.tag_image(&image_id, &tag).await?;
                return Ok(BuiltImage {
                    image_id,
                    build_hash,
                    tag,
                    cached: true,
                    dockerfile,
                });
            }
        }

        let layout = layout(&passwd, &group)
            .to_bytes()
            .map_err(|e| Error::host("writing the image layout", e))?;
        let mut previous: Option<String> = None;
        for (index, stage) in stages.iter().enumerate() {
            let mut ctx = Context::new();
            match &previous {
                None => {
                    ctx.data("Dockerfile", stage.clone(), 0o644).data(
                        "layout.tar",
                        layout.clone(),
                        0o644,
                    );
                }
                Some(image) => {
                    ctx.data("Dockerfile", dockerfile::from_previous(stage, image), 0o644);
                }
            }
            if let Some(files) = runtime_layers.get(index) {
                for (image_path, host) in &files.files {
                    let mode = if image_path.contains("/bin/") || image_path.contains("ld-linux") {
                        0o755
                    } else {
                        0o644
                    };
                    ctx.host_file(&format!("runtime/{image_path}"), host.clone(), mode);
                }
            }
            if stages.len() > 1 {
                log(&format!("Stage {} of {}", index + 1, stages.len()));
            }
            // Only the last stage is tagged; the earlier ones are its untagged parents, removed with it.
            let stage_tag = (index == last).then_some(tag.as_str());
            let built = match self
                .build_context(ctx.clone(), stage_tag, options.no_cache, log)
                .await
            {
                // A cached step's image was removed while we built on it (another environment's image and
                // its untagged parents deleted concurrently): the cache has moved on, so one retry suffices.
                Err(Error::BuildFailed { message, .. }) if message.starts_with("No such image") => {
                    log(&format!(
                        "{message}; a cached step was removed during the build, retrying once"
                    ));
                    self.build_context(ctx, stage_tag, options.no_cache, log)
                        .await
                }
                other => other,
            };
            match built {
                Ok(image_id) => previous = Some(image_id),
                Err(e) => {
                    // The stages built so far are untagged gigabytes (a full disk is a common reason to
                    // get here). `build_context` removed the failed stage's steps and the chain under
                    // them; when no step of it succeeded, the previous stage is still a leaf: remove it,
                    // and with it its untagged parents that nothing else uses.
                    if let Some(stage) = &previous {
                        let _ = self.remove_image(stage, false).await;
                    }
                    return Err(e);
                }
            }
        }
        let image_id = previous.expect("a plan has at least one stage");
        Ok(BuiltImage {
            image_id,
            build_hash,
            tag,
            cached: false,
            dockerfile,
        })
    }

    /// Streams a context (with a `Dockerfile` at its root) to the classic builder, tags the result (when a
    /// tag is given) and returns its ID. Output goes to `log`; a failure carries the last lines.
    pub async fn build_context(
        &self,
        ctx: Context,
        tag: Option<&str>,
        no_cache: bool,
        log: &mut (dyn FnMut(&str) + Send),
    ) -> Result<String> {
        let mut options = BuildImageOptionsBuilder::default()
            .dockerfile("Dockerfile")
            .rm(true)
            .forcerm(true)
            .nocache(no_cache);
        if let Some(tag) = tag {
            options = options.t(tag);
        }
        let options = options.build();
        let what = tag.unwrap_or("an untagged stage");
        let body = bollard::body_try_stream(ctx.into_stream());
        let mut stream = self.api().build_image(options, None, Some(body));
        let mut tail: VecDeque<String> = VecDeque::with_capacity(LOG_TAIL_LINES);
        let mut emit = |line: &str, tail: &mut VecDeque<String>| {
            if tail.len() == LOG_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line.to_string());
            log(line);
        };
        let mut image_id = None;
        // The image of the last step that succeeded (" ---> 1a2b3c4d5e6f"), to clean up after a failure.
        let mut last_step: Option<String> = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    for text in [info.stream.as_deref(), info.status.as_deref()]
                        .into_iter()
                        .flatten()
                    {
                        for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
                            if let Some(id) = line.strip_prefix(" ---> ").filter(|id| {
                                id.len() >= 12 && id.chars().all(|c| c.is_ascii_hexdigit())
                            }) {
                                last_step = Some(id.to_string());
                            }
                            emit(line, &mut tail);
                        }
                    }
                    if let Some(aux) = info.aux {
                        image_id = aux.id.or(image_id);
                    }
                }
                Err(e) => {
                    let message = match e {
                        bollard::errors::Error::DockerStreamError { error } => error,
                        bollard::errors::Error::DockerResponseServerError { message, .. } => {
                            message
                        }
                        other => match Error::docker("building an image", "image", what, other) {
                            unreachable @ Error::DockerUnreachable(_) => return Err(unreachable),
                            other => other.to_string(),
                        },
                    };
                    emit(&message, &mut tail);
                    // The classic builder keeps the images of the steps that succeeded as cache. Removing
                    // the last one takes its untagged parents that nothing else uses along (earlier stages
                    // of an environment build included); one that other images build on stays.
                    if let Some(step) = last_step {
                        let _ = self.remove_image(&step, false).await;
                    }
                    return Err(Error::BuildFailed {
                        message,
                        log_tail: tail.into(),
                    });
                }
            }
        }
        match (image_id, tag) {
            (Some(id), _) => Ok(id),
            // Older daemons may not send the aux message; the tag is authoritative then.
            (None, Some(tag)) => {
                self.image_info(tag)
                    .await
                    .map(|i| i.id)
                    .map_err(|e| Error::BuildFailed {
                        message: format!("the build finished without producing {tag}: {e}"),
                        log_tail: tail.into(),
                    })
            }
            (None, None) => Err(Error::BuildFailed {
                message: "the build finished without naming the image it produced".into(),
                log_tail: tail.into(),
            }),
        }
    }
}

/// The files every environment image gets, as a tar extracted by `ADD`: the merged users, the user's home
/// and the workspace mount point owned by uid/gid 1000 (a fresh volume mounted there inherits that owner).
/// Parent directories are listed explicitly so that none is created implicitly with the build time.
fn layout(passwd: &str, group: &str) -> Context {
    let (uid, gid) = (users::UID as u64, users::GID as u64);
    let mut ctx = Context::new();
    ctx.dir("etc", 0o755)
        .data("etc/passwd", passwd.to_string(), 0o644)
        .data("etc/group", group.to_string(), 0o644)
        .dir("home", 0o755)
        .dir("home/paddock", 0o755)
        .owner("home/paddock", uid, gid)
        .dir(WORKSPACE_DIR.trim_start_matches('/'), 0o755)
        .owner(WORKSPACE_DIR.trim_start_matches('/'), uid, gid);
    ctx
}
