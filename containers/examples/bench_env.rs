//! `make bench-env`: how long a user waits for an environment. Provisions a container `BENCH_ENV_RUNS`
//! times (default 20) through [`Docker::provision`] — the app's path: validation, inspect-then-create, the
//! workspace volume, hardening, limits, labels, start — from a cached busybox environment image, and prints
//! min/p50/p95/max/mean of provision (create + start, until Docker reports it running), stop and remove,
//! with the image build time and the Docker server version.
//!
//! Everything it creates carries a random instance label (`bench-<hex>`), and is removed by that label at the
//! end, after an error, a panic, Ctrl-C or SIGTERM; the images stay, so that the next run measures a cached
//! image like a user's second start does.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use bollard::query_parameters::{ListContainersOptionsBuilder, ListVolumesOptionsBuilder};
use containers::lifecycle::{Limits, ProvisionRequest};
use containers::{labels, Docker, EnvSpec};
use rand::Rng;

/// Samples per operation unless `BENCH_ENV_RUNS` says otherwise (issue 4 asks for 20).
const DEFAULT_RUNS: usize = 20;
/// The image tag the bench builds under; kept between runs so that provisioning measures a cached image.
const IMAGE_TAG: &str = "paddock/bench:env";
/// Seconds `stop` allows before SIGKILL. The keep-alive command exits on SIGTERM at once, so a stop that
/// takes this long shows up in the figures as a regression, not as a hang.
const STOP_TIMEOUT_SECS: i32 = 10;
/// A small CPU-only spec on the local busybox base. Constant (no instance id in it), so its build hash
/// and therefore its image are the same from one run to the next.
const SPEC: &str = r#"{"name":"bench env","base_image":"paddock/base:busybox","cpus":1,"memory":"256m",
    "shm_size":"64m","env":{"PADDOCK_BENCH":"1"},"workspace_volume":"bench"}"#;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() {
    let runs = match std::env::var("BENCH_ENV_RUNS") {
        Err(_) => DEFAULT_RUNS,
        Ok(s) => match s.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => fail(&format!(
                "BENCH_ENV_RUNS: {s:?} is not a positive whole number"
            )),
        },
    };
    let docker = match Docker::connect().await {
        Ok(docker) => docker,
        Err(e) => fail(&format!("{e} (start it with scripts/docker.sh)")),
    };
    let instance = format!("bench-{:08x}", rand::thread_rng().gen::<u32>());

    // The bench runs as its own task so that a panic ends up here as a JoinError and cleanup still runs.
    let mut task = tokio::spawn(bench(docker.clone(), instance.clone(), runs));
    let outcome: Result<(), BoxError> = tokio::select! {
        joined = &mut task => match joined {
            Ok(result) => result,
            Err(e) => Err(format!("the bench panicked: {e}").into()),
        },
        signal = interrupted() => {
            task.abort();
            let _ = task.await;
            // A request cut off mid-flight (a create, a build's probe) may still complete in the daemon
            // after we hung up; give it a moment so that the sweep below sees what it made.
            tokio::time::sleep(Duration::from_secs(1)).await;
            Err(format!("interrupted by {signal}").into())
        }
    };
    let left = cleanup(&docker, &instance).await;
    if !left.is_empty() {
        eprintln!("bench-env: could not remove {}", left.join(", "));
    }
    if let Err(e) = outcome {
        fail(&e.to_string());
    }
}

fn fail(message: &str) -> ! {
    eprintln!("bench-env: {message}");
    std::process::exit(1);
}

/// Resolves on Ctrl-C or SIGTERM (what `make` and CI send), with the signal's name.
async fn interrupted() -> &'static str {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "Ctrl-C",
        _ = term.recv() => "SIGTERM",
    }
}

