//! `paddock admin ...`: account management without the web UI, for headless set-ups and for the
//! admin who forgot a password. Uses the same domain functions (and rules) as the web sign-up.

use std::io::BufRead;

use anyhow::{bail, Context};
use contracts::error::AppError;

use crate::config::{AccountArgs, AdminCommand, CreateUserArgs, PasswordArgs};

pub async fn run(command: AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::CreateUser(CreateUserArgs { account, admin }) => {
            let (db, password) = open(&account).await?;
            let me = domain::accounts::create_user(&db, &account.username, &password, admin, None)
                .await
                .map_err(explain)?;
            println!(
                "created user {} (id {}{})",
                me.username,
                me.id,
                if me.is_admin { ", admin" } else { "" }
            );
        }
        AdminCommand::RotateSecretsKey(args) => {
            let path = args
                .secrets_key_file
                .clone()
                .unwrap_or_else(|| domain::sealing::default_key_file(&args.db.data_dir));
            let db = domain::db::open(&args.db.url()).await?;
            let changed = domain::sealing::rotate(&db, &path)
                .await
                .map_err(anyhow::Error::msg)?;
            println!(
                "{} now holds a new key; the secrets of {changed} environment(s) were sealed with it",
                path.display()
            );
        }
        AdminCommand::ResetPassword(args) => {
            let (db, password) = open(&args).await?;
            domain::accounts::reset_password(&db, &args.username, &password)
                .await
                .map_err(explain)?;
            println!(
                "password reset for {}; its sessions and API tokens are revoked",
                args.username.trim().to_lowercase()
            );
        }
    }
    Ok(())
}

/// The database the command works on and the password it sets (read first: a bad one opens nothing).
async fn open(account: &AccountArgs) -> anyhow::Result<(sqlx::SqlitePool, String)> {
    let password = read_password(&account.password)?;
    Ok((domain::db::open(&account.db.url()).await?, password))
}

fn read_password(args: &PasswordArgs) -> anyhow::Result<String> {
    if let Some(p) = &args.password {
        return Ok(p.clone());
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the password from stdin")?;
    let password = line.trim_end_matches(['\r', '\n']).to_string();
    if password.is_empty() {
        bail!("--password-stdin: no password on standard input");
    }
    Ok(password)
}

/// Domain errors as a message for the terminal (with the field, when there is one).
fn explain(e: AppError) -> anyhow::Error {
    match e.field() {
        Some(field) => anyhow::anyhow!("{field}: {e} ({})", e.code()),
        None => anyhow::anyhow!("{e} ({})", e.code()),
    }
}
