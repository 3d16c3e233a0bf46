//! Accounts: sign-up, sign-in, and the headless operations behind `paddock admin create-user` and
//! `reset-password`. Passwords are hashed with argon2id (the `argon2` crate's defaults, OWASP's
//! recommended parameters) on a blocking thread, since each hash takes tens of milliseconds of CPU.
//! The first account ever created becomes the instance admin.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use contracts::ids::UserId;
use sqlx::SqlitePool;

use super::audit::{self, Entry};
use super::throttle::{self, Throttle};
use contracts::error::{AppError, ErrorCode};
use contracts::types::Me;
use {crate::db::taken, contracts::error::internal};

pub const USERNAME_MIN: usize = 3;
pub const USERNAME_MAX: usize = 32;
pub const PASSWORD_MIN: usize = 10;
/// Long enough for any passphrase, short enough that hashing cannot be used to burn CPU.
pub const PASSWORD_MAX: usize = 128;

/// Trims and lower-cases a username and checks it: 3–32 characters of `a-z 0-9 _ . -`.
pub fn normalize_username(raw: &str) -> Result<String, AppError> {
    let name = raw.trim().to_lowercase();
    let len = name.chars().count();
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c));
    if !(USERNAME_MIN..=USERNAME_MAX).contains(&len) || !ok_chars {
        return Err(AppError::invalid(
            "username",
            ErrorCode::UsernameInvalid,
            format!("username must be {USERNAME_MIN}–{USERNAME_MAX} characters of a-z, 0-9, '_', '.', '-'"),
        ));
    }
    Ok(name)
}

/// Checks a new password's length (in characters, not bytes, so Chinese passphrases count fairly).
pub fn check_password(password: &str) -> Result<(), AppError> {
    let len = password.chars().count();
    if len < PASSWORD_MIN {
        return Err(AppError::invalid(
            "password",
            ErrorCode::PasswordTooShort,
            format!("password must be at least {PASSWORD_MIN} characters"),
        ));
    }
    if len > PASSWORD_MAX {
        return Err(AppError::invalid(
            "password",
            ErrorCode::PasswordTooLong,
            format!("password must be at most {PASSWORD_MAX} characters"),
        ));
    }
    Ok(())
}

/// At most this many password hashes run at once. Each argon2id hash holds ~19 MiB for tens of
/// milliseconds; without a bound, a burst of sign-ups or sign-ins is a burst of memory.
fn hashing_permits() -> &'static tokio::sync::Semaphore {
    static PERMITS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    PERMITS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        tokio::sync::Semaphore::new(cores.clamp(1, 4))
    })
}

pub async fn hash_password(password: &str) -> Result<String, AppError> {
    let password = password.to_owned();
    let _permit = hashing_permits()
        .acquire()
        .await
        .map_err(|e| internal("hashing permit", e))?;
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut rand::rngs::OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| internal("hashing a password", e))
    })
    .await
    .map_err(|e| internal("hashing task", e))?
}

async fn verify_password(password: &str, hash: &str) -> Result<bool, AppError> {
    let (password, hash) = (password.to_owned(), hash.to_owned());
    let _permit = hashing_permits()
        .acquire()
        .await
        .map_err(|e| internal("hashing permit", e))?;
    tokio::task::spawn_blocking(move || {
        let parsed = PasswordHash::new(&hash).map_err(|e| internal("stored password hash", e))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
    .map_err(|e| internal("verifying task", e))?
}

/// A valid argon2id hash of a random password: verified against when the username does not exist,
/// so that an unknown name takes as long to refuse as a wrong password.
async fn dummy_hash() -> &'static str {
    static DUMMY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    DUMMY
        .get_or_init(|| async {
            hash_password(&super::tokens::random_secret())
                .await
                .unwrap_or_default()
        })
        .await
}

#[derive(sqlx::FromRow)]
struct Credentials {
    id: UserId,
    username: String,
    password_hash: String,
    is_admin: bool,
    disabled: bool,
    session_epoch: i64,
}

/// Someone asking to get in: the name and password they typed, and the address they came from
/// (what the throttle counts against).
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    pub username: &'a str,
    pub password: &'a str,
    pub ip: Option<&'a str>,
}

