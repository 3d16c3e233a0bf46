//! Environments against a real SQLite file and the real Docker daemon: the whole life of an environment
//! (spec → image → container with limits and a non-root user → exec → stop → delete), access rules, bad
//! specs that must create nothing, GPU preflight, and reconcile after a container is removed behind
//! Paddock's back. Each test gets its own database, hence its own instance label; a guard removes every
//! container and volume with that label even when the test fails. `PADDOCK_TEST_DOCKER=skip` skips them.

use contracts::ids::{EnvironmentId, WorkspaceId};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::engine::{Engine, EngineConfig};
use crate::testing::{actor, test_db};
use crate::{members, workspaces};
use status::{Environment, Reason};

struct Setup {
    _dir: tempfile::TempDir,
    db: SqlitePool,
    engine: Arc<Engine>,
    owner: Actor,
    workspace: WorkspaceId,
    _cleanup: Cleanup,
}

/// Removes every container, volume and network of one instance label when dropped (also on panic): a
/// network left behind holds one of the daemon's address ranges for good, and a shared daemon runs out.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let label = format!("label=paddock.instance={}", self.0);
        let script = format!(
            "docker ps -aq --filter {label} | xargs -r docker rm -f >/dev/null; \
             docker volume ls -q --filter {label} | xargs -r docker volume rm -f >/dev/null; \
             docker network ls -q --filter {label} | xargs -r docker network rm >/dev/null"
        );
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .status();
    }
}

async fn setup() -> Option<Setup> {
    let (dir, db) = test_db().await;
    let engine = Arc::new(
        Engine::start(
            &db,
            EngineConfig {
                volumes_dir: Some(dir.path().join("volumes")),
                ..EngineConfig::default()
            },
        )
        .await
        .expect("engine"),
    );
    if engine.docker().await.is_err() {
        if std::env::var("PADDOCK_TEST_DOCKER").as_deref() == Ok("skip") {
            return None;
        }
        panic!("environment tests need Docker: start it with scripts/docker.sh, or set PADDOCK_TEST_DOCKER=skip");
    }
    let owner = actor(&db, "owner").await;
    let workspace = workspaces::create(&db, &owner, "nlp").await.unwrap().id;
    let cleanup = Cleanup(engine.instance.clone());
    Some(Setup {
        _dir: dir,
        db,
        engine,
        owner,
        workspace,
        _cleanup: cleanup,
    })
}

fn small(name: &str) -> EnvironmentSpec {
    EnvironmentSpec {
        name: name.into(),
        cpus: 0.5,
        memory: "64m".into(),
        shm_size: "16m".into(),
        env: [("GREETING".to_string(), "你好".to_string())].into(),
        ..Default::default()
    }
}

