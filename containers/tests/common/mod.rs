//! Shared set-up for the Docker integration tests: connecting to the real daemon (failing loudly when it is
//! missing, unless `PADDOCK_TEST_DOCKER=skip`), a random name prefix per test, and a guard that removes
//! everything the test created — containers, volumes and networks by the prefix's instance label, images by ID — even
//! when the test panics, plus a final check that nothing labelled with the prefix remains.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use bollard::models::{ContainerSummary, Network, Volume};
use bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
};
use containers::lifecycle::{Limits, ProvisionRequest};
use containers::{labels, Docker, EnvSpec};
use rand::Rng;

/// Connects to the daemon. Returns None (and says so) only when `PADDOCK_TEST_DOCKER=skip`; otherwise an
/// unreachable daemon fails the test, so a machine without Docker never reports a green run by accident.
pub async fn docker() -> Option<Docker> {
    match Docker::connect().await {
        Ok(docker) => Some(docker),
        Err(e) if std::env::var("PADDOCK_TEST_DOCKER").as_deref() == Ok("skip") => {
            // Straight to the stderr handle: the test harness captures eprintln! of passing tests.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPING Docker integration test: {e} (PADDOCK_TEST_DOCKER=skip)");
            None
        }
        Err(e) => panic!(
            "Docker integration tests need a daemon: {e}. Start one with scripts/docker.sh, or set PADDOCK_TEST_DOCKER=skip to skip these tests."
        ),
    }
}

/// Everything one test creates is labelled with (or named after) its random prefix.
pub struct Guard {
    pub docker: Docker,
    pub prefix: String,
    images: Mutex<Vec<String>>,
}

impl Guard {
    pub fn new(docker: Docker) -> Self {
        let prefix = format!("t{:08x}", rand::thread_rng().gen::<u32>());
        Guard {
            docker,
            prefix,
            images: Mutex::new(Vec::new()),
        }
    }

    /// A guard on the daemon, or `None` when Docker tests are skipped (see [`docker`]).
    pub async fn start() -> Option<Self> {
        docker().await.map(Guard::new)
    }

    /// A guard and this test's env image ([`env_image`]): where every container test starts.
    pub async fn with_image() -> Option<(Self, String)> {
        let g = Guard::start().await?;
        let image = env_image(&g).await;
        Some((g, image))
    }

    /// A guard and a request (see [`Guard::request`]) for this test's env image, not yet provisioned, so a
    /// test can still subscribe to events or provision it itself and check the outcome.
    pub async fn with_request(part: &str) -> Option<(Self, ProvisionRequest)> {
        let (g, image) = Guard::with_image().await?;
        let request = g.request(part, &image);
        Some((g, request))
    }

    /// As [`Guard::with_request`], with the container already provisioned: for tests about what happens
    /// inside or to a container, not about provisioning it.
    pub async fn provisioned(part: &str) -> Option<(Self, ProvisionRequest)> {
        let (g, request) = Guard::with_request(part).await?;
        g.docker.provision(&request).await.unwrap();
        Some((g, request))
    }

    /// Removes this image (tag or ID) at the end.
    pub fn image(&self, reference: &str) {
        self.images.lock().unwrap().push(reference.to_string());
    }

    pub fn name(&self, part: &str) -> String {
        labels::container_name(&self.prefix, &["env", part])
    }

    pub fn volume(&self, part: &str) -> String {
        labels::volume_name(&self.prefix, part)
    }

    /// A provision request for `image` with small limits, labelled with this test's prefix.
    pub fn request(&self, part: &str, image: &str) -> ProvisionRequest {
        ProvisionRequest {
            network: None,
            name: self.name(part),
            image: image.to_string(),
            workspace: "ws-test".into(),
            environment: part.into(),
            instance: self.prefix.clone(),
            extra_labels: BTreeMap::from([("paddock.test".to_string(), "true".to_string())]),
            limits: Limits {
                nano_cpus: 500_000_000,
                memory_bytes: 64 << 20,
                shm_bytes: 16 << 20,
                pids: 64,
            },
            gpu_device_ids: vec![],
            volume: self.volume("data"),
            volume_dir: None,
            store_dir: None,
            cmd: None,
            env: vec![],
        }
    }

    /// A valid spec on the busybox base, unique to this test (its env carries the prefix) so that tests
    /// running in parallel never share, and so never delete, each other's images.
    pub fn spec(&self) -> EnvSpec {
        EnvSpec::from_json(&format!(
            r#"{{"name":"test {p}","base_image":"paddock/base:busybox","cpus":0.5,"memory":"64m","shm_size":"16m",
                "env":{{"PADDOCK_TEST":"{p}"}},"workspace_volume":"data"}}"#,
            p = self.prefix
        ))
        .unwrap()
    }

    /// Cleans up now and asserts that nothing labelled with the prefix is left.
    pub async fn finish(self) {
        let images = self.images.lock().unwrap().clone();
        cleanup(&self.docker, &self.prefix, &images).await;
        let leftovers = leftovers(&self.docker, &self.prefix).await;
        assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
        self.images.lock().unwrap().clear();
    }
}