/// Which way in: a new account, or an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    SignUp,
    SignIn,
}

/// Signs up or in through `door` and binds `session` to the account: the one way in for both the
/// dashboard and the REST API, so neither can forget the new session id.
pub async fn enter(
    state: &crate::AppState,
    session: &crate::sessions::Session,
    door: Door,
    attempt: Attempt<'_>,
) -> Result<Me, AppError> {
    let signed = match door {
        Door::SignUp => sign_up(&state.db, &state.throttle, attempt).await?,
        Door::SignIn => sign_in(&state.db, &state.throttle, attempt).await?,
    };
    crate::sessions::sign_in(session, signed.me.id, signed.session_epoch).await?;
    Ok(signed.me)
}

/// A newly created or signed-in account: what the session needs to remember.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub me: Me,
    pub session_epoch: i64,
}

/// Creates an account; the first one becomes the instance admin. `force_admin` is for the CLI.
/// Does not look at the sign-up setting: [`sign_up`] does.
pub async fn create_user(
    db: &SqlitePool,
    username: &str,
    password: &str,
    force_admin: bool,
    ip: Option<&str>,
) -> Result<Me, AppError> {
    let username = normalize_username(username)?;
    check_password(password)?;
    let hash = hash_password(password).await?;
    let mut tx = super::db::write_tx(db).await?;
    // "First account is admin" decided inside the INSERT, so two simultaneous first sign-ups
    // cannot both become admin.
    let inserted = sqlx::query_as::<_, (UserId, bool)>(
        "INSERT INTO users (username, password_hash, is_admin, created_at)
         VALUES (?1, ?2, ?3 OR NOT EXISTS (SELECT 1 FROM users), ?4)
         RETURNING id, is_admin",
    )
    .bind(&username)
    .bind(&hash)
    .bind(force_admin)
    .bind(super::now())
    .fetch_one(&mut *tx)
    .await;
    let (id, is_admin) = inserted.map_err(taken(
        "username",
        ErrorCode::UsernameTaken,
        "this username is already taken",
    ))?;
    // The new account is its own actor.
    let entry = Entry {
        actor_id: Some(id),
        ip,
        ..Entry::unattended("user.create", "user", &username)
    };
    let detail = serde_json::json!({ "is_admin": is_admin });
    audit::record(&mut tx, entry.detail(detail)).await?;
    tx.commit().await?;
    Ok(Me {
        id,
        username,
        is_admin,
    })
}

/// Public sign-up: refused when an admin has disabled it (unless there is no account at all yet),
/// past the throttle's sign-ups per hour from one address, and while the address has used up its
/// failed sign-ins (a guesser must not switch to creating accounts).
pub async fn sign_up(
    db: &SqlitePool,
    throttle: &Throttle,
    attempt: Attempt<'_>,
) -> Result<SignedIn, AppError> {
    normalize_username(attempt.username)?;
    check_password(attempt.password)?;
    let [_, address] = throttle::sign_in_keys(attempt.username, attempt.ip);
    let address_key = address.0.clone();
    let ticket = throttle
        .take(&[throttle.sign_up_key(attempt.ip), address])
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })?;
    // Only the sign-up budget is spent; the failed-sign-in one was only looked at.
    throttle.give_back(ticket, |k| k == address_key);
    // Sign-up makes a password account: closed too when password sign-in is for admins only.
    let (enabled, users): (bool, i64) = sqlx::query_as(
        "SELECT signup_enabled AND password_sign_in = 'everyone', (SELECT COUNT(*) FROM users)
         FROM instance_settings WHERE id = 1",
    )
    .fetch_one(db)
    .await?;
    if !enabled && users > 0 {
        return Err(AppError::denied(
            ErrorCode::SignupDisabled,
            "sign-up is disabled on this instance",
        ));
    }
    let me = create_user(db, attempt.username, attempt.password, false, attempt.ip).await?;
    Ok(SignedIn {
        me,
        session_epoch: 0,
    })
}

