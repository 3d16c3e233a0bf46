//! Company sign-in against the real OpenLDAP of `scripts/ldap.sh` (started by `make test`): each test
//! adds its own people and groups under names of its own, as the directory's manager, and signs them
//! in through a provider configured as an admin would.

use std::collections::HashSet;

use contracts::error::AppError;
use contracts::identity::{CheckRequest, CheckStep, Grant, MappingInput, ProviderInput};
use contracts::types::Role;
use ldap3::{LdapConnAsync, Mod};
use sqlx::SqlitePool;

use super::{ldap, providers};
use crate::auth::Actor;
use crate::throttle::Throttle;

const SUFFIX: &str = "dc=paddock,dc=test";
const PLAIN: &str = "ldap://127.0.0.1:13389";
const LDAPS: &str = "ldaps://127.0.0.1:13636";

/// The test directory's CA (scripts/ldap.sh made it).
fn ca_pem() -> String {
    let dir = std::env::var("LDAP_DIR")
        .unwrap_or_else(|_| format!("{}/../target/ldap", env!("CARGO_MANIFEST_DIR")));
    std::fs::read_to_string(format!("{dir}/ca.pem"))
        .expect("the test directory's CA: start it with scripts/ldap.sh (make test does)")
}

/// The directory as its manager sees it, with names unique to one test.
struct Directory {
    tag: String,
}

impl Directory {
    fn new() -> Directory {
        Directory {
            tag: format!("{:08x}", rand::random::<u32>()),
        }
    }

    fn name(&self, base: &str) -> String {
        format!("{base}-{}", self.tag)
    }

    fn person_dn(&self, uid: &str) -> String {
        format!("uid={},ou=people,{SUFFIX}", self.name(uid))
    }

    fn group_dn(&self, cn: &str) -> String {
        format!("cn={},ou=groups,{SUFFIX}", self.name(cn))
    }

    async fn manager(&self) -> ldap3::Ldap {
        let (conn, mut ldap) = LdapConnAsync::new(PLAIN)
            .await
            .expect("the test directory answers");
        ldap3::drive!(conn);
        ldap.simple_bind(&format!("cn=admin,{SUFFIX}"), "manager")
            .await
            .unwrap()
            .success()
            .unwrap();
        ldap
    }

    async fn add_person(&self, uid: &str, password: &str) -> String {
        let dn = self.person_dn(uid);
        let name = self.name(uid);
        let mail = format!("{name}@corp.example");
        let attrs = vec![
            ("objectClass", HashSet::from(["inetOrgPerson"])),
            ("uid", HashSet::from([name.as_str()])),
            ("cn", HashSet::from([name.as_str()])),
            ("sn", HashSet::from(["测试"])),
            ("mail", HashSet::from([mail.as_str()])),
            ("userPassword", HashSet::from([password])),
        ];
        self.manager()
            .await
            .add(&dn, attrs)
            .await
            .unwrap()
            .success()
            .unwrap();
        dn
    }

    async fn add_group(&self, cn: &str, members: &[&str]) -> String {
        let dn = self.group_dn(cn);
        let name = self.name(cn);
        let attrs = vec![
            ("objectClass", HashSet::from(["groupOfNames"])),
            ("cn", HashSet::from([name.as_str()])),
            ("member", members.iter().copied().collect()),
        ];
        self.manager()
            .await
            .add(&dn, attrs)
            .await
            .unwrap()
            .success()
            .unwrap();
        dn
    }

    async fn change_members(&self, group: &str, add: &[&str], remove: &[&str]) {
        let mut mods = Vec::new();
        if !add.is_empty() {
            mods.push(Mod::Add("member", add.iter().copied().collect()));
        }
        if !remove.is_empty() {
            mods.push(Mod::Delete("member", remove.iter().copied().collect()));
        }
        self.manager()
            .await
            .modify(group, mods)
            .await
            .unwrap()
            .success()
            .unwrap();
    }

    async fn delete(&self, dn: &str) {
        self.manager()
            .await
            .delete(dn)
            .await
            .unwrap()
            .success()
            .unwrap();
    }
}

fn provider_input(dir: &Directory, url: &str, groups: serde_json::Value) -> ProviderInput {
    serde_json::from_value(serde_json::json!({
        "name": dir.name("corp"), "display_name": "公司目录", "secret": "service",
        "settings": { "ldap": {
            "url": url, "ca_pem": ca_pem(),
            "bind_dn": format!("cn=paddock,ou=services,{SUFFIX}"),
            "user_base": format!("ou=people,{SUFFIX}"),
            "groups": groups,
        } }
    }))
    .unwrap()
}

