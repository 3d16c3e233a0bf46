//! The command line: `--help` everywhere, `version`, `migrate`, and the headless admin commands whose
//! accounts then sign in over HTTP.

use std::io::Write;
use std::process::{Command, Stdio};

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{assert_success, Server};

fn paddock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_paddock"))
}

#[test]
fn help_version_and_migrate() {
    let cases: [&[&str]; 7] = [
        &["--help"],
        &["serve", "--help"],
        &["migrate", "--help"],
        &["admin", "--help"],
        &["admin", "create-user", "--help"],
        &["admin", "reset-password", "--help"],
        &["version", "--help"],
    ];
    for args in cases {
        let out = paddock().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage:"),
            "{args:?}"
        );
    }
    let out = paddock().arg("serve").arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--bind",
        "PADDOCK_BIND",
        "--data-dir",
        "PADDOCK_DATA_DIR",
        "--database-url",
        "PADDOCK_DATABASE_URL",
        "--site-root",
    ] {
        assert!(help.contains(flag), "serve --help lacks {flag}");
    }
    let out = paddock().arg("version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(format!("paddock {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    // The wheel's libtorch is built for CUDA: its version and GPU range are read from the libraries,
    // loaded at run time before libtorch was asked about CUDA, so ATen's CUDA hooks are registered.
    let runtime = lines.next().unwrap_or_default();
    assert!(
        runtime.starts_with("runtime: CUDA ")
            && runtime.contains("or newer; GPUs of compute capability")
            && !runtime.contains("cannot use"),
        "{text}"
    );
    assert_eq!(
        lines.next(),
        Some(format!("CPU bfloat16: {}", hostcaps::cpu::bf16().name()).as_str()),
        "the CPU's bfloat16 tier, as the forms' advice reads it"
    );
    // …and not linked: a process that uses no GPU does not pay for it.
    let out = std::process::Command::new("ldd")
        .arg(env!("CARGO_BIN_EXE_paddock"))
        .output()
        .unwrap();
    let closure = String::from_utf8_lossy(&out.stdout);
    assert!(
        closure.contains("libtorch_cpu.so") && !closure.contains("libtorch_cuda.so"),
        "{closure}"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = paddock()
        .arg("migrate")
        .env("PADDOCK_DATA_DIR", dir.path().join("nested/data"))
        .output()
        .unwrap();
    assert_success(&out);
    assert!(dir.path().join("nested/data/paddock.db").exists());

    let out = paddock().arg("frobnicate").output().unwrap();
    assert!(!out.status.success());
}

#[tokio::test]
async fn admin_create_user_and_reset_password() {
    let server = Server::start();
    let data_dir = server.dir.path().join("data");
    // `paddock admin COMMAND --password PASSWORD` on the server's data directory.
    let admin = |command: &str, password: &str| {
        paddock()
            .arg("admin")
            .args(command.split_whitespace())
            .args(["--password", password, "--data-dir"])
            .arg(&data_dir)
            .output()
            .unwrap()
    };

    let mut child = paddock()
        .args(["admin", "create-user", "--username", "Ops"])
        .args(["--password-stdin", "--admin", "--data-dir"])
        .arg(&data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"initial password\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("created user ops"));

    let out = admin("create-user --username ops", "another password");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("username_taken"));
    let out = admin("create-user --username shorty", "short");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("password"),
        "names the field"
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 1);

    let signin = async |password: &str| {
        let ops = json!({ "username": "ops", "password": password });
        server.anonymous().post("/api/v1/auth/signin", ops).await.0
    };
    let session = server.anonymous();
    let (status, me) = session
        .post(
            "/api/v1/auth/signin",
            json!({ "username": "ops", "password": "initial password" }),
        )
        .await;
    assert_eq!(
        (status, me["is_admin"].as_bool()),
        (StatusCode::OK, Some(true))
    );

    assert_success(&admin(
        "reset-password --username ops",
        "brand new password",
    ));
    assert_eq!(signin("initial password").await, StatusCode::UNAUTHORIZED);
    assert_eq!(signin("brand new password").await, StatusCode::OK);
    // The session opened before the reset is over.
    assert_eq!(session.get("/api/v1/me").await.0, StatusCode::UNAUTHORIZED);
}
