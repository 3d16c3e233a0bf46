//! Secret environment variables: API keys, database passwords, a Hugging Face token. They are kept
//! apart from the spec (column `environments.secret_env_json`), so they reach neither the image (its
//! layers are readable by anyone who can pull it) nor a version's stored spec, and they change without
//! a rebuild. Values are write-only: every answer carries the names with empty values, and an empty
//! value sent back means "keep what is stored" — so an edit form round-trips without ever holding one.
//! The container gets them at start (`docker inspect` on the host still shows them: the Docker engine
//! is fully trusted, see SECURITY.md). The column holds them sealed with a key outside the database
//! ([`crate::sealing`]).

use contracts::ids::EnvironmentId;
use std::collections::BTreeMap;

use sqlx::SqliteConnection;

use crate::sealing;
use contracts::error::internal;
use contracts::error::{AppError, ErrorCode};

pub const MAX_SECRETS: usize = 64;
pub const MAX_VALUE_BYTES: usize = 4096;

fn invalid(message: String) -> AppError {
    AppError::invalid(
        "secret_env",
        ErrorCode::SpecInvalid,
        format!("secret_env: {message}"),
    )
}

/// The stored secrets of an environment.
pub async fn load(
    conn: &mut SqliteConnection,
    env_id: EnvironmentId,
) -> Result<BTreeMap<String, String>, AppError> {
    let stored: String =
        sqlx::query_scalar("SELECT secret_env_json FROM environments WHERE id = ?")
            .bind(env_id)
            .fetch_one(conn)
            .await?;
    // Rows of an older version hold plain JSON until the start seals them.
    let json = if sealing::is_sealed(&stored) {
        sealing::open(&stored, &sealing::environment(env_id.get()))?
    } else {
        stored.into_bytes()
    };
    serde_json::from_slice(&json).map_err(|e| internal("stored secrets", e))
}

pub async fn store(
    conn: &mut SqliteConnection,
    env_id: EnvironmentId,
    secrets: &BTreeMap<String, String>,
) -> Result<(), AppError> {
    let json = serde_json::to_vec(secrets).map_err(|e| internal("secrets to JSON", e))?;
    let sealed = sealing::seal(&json, &sealing::environment(env_id.get()))?;
    sqlx::query("UPDATE environments SET secret_env_json = ? WHERE id = ?")
        .bind(sealed)
        .bind(env_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// What to store given what is stored (`old`) and what was sent (`new`): a name sent with an empty
/// value keeps its stored value, a name not sent is removed. Names and values are checked here.
pub fn merge(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, AppError> {
    if new.len() > MAX_SECRETS {
        return Err(invalid(format!("at most {MAX_SECRETS} secrets")));
    }
    let mut merged = BTreeMap::new();
    for (name, value) in new {
        let name_ok = !name.is_empty()
            && name.len() <= 128
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(invalid(format!(
                "{name:?} is not a variable name (letters, digits and '_', not starting with a digit)"
            )));
        }
        if containers::spec::reserved_env(name) {
            return Err(invalid(format!(
                "{name} is set by Paddock (which GPUs the container sees); choose another name"
            )));
        }
        let value = if value.is_empty() {
            old.get(name).cloned().ok_or_else(|| {
                invalid(format!(
                    "{name}: give a value (a new secret cannot be empty)"
                ))
            })?
        } else {
            value.clone()
        };
        if value.len() > MAX_VALUE_BYTES || value.contains('\0') {
            return Err(invalid(format!(
                "{name}: a value is at most {MAX_VALUE_BYTES} bytes, without NUL"
            )));
        }
        merged.insert(name.clone(), value);
    }
    Ok(merged)
}

/// The names, each with an empty value: how secrets are shown to anyone.
pub fn redacted(secrets: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    secrets.keys().map(|k| (k.clone(), String::new())).collect()
}

/// `NAME=value` for the container's environment.
pub fn container_env(secrets: &BTreeMap<String, String>) -> Vec<String> {
    secrets.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn empty_keeps_absent_removes_and_names_are_checked() {
        let old = map(&[("HF_TOKEN", "hf_secret"), ("OLD", "x")]);
        let merged = merge(&old, &map(&[("HF_TOKEN", ""), ("NEW", "v")])).unwrap();
        assert_eq!(merged, map(&[("HF_TOKEN", "hf_secret"), ("NEW", "v")]));
        assert_eq!(redacted(&merged), map(&[("HF_TOKEN", ""), ("NEW", "")]));
        for bad in [
            map(&[("1X", "v")]),
            map(&[("A-B", "v")]),
            map(&[("FRESH", "")]),
            // What decides which GPUs the container sees is Paddock's to set.
            map(&[("NVIDIA_VISIBLE_DEVICES", "all")]),
            map(&[("CUDA_VISIBLE_DEVICES", "0,1")]),
        ] {
            assert_eq!(
                merge(&old, &bad).unwrap_err().code(),
                "spec_invalid",
                "{bad:?}"
            );
        }
        let long = "x".repeat(MAX_VALUE_BYTES + 1);
        assert!(merge(&old, &map(&[("A", long.as_str())])).is_err());
    }
}