/// Checks a username and password. Each attempt takes a unit of the failed-sign-in budgets of
/// (account, address) and of the address before hashing; a right password gives them back.
pub async fn sign_in(
    db: &SqlitePool,
    throttle: &Throttle,
    attempt: Attempt<'_>,
) -> Result<SignedIn, AppError> {
    let key = attempt.username.trim().to_lowercase();
    let budgets = throttle::sign_in_keys(&key, attempt.ip);
    let ticket = throttle
        .take(&budgets)
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })?;
    let row = sqlx::query_as::<_, Credentials>(
        "SELECT id, username, password_hash, is_admin, disabled, session_epoch FROM users WHERE username = ?",
    )
    .bind(&key)
    .fetch_optional(db)
    .await?;
    // Over-long input is refused without hashing it (and counted as a failure).
    let plausible = attempt.password.chars().count() <= PASSWORD_MAX;
    let ok = match (&row, plausible) {
        // An account made by company sign-in has no password: refused like an unknown name.
        (Some(user), true) if !user.password_hash.is_empty() => {
            verify_password(attempt.password, &user.password_hash).await?
        }
        (_, true) => {
            verify_password(attempt.password, dummy_hash().await).await?;
            false
        }
        (_, false) => false,
    };
    let Some(user) = row.filter(|_| ok) else {
        // The ticket is kept: this attempt counts as a failure.
        drop(ticket);
        return Err(AppError::InvalidCredentials);
    };
    // Right: this attempt's units are given back and the pair's failures forgotten. The address's
    // earlier failures stay: one account's success says nothing about guesses at others.
    throttle.give_back(ticket, |_| true);
    throttle.forget(&budgets[0].0);
    if user.disabled {
        return Err(AppError::denied(
            ErrorCode::AccountDisabled,
            "this account has been disabled by an administrator",
        ));
    }
    if !password_allowed(db, user.id).await? {
        return Err(AppError::denied(
            ErrorCode::PasswordSignInDisabled,
            "password sign-in is turned off here; sign in with your company account",
        ));
    }
    Ok(SignedIn {
        me: Me {
            id: user.id,
            username: user.username,
            is_admin: user.is_admin,
        },
        session_epoch: user.session_epoch,
    })
}

/// Whether the account may sign in with a password: everyone may, unless an admin turned password
/// sign-in off for all but the break-glass account (an instance admin with no company identity).
async fn password_allowed(db: &SqlitePool, user: UserId) -> Result<bool, AppError> {
    Ok(sqlx::query_scalar(
        "SELECT s.password_sign_in = 'everyone'
             OR (u.is_admin AND NOT EXISTS (SELECT 1 FROM user_identities i WHERE i.user_id = u.id))
         FROM users u, instance_settings s WHERE u.id = ? AND s.id = 1",
    )
    .bind(user)
    .fetch_one(db)
    .await?)
}

