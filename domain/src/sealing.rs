//! Values the database keeps sealed: the environments' secret variables, encrypted at rest with a key
//! that is not in the database. A copy of `paddock.db` (a backup, a file that left the machine) then
//! holds no API key or password.
//!
//! The key is 32 random bytes in a file (`paddock serve --secrets-key-file`, by default
//! `<data-dir>/secrets.key`, made 0600 at the first start; keep it on another disk, or out of the
//! backups of the data directory, to separate the two). A sealed value is ChaCha20-Poly1305 (`ring`) with
//! a random nonce, bound to what it belongs to (`environment:<id>`), so a value moved to another row does
//! not open; it names the key it was sealed with by the first bytes of the key's hash, so a wrong key is
//! told apart from a damaged value.
//!
//! `paddock admin rotate-secrets-key` makes a new key (`secrets.key.next`), seals every value again with
//! it in one transaction and then puts it in place; a rotation cut short is finished by running it
//! again. The key file is read at each use rather than held, so a running server follows a rotation:
//! while `secrets.key.next` exists, new values are sealed with it and values sealed with either key open.
//!
//! The key's path is process-wide configuration, installed once at start ([`install`]): secret values are
//! read in a handful of places that take only a database connection, and every one of them must use the
//! same key.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use sha2::{Digest, Sha256};
use sqlx::SqlitePool;

use contracts::error::{internal, AppError};

/// How a sealed value starts: the format's version, then the key's id, then the hex of nonce and
/// ciphertext with its tag.
const PREFIX: &str = "sealed1:";
const KEY_LEN: usize = 32;

static KEY_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Uses the key at `path` from now on, made (32 random bytes, mode 0600) when there is none yet.
/// Called once at start; a second call with another path is refused.
pub fn install(path: &Path) -> Result<(), String> {
    if !path.exists() && !next(path).exists() {
        write_new_key(path)?;
    }
    read_key(path).or_else(|e| read_key(&next(path)).map_err(|_| e))?;
    let path = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match KEY_FILE.set(path.clone()) {
        Ok(()) => Ok(()),
        Err(_) if KEY_FILE.get() == Some(&path) => Ok(()),
        Err(_) => Err("a different secrets key is already in use".into()),
    }
}

/// The key file named by `--secrets-key-file`, or the data directory's default.
pub fn default_key_file(data_dir: &Path) -> PathBuf {
    data_dir.join("secrets.key")
}

fn next(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".next");
    PathBuf::from(name)
}

fn write_new_key(path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let key: [u8; KEY_LEN] = rand::random();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("creating the secrets key {}: {e}", path.display()))?;
    file.write_all(hex::encode(key).as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("writing the secrets key {}: {e}", path.display()))
}

/// One key and its id (the first 4 bytes of its SHA-256, in hex).
struct Key {
    id: String,
    key: LessSafeKey,
}

fn read_key(path: &Path) -> Result<Key, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading the secrets key {}: {e}", path.display()))?;
    let bytes = hex::decode(text.trim())
        .ok()
        .filter(|b| b.len() == KEY_LEN)
        .ok_or_else(|| {
            format!(
                "the secrets key {} is not {KEY_LEN} bytes in hex",
                path.display()
            )
        })?;
    let key = UnboundKey::new(&CHACHA20_POLY1305, &bytes).map_err(|_| "a key ring refuses")?;
    Ok(Key {
        id: hex::encode(&Sha256::digest(&bytes)[..4]),
        key: LessSafeKey::new(key),
    })
}

/// The keys a value may be sealed with, newest first: the one being rotated to, then the current one.
fn keys() -> Result<Vec<Key>, AppError> {
    let path = KEY_FILE
        .get()
        .ok_or_else(|| internal("sealing a value", "no secrets key was installed"))?;
    let keys: Vec<Key> = [next(path), path.clone()]
        .iter()
        .filter(|p| p.exists())
        .map(|p| read_key(p))
        .collect::<Result<_, _>>()
        .map_err(|e| internal("reading the secrets key", e))?;
    if keys.is_empty() {
        return Err(internal(
            "reading the secrets key",
            format!("{} is gone", path.display()),
        ));
    }
    Ok(keys)
}

/// `plain` sealed with the newest key, bound to `belongs_to`.
pub fn seal(plain: &[u8], belongs_to: &str) -> Result<String, AppError> {
    seal_with(&keys()?[0], plain, belongs_to)
}

fn seal_with(key: &Key, plain: &[u8], belongs_to: &str) -> Result<String, AppError> {
    let nonce: [u8; NONCE_LEN] = rand::random();
    let mut sealed = plain.to_vec();
    key.key
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(belongs_to.as_bytes()),
            &mut sealed,
        )
        .map_err(|_| internal("sealing a value", "the cipher refused"))?;
    Ok(format!(
        "{PREFIX}{}:{}{}",
        key.id,
        hex::encode(nonce),
        hex::encode(sealed)
    ))
}

