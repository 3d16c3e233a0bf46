//! The command line: `--help` everywhere, `version`, `migrate`, and the headless admin commands whose
//! accounts then sign in over HTTP.

use std::io::Write;
use std::process::{Command, Stdio};

use reqwest::StatusCode;
use serde_json::json;

use crate::common::Server;

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
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("paddock {}", env!("CARGO_PKG_VERSION"))
    );

    let dir = tempfile::tempdir().unwrap();
    let out = paddock()
        .arg("migrate")
        .env("PADDOCK_DATA_DIR", dir.path().join("nested/data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("nested/data/paddock.db").exists());

    let out = paddock().arg("frobnicate").output().unwrap();
    assert!(!out.status.success());
}

#[tokio::test]
async fn admin_create_user_and_reset_password() {
    let server = Server::start();
    let data_dir = server.dir.path().join("data");

    let mut child = paddock()
        .args([
            "admin",
            "create-user",
            "--username",
            "Ops",
            "--password-stdin",
            "--admin",
        ])
        .arg("--data-dir")
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("created user ops"));

    let out = paddock()
        .args([
            "admin",
            "create-user",
            "--username",
            "ops",
            "--password",
            "another password",
        ])
        .arg("--data-dir")
        .arg(&data_dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("username_taken"));
    let out = paddock()
        .args([
            "admin",
            "create-user",
            "--username",
            "shorty",
            "--password",
            "short",
        ])
        .arg("--data-dir")
        .arg(&data_dir)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("password"),
        "names the field"
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 1);

    let signin = |password: &'static str| {
        server
            .client()
            .post(server.url("/api/v1/auth/signin"))
            .json(&json!({ "username": "ops", "password": password }))
            .send()
    };
    let session = server.client();
    let res = session
        .post(server.url("/api/v1/auth/signin"))
        .json(&json!({ "username": "ops", "password": "initial password" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<serde_json::Value>().await.unwrap()["is_admin"],
        true
    );

    let out = paddock()
        .args([
            "admin",
            "reset-password",
            "--username",
            "ops",
            "--password",
            "brand new password",
        ])
        .arg("--data-dir")
        .arg(&data_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        signin("initial password").await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        signin("brand new password").await.unwrap().status(),
        StatusCode::OK
    );
    // The session opened before the reset is over.
    assert_eq!(
        session
            .get(server.url("/api/v1/me"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
}