/// Sets a new password and ends every session of the account (CLI `admin reset-password`).
pub async fn reset_password(
    db: &SqlitePool,
    username: &str,
    password: &str,
) -> Result<(), AppError> {
    let username = normalize_username(username)?;
    check_password(password)?;
    let hash = hash_password(password).await?;
    let mut tx = super::db::write_tx(db).await?;
    let updated = sqlx::query_scalar::<_, UserId>(
        "UPDATE users SET password_hash = ?, session_epoch = session_epoch + 1 WHERE username = ? RETURNING id",
    )
    .bind(&hash)
    .bind(&username)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(id) = updated else {
        return Err(AppError::invalid(
            "username",
            ErrorCode::UserNotFound,
            format!("no account named {username:?}"),
        ));
    };
    // Tokens are credentials too: a reset after a leak must cut them off.
    sqlx::query("DELETE FROM api_tokens WHERE user_id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let entry = Entry::unattended("user.reset_password", "user", &username);
    audit::record(&mut tx, entry).await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(username: &'a str, password: &'a str, ip: Option<&'a str>) -> Attempt<'a> {
        Attempt {
            username,
            password,
            ip,
        }
    }
    use crate::testing::test_db;

    #[test]
    fn usernames_are_normalised_and_checked() {
        assert_eq!(normalize_username("  Alice.B-1_ ").unwrap(), "alice.b-1_");
        for bad in [
            "ab",
            "has space",
            "中文名字",
            "x".repeat(33).as_str(),
            "semi;colon",
        ] {
            assert_eq!(
                normalize_username(bad).unwrap_err().code(),
                "username_invalid",
                "{bad}"
            );
        }
    }

    #[test]
    fn password_length_counts_characters() {
        assert_eq!(
            check_password("short").unwrap_err().code(),
            "password_too_short"
        );
        assert!(check_password("密码密码密码密码密码").is_ok());
        assert_eq!(
            check_password(&"p".repeat(129)).unwrap_err().code(),
            "password_too_long"
        );
    }

    /// A database with one account, and a fresh throttle for signing in (the sign-up used its own).
    async fn with_account(
        username: &str,
        password: &str,
    ) -> (tempfile::TempDir, SqlitePool, Throttle) {
        let (dir, db) = test_db().await;
        sign_up(&db, &Throttle::default(), at(username, password, None))
            .await
            .unwrap();
        (dir, db, Throttle::default())
    }

    #[tokio::test]
    async fn first_account_is_admin_and_duplicates_conflict() {
        let (_dir, db) = test_db().await;
        // Each sign-up with a throttle of its own: only the accounts are under test here.
        let fresh = Throttle::default;
        let first = sign_up(&db, &fresh(), at("Alice", "correct horse", None))
            .await
            .unwrap();
        assert!(first.me.is_admin);
        assert_eq!(first.me.username, "alice");
        let second = sign_up(&db, &fresh(), at("bob", "correct horse", None))
            .await
            .unwrap();
        assert!(!second.me.is_admin);
        let dup = sign_up(&db, &fresh(), at("ALICE", "another password", None))
            .await
            .unwrap_err();
        assert_eq!(dup.code(), "username_taken");
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(&db)
            .await
            .unwrap();
        assert_eq!(count, 2);
    }

    #[tokio::test]
    async fn sign_in_checks_password_and_throttles() {
        let (_dir, db, throttle) = with_account("carol", "right password").await;
        let home = Some("1.2.3.4");
        let ok = sign_in(&db, &throttle, at("Carol", "right password", home))
            .await
            .unwrap();
        assert_eq!(ok.me.username, "carol");
        for _ in 0..throttle::SIGN_IN_PER_ACCOUNT_AND_ADDRESS.max {
            let e = sign_in(&db, &throttle, at("carol", "wrong password", home))
                .await
                .unwrap_err();
            assert_eq!(e, AppError::InvalidCredentials);
        }
        let e = sign_in(&db, &throttle, at("carol", "right password", home))
            .await
            .unwrap_err();
        assert!(
            matches!(e, AppError::TooManyRequests { retry_after_secs } if retry_after_secs > 0)
        );
        let e = sign_in(&db, &throttle, at("nobody", "whatever pass", None))
            .await
            .unwrap_err();
        assert_eq!(e, AppError::InvalidCredentials);
    }

    #[tokio::test]
    async fn reset_password_bumps_epoch_and_changes_password() {
        let (_dir, db, throttle) = with_account("dave", "first password").await;
        reset_password(&db, "dave", "second password")
            .await
            .unwrap();
        assert_eq!(
            sign_in(&db, &throttle, at("dave", "first password", None))
                .await
                .unwrap_err(),
            AppError::InvalidCredentials
        );
        let s = sign_in(&db, &throttle, at("dave", "second password", None))
            .await
            .unwrap();
        assert_eq!(s.session_epoch, 1);
        assert_eq!(
            reset_password(&db, "nobody", "whatever123")
                .await
                .unwrap_err()
                .code(),
            "user_not_found"
        );
    }
}