fn member_attribute() -> serde_json::Value {
    serde_json::json!({"style": "member_attribute", "base": format!("ou=groups,{SUFFIX}")})
}

async fn count(db: &SqlitePool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(db).await.unwrap()
}

async fn role_of(db: &SqlitePool, user: &str, ws: contracts::ids::WorkspaceId) -> Option<String> {
    sqlx::query_scalar(
        "SELECT m.role FROM members m JOIN users u ON u.id = m.user_id WHERE u.username = ? AND m.workspace_id = ?",
    )
    .bind(user)
    .bind(ws)
    .fetch_optional(db)
    .await
    .unwrap()
}

async fn vouched(db: &SqlitePool, user: &str) -> bool {
    let sql = format!(
        "SELECT {} FROM users u WHERE u.username = ?",
        super::VOUCHED
    );
    sqlx::query_scalar(&sql)
        .bind(user)
        .fetch_one(db)
        .await
        .unwrap()
}

async fn mapping(
    db: &SqlitePool,
    admin: &Actor,
    provider: contracts::ids::ProviderId,
    group: &str,
    grant: Grant,
) {
    providers::add_mapping(
        db,
        admin,
        provider,
        MappingInput {
            group: group.into(),
            grant,
        },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_directory_sign_in_maps_groups_refuses_what_it_must_and_follows_the_directory() {
    let (_tmp, db) = crate::testing::test_db().await;
    let team = crate::testing::team(&db).await;
    let dir = Directory::new();
    let alice = dir.add_person("alice", "alice password").await;
    let group = dir.add_group("nlp", &[&alice]).await;
    let provider = providers::create(
        &db,
        &team.owner,
        provider_input(&dir, PLAIN, member_attribute()),
    )
    .await
    .unwrap();
    assert!(provider.has_secret);
    let editors = Grant::Workspace {
        workspace_id: team.ws,
        role: Role::Editor,
    };
    mapping(&db, &team.owner, provider.id, &dir.name("nlp"), editors).await;
    let throttle = Throttle::default();
    let users_before = count(&db, "SELECT COUNT(*) FROM users").await;

    // Refusals, each audited, none creating anything. The filter injection is a name like any other.
    let name = dir.name("alice");
    let wrong = [
        (name.as_str(), "not the password", "invalid_credentials"),
        ("nobody-here", "whatever", "invalid_credentials"),
        (name.as_str(), "", "password_required"),
        ("*", "alice password", "invalid_credentials"),
        (
            &format!("{name})(uid=*"),
            "alice password",
            "invalid_credentials",
        ),
        ("*)(|(uid=*", "x", "invalid_credentials"),
    ];
    for (user, password, code) in wrong {
        let e = ldap::sign_in(
            &db,
            &throttle,
            &provider.name,
            user,
            password,
            Some("10.0.0.9"),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code().as_str(), code, "{user:?} / {password:?}");
    }
    assert_eq!(count(&db, "SELECT COUNT(*) FROM users").await, users_before);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM user_identities").await, 0);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'signin.refused'"
        )
        .await,
        wrong.len() as i64
    );

    // The right password: a new account, editor of the workspace its group maps to.
    let signed = ldap::sign_in(
        &db,
        &throttle,
        &provider.name,
        &name.to_uppercase(),
        "alice password",
        None,
    )
    .await
    .unwrap();
    assert_eq!(signed.me.username, name);
    assert!(!signed.me.is_admin);
    assert_eq!(
        role_of(&db, &name, team.ws).await.as_deref(),
        Some("editor")
    );
    assert!(vouched(&db, &name).await);
    // Its account has no password of its own.
    let e = crate::accounts::sign_in(
        &db,
        &throttle,
        crate::accounts::Attempt {
            username: &name,
            password: "",
            ip: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e, AppError::InvalidCredentials);

    // Out of the group: the next sign-in takes the membership away.
    // A group keeps one member (groupOfNames requires it): the manager's DN stands in.
    dir.change_members(&group, &[&format!("cn=admin,{SUFFIX}")], &[&alice])
        .await;
    ldap::sign_in(
        &db,
        &throttle,
        &provider.name,
        &name,
        "alice password",
        None,
    )
    .await
    .unwrap();
    assert_eq!(role_of(&db, &name, team.ws).await, None);
    // Back in it, and the re-check (no sign-in) gives it back; the audit says so.
    dir.change_members(&group, &[&alice], &[]).await;
    sqlx::query("UPDATE user_identities SET verified_at = verified_at - 600")
        .execute(&db)
        .await
        .unwrap();
    assert_eq!(ldap::recheck(&db, ldap::RECHECK_PERIOD).await.unwrap(), 1);
    assert_eq!(
        role_of(&db, &name, team.ws).await.as_deref(),
        Some("editor")
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'identity.recheck'"
        )
        .await,
        1
    );
    // Gone from the directory: no longer vouched for, at once.
    dir.delete(&alice).await;
    sqlx::query("UPDATE user_identities SET verified_at = verified_at - 600")
        .execute(&db)
        .await
        .unwrap();
    ldap::recheck(&db, ldap::RECHECK_PERIOD).await.unwrap();
    assert!(!vouched(&db, &name).await);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'identity.gone'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn nested_groups_over_ldaps_grant_admin_until_the_provider_goes() {
    let (_tmp, db) = crate::testing::test_db().await;
    let team = crate::testing::team(&db).await;
    let dir = Directory::new();
    let bob = dir.add_person("bob", "bob password").await;
    let inner = dir.add_group("ops", &[&bob]).await;
    dir.add_group("admins", &[&inner]).await;
    let groups = serde_json::json!({"style": "member_of", "nested": true});
    let provider = providers::create(&db, &team.owner, provider_input(&dir, LDAPS, groups))
        .await
        .unwrap();
    mapping(
        &db,
        &team.owner,
        provider.id,
        &dir.name("admins"),
        Grant::InstanceAdmin {},
    )
    .await;
    let viewers = Grant::Workspace {
        workspace_id: team.ws,
        role: Role::Viewer,
    };
    mapping(&db, &team.owner, provider.id, &dir.name("ops"), viewers).await;
    let name = dir.name("bob");
    let signed = ldap::sign_in(
        &db,
        &Throttle::default(),
        &provider.name,
        &name,
        "bob password",
        None,
    )
    .await
    .unwrap();
    assert!(signed.me.is_admin, "admins holds ops, which holds bob");
    assert_eq!(
        role_of(&db, &name, team.ws).await.as_deref(),
        Some("viewer")
    );
    // The provider deleted: what it granted goes with it, and its people are no longer vouched for.
    providers::delete(&db, &team.owner, provider.id)
        .await
        .unwrap();
    let (is_admin,): (bool,) = sqlx::query_as("SELECT is_admin FROM users WHERE username = ?")
        .bind(&name)
        .fetch_one(&db)
        .await
        .unwrap();
    assert!(!is_admin);
    assert_eq!(role_of(&db, &name, team.ws).await, None);
    // The account remains, with no identity: it has no password, so it cannot sign in at all.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM user_identities").await, 0);
}

#[tokio::test]
async fn linking_an_existing_account_and_refusing_to_create_one() {
    let (_tmp, db) = crate::testing::test_db().await;
    let team = crate::testing::team(&db).await;
    let dir = Directory::new();
    dir.add_person("carol", "carol password").await;
    dir.add_person("dave", "dave password").await;
    let mut input = provider_input(&dir, PLAIN, member_attribute());
    input.create_accounts = false;
    let provider = providers::create(&db, &team.owner, input).await.unwrap();
    let throttle = Throttle::default();
    let users = count(&db, "SELECT COUNT(*) FROM users").await;
    let e = ldap::sign_in(
        &db,
        &throttle,
        &provider.name,
        &dir.name("dave"),
        "dave password",
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code().as_str(), "account_not_provisioned");
    assert_eq!(count(&db, "SELECT COUNT(*) FROM users").await, users);
    // The viewer's account marked for carol's address: her first sign-in is that account.
    let mail = format!("{}@corp.example", dir.name("carol"));
    providers::set_link_email(
        &db,
        &team.owner,
        team.viewer.user_id,
        Some(&mail.to_uppercase()),
    )
    .await
    .unwrap();
    let signed = ldap::sign_in(
        &db,
        &throttle,
        &provider.name,
        &dir.name("carol"),
        "carol password",
        None,
    )
    .await
    .unwrap();
    assert_eq!(signed.me.id, team.viewer.user_id);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'identity.link'"
        )
        .await,
        1
    );
    // Linked now, the account's password sign-in stays, but the switch can close it to all but the
    // break-glass admin.
    let change = contracts::types::SettingsChange {
        password_sign_in: Some(contracts::identity::PasswordSignIn::Admins),
        ..Default::default()
    };
    crate::admin::update_settings(&db, &team.owner, change, &[])
        .await
        .unwrap();
    let attempt = |u: &'static str| crate::accounts::Attempt {
        username: u,
        password: "password123",
        ip: None,
    };
    let e = crate::accounts::sign_in(&db, &throttle, attempt("viewer"))
        .await
        .unwrap_err();
    assert_eq!(e.code().as_str(), "password_sign_in_disabled");
    crate::accounts::sign_in(&db, &throttle, attempt("owner"))
        .await
        .unwrap();
}