async fn wait_built(s: &Setup, env_id: EnvironmentId) -> EnvironmentDetail {
    for _ in 0..600 {
        let detail = s.get(env_id).await;
        if !detail.summary.build_status.is_active() {
            return detail;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the build did not finish in 2 minutes");
}

async fn containers_of(s: &Setup) -> Vec<String> {
    let filter = containers::reconcile::ListFilter {
        instance: Some(s.engine.instance.clone()),
        ..Default::default()
    };
    let docker = s.engine.docker().await.unwrap();
    docker
        .list_managed(&filter)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect()
}

impl Setup {
    /// Creates environment `name` from the small spec as the owner; its id.
    async fn create(&self, name: &str) -> EnvironmentId {
        create(
            &self.db,
            &self.engine,
            &self.owner,
            self.workspace,
            small(name),
        )
        .await
        .unwrap()
        .summary
        .id
    }

    /// As [`Setup::create`], once its image is built.
    async fn built(&self, name: &str) -> EnvironmentId {
        let env_id = self.create(name).await;
        wait_built(self, env_id).await;
        env_id
    }

    async fn get(&self, env_id: EnvironmentId) -> EnvironmentDetail {
        get(&self.db, &self.owner, self.workspace, env_id)
            .await
            .unwrap()
    }

    async fn up(&self, env_id: EnvironmentId) -> EnvironmentDetail {
        lifecycle::up(&self.db, &self.engine, &self.owner, self.workspace, env_id)
            .await
            .unwrap()
    }

    /// Runs `argv` in the environment as the owner.
    async fn exec(&self, env_id: EnvironmentId, argv: &[&str]) -> ExecResult {
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        lifecycle::exec(
            &self.db,
            &self.engine,
            &self.owner,
            self.workspace,
            env_id,
            &argv,
        )
        .await
        .unwrap()
    }

    /// Writes behind the domain's back (`statement` binds the environment's id), as a crash, another
    /// request or an older database would have left the row.
    async fn tamper(&self, statement: &str, env_id: EnvironmentId) {
        sqlx::query(statement)
            .bind(env_id)
            .execute(&self.db)
            .await
            .unwrap();
    }

    async fn version_id(&self, env_id: EnvironmentId, version: i64) -> i64 {
        version_for_log(&self.db, &self.owner, self.workspace, env_id, version)
            .await
            .unwrap()
    }

    /// The environment's status and the reason of its last move, as stored.
    async fn reason(&self, env_id: EnvironmentId) -> (EnvStatus, Option<Reason>) {
        let mut conn = self.db.acquire().await.unwrap();
        crate::transitions::current::<Environment>(&mut conn, env_id)
            .await
            .unwrap()
    }

    /// The environment moved to `status` for `reason`, and its page shows an `event` of that kind.
    async fn assert_moved(
        &self,
        env_id: EnvironmentId,
        status: EnvStatus,
        reason: Reason,
        event: &str,
    ) {
        let detail = self.get(env_id).await;
        assert_eq!(detail.summary.status, status);
        assert!(detail.events.iter().any(|e| e.kind == event), "{event}");
        assert_eq!(self.reason(env_id).await, (status, Some(reason)));
    }

    async fn count(&self, query: &str) -> i64 {
        sqlx::query_scalar(query).fetch_one(&self.db).await.unwrap()
    }

    async fn environments(&self) -> Vec<EnvironmentSummary> {
        list(&self.db, &self.owner, self.workspace).await.unwrap()
    }
}

#[tokio::test]
async fn an_environment_is_built_provisioned_used_and_removed() {
    let Some(s) = setup().await else { return };
    let env_id = s.create("cpu-small").await;
    let built = wait_built(&s, env_id).await;
    assert_eq!(
        built.summary.build_status,
        BuildStatus::Built,
        "{:?}",
        built.versions[0].build_error
    );
    let image = built.summary.image_id.clone().expect("the lock");
    assert!(image.starts_with("sha256:"));
    let (log, _) = builds::log_since(&s.db, s.version_id(env_id, 1).await, 0)
        .await
        .unwrap();
    assert!(!log.is_empty(), "the build log is stored");

    let up = s.up(env_id).await;
    assert_eq!(up.summary.status, EnvStatus::Running);
    let name = up.container_name.clone().unwrap();
    let details = s
        .engine
        .docker()
        .await
        .unwrap()
        .inspect(&name)
        .await
        .unwrap();
    let host = details.raw.host_config.clone().unwrap();
    assert_eq!(host.memory, Some(64 << 20));
    assert_eq!(host.nano_cpus, Some(500_000_000));
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
    let restarted = lifecycle::restart(&s.db, &s.engine, &s.owner, s.workspace, env_id)
        .await
        .unwrap();
    assert_eq!(restarted.summary.status, EnvStatus::Running);
    assert!(restarted.events.iter().any(|e| e.kind == "restart"));
    assert_eq!(
        s.reason(env_id).await,
        (EnvStatus::Running, Some(Reason::Restarted))
    );

    let out = s.exec(env_id, &["id", "-u"]).await;
    assert_eq!(
        (out.exit_code, out.stdout.trim()),
        (0, "1000"),
        "runs as the non-root user"
    );
    let out = s
        .exec(
            env_id,
            &[
                "sh",
                "-c",
                "echo $GREETING > /workspace/hello && cat /workspace/hello",
            ],
        )
        .await;
    assert_eq!(
        out.stdout.trim(),
        "你好",
        "spec variables are set and /workspace is writable"
    );
    let host_file = s
        ._dir
        .path()
        .join(format!("volumes/w{}/workspace/hello", s.workspace));
    assert_eq!(
        std::fs::read_to_string(&host_file).unwrap().trim(),
        "你好",
        "the workspace volume is a directory Paddock can read"
    );
    let stats = lifecycle::stats(&s.db, &s.engine, &s.owner, s.workspace, env_id)
        .await
        .unwrap();
    assert_eq!(stats.memory_limit_bytes, 64 << 20);

    // Same spec again: no new version, same image.
    let same = update(
        &s.db,
        &s.engine,
        &s.owner,
        s.workspace,
        env_id,
        small("cpu-small"),
    )
    .await
    .unwrap();
    assert_eq!(same.versions.len(), 1);
    // A new limit: version 2, built from the cache to the same image (the build hash leaves limits out).
    let mut bigger = small("cpu-small");
    bigger.memory = "96m".into();
    update(&s.db, &s.engine, &s.owner, s.workspace, env_id, bigger)
        .await
        .unwrap();
    let v2 = wait_built(&s, env_id).await;
    assert_eq!(v2.summary.current_version, 2);
    assert_eq!(
        v2.summary.image_id.as_deref(),
        Some(image.as_str()),
        "same image spec ⇒ same image ID"
    );

    let down = lifecycle::down(&s.db, &s.engine, &s.owner, s.workspace, env_id)
        .await
        .unwrap();
    assert_eq!(down.summary.status, EnvStatus::Stopped);
    assert!(
        containers_of(&s).await.is_empty(),
        "down removes the container"
    );
    // The workspace volume outlives the container.
    s.up(env_id).await;
    let out = s.exec(env_id, &["cat", "/workspace/hello"]).await;
    assert_eq!(out.stdout.trim(), "你好");

    delete(&s.db, &s.engine, &s.owner, s.workspace, env_id)
        .await
        .unwrap();
    assert!(
        containers_of(&s).await.is_empty(),
        "delete removes the container"
    );
    assert!(s.environments().await.is_empty());
    let actions: Vec<String> =
        sqlx::query_scalar("SELECT action FROM audit_log WHERE workspace_id = ? ORDER BY id")
            .bind(s.workspace)
            .fetch_all(&s.db)
            .await
            .unwrap();
    for expected in [
        "environment.create",
        "environment.up",
        "environment.exec",
        "environment.update",
        "environment.down",
        "environment.delete",
    ] {
        assert!(
            actions.iter().any(|a| a == expected),
            "{expected} is audited: {actions:?}"
        );
    }
}

#[tokio::test]
async fn viewers_read_but_cannot_change_and_outsiders_see_nothing() {
    let Some(s) = setup().await else { return };
    let env_id = s.create("shared").await;
    let viewer = actor(&s.db, "viewer").await;
    let outsider = actor(&s.db, "outsider").await;
    members::add(&s.db, &s.owner, s.workspace, "viewer", "viewer")
        .await
        .unwrap();

    assert_eq!(list(&s.db, &viewer, s.workspace).await.unwrap().len(), 1);
    assert!(
        !get(&s.db, &viewer, s.workspace, env_id)
            .await
            .unwrap()
            .can_edit
    );
    let e = &s.engine;
    let (db, ws) = (&s.db, s.workspace);
    let viewer_tries = [
        (
            "create",
            create(db, e, &viewer, ws, small("mine")).await.err(),
        ),
        (
            "update",
            update(db, e, &viewer, ws, env_id, small("renamed"))
                .await
                .err(),
        ),
        ("up", lifecycle::up(db, e, &viewer, ws, env_id).await.err()),
        (
            "down",
            lifecycle::down(db, e, &viewer, ws, env_id).await.err(),
        ),
        (
            "exec",
            lifecycle::exec(db, e, &viewer, ws, env_id, &["id".into()])
                .await
                .err(),
        ),
        (
            "terminal",
            lifecycle::terminal_container(db, &viewer, ws, env_id)
                .await
                .err(),
        ),
        ("delete", delete(db, e, &viewer, ws, env_id).await.err()),
    ];
    for (what, refused) in viewer_tries {
        assert_eq!(refused, Some(AppError::Forbidden), "a viewer's {what}");
    }

    let outsider_tries = [
        ("list", list(db, &outsider, ws).await.err()),
        ("get", get(db, &outsider, ws, env_id).await.err()),
        (
            "up",
            lifecycle::up(db, e, &outsider, ws, env_id).await.err(),
        ),
        (
            "terminal",
            lifecycle::terminal_container(db, &outsider, ws, env_id)
                .await
                .err(),
        ),
    ];
    for (what, refused) in outsider_tries {
        assert_eq!(refused, Some(AppError::NotFound), "an outsider's {what}");
    }
    // An environment id from another workspace is not found through this one.
    let other_ws = workspaces::create(db, &outsider, "other").await.unwrap().id;
    assert_eq!(
        get(db, &outsider, other_ws, env_id).await.unwrap_err(),
        AppError::NotFound
    );
    wait_built(&s, env_id).await;
}

#[tokio::test]
async fn bad_specs_are_refused_with_the_field_and_create_nothing() {
    let Some(s) = setup().await else { return };
    let cases: Vec<(EnvironmentSpec, &str, &str)> = vec![
        (
            EnvironmentSpec {
                memory: "lots".into(),
                ..small("a")
            },
            "memory",
            "spec_invalid",
        ),
        (
            EnvironmentSpec {
                gpus: GpuSpec::Count(99),
                ..small("b")
            },
            "gpus",
            "preflight_failed",
        ),
        (
            EnvironmentSpec {
                workspace_volume: "../etc".into(),
                ..small("c")
            },
            "workspace_volume",
            "spec_invalid",
        ),
        (small("x; rm -rf /"), "name", "spec_invalid"),
        (small("$(reboot)"), "name", "spec_invalid"),
        (
            EnvironmentSpec {
                base_image: "nosuch/image:1".into(),
                ..small("d")
            },
            "base_image",
            "image_unavailable",
        ),
        (
            EnvironmentSpec {
                cpus: 10_000.0,
                ..small("e")
            },
            "cpus",
            "spec_invalid",
        ),
        (
            EnvironmentSpec {
                env: [("BAD NAME".to_string(), "x".to_string())].into(),
                ..small("f")
            },
            "env.BAD NAME",
            "spec_invalid",
        ),
    ];
    for (spec, field, code) in cases {
        let err = create(&s.db, &s.engine, &s.owner, s.workspace, spec.clone())
            .await
            .unwrap_err();
        assert_eq!(
            (err.field(), err.code().as_str()),
            (Some(field), code),
            "{spec:?}: {err}"
        );
    }
    assert!(s.environments().await.is_empty(), "nothing was created");
    let audited = s
        .count("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'environment.%'")
        .await;
    assert_eq!(audited, 0);
    // A duplicate name is a conflict, also nothing half-written.
    s.create("dup").await;
    let err = create(&s.db, &s.engine, &s.owner, s.workspace, small("dup"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "environment_name_taken");
    let versions = s.count("SELECT COUNT(*) FROM environment_versions").await;
    assert_eq!(versions, 1);
    let env_id = s.environments().await[0].id;
    wait_built(&s, env_id).await;
}

#[tokio::test]
async fn a_cuda_image_newer_than_the_driver_is_refused_before_anything_is_created() {
    let Some(s) = setup().await else { return };
    // The host's GPUs as nvidia-smi would report them on a machine with an old driver (this machine has
    // none; the no-GPU path is the `gpus: 99` case above).
    let old_driver =
        "0, GPU-aaaa, 00000000:01:00.0, 470.82.01, 81920 MiB, Disabled, 8.0, NVIDIA A100-SXM4-80GB\n";
    s.engine
        .set_gpus(containers::preflight::gpus::parse(old_driver, true))
        .await;
    let spec = EnvironmentSpec {
        base_image: "nvidia/cuda:12.4.1-runtime-ubuntu22.04".into(),
        gpus: GpuSpec::Count(1),
        ..small("cuda")
    };
    let err = create(&s.db, &s.engine, &s.owner, s.workspace, spec)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "preflight_failed", "{err}");
    assert!(
        err.to_string().contains("470.82"),
        "names the driver: {err}"
    );
    assert!(s.environments().await.is_empty());
}

#[tokio::test]
async fn reconcile_notices_a_container_removed_behind_paddocks_back_and_removes_orphans() {
    let Some(s) = setup().await else { return };
    let env_id = s.built("victim").await;
    let name = s.up(env_id).await.container_name.unwrap();
    let docker = s.engine.docker().await.unwrap();
    docker.remove(&name).await.unwrap();

    let report = reconcile::reconcile(&s.db, &s.engine).await.unwrap();
    assert_eq!(report.missing, vec![env_id]);
    s.assert_moved(env_id, EnvStatus::Missing, Reason::Disappeared, "missing")
        .await;
    // Up again works from the missing state.
    let again = s.up(env_id).await;
    assert_eq!(again.summary.status, EnvStatus::Running);
    assert_eq!(
        s.reason(env_id).await,
        (EnvStatus::Running, Some(Reason::Provisioned))
    );

    // Its row deleted while the server was away: the container is an orphan and is removed.
    s.tamper("DELETE FROM environments WHERE id = ?", env_id)
        .await;
    let report = reconcile::reconcile(&s.db, &s.engine).await.unwrap();
    assert_eq!(report.removed, vec![name]);
    assert!(containers_of(&s).await.is_empty());
}

#[tokio::test]
async fn idle_environments_are_stopped() {
    let Some(s) = setup().await else { return };
    let env_id = s.built("sleepy").await;
    s.up(env_id).await;
    assert!(
        reconcile::stop_idle(&s.db, &s.engine, Duration::from_secs(3600))
            .await
            .unwrap()
            .is_empty()
    );
    s.tamper(
        "UPDATE environments SET last_active_at = '2000-01-01T00:00:00Z' WHERE id = ?",
        env_id,
    )
    .await;
    assert_eq!(
        reconcile::stop_idle(&s.db, &s.engine, Duration::from_secs(3600))
            .await
            .unwrap(),
        vec![env_id]
    );
    s.assert_moved(env_id, EnvStatus::Stopped, Reason::Idle, "idle_stop")
        .await;
    assert!(containers_of(&s).await.is_empty());
}

#[tokio::test]
async fn one_start_at_a_time() {
    let Some(s) = setup().await else { return };
    let env_id = s.built("twice").await;
    // Another `up` is provisioning it (its request holds the row in `provisioning`).
    s.tamper(
        "UPDATE environments SET status = 'provisioning' WHERE id = ?",
        env_id,
    )
    .await;
    let err = lifecycle::up(&s.db, &s.engine, &s.owner, s.workspace, env_id)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::EnvironmentStarting, "{err}");
    assert!(
        containers_of(&s).await.is_empty(),
        "the refused start made no container"
    );
    let leases = s.count("SELECT COUNT(*) FROM gpu_leases").await;
    assert_eq!(leases, 0, "nor kept a GPU lease");
}

/// The row of an environment whose container runs says it has none.
const LOST_TRACK: &str =
    "UPDATE environments SET status = 'stopped', container_name = NULL WHERE id = ?";

#[tokio::test]
async fn the_adopt_policy_takes_back_a_container_its_environment_lost_track_of() {
    let Some(s) = setup().await else { return };
    let env_id = s.built("restored").await;
    let name = s.up(env_id).await.container_name.unwrap();
    // As after restoring an older database: the row says stopped, the container runs.
    s.tamper(LOST_TRACK, env_id).await;
    let adopting = Engine::start(
        &s.db,
        EngineConfig {
            orphans: crate::engine::OrphanPolicy::Adopt,
            ..EngineConfig::default()
        },
    )
    .await
    .unwrap();
    let report = reconcile::reconcile(&s.db, &adopting).await.unwrap();
    assert_eq!(report.adopted, vec![name.clone()]);
    let detail = s.get(env_id).await;
    assert_eq!(
        (detail.summary.status, detail.container_name.as_deref()),
        (EnvStatus::Running, Some(name.as_str()))
    );
    assert!(detail.events.iter().any(|e| e.kind == "adopted"));
    // Under the default policy the same situation removes the container instead.
    s.tamper(LOST_TRACK, env_id).await;
    assert_eq!(
        reconcile::reconcile(&s.db, &s.engine)
            .await
            .unwrap()
            .removed,
        vec![name]
    );
}