/// Whether a stored value is sealed (older rows hold plain text until [`seal_stored_secrets`]).
pub fn is_sealed(stored: &str) -> bool {
    stored.starts_with(PREFIX)
}

/// The plain bytes of a value sealed for `belongs_to`.
pub fn open(stored: &str, belongs_to: &str) -> Result<Vec<u8>, AppError> {
    open_with(&keys()?, stored, belongs_to)
}

fn open_with(keys: &[Key], stored: &str, belongs_to: &str) -> Result<Vec<u8>, AppError> {
    let damaged = |why: &str| internal("opening a sealed value", why);
    let (id, rest) = stored
        .strip_prefix(PREFIX)
        .and_then(|s| s.split_once(':'))
        .ok_or_else(|| damaged("not a sealed value"))?;
    let key = keys.iter().find(|k| k.id == id).ok_or_else(|| {
        damaged(&format!(
            "sealed with key {id}, which is not the secrets key file's"
        ))
    })?;
    let bytes = hex::decode(rest).map_err(|_| damaged("not hex"))?;
    if bytes.len() < NONCE_LEN {
        return Err(damaged("too short"));
    }
    let (nonce, sealed) = bytes.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| damaged("a bad nonce"))?;
    let mut sealed = sealed.to_vec();
    let plain = key
        .key
        .open_in_place(nonce, Aad::from(belongs_to.as_bytes()), &mut sealed)
        .map_err(|_| {
            damaged("it does not open with its key (damaged, or moved from another row)")
        })?;
    Ok(plain.to_vec())
}

/// What a secret of environment `id` is bound to.
pub fn environment(id: i64) -> String {
    format!("environment:{id}")
}

/// Seals every environment's secrets that are not sealed with the newest key: plain text left by an
/// older version, or values sealed with the key a rotation replaces. One transaction. How many rows
/// changed.
pub async fn seal_stored_secrets(db: &SqlitePool) -> Result<usize, AppError> {
    let keys = keys()?;
    let newest = format!("{PREFIX}{}:", keys[0].id);
    let mut tx = crate::db::write_tx(db).await?;
    let rows: Vec<(i64, String)> = sqlx::query_as("SELECT id, secret_env_json FROM environments")
        .fetch_all(&mut *tx)
        .await?;
    let mut changed = 0;
    for (id, stored) in rows {
        if stored.starts_with(&newest) {
            continue;
        }
        let belongs_to = environment(id);
        let plain = if is_sealed(&stored) {
            open_with(&keys, &stored, &belongs_to)?
        } else {
            stored.into_bytes()
        };
        let sealed = seal_with(&keys[0], &plain, &belongs_to)?;
        sqlx::query("UPDATE environments SET secret_env_json = ? WHERE id = ?")
            .bind(sealed)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        changed += 1;
    }
    tx.commit().await?;
    Ok(changed)
}

/// Replaces the secrets key: a new one is written beside it (`<key>.next`; an earlier rotation's, when
/// one was cut short), every value is sealed again with it, and it becomes the key. How many
/// environments' secrets were sealed again.
pub async fn rotate(db: &SqlitePool, path: &Path) -> Result<usize, String> {
    install(path)?;
    let upcoming = next(path);
    if !upcoming.exists() {
        write_new_key(&upcoming)?;
    }
    let changed = seal_stored_secrets(db)
        .await
        .map_err(|e| format!("sealing the secrets again: {e} (the server log has the cause)"))?;
    std::fs::rename(&upcoming, path).map_err(|e| {
        format!(
            "putting {} in place of {}: {e}",
            upcoming.display(),
            path.display()
        )
    })?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(dir: &Path, name: &str) -> Key {
        let path = dir.join(name);
        write_new_key(&path).unwrap();
        read_key(&path).unwrap()
    }

    #[test]
    fn a_sealed_value_opens_with_its_key_for_its_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (key(dir.path(), "a"), key(dir.path(), "b"));
        let sealed = seal_with(&a, b"{\"HF_TOKEN\":\"hf_secret\"}", "environment:1").unwrap();
        assert!(
            is_sealed(&sealed) && !sealed.contains("hf_secret"),
            "{sealed}"
        );
        let opened = open_with(std::slice::from_ref(&a), &sealed, "environment:1").unwrap();
        assert_eq!(opened, b"{\"HF_TOKEN\":\"hf_secret\"}");
        // Another row, another key, a flipped byte: none opens.
        assert!(open_with(std::slice::from_ref(&a), &sealed, "environment:2").is_err());
        assert!(open_with(std::slice::from_ref(&b), &sealed, "environment:1").is_err());
        let mut flipped = sealed.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert!(open_with(&[a], &flipped, "environment:1").is_err());
        let mode = std::fs::metadata(dir.path().join("a")).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
            0o600
        );
    }
}
