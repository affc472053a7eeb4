//! The Landlock ruleset of a profile, built in the parent before fork. Hard-requires every
//! right the profile needs (no silent best effort) unless the profile allows degraded mode.

use super::profile::{NetworkSpec, ResolvedProfile};
use super::status::Level;
use super::SandboxError;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The Landlock ABI a profile needs: 6 for abstract-unix and signal scoping (which implies
/// TCP rules from 4 and truncate from 3).
pub const REQUIRED_ABI: u8 = 6;

/// What the ruleset enforces, for the status report.
#[derive(Debug, Clone)]
pub struct LandlockReport {
    pub level: Level,
    pub fs_rights: Vec<String>,
    pub net_rights: Vec<String>,
    pub scopes: Vec<String>,
    pub missing: Vec<String>,
}

macro_rules! names {
    ($flags:expr) => {
        $flags
            .iter()
            .map(|f| format!("{f:?}"))
            .collect::<Vec<String>>()
    };
}

fn ll_err(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// Opens `path` without following a final symlink; `None` for a symlink (never granted:
/// its target is governed by the target's own rules) or a path that does not exist.
fn open_nofollow(path: &Path) -> Result<Option<(OwnedFd, bool)>, SandboxError> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ll_err(format!("{}: {e}", path.display()))),
    };
    let ft = f.metadata().map_err(ll_err)?.file_type();
    if ft.is_symlink() {
        return Ok(None);
    }
    let is_dir = ft.is_dir();
    Ok(Some((OwnedFd::from(f), is_dir)))
}

/// One (fd, rights) pair per granted path, rights already narrowed to files where needed.
type Grants = Vec<(OwnedFd, BitFlags<AccessFs>)>;

/// Like `open_nofollow`, but trusts a type already known from readdir (d_type) to save an
/// fstat per entry. A race that swaps the entry afterwards is harmless: a symlink fd never
/// widens access, and directory rights on a non-directory make add_rule fail (closed).
fn open_kind(path: &Path, is_dir: Option<bool>) -> Result<Option<(OwnedFd, bool)>, SandboxError> {
    let Some(is_dir) = is_dir else {
        return open_nofollow(path);
    };
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => Ok(Some((OwnedFd::from(f), is_dir))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ll_err(format!("{}: {e}", path.display()))),
    }
}

fn grant(
    path: &Path,
    kind: Option<bool>,
    dir_rights: BitFlags<AccessFs>,
    abi: ABI,
    out: &mut Grants,
) -> Result<(), SandboxError> {
    if let Some((fd, is_dir)) = open_kind(path, kind)? {
        let rights = if is_dir {
            dir_rights
        } else {
            dir_rights & AccessFs::from_file(abi)
        };
        out.push((fd, rights));
    }
    Ok(())
}

/// A path whose rights are capped: protected paths keep read rights only, deny-read paths
/// get none.
type Limit = (PathBuf, BitFlags<AccessFs>);

/// Grants `rights` below `root`, honouring `limits`. Landlock is allow-list only and rights
/// are inherited by the whole subtree, so an ancestor of a limited path gets only the rights
/// every limit below it allows (plus ReadDir, to list it), and each of its children is granted
/// one by one. A limited path that does not exist yet stays uncreatable because no ancestor
/// holds a make/remove right for it.
fn grant_limited(
    root: &Path,
    kind: Option<bool>,
    rights: BitFlags<AccessFs>,
    limits: &[Limit],
    abi: ABI,
    out: &mut Grants,
) -> Result<(), SandboxError> {
    let mut rights = rights;
    for (p, mask) in limits {
        if p == root {
            rights &= *mask;
        }
    }
    let below: Vec<&Limit> = limits
        .iter()
        .filter(|(p, _)| p != root && p.starts_with(root))
        .collect();
    if below.is_empty() {
        return if rights.is_empty() {
            Ok(())
        } else {
            grant(root, kind, rights, abi, out)
        };
    }
    let mut here = rights;
    for (_, mask) in &below {
        here &= *mask;
    }
    here |= rights & AccessFs::ReadDir;
    // Recurse into real directories only (a symlink is never granted).
    match open_kind(root, kind)? {
        Some((fd, true)) => {
            if !here.is_empty() {
                out.push((fd, here));
            }
        }
        _ => return Ok(()),
    }
    let entries =
        std::fs::read_dir(root).map_err(|e| ll_err(format!("{}: {e}", root.display())))?;
    for entry in entries {
        let entry = entry.map_err(ll_err)?;
        let ft = entry.file_type().map_err(ll_err)?;
        if ft.is_symlink() {
            continue;
        }
        grant_limited(&entry.path(), Some(ft.is_dir()), rights, limits, abi, out)?;
    }
    Ok(())
}