#[tokio::test]
async fn test_this_provider_says_which_step_failed() {
    let (_tmp, db) = crate::testing::test_db().await;
    let team = crate::testing::team(&db).await;
    let dir = Directory::new();
    let erin = dir.add_person("erin", "erin password").await;
    dir.add_group("research", &[&erin]).await;
    let good = providers::create(
        &db,
        &team.owner,
        provider_input(&dir, PLAIN, member_attribute()),
    )
    .await
    .unwrap();
    let ask = |username: Option<String>| CheckRequest { username };
    let steps = providers::check_provider(&db, &team.owner, good.id, ask(Some(dir.name("erin"))))
        .await
        .unwrap();
    let passed: Vec<(CheckStep, bool)> = steps.iter().map(|s| (s.step, s.ok)).collect();
    assert_eq!(
        passed,
        [
            (CheckStep::Connect, true),
            (CheckStep::Bind, true),
            (CheckStep::Search, true),
            (CheckStep::Groups, true)
        ]
    );
    assert_eq!(steps[3].groups, [dir.name("research")]);
    // Renamed without a secret: the stored one is kept, and the kind cannot change.
    let mut renamed = provider_input(&dir, PLAIN, member_attribute());
    renamed.display_name = "研究院目录".into();
    renamed.secret = None;
    let after = providers::update(&db, &team.owner, good.id, renamed.clone())
        .await
        .unwrap();
    assert_eq!(
        (after.display_name.as_str(), after.has_secret),
        ("研究院目录", true)
    );
    let again = providers::check_provider(&db, &team.owner, good.id, ask(None))
        .await
        .unwrap();
    assert!(again.iter().all(|s| s.ok), "{again:?}");
    renamed.settings = serde_json::from_value(
        serde_json::json!({"oidc": {"issuer": "https://sso.example", "client_id": "x"}}),
    )
    .unwrap();
    let e = providers::update(&db, &team.owner, good.id, renamed)
        .await
        .unwrap_err();
    assert_eq!(e.field(), Some("settings"));
    let outcome = |input: ProviderInput| {
        let db = db.clone();
        let owner = team.owner.clone();
        async move {
            let p = providers::create(&db, &owner, input).await.unwrap();
            let steps = providers::check_provider(&db, &owner, p.id, ask(None))
                .await
                .unwrap();
            providers::delete(&db, &owner, p.id).await.unwrap();
            steps.last().map(|s| (s.step, s.ok)).unwrap()
        }
    };
    let mut wrong_secret = provider_input(&dir, PLAIN, member_attribute());
    wrong_secret.name = dir.name("bad-secret");
    wrong_secret.secret = Some("not the service password".into());
    assert_eq!(outcome(wrong_secret).await, (CheckStep::Bind, false));
    let mut down = provider_input(&dir, "ldap://127.0.0.1:1", member_attribute());
    down.name = dir.name("down");
    assert_eq!(outcome(down).await, (CheckStep::Connect, false));
    // ldaps without the company CA: the certificate is not trusted, so nothing is sent.
    let mut untrusted = provider_input(&dir, LDAPS, member_attribute());
    untrusted.name = dir.name("no-ca");
    if let contracts::identity::ProviderSettings::Ldap(l) = &mut untrusted.settings {
        l.ca_pem = None;
    }
    assert_eq!(outcome(untrusted).await, (CheckStep::Connect, false));
    // A provider that is down refuses sign-in with "unavailable", audited.
    let mut down = provider_input(&dir, "ldap://127.0.0.1:1", member_attribute());
    down.name = dir.name("down2");
    let p = providers::create(&db, &team.owner, down).await.unwrap();
    let e = ldap::sign_in(
        &db,
        &Throttle::default(),
        &p.name,
        &dir.name("erin"),
        "erin password",
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code().as_str(), "identity_provider_unavailable");
    // Only admins configure or test providers, and the secret is never read back.
    assert_eq!(
        providers::list(&db, &team.viewer).await.unwrap_err(),
        AppError::Forbidden
    );
    let listed = serde_json::to_string(&providers::list(&db, &team.owner).await.unwrap()).unwrap();
    assert!(!listed.contains("service\""), "{listed}");
}
