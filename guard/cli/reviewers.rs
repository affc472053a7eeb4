//! `sanctum-guard reviewers add|list|remove|role|link|totp-enroll`: the web prompt's named
//! reviewer accounts, and the vote `inbox approve|deny` casts. Every change is written to
//! the audit log by the store before it commits; a removal also drops the account's login
//! links and passkeys, and the running `serve` ends its sessions at their next request.

use clap::Subcommand;
use sanctum_guard::audit::{self, assertion::PasskeyEvent, AuditEvent, AuditLog};
use sanctum_guard::inbox;
use sanctum_guard::policy::request::{Decision, DecisionKind};
use sanctum_guard::reviewers::vote::{self, Ballot, Cast};
use sanctum_guard::reviewers::{PgReviewers, ReviewerStore, Role, SqliteReviewers};
use sanctum_guard::web::auth_at::AuthAt;
use sanctum_guard::web::pg_auth::PgAuth;
use sanctum_guard::web::{login, passkey_store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum ReviewersCmd {
    /// Create an account and print its first login link (exit 0; 1 refused; 2 error).
    Add {
        name: String,
        /// viewer (sees requests), approver (decides), admin (decides, manages reviewers).
        #[arg(long, default_value = "approver")]
        role: String,
        /// An identity this person also acts under (cli:USER, a chat sender's session key):
        /// they cannot approve requests asked under it. Repeatable.
        #[arg(long = "identity")]
        identities: Vec<String>,
    },
    /// List the accounts: name, role, second factor, linked identities (exit 0; 2 error).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove an account: its login links and passkeys go at once, its sessions end at
    /// their next request, its approvals stop counting (exit 0; 1 refused; 2 error).
    Remove { name: String },
    /// Change an account's role (exit 0; 1 refused; 2 error).
    Role { name: String, role: String },
    /// Replace an account's linked identities (none: clear them).
    Link {
        name: String,
        identities: Vec<String>,
    },
    /// Enrol the account's own TOTP second factor; prints the otpauth URI once.
    TotpEnroll {
        name: String,
        /// Replace an existing enrolment.
        #[arg(long)]
        force: bool,
    },
}

/// The state dir and the reviewer tables its guard uses: the inbox database there, or the
/// fleet's PostgreSQL database when the config has `[store] url` (then an account added
/// here signs in on every guard of the fleet). Changes are recorded in this state dir's
/// audit log.
pub(super) fn open(
    state_dir: Option<PathBuf>,
) -> Result<(PathBuf, Box<dyn ReviewerStore>), String> {
    use sanctum_guard::app::config::{Config, Overrides, StoreSettings};
    let overrides = Overrides {
        state_dir,
        ..Default::default()
    };
    let cfg = Config::load(&overrides).map_err(|e| format!("reviewers: {e}"))?;
    let dir = cfg.state_dir;
    let (log, _) = AuditLog::open(&dir.join(audit::AUDIT_FILE)).map_err(|e| e.to_string())?;
    let store: Box<dyn ReviewerStore> = match cfg.store {
        StoreSettings::Embedded => Box::new(
            SqliteReviewers::open(&dir.join(inbox::DB_FILE), Some(log))
                .map_err(|e| e.to_string())?,
        ),
        StoreSettings::Fleet { url, .. } => {
            let db = inbox::pg::parse_url(&url).map_err(|e| e.to_string())?;
            Box::new(PgReviewers::open(db, Some(log)).map_err(|e| e.to_string())?)
        }
    };
    Ok((dir, store))
}

/// Where the state dir's guard keeps login links, passkeys and sessions: its files, or the
/// fleet's database when the config has `[store] url` (then a link made here signs in on
/// every guard, and ending an account's sessions ends them on every guard).
pub(super) fn auth_at(state_dir: &Path) -> Result<AuthAt, String> {
    use sanctum_guard::app::config::{Config, Overrides, StoreSettings};
    let overrides = Overrides {
        state_dir: Some(state_dir.to_owned()),
        ..Default::default()
    };
    let cfg = Config::load(&overrides).map_err(|e| format!("config: {e}"))?;
    Ok(match cfg.store {
        StoreSettings::Embedded => AuthAt::local(&cfg.state_dir),
        StoreSettings::Fleet { url, .. } => {
            let db = inbox::pg::parse_url(&url).map_err(|e| e.to_string())?;
            let pg = PgAuth::open(db).map_err(|e| e.to_string())?;
            AuthAt::fleet(&cfg.state_dir, std::sync::Arc::new(pg))
        }
    })
}

pub fn run(cmd: ReviewersCmd, state_dir: Option<PathBuf>) -> ExitCode {
    let (dir, mut store) = match open(state_dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let store = store.as_mut();
    let res = match cmd {
        ReviewersCmd::Add {
            name,
            role,
            identities,
        } => add(&dir, store, &name, &role, &identities),
        ReviewersCmd::List { json } => list(store, json),
        ReviewersCmd::Remove { name } => remove(&dir, store, &name),
        ReviewersCmd::Role { name, role } => Role::parse(&role)
            .and_then(|r| store.set_role(&name, r))
            .map_err(refused)
            .and_then(|r| {
                let ended = end_sessions(&dir, &r.name, "")?;
                Ok(format!("{} is now {}{ended}", r.name, r.role))
            }),
        ReviewersCmd::Link { name, identities } => store
            .set_identities(&name, &identities)
            .map(|r| format!("{} acts also as: {}", r.name, r.identities.join(", ")))
            .map_err(refused),
        ReviewersCmd::TotpEnroll { name, force } => totp(store, &name, force),
    };
    match res {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err((code, e)) => {
            eprintln!("{e}");
            ExitCode::from(code)
        }
    }
}

type Res = Result<String, (u8, String)>;

fn refused(e: sanctum_guard::reviewers::ReviewerError) -> (u8, String) {
    use sanctum_guard::reviewers::ReviewerError as E;
    match e {
        E::Sqlite(_) | E::Storage(_) | E::Unavailable(_) | E::Audit(_) | E::Json(_) => {
            (2, format!("error: {e}"))
        }
        _ => (1, format!("refused: {e}")),
    }
}

fn add(dir: &Path, store: &mut dyn ReviewerStore, name: &str, role: &str, ids: &[String]) -> Res {
    let role = Role::parse(role).map_err(refused)?;
    // Checked before the account exists, so a bad identity leaves nothing half made.
    ids.iter()
        .try_for_each(|i| sanctum_guard::reviewers::check_identity(i))
        .map_err(refused)?;
    let r = store.add(name, role).map_err(refused)?;
    if !ids.is_empty() {
        store.set_identities(name, ids).map_err(refused)?;
    }
    let at = auth_at(dir).map_err(|e| (2, format!("error: account added, no link: {e}")))?;
    let link = match login::new_link_for_running(&at, &r.name) {
        Ok(l) => l,
        Err(login::LoginError::NoServer(_)) => format!(
            "(no running web prompt: start `sanctum-guard serve`, then run \
             `sanctum-guard web login-link --name {}`)",
            r.name
        ),
        Err(e) => return Err((2, format!("error: account added, no link: {e}"))),
    };
    Ok(format!("added {} ({})\n{link}", r.name, r.role))
}

fn list(store: &dyn ReviewerStore, json: bool) -> Res {
    let all = store.list().map_err(refused)?;
    if json {
        return serde_json::to_string_pretty(&all).map_err(|e| (2, format!("error: {e}")));
    }
    Ok(all
        .iter()
        .map(|r| {
            format!(
                "{:<32} {:<8} totp={} identities={}",
                r.name,
                r.role.as_str(),
                if r.totp { "own" } else { "guard" },
                r.identities.join(",")
            )
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

fn remove(dir: &Path, store: &mut dyn ReviewerStore, name: &str) -> Res {
    let r = store.remove(name).map_err(refused)?;
    let err = |e: String| (2, format!("error: {name} removed, but {e}"));
    let at = auth_at(dir).map_err(err)?;
    let links = login::remove_named(&at, name).map_err(|e| err(e.to_string()))?;
    let keys = passkey_store::remove_named(&at, name).map_err(|e| err(e.to_string()))?;
    if !keys.is_empty() {
        let (log, _) =
            AuditLog::open(&dir.join(audit::AUDIT_FILE)).map_err(|e| err(e.to_string()))?;
        for k in &keys {
            let ev = PasskeyEvent::Removed {
                credential_id: k.id.clone(),
                by: format!("cli: reviewer {name} removed"),
            };
            log.append(AuditEvent::Passkey(Box::new(ev)))
                .map_err(|e| err(e.to_string()))?;
        }
    }
    let ended = end_sessions(dir, name, "; its sessions end at their next request")
        .map_err(|(_, e)| err(e))?;
    Ok(format!(
        "removed {} ({}): {links} login link(s), {} passkey(s){ended}",
        r.name,
        r.role,
        keys.len()
    ))
}

/// In a fleet, ends `name`'s sessions on every guard now (their open pages hear it); one
/// guard's sessions live in its `serve`, which checks the account at their next request
/// (`local`: what to say then).
fn end_sessions(dir: &Path, name: &str, local: &str) -> Result<String, (u8, String)> {
    let at = auth_at(dir).map_err(|e| (2, format!("error: {e}")))?;
    match &at.fleet {
        Some(db) => db
            .end_sessions(None, Some(name))
            .map(|n| format!("; {n} session(s) ended on every guard"))
            .map_err(|e| (2, format!("error: sessions not ended: {e}"))),
        None => Ok(local.to_owned()),
    }
}

fn totp(store: &mut dyn ReviewerStore, name: &str, force: bool) -> Res {
    let had = store.totp_seed(name).map_err(refused)?;
    if store.get(name).map_err(refused)?.is_none() {
        return Err(refused(sanctum_guard::reviewers::ReviewerError::Unknown(
            name.to_owned(),
        )));
    }
    if had.is_some() && !force {
        return Err((
            1,
            format!("refused: {name} already has a second factor (use --force to replace it)"),
        ));
    }
    let (seed, uri) =
        sanctum_guard::web::auth::new_totp_seed(name).map_err(|e| (2, format!("error: {e}")))?;
    store.set_totp(name, Some(&seed)).map_err(refused)?;
    Ok(uri)
}

/// `inbox approve|deny` as a vote of this terminal's user in `rs`, the reviewer tables the
/// guard itself uses (its inbox database, or the fleet's: never one the guard does not
/// count): the account linking `cli:<user>`, else that identity as the state dir's owner.
/// Ok: the decision to apply. Err: the command's exit, its line already printed: 0 when the
/// vote was recorded and the request waits for more approvers, 1 refused, 2 an error.
pub fn cli_vote(
    rs: &mut dyn ReviewerStore,
    get: &dyn Fn(&str) -> Result<Option<inbox::Entry>, inbox::InboxError>,
    request: (&str, Option<&str>),
    kind: DecisionKind,
    reason: Option<String>,
) -> Result<Decision, ExitCode> {
    match vote_outcome(rs, get, request, kind, reason) {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(waiting)) => {
            println!("{waiting}");
            Err(ExitCode::SUCCESS)
        }
        Err((code, e)) => {
            eprintln!("{e}");
            Err(ExitCode::from(code))
        }
    }
}

/// [`cli_vote`] before printing: Ok(Ok) the decision, Ok(Err) the vote recorded and the
/// line saying the request waits, Err the exit code and its line.
fn vote_outcome(
    rs: &mut dyn ReviewerStore,
    get: &dyn Fn(&str) -> Result<Option<inbox::Entry>, inbox::InboxError>,
    (id, hash): (&str, Option<&str>),
    kind: DecisionKind,
    reason: Option<String>,
) -> Result<Result<Decision, String>, (u8, String)> {
    let entry = match get(id) {
        Ok(Some(e))
            if e.state == inbox::State::Pending
                && e.offers(kind)
                && hash.is_none_or(|h| h == e.request_hash) =>
        {
            e
        }
        // Unknown, resolved, another hash or not offered: the inbox's own refusal says it
        // best (the decision below is refused, never applied).
        Ok(_) => {
            return Ok(Ok(Decision {
                kind,
                reason,
                by: sanctum_guard::policy::request::DecidedBy::Human(inbox::cli_identity()),
                at_ms: inbox::now_ms(),
            }))
        }
        Err(e) => return Err((2, e.to_string())),
    };
    let cat = sanctum_guard::policy::file::category_name(entry.verdict.category);
    // The rule of the guard whose agent asked (in a fleet: as that guard published it).
    let need = rs
        .required(entry.guard.as_deref(), &cat)
        .map_err(|e| (2, e.to_string()))?;
    let me = inbox::cli_identity();
    let voter = vote::cli_voter(rs, &me).map_err(|e| (2, e.to_string()))?;
    let ballot = Ballot {
        voter,
        via: me,
        kind,
        reason,
    };
    match vote::cast(rs, &entry, need, ballot).map_err(|e| (2, e.to_string()))? {
        Ok(Cast::Decide(d)) => Ok(Ok(d)),
        Ok(Cast::Partial { approvers, need }) => Ok(Err(format!(
            "{id} pending: approved by {} ({} of {need}); waiting for another reviewer",
            approvers.join(", "),
            approvers.len()
        ))),
        Err(r) => Err((1, format!("refused: {r}"))),
    }
}