/// Builds the ruleset for `profile` on a kernel with Landlock ABI `kernel_abi`. Returns the
/// ruleset fd (None when Landlock is unavailable and degraded mode allowed) and the report.
pub fn build(
    profile: &ResolvedProfile,
    kernel_abi: u8,
) -> Result<(Option<OwnedFd>, LandlockReport), SandboxError> {
    let mut missing = Vec::new();
    if kernel_abi < REQUIRED_ABI {
        missing.push(match kernel_abi {
            0 => "landlock".to_string(),
            1..=2 => "landlock truncate, tcp, scoping".to_string(),
            3 => "landlock tcp rules, scoping".to_string(),
            _ => "landlock abstract-unix/signal scoping".to_string(),
        });
        if !profile.allow_degraded {
            return Err(SandboxError::Unsupported {
                missing: missing.join(", "),
                abi: kernel_abi,
            });
        }
    }
    if kernel_abi == 0 {
        let report = LandlockReport {
            level: Level::None,
            fs_rights: vec![],
            net_rights: vec![],
            scopes: vec![],
            missing,
        };
        return Ok((None, report));
    }
    let abi = ABI::from(i32::from(kernel_abi));
    let level = if profile.allow_degraded {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    let fs = AccessFs::from_all(abi);
    let net = if kernel_abi >= 4 {
        AccessNet::from_all(abi)
    } else {
        BitFlags::empty()
    };
    let scopes = if kernel_abi >= 6 {
        Scope::from_all(abi)
    } else {
        BitFlags::empty()
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(fs)
        .map_err(ll_err)?;
    if !net.is_empty() {
        ruleset = ruleset.handle_access(net).map_err(ll_err)?;
    }
    if !scopes.is_empty() {
        ruleset = ruleset.scope(scopes).map_err(ll_err)?;
    }
    let mut created = ruleset.create().map_err(ll_err)?;

    let mut grants: Grants = Vec::new();
    let read = AccessFs::from_read(abi);
    let deny: Vec<Limit> = profile
        .deny_read
        .iter()
        .map(|p| (p.clone(), BitFlags::empty()))
        .collect();
    for p in &profile.read {
        grant_limited(p, None, read, &deny, abi, &mut grants)?;
    }
    let mut limits = deny.clone();
    limits.extend(profile.protected.iter().map(|p| (p.clone(), read)));
    for p in &profile.write {
        grant_limited(p, None, AccessFs::from_all(abi), &limits, abi, &mut grants)?;
    }
    for (fd, rights) in grants {
        created = created
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(ll_err)?;
    }
    if let NetworkSpec::Ports(ports) = &profile.network {
        if net.is_empty() {
            missing.push("landlock tcp port rules (network unrestricted by landlock)".into());
        }
        for &port in ports {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(ll_err)?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or_else(|| ll_err("ruleset has no fd"))?;
    let report = LandlockReport {
        level: if missing.is_empty() {
            Level::Full
        } else {
            Level::Partial
        },
        fs_rights: names!(fs),
        net_rights: names!(net),
        scopes: names!(scopes),
        missing,
    };
    Ok((Some(fd), report))
}
