//! The Landlock rulesets of a profile, built in the parent before the spawn: a base layer and a
//! limits layer for deny_read/protected paths, both cached and re-validated per use (see
//! `Layers` and `landlock_cache`). Hard-requires every
//! right the profile needs (no silent best effort) unless the profile allows degraded mode.

use super::landlock_cache::{self, Stamp};
use super::landlock_roots::{derived, Derived};
use super::profile::{NetworkSpec, ResolvedProfile};
use super::status::Level;
use super::ws_secrets::{self, judged_ok, Scanned};
use super::SandboxError;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// Opens `path` and queues its rule; returns the fd it queued (None: nothing granted).
fn grant<'a>(
    path: &Path,
    kind: Option<bool>,
    dir_rights: BitFlags<AccessFs>,
    abi: ABI,
    out: &'a mut Grants,
) -> Result<Option<&'a OwnedFd>, SandboxError> {
    if let Some((fd, is_dir)) = open_kind(path, kind)? {
        let rights = if is_dir {
            dir_rights
        } else {
            dir_rights & AccessFs::from_file(abi)
        };
        out.push((fd, rights));
        return Ok(out.last().map(|(fd, _)| fd));
    }
    Ok(None)
}

/// How many opened paths a walk holds before it hands them to the ruleset and closes them.
/// A walk can grant thousands of siblings (a busy `/tmp`), and holding one descriptor each
/// ran a process with the common soft limit of 1024 out of them (EMFILE), which failed every
/// run.
const FLUSH_AT: usize = 64;

/// The state of a walk: the ruleset being filled, the grants not yet added to it (the last
/// one may still be narrowed or dropped), and every directory whose children were listed
/// (with its identity and timestamps, so a cached ruleset can tell when a listing went stale).
struct Walk {
    ruleset: Option<landlock::RulesetCreated>,
    grants: Grants,
    walked: Vec<(PathBuf, Stamp)>,
}

impl Walk {
    fn new(ruleset: landlock::RulesetCreated) -> Self {
        Walk {
            ruleset: Some(ruleset),
            grants: Vec::new(),
            walked: Vec::new(),
        }
    }

    /// Adds the pending grants to the ruleset, closing their descriptors; only called when
    /// none of them can change any more.
    fn flush(&mut self) -> Result<(), SandboxError> {
        let created = self
            .ruleset
            .take()
            .ok_or_else(|| ll_err("ruleset lost by an earlier error"))?;
        self.ruleset = Some(add_grants(created, std::mem::take(&mut self.grants))?);
        Ok(())
    }

    fn finish(mut self) -> Result<(OwnedFd, Vec<(PathBuf, Stamp)>), SandboxError> {
        self.flush()?;
        let created = self
            .ruleset
            .take()
            .ok_or_else(|| ll_err("ruleset lost by an earlier error"))?;
        Ok((into_fd(created)?, self.walked))
    }
}

/// A path whose rights are capped: protected paths keep read rights only, deny-read paths
/// get none.
pub(super) type Limit = (PathBuf, BitFlags<AccessFs>);

/// The capped files that have other names (hard links), by (device, inode), with the rights
/// every cap on them allows. Landlock ties a rule to the inode, so a file granted by one name
/// is granted by all: the walk grants no name of such a file more than its cap.
type Linked = std::collections::HashMap<(u64, u64), BitFlags<AccessFs>>;

/// A limit that cannot be looked at is an error: its other names could not be capped.
fn linked_of(limits: &[Limit]) -> Result<Linked, SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let mut linked = Linked::new();
    for (p, mask) in limits {
        let m = match std::fs::symlink_metadata(p) {
            Ok(m) => m,
            // A missing limit has no other name.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(ll_err(format!("{}: {e}", p.display()))),
        };
        // A directory cannot have another name.
        if !m.is_dir() && m.nlink() > 1 {
            *linked.entry((m.dev(), m.ino())).or_insert(*mask) &= *mask;
        }
    }
    Ok(linked)
}

