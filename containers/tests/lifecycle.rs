//! Containers against the real daemon: provisioning with limits and hardening (checked through inspect and
//! from inside), the workspace volume outliving its container, idempotent provisioning, stop/start/restart/
//! remove, exit codes and OOM kills reported as such (by inspect and by the event stream), and the reconcile
//! listing noticing a container removed behind Paddock's back.

mod common;

use std::time::Duration;

use common::Guard;
use containers::labels;
use containers::lifecycle::{ContainerEvent, ContainerStatus};
use containers::reconcile::ListFilter;
use futures_util::{Stream, StreamExt};

/// Upper bound for waiting on an event that should come within milliseconds; only a hang reaches it.
const EVENT_TIMEOUT: Duration = Duration::from_secs(60);

async fn next_event_for(
    events: &mut (impl Stream<Item = containers::Result<ContainerEvent>> + Unpin),
    id: &str,
    want: impl Fn(&ContainerStatus) -> bool,
) -> ContainerEvent {
    tokio::time::timeout(EVENT_TIMEOUT, async {
        loop {
            let event = events
                .next()
                .await
                .expect("event stream ended")
                .expect("event");
            if event.id == id && want(&event.status) {
                return event;
            }
        }
    })
    .await
    .expect("event did not arrive")
}

/// The test's container events from now on.
fn events_from_now(
    g: &Guard,
) -> std::pin::Pin<Box<impl Stream<Item = containers::Result<ContainerEvent>>>> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    Box::pin(g.docker.container_events(Some(&g.prefix), Some(now)))
}