impl Drop for Guard {
    /// Runs on panic too: cleanup happens on a fresh runtime in its own thread (Drop cannot await).
    fn drop(&mut self) {
        let images = self.images.lock().map(|i| i.clone()).unwrap_or_default();
        let prefix = self.prefix.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(docker) = Docker::connect().await {
                    cleanup(&docker, &prefix, &images).await;
                }
            });
        })
        .join();
    }
}

/// What one test left on the daemon, found by its prefix's instance label. Listing errors are returned, not
/// swallowed: cleanup tolerates a failing daemon, the leftover check must not.
struct Labelled<'a> {
    docker: &'a Docker,
    filters: HashMap<&'static str, Vec<String>>,
}

impl<'a> Labelled<'a> {
    fn new(docker: &'a Docker, prefix: &str) -> Self {
        let filters = HashMap::from([("label", vec![format!("{}={prefix}", labels::INSTANCE)])]);
        Labelled { docker, filters }
    }

    /// Stopped containers count too: they still hold their name and volume.
    async fn containers(&self) -> Result<Vec<ContainerSummary>, bollard::errors::Error> {
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&self.filters)
            .build();
        self.docker.api().list_containers(Some(options)).await
    }

    /// A network left behind holds one of the daemon's address ranges for good.
    async fn networks(&self) -> Result<Vec<Network>, bollard::errors::Error> {
        let options = ListNetworksOptionsBuilder::default()
            .filters(&self.filters)
            .build();
        self.docker.api().list_networks(Some(options)).await
    }

    async fn volumes(&self) -> Result<Vec<Volume>, bollard::errors::Error> {
        let options = ListVolumesOptionsBuilder::default()
            .filters(&self.filters)
            .build();
        let list = self.docker.api().list_volumes(Some(options)).await?;
        Ok(list.volumes.unwrap_or_default())
    }
}

async fn cleanup(docker: &Docker, prefix: &str, images: &[String]) {
    let labelled = Labelled::new(docker, prefix);
    for c in labelled.containers().await.unwrap_or_default() {
        let _ = docker.remove(c.id.as_deref().unwrap_or_default()).await;
    }
    if let Ok(volumes) = labelled.volumes().await {
        for v in volumes {
            let _ = docker.remove_volume(&v.name).await;
        }
    }
    for n in labelled.networks().await.unwrap_or_default() {
        let _ = docker
            .api()
            .remove_network(n.id.as_deref().unwrap_or_default())
            .await;
    }
    for image in images.iter().rev() {
        // Tags are untagged; IDs are removed (force: also when a test tag still points at them).
        let _ = docker
            .remove_image(image, image.starts_with("sha256:"))
            .await;
    }
}

async fn leftovers(docker: &Docker, prefix: &str) -> Vec<String> {
    let labelled = Labelled::new(docker, prefix);
    let mut left = Vec::new();
    for c in labelled.containers().await.unwrap() {
        left.push(format!("container {:?}", c.names));
    }
    for v in labelled.volumes().await.unwrap() {
        left.push(format!("volume {}", v.name));
    }
    for n in labelled.networks().await.unwrap() {
        left.push(format!("network {:?}", n.name));
    }
    let images = docker
        .api()
        .list_images(None::<bollard::query_parameters::ListImagesOptions>)
        .await
        .unwrap();
    for image in images {
        if image.repo_tags.iter().any(|t| t.contains(prefix)) {
            left.push(format!("image {:?}", image.repo_tags));
        }
    }
    left
}

/// Collects build/pull log lines.
pub fn log_to(lines: &Mutex<Vec<String>>) -> impl FnMut(&str) + Send + '_ {
    move |line: &str| lines.lock().unwrap().push(line.to_string())
}

/// Ensures the shared busybox base, builds this test's env image (tagged with the prefix) and registers
/// it for removal. Returns the image ID.
pub async fn env_image(g: &Guard) -> String {
    let lines = Mutex::new(Vec::new());
    g.docker
        .ensure_busybox_base(&mut log_to(&lines))
        .await
        .expect("busybox base");
    let tag = format!("paddock-test/{}:env", g.prefix);
    g.image(&tag);
    let options = containers::build::BuildOptions {
        tag: Some(tag),
        instance: Some(g.prefix.clone()),
        ..Default::default()
    };
    let built = g
        .docker
        .build_env_image(&g.spec(), &options, &mut log_to(&lines))
        .await
        .expect("env image");
    g.image(&built.image_id);
    built.image_id
}