/// Grants `rights` below `root`, honouring `limits`. Landlock is allow-list only and rights
/// are inherited by the whole subtree, so an ancestor of a limited path gets only the rights
/// every limit below it allows (plus ReadDir, to list it), and each of its children is granted
/// one by one. A limited path that does not exist yet stays uncreatable because no ancestor
/// holds a make/remove right for it.
fn grant_limited(
    root: &Path,
    kind: Option<bool>,
    rights: BitFlags<AccessFs>,
    (limits, linked, ws): (&[Limit], &Linked, Scanned<'_>),
    abi: ABI,
    out: &mut Walk,
) -> Result<(), SandboxError> {
    // Every grant queued by an earlier call is final by now.
    if out.grants.len() >= FLUSH_AT {
        out.flush()?;
    }
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
        if rights.is_empty() {
            return Ok(());
        }
        let Some(fd) = grant(root, kind, rights, abi, &mut out.grants)? else {
            return Ok(());
        };
        if !judged_ok(root, fd, ws)?.0 {
            out.grants.pop();
            return Ok(());
        }
        let Some((fd, _)) = out.grants.last() else {
            return Ok(());
        };
        // Only a file needs the inode check (a directory has no other name); skipped when no
        // capped file has other names, which spares an fstat per granted file.
        if kind != Some(true) && !linked.is_empty() {
            let st = nix::sys::stat::fstat(fd).map_err(ll_err)?;
            let cap = linked.get(&(st.st_dev, st.st_ino)).copied();
            if let (Some(cap), Some(last)) = (cap, out.grants.last_mut()) {
                last.1 &= cap;
                if last.1.is_empty() {
                    out.grants.pop();
                }
            }
        }
        return Ok(());
    }
    let mut here = rights;
    for (_, mask) in &below {
        here &= *mask;
    }
    here |= rights & AccessFs::ReadDir;
    // Recurse into real directories only (a symlink is never granted).
    match open_kind(root, kind)? {
        Some((fd, true)) => {
            let (ok, scanned) = judged_ok(root, &fd, ws)?;
            if !ok {
                return Ok(());
            }
            let st = nix::sys::stat::fstat(&fd).map_err(ll_err)?;
            // Inside the workspace, the stamp the scan listed it with: changed since, the
            // cached layer is rebuilt.
            let stamp = scanned.unwrap_or_else(|| Stamp::from_stat(&st));
            out.walked.push((root.to_path_buf(), stamp));
            if !here.is_empty() {
                out.grants.push((fd, here));
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
        let is_dir = Some(ft.is_dir());
        grant_limited(
            &entry.path(),
            is_dir,
            rights,
            (limits, linked, ws),
            abi,
            out,
        )?;
    }
    Ok(())
}

/// The two Landlock layers of a profile. A process is confined by both, and Landlock allows
/// an access only if every layer does, so the effective rights are their intersection:
/// - `base`: the roots (read, write) with their rights, network ports and scopes; one rule
///   per root. Cached while every root names the same inode (a pooled private tmp keeps
///   its inode; see `landlock_cache` and `tmpdir`).
/// - `limits`: every right on `/` except below the deny_read (no rights) and protected
///   (read rights) paths. It is the expensive part (a walk granting every sibling of each
///   limited path's ancestors) and depends only on the limit paths, so it is cached.
///
/// Why the intersection equals the former single ruleset: with `g` a root's rights, `M(p)`
/// the product of the masks of the limits at or above `p`, and `RD` ReadDir on a listed
/// ancestor, one walk gives `g∩M(p) ∪ g∩RD` at `p`; so
/// `g ∩ (M(p) ∪ RD) = g∩M(p) ∪ g∩RD`, root by root, and a union over roots distributes over
/// the intersection. Renames and links are checked per layer by the kernel (the moved file
/// may gain rights in no layer), which can only refuse more, never allow more.
#[derive(Debug)]
pub struct Layers {
    pub base: Arc<OwnedFd>,
    pub limits: Option<Arc<OwnedFd>>,
}

fn new_ruleset(
    level: CompatLevel,
    fs: BitFlags<AccessFs>,
    net: BitFlags<AccessNet>,
    scopes: BitFlags<Scope>,
) -> Result<landlock::RulesetCreated, SandboxError> {
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
    ruleset.create().map_err(ll_err)
}

fn add_grants(
    mut created: landlock::RulesetCreated,
    grants: Grants,
) -> Result<landlock::RulesetCreated, SandboxError> {
    for (fd, rights) in grants {
        created = created
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(ll_err)?;
    }
    Ok(created)
}

fn into_fd(created: landlock::RulesetCreated) -> Result<OwnedFd, SandboxError> {
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| ll_err("ruleset has no fd"))
}

/// Builds the limits layer (every right on `/`, capped by `limits`) and the directories its
/// walk listed.
fn build_limits(
    (limits, linked): (&[Limit], &Linked),
    abi: ABI,
    level: CompatLevel,
    ws: Scanned<'_>,
) -> Result<(OwnedFd, Vec<(PathBuf, Stamp)>), SandboxError> {
    let fs = AccessFs::from_all(abi);
    let created = new_ruleset(level, fs, BitFlags::empty(), BitFlags::empty())?;
    let mut walk = Walk::new(created);
    let ctx = (limits, linked, ws);
    grant_limited(Path::new("/"), None, fs, ctx, abi, &mut walk)?;
    walk.finish()
}

/// What this kernel's Landlock can handle, and whether a missing right is an error.
pub(super) struct Rights {
    pub(super) kernel_abi: u8,
    abi: ABI,
    level: CompatLevel,
    pub(super) fs: BitFlags<AccessFs>,
    net: BitFlags<AccessNet>,
    scopes: BitFlags<Scope>,
    pub(super) read: BitFlags<AccessFs>,
}

impl Rights {
    /// For a kernel with Landlock (`kernel_abi` at least 1).
    fn new(kernel_abi: u8, allow_degraded: bool) -> Rights {
        let abi = ABI::from(i32::from(kernel_abi));
        Rights {
            kernel_abi,
            abi,
            level: if allow_degraded {
                CompatLevel::BestEffort
            } else {
                CompatLevel::HardRequirement
            },
            fs: AccessFs::from_all(abi),
            net: if kernel_abi >= 4 {
                AccessNet::from_all(abi)
            } else {
                BitFlags::empty()
            },
            scopes: if kernel_abi >= 6 {
                Scope::from_all(abi)
            } else {
                BitFlags::empty()
            },
            read: AccessFs::from_read(abi),
        }
    }
}

/// What a kernel with Landlock ABI `kernel_abi` lacks of [`REQUIRED_ABI`], in words.
fn abi_gap(kernel_abi: u8) -> Option<String> {
    let gap = match kernel_abi {
        k if k >= REQUIRED_ABI => return None,
        0 => "landlock",
        1..=2 => "landlock truncate, tcp, scoping",
        3 => "landlock tcp rules, scoping",
        _ => "landlock abstract-unix/signal scoping",
    };
    Some(gap.to_string())
}

/// Builds the base layer (one rule per root, the TCP ports, the scopes) and each root's
/// identity, which tells the cache when a root was replaced. A file root that is another
/// name of a capped file keeps only the cap's rights (see `walked_limits`).
fn build_base(
    roots: &[(PathBuf, BitFlags<AccessFs>)],
    ports: &[u16],
    r: &Rights,
    linked: &Linked,
) -> Result<(OwnedFd, Vec<(PathBuf, landlock_cache::Ident)>), SandboxError> {
    let mut grants: Grants = Vec::new();
    let mut idents = Vec::new();
    for (p, rights) in roots {
        let ident = match grant(p, None, *rights, r.abi, &mut grants)? {
            Some(fd) => {
                let st = nix::sys::stat::fstat(fd).map_err(ll_err)?;
                let cap = linked.get(&(st.st_dev, st.st_ino)).copied();
                if let (Some(cap), Some(last)) = (cap, grants.last_mut()) {
                    last.1 &= cap;
                    if last.1.is_empty() {
                        grants.pop();
                    }
                }
                Some((st.st_dev, st.st_ino))
            }
            None => None,
        };
        idents.push((p.clone(), ident));
    }
    let mut created = add_grants(new_ruleset(r.level, r.fs, r.net, r.scopes)?, grants)?;
    for &port in ports {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(ll_err)?;
    }
    Ok((into_fd(created)?, idents))
}

/// The base layer, from the cache. A private tmp is one of its roots: pooled directories
/// (`tmpdir`) keep their path and inode from run to run, so their layers are reused too.
fn base_layer(d: &Derived, ports: &[u16], r: &Rights) -> Result<Arc<OwnedFd>, SandboxError> {
    landlock_cache::base_get_or_build(&d.base_key, d.base_fp, || {
        build_base(&d.roots, ports, r, &linked_of(&d.limits)?)
    })
}

/// The limits layer from the cache, None when nothing is capped.
fn limits_layer(
    profile: &ResolvedProfile,
    d: &Derived,
    r: &Rights,
) -> Result<Option<Arc<OwnedFd>>, SandboxError> {
    if d.walked.is_empty() {
        return Ok(None);
    }
    // The workspace scan's profile grants only what the scan judged inside the workspace:
    // the very scan its secrets were denied from, which the run is checked against after it.
    let judged = match (&profile.scan, d.scanned) {
        (_, false) => None,
        (Some(scan), true) => Some(Arc::clone(scan)),
        // Paths changed after the resolution: a scan valid now.
        (None, true) => Some(ws_secrets::scan(&profile.workspace)?),
    };
    let ws = judged.as_deref().map(|j| (profile.workspace.as_path(), j));
    landlock_cache::get_or_build(&d.limits_key, d.limits_fp, || {
        let linked = linked_of(&d.limits)?;
        build_limits((&d.walked, &linked), r.abi, r.level, ws)
    })
    .map(Some)
}

/// Builds both layers for `profile` on a kernel with Landlock ABI `kernel_abi` (None when
/// Landlock is unavailable and degraded mode allowed) and the report.
pub fn build(
    profile: &ResolvedProfile,
    kernel_abi: u8,
) -> Result<(Option<Layers>, LandlockReport), SandboxError> {
    let mut missing: Vec<String> = abi_gap(kernel_abi).into_iter().collect();
    if !missing.is_empty() && !profile.allow_degraded {
        return Err(SandboxError::Unsupported {
            missing: missing.join(", "),
            abi: kernel_abi,
        });
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
    let r = Rights::new(kernel_abi, profile.allow_degraded);
    let ports = match &profile.network {
        NetworkSpec::Ports(ports) => ports.as_slice(),
        NetworkSpec::None | NetworkSpec::ReadProxy => &[],
    };
    if matches!(profile.network, NetworkSpec::Ports(_)) && r.net.is_empty() {
        missing.push("landlock tcp port rules (network unrestricted by landlock)".into());
    }
    let d = derived(profile, &r, ports);
    let layers = Layers {
        base: base_layer(&d, ports, &r)?,
        limits: limits_layer(profile, &d, &r)?,
    };
    let report = LandlockReport {
        level: if missing.is_empty() {
            Level::Full
        } else {
            Level::Partial
        },
        fs_rights: names!(r.fs),
        net_rights: names!(r.net),
        scopes: names!(r.scopes),
        missing,
    };
    Ok((Some(layers), report))
}