async fn bench(docker: Docker, instance: String, runs: usize) -> Result<(), BoxError> {
    let version = docker.api().version().await?;
    let host = docker.host_limits().await?;
    let mut quiet = |_: &str| {};

    let started = Instant::now();
    docker.ensure_busybox_base(&mut quiet).await?;
    let base_time = started.elapsed();

    let spec = EnvSpec::from_json(SPEC).map_err(|e| format!("bench spec: {e}"))?;
    let options = containers::build::BuildOptions {
        tag: Some(IMAGE_TAG.into()),
        instance: Some(instance.clone()),
        ..Default::default()
    };
    let started = Instant::now();
    let built = docker.build_env_image(&spec, &options, &mut quiet).await?;
    let build_time = started.elapsed();

    // Created before the timed runs, as a workspace's volume exists before its environments start; each
    // provision still checks for it (an inspect), as it does in the app.
    let volume = labels::volume_name(&instance, &spec.workspace_volume);
    docker
        .ensure_volume(&volume, None, "bench", &instance)
        .await?;
    let limits = Limits::from_resources(&spec.resources(&host)?);

    // A progress counter for people watching; nothing in logs, where `\r` does not overwrite.
    let progress = std::io::stderr().is_terminal();
    let mut provision = Vec::with_capacity(runs);
    let mut stop = Vec::with_capacity(runs);
    let mut remove = Vec::with_capacity(runs);
    for run in 0..runs {
        let request = ProvisionRequest {
            name: labels::container_name(&instance, &["env", "bench", &run.to_string()]),
            image: built.image_id.clone(),
            workspace: "bench".into(),
            environment: "bench".into(),
            instance: instance.clone(),
            extra_labels: Default::default(),
            limits,
            gpu_device_ids: vec![],
            volume: volume.clone(),
            volume_dir: None,
            store_dir: None,
            cmd: None,
            env: vec![],
            network: None,
        };
        let started = Instant::now();
        let provisioned = docker.provision(&request).await?;
        provision.push(started.elapsed());
        if !provisioned.created || !provisioned.status.is_running() {
            return Err(format!(
                "run {run}: {} is {:?} (created: {}), expected a new running container",
                provisioned.name, provisioned.status, provisioned.created
            )
            .into());
        }

        let started = Instant::now();
        docker.stop(&provisioned.id, STOP_TIMEOUT_SECS).await?;
        stop.push(started.elapsed());

        let started = Instant::now();
        docker.remove(&provisioned.id).await?;
        remove.push(started.elapsed());
        if progress {
            eprint!("\rbench-env: run {}/{runs}", run + 1);
        }
    }
    if progress {
        eprintln!();
    }

    println!(
        "Docker server {} (API {}), {} CPUs; instance {instance}",
        version.version.as_deref().unwrap_or("?"),
        version.api_version.as_deref().unwrap_or("?"),
        host.cpus,
    );
    println!(
        "base image paddock/base:busybox ensured in {:.0} ms",
        ms(base_time)
    );
    println!(
        "env image {IMAGE_TAG} ({}) {} in {:.0} ms",
        &built.image_id[..19.min(built.image_id.len())],
        if built.cached {
            "reused (cached)"
        } else {
            "built"
        },
        ms(build_time),
    );
    println!(
        "{:<26} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "operation (ms)", "runs", "min", "p50", "p95", "max", "mean"
    );
    for (name, samples) in [
        ("provision (create+start)", &mut provision),
        ("stop", &mut stop),
        ("remove (stopped)", &mut remove),
    ] {
        let s = Summary::of(samples);
        println!(
            "{name:<26} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            samples.len(),
            s.min,
            s.p50,
            s.p95,
            s.max,
            s.mean
        );
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Order statistics in milliseconds. Percentiles are nearest-rank (the smallest sample with at least p% of
/// the samples at or below it): with 20 runs p95 is the 19th fastest, an observed value, not interpolated.
struct Summary {
    min: f64,
    p50: f64,
    p95: f64,
    max: f64,
    mean: f64,
}

impl Summary {
    fn of(samples: &mut [Duration]) -> Self {
        samples.sort();
        let rank = |p: f64| {
            let k = (p / 100.0 * samples.len() as f64).ceil() as usize;
            ms(samples[k.clamp(1, samples.len()) - 1])
        };
        Summary {
            min: ms(samples[0]),
            p50: rank(50.0),
            p95: rank(95.0),
            max: ms(samples[samples.len() - 1]),
            mean: samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64,
        }
    }
}

/// Removes every container and volume labelled with `instance` (the probe container of a build included);
/// returns what could not be removed.
async fn cleanup(docker: &Docker, instance: &str) -> Vec<String> {
    let filters = HashMap::from([("label", vec![format!("{}={instance}", labels::INSTANCE)])]);
    let mut left = Vec::new();
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    match docker.api().list_containers(Some(options)).await {
        Ok(list) => {
            for c in list {
                let id = c.id.unwrap_or_default();
                if let Err(e) = docker.remove(&id).await {
                    left.push(format!("container {id}: {e}"));
                }
            }
        }
        Err(e) => left.push(format!("containers (listing failed: {e})")),
    }
    let options = ListVolumesOptionsBuilder::default()
        .filters(&filters)
        .build();
    match docker.api().list_volumes(Some(options)).await {
        Ok(list) => {
            for v in list.volumes.unwrap_or_default() {
                if let Err(e) = docker.remove_volume(&v.name).await {
                    left.push(format!("volume {}: {e}", v.name));
                }
            }
        }
        Err(e) => left.push(format!("volumes (listing failed: {e})")),
    }
    left
}
