//! The interactive terminal path against the real daemon: a TTY shell started through exec, keystrokes in,
//! screen output out, a resize the shell actually sees, and the shell's exit code — what the app's WebSocket
//! terminal bridges to the browser.

mod common;

use std::time::Duration;

use common::Guard;
use containers::Error;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

/// Upper bound for output that should come within milliseconds; only a hang reaches it.
const OUTPUT_TIMEOUT: Duration = Duration::from_secs(60);

async fn read_until(
    output: &mut (impl futures_util::Stream<Item = containers::Result<bytes::Bytes>> + Unpin),
    want: &str,
) -> String {
    let mut seen = String::new();
    tokio::time::timeout(OUTPUT_TIMEOUT, async {
        while !seen.contains(want) {
            match output.next().await {
                Some(chunk) => {
                    seen.push_str(&String::from_utf8_lossy(&chunk.expect("terminal output")))
                }
                None => panic!("terminal closed before {want:?}; saw {seen:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {want:?} in terminal output; saw {seen:?}"));
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn tty_session_with_resize_and_exit_code() {
    let Some((g, request)) = Guard::provisioned("tty").await else {
        return;
    };

    let mut term = g
        .docker
        .open_terminal(&request.name, None, 24, 80)
        .await
        .unwrap();
    term.input.write_all(b"stty size; id -un\n").await.unwrap();
    let seen = read_until(&mut term.output, "paddock\r\n").await;
    assert!(seen.contains("24 80\r\n"), "{seen:?}");

    term.control.resize(30, 100).await.unwrap();
    term.input.write_all(b"stty size\n").await.unwrap();
    read_until(&mut term.output, "30 100\r\n").await;
    assert_eq!(
        term.control.exit_code().await.unwrap(),
        None,
        "the shell is still running"
    );

    term.input.write_all(b"exit 3\n").await.unwrap();
    tokio::time::timeout(OUTPUT_TIMEOUT, async {
        while term.output.next().await.is_some() {}
    })
    .await
    .expect("terminal closes");
    let mut code = None;
    for _ in 0..250 {
        code = term.control.exit_code().await.unwrap();
        if code.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(code, Some(3));
    g.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_in_a_stopped_container_is_a_conflict() {
    let Some((g, request)) = Guard::provisioned("stopped").await else {
        return;
    };
    g.docker.stop(&request.name, 10).await.unwrap();
    let err = g.docker.exec(&request.name, &["true"]).await.unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    let err = g
        .docker
        .exec(&g.name("never-created"), &["true"])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    g.finish().await;
}