async fn wait_exit(g: &Guard, name: &str) -> ContainerStatus {
    let mut wait = g.docker.api().wait_container(
        name,
        None::<bollard::query_parameters::WaitContainerOptions>,
    );
    // Non-zero exits come back as an error item carrying the code; either way the container has stopped.
    let _ = tokio::time::timeout(EVENT_TIMEOUT, wait.next())
        .await
        .expect("container did not exit");
    g.docker.status(name).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn provisions_hardened_limited_containers_with_a_persistent_workspace() {
    let Some((g, request)) = Guard::with_request("main").await else {
        return;
    };

    let provisioned = g.docker.provision(&request).await.unwrap();
    assert!(provisioned.created);
    assert_eq!(provisioned.status, ContainerStatus::Running);

    // Through inspect.
    let details = g.docker.inspect(&request.name).await.unwrap();
    let host = details.raw.host_config.clone().unwrap();
    let config = details.raw.config.clone().unwrap();
    assert_eq!(host.memory, Some(64 << 20));
    assert_eq!(host.memory_swap, Some(64 << 20));
    assert_eq!(host.nano_cpus, Some(500_000_000));
    assert_eq!(host.pids_limit, Some(64));
    assert_eq!(host.shm_size, Some(16 << 20));
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
    assert_eq!(
        host.security_opt,
        Some(vec!["no-new-privileges".to_string()])
    );
    assert_eq!(config.user.as_deref(), Some("1000:1000"));
    // Asked for no GPU, it sees none, whatever the image's own NVIDIA_VISIBLE_DEVICES and the host's
    // default runtime say (the daemon's view of the create request).
    assert!(
        config
            .env
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|e| e == "NVIDIA_VISIBLE_DEVICES=void"),
        "{:?}",
        config.env
    );
    assert!(host.device_requests.unwrap_or_default().is_empty());
    assert_eq!(details.labels[labels::MANAGED], "true");
    assert_eq!(details.labels[labels::INSTANCE], g.prefix);
    assert_eq!(details.labels[labels::WORKSPACE], "ws-test");
    assert_eq!(details.labels[labels::ENVIRONMENT], "main");
    let mounts = details.raw.mounts.clone().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].destination.as_deref(), Some("/workspace"));
    assert_eq!(mounts[0].name.as_deref(), Some(request.volume.as_str()));
    let volume = g
        .docker
        .api()
        .inspect_volume(&request.volume)
        .await
        .unwrap();
    assert_eq!(volume.labels[labels::MANAGED], "true");

    // From inside.
    let out = g.docker.exec(&request.name, &["id", "-u"]).await.unwrap();
    assert_eq!((out.stdout.as_str(), out.exit_code), ("1000\n", 0));
    let out = g.docker.exec(&request.name, &["id", "-un"]).await.unwrap();
    assert_eq!(out.stdout, "paddock\n");
    let out = g
        .docker
        .exec(
            &request.name,
            &["grep", "-E", "^(CapEff|NoNewPrivs)", "/proc/self/status"],
        )
        .await
        .unwrap();
    assert!(out.stdout.contains("CapEff:\t0000000000000000"), "{out:?}");
    assert!(out.stdout.contains("NoNewPrivs:\t1"), "{out:?}");
    let out = g.docker.exec(&request.name, &["pwd"]).await.unwrap();
    assert_eq!(out.stdout, "/workspace\n");
    let out = g
        .docker
        .exec(
            &request.name,
            &[
                "sh",
                "-c",
                "echo kept > /workspace/note && echo err >&2; exit 4",
            ],
        )
        .await
        .unwrap();
    assert_eq!((out.stderr.as_str(), out.exit_code), ("err\n", 4));

    // Stats are readable and show the limit.
    let stats = g.docker.stats(&request.name).await.unwrap();
    assert_eq!(stats.memory_limit_bytes, 64 << 20);
    assert!(
        stats.cpu_percent >= 0.0 && stats.memory_bytes > 0,
        "{stats:?}"
    );

    // Provisioning again is idempotent.
    let again = g.docker.provision(&request).await.unwrap();
    assert_eq!(
        (again.id.as_str(), again.created),
        (provisioned.id.as_str(), false)
    );

    // The workspace volume outlives the container.
    g.docker.remove(&request.name).await.unwrap();
    assert_eq!(
        g.docker.status(&request.name).await.unwrap(),
        ContainerStatus::Missing
    );
    let recreated = g.docker.provision(&request).await.unwrap();
    assert!(recreated.created);
    assert_ne!(recreated.id, provisioned.id);
    let out = g
        .docker
        .exec(&request.name, &["cat", "/workspace/note"])
        .await
        .unwrap();
    assert_eq!(out.stdout, "kept\n");
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_start_restart_remove_and_events() {
    let Some((g, request)) = Guard::with_request("cycle").await else {
        return;
    };
    let mut events = events_from_now(&g);

    let p = g.docker.provision(&request).await.unwrap();
    next_event_for(&mut events, &p.id, |s| *s == ContainerStatus::Running).await;

    g.docker.stop(&request.name, 10).await.unwrap();
    assert_eq!(
        g.docker.status(&request.name).await.unwrap(),
        ContainerStatus::Exited { code: 0 }
    );
    let event = next_event_for(&mut events, &p.id, |s| {
        matches!(s, ContainerStatus::Exited { .. })
    })
    .await;
    assert_eq!(event.status, ContainerStatus::Exited { code: 0 });
    assert_eq!(event.labels[labels::ENVIRONMENT], "cycle");
    g.docker
        .stop(&request.name, 10)
        .await
        .expect("stopping a stopped container is fine");

    g.docker.start(&request.name).await.unwrap();
    assert_eq!(
        g.docker.status(&request.name).await.unwrap(),
        ContainerStatus::Running
    );
    g.docker
        .start(&request.name)
        .await
        .expect("starting a running container is fine");
    g.docker.restart(&request.name, 10).await.unwrap();
    assert_eq!(
        g.docker.status(&request.name).await.unwrap(),
        ContainerStatus::Running
    );

    // Provisioning a stopped container starts it.
    g.docker.stop(&request.name, 10).await.unwrap();
    let again = g.docker.provision(&request).await.unwrap();
    assert_eq!(
        (again.created, again.status),
        (false, ContainerStatus::Running)
    );

    g.docker.remove(&request.name).await.unwrap();
    next_event_for(&mut events, &p.id, |s| *s == ContainerStatus::Missing).await;
    g.docker
        .remove(&request.name)
        .await
        .expect("removing a missing container is fine");
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_and_oom_kills_are_reported() {
    let Some((g, image)) = Guard::with_image().await else {
        return;
    };
    let mut events = events_from_now(&g);

    let mut exits = g.request("exit", &image);
    exits.cmd = Some(vec!["/bin/sh".into(), "-c".into(), "exit 7".into()]);
    let p = g.docker.provision(&exits).await.unwrap();
    assert_eq!(
        wait_exit(&g, &exits.name).await,
        ContainerStatus::Exited { code: 7 }
    );
    let event = next_event_for(&mut events, &p.id, |s| {
        matches!(s, ContainerStatus::Exited { .. })
    })
    .await;
    assert_eq!(event.status, ContainerStatus::Exited { code: 7 });

    // A shell doubling a string until it exceeds the 16 MiB limit (no swap: memory-swap = memory).
    let mut hog = g.request("oom", &image);
    hog.limits.memory_bytes = 16 << 20;
    hog.cmd = Some(vec![
        "/bin/sh".into(),
        "-c".into(),
        "x=0123456789abcdef; while :; do x=$x$x; done".into(),
    ]);
    let p = g.docker.provision(&hog).await.unwrap();
    assert_eq!(wait_exit(&g, &hog.name).await, ContainerStatus::OomKilled);
    next_event_for(&mut events, &p.id, |s| *s == ContainerStatus::OomKilled).await;
    // Docker's `OOMKilled` flag is sometimes left false under load; the event log still tells.
    assert_eq!(
        g.docker.sigkill_status(&p.id).await,
        ContainerStatus::OomKilled
    );

    // A SIGKILL sent through the API to a container with the same limit is not an OOM kill.
    let mut killed = g.request("killed", &image);
    killed.limits.memory_bytes = 16 << 20;
    let k = g.docker.provision(&killed).await.unwrap();
    g.docker.signal(&killed.name, "KILL").await.unwrap();
    assert_eq!(
        wait_exit(&g, &killed.name).await,
        ContainerStatus::Exited { code: 137 }
    );
    next_event_for(&mut events, &k.id, |s| {
        matches!(s, ContainerStatus::Exited { .. })
    })
    .await;
    assert_eq!(
        g.docker.sigkill_status(&k.id).await,
        ContainerStatus::Exited { code: 137 }
    );
    let listed = g
        .docker
        .list_managed(&ListFilter {
            instance: Some(g.prefix.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    let statuses: Vec<(String, ContainerStatus)> =
        listed.into_iter().map(|c| (c.name, c.status)).collect();
    assert_eq!(
        statuses,
        [
            (exits.name.clone(), ContainerStatus::Exited { code: 7 }),
            (killed.name.clone(), ContainerStatus::Exited { code: 137 }),
            (hog.name.clone(), ContainerStatus::OomKilled)
        ]
    );
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reconcile_listing_sees_a_container_removed_behind_our_back() {
    let Some((g, image)) = Guard::with_image().await else {
        return;
    };
    let a = g.docker.provision(&g.request("a", &image)).await.unwrap();
    let b = g.docker.provision(&g.request("b", &image)).await.unwrap();
    let filter = ListFilter {
        instance: Some(g.prefix.clone()),
        ..Default::default()
    };

    let listed = g.docker.list_managed(&filter).await.unwrap();
    let names: Vec<&str> = listed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, [a.name.as_str(), b.name.as_str()]);
    assert!(listed
        .iter()
        .all(|c| c.status == ContainerStatus::Running && c.labels[labels::INSTANCE] == g.prefix));

    // Someone runs `docker rm -f` on one of them.
    let options = bollard::query_parameters::RemoveContainerOptionsBuilder::default()
        .force(true)
        .build();
    g.docker
        .api()
        .remove_container(&a.id, Some(options))
        .await
        .unwrap();

    let listed = g.docker.list_managed(&filter).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, [b.id.as_str()]);
    let by_prefix = ListFilter {
        name_prefix: Some(g.name("b")),
        ..filter.clone()
    };
    assert_eq!(g.docker.list_managed(&by_prefix).await.unwrap().len(), 1);
    let other_instance = ListFilter {
        instance: Some(format!("{}-other", g.prefix)),
        ..Default::default()
    };
    assert!(g
        .docker
        .list_managed(&other_instance)
        .await
        .unwrap()
        .is_empty());
    g.finish().await;
}
