//! Which paths a profile's two Landlock layers name (`landlock_rules` builds them): the
//! capped paths, the base layer's roots with their rights, and the caps the limits layer
//! must walk. Pure computations on paths; nothing here opens a file.

use super::landlock_cache::{fingerprint, BaseKey, Key};
use super::landlock_rules::{Limit, Rights};
use super::profile::ResolvedProfile;
use super::ws_secrets;
use landlock::{AccessFs, BitFlags};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the two layers of a profile are built from and cached under: all of it a pure
/// function of the profile's paths, the ports and the rights ([`Inputs`]), so it is derived
/// once per distinct profile, not on every prepare (sorting and merging ~100 roots, building
/// and hashing the keys was most of an autonomous prepare's user time).
#[derive(Debug)]
pub(super) struct Derived {
    /// The capped paths (see [`limits_of`]).
    pub limits: Vec<Limit>,
    /// The base layer's roots (see [`base_roots`]).
    pub roots: Vec<(PathBuf, BitFlags<AccessFs>)>,
    pub base_key: BaseKey,
    pub base_fp: u64,
    /// The limits the limits layer walks (see [`walked_limits`]); empty: no limits layer.
    pub walked: Vec<Limit>,
    /// The workspace scan decides what the limits layer grants in the workspace.
    pub scanned: bool,
    pub limits_key: Key,
    pub limits_fp: u64,
}

/// What [`Derived`] depends on, compared whole (equal paths compare as bytes first).
#[derive(Debug, PartialEq, Eq)]
struct Inputs {
    abi: u8,
    degraded: bool,
    workspace: PathBuf,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    ports: Vec<u16>,
}

impl Inputs {
    fn matches(&self, p: &ResolvedProfile, abi: u8, ports: &[u16]) -> bool {
        self.abi == abi
            && self.degraded == p.allow_degraded
            && self.ports == ports
            && self.workspace == p.workspace
            && self.read == p.read
            && self.write == p.write
            && self.deny_read == p.deny_read
            && self.protected == p.protected
    }
}

/// Profiles remembered (a few profiles times the pooled private tmps, each a root).
const MEMO_MAX: usize = 16;

/// The [`Derived`] of `profile` under `r` with TCP `ports`, from the memo when the same
/// inputs were seen before.
pub(super) fn derived(profile: &ResolvedProfile, r: &Rights, ports: &[u16]) -> Arc<Derived> {
    static MEMO: Mutex<Vec<(Inputs, Arc<Derived>)>> = Mutex::new(Vec::new());
    let abi = r.kernel_abi;
    if let Ok(memo) = MEMO.lock() {
        if let Some((_, d)) = memo.iter().find(|(i, _)| i.matches(profile, abi, ports)) {
            return Arc::clone(d);
        }
    }
    let d = Arc::new(derive(profile, r, ports));
    if let Ok(mut memo) = MEMO.lock() {
        if memo.len() >= MEMO_MAX {
            memo.remove(0);
        }
        let inputs = Inputs {
            abi,
            degraded: profile.allow_degraded,
            workspace: profile.workspace.clone(),
            read: profile.read.clone(),
            write: profile.write.clone(),
            deny_read: profile.deny_read.clone(),
            protected: profile.protected.clone(),
            ports: ports.to_vec(),
        };
        memo.push((inputs, Arc::clone(&d)));
    }
    d
}

fn derive(profile: &ResolvedProfile, r: &Rights, ports: &[u16]) -> Derived {
    let (limits, deny_count) = limits_of(profile, r.read);
    let roots = base_roots(profile, r, &limits, deny_count);
    let walked = walked_limits(&limits, &roots);
    let bits = |l: &[(PathBuf, BitFlags<AccessFs>)]| -> Vec<(PathBuf, u64)> {
        l.iter().map(|(p, m)| (p.clone(), m.bits())).collect()
    };
    let base_key = BaseKey {
        abi: r.kernel_abi,
        degraded: profile.allow_degraded,
        roots: bits(&roots),
        ports: ports.to_vec(),
        capped: bits(&limits),
    };
    let scanned = ws_secrets::applies(&profile.workspace, &profile.read, &profile.write);
    let limits_key = Key {
        abi: r.kernel_abi,
        degraded: profile.allow_degraded,
        limits: bits(&walked),
        capped: bits(&limits),
        scanned,
    };
    Derived {
        base_fp: fingerprint(&base_key),
        limits_fp: fingerprint(&limits_key),
        limits,
        roots,
        base_key,
        walked,
        scanned,
        limits_key,
    }
}

/// The capped paths: deny_read (no rights) first, then protected (read rights); also how
/// many of them are deny_read.
pub(super) fn limits_of(
    profile: &ResolvedProfile,
    read: BitFlags<AccessFs>,
) -> (Vec<Limit>, usize) {
    let mut limits: Vec<Limit> = profile
        .deny_read
        .iter()
        .map(|p| (p.clone(), BitFlags::empty()))
        .collect();
    let deny_count = limits.len();
    limits.extend(profile.protected.iter().map(|p| (p.clone(), read)));
    (limits, deny_count)
}

/// The base layer's roots with their rights. A root equal to a limited path keeps only the
/// rights the limit allows (read roots are capped by deny_read only); everything below a root
/// is left to the limits layer. Roots left with no rights are dropped, and so are rules that
/// add nothing to the layer: rules on one path are merged (the kernel ORs them anyway), and a
/// root whose rights its ancestor roots already hold goes (rights are inherited down the tree
/// when an access is checked), e.g. `/usr/bin` under `/usr`. The layer allows exactly the
/// same accesses with fewer rules, and a cached one has fewer roots to re-check per use.
pub(super) fn base_roots(
    profile: &ResolvedProfile,
    r: &Rights,
    limits: &[Limit],
    deny_count: usize,
) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    // The product of the masks of the limits on each path (a Path hashes by components,
    // as it compares).
    let mut deny_cap: HashMap<&Path, BitFlags<AccessFs>> = HashMap::new();
    let mut all_cap: HashMap<&Path, BitFlags<AccessFs>> = HashMap::new();
    for (i, (p, m)) in limits.iter().enumerate() {
        if i < deny_count {
            *deny_cap.entry(p).or_insert_with(BitFlags::all) &= *m;
        }
        *all_cap.entry(p).or_insert_with(BitFlags::all) &= *m;
    }
    let cap =
        |root: &Path, rights: BitFlags<AccessFs>, caps: &HashMap<&Path, BitFlags<AccessFs>>| {
            caps.get(root).map_or(rights, |m| rights & *m)
        };
    let mut roots: Vec<(PathBuf, BitFlags<AccessFs>)> = Vec::new();
    for p in &profile.read {
        roots.push((p.clone(), cap(p, r.read, &deny_cap)));
    }
    for p in &profile.write {
        roots.push((p.clone(), cap(p, r.fs, &all_cap)));
    }
    roots.retain(|(_, rights)| !rights.is_empty());
    // Sorted by components, a path's descendants follow it directly.
    roots.sort_by(|a, b| a.0.cmp(&b.0));
    roots.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 |= later.1;
        }
        same
    });
    let mut kept: Vec<(PathBuf, BitFlags<AccessFs>)> = Vec::with_capacity(roots.len());
    // The kept roots that are ancestors of the current one, outermost first.
    let mut above: Vec<usize> = Vec::new();
    for (p, rights) in roots {
        while above.last().is_some_and(|&i| !p.starts_with(&kept[i].0)) {
            above.pop();
        }
        let inherited = above.iter().fold(BitFlags::empty(), |u, &i| u | kept[i].1);
        if !inherited.contains(rights) {
            above.push(kept.len());
            kept.push((p, rights));
        }
    }
    kept
}

/// The limits the limits layer must walk: those at, above or below some root. A limit
/// beside every root changes nothing (no root grants anything there, and rights meet by
/// intersection), yet walking it listed whole directories: `/etc/shadow` for the
/// autonomous profile, which grants `/etc` file by file, cost a rule per `/etc` entry in
/// every run. Other names of capped files stay capped in both layers (`Linked`).
///
/// Runs on every prepare (the cache key is what it returns), over every limit and root
/// (the deployment's deny list times the allow-list): each path is split into components
/// once and compared as slices, which is what `Path::starts_with` does after splitting
/// both paths again on every call.
pub(super) fn walked_limits(
    limits: &[Limit],
    roots: &[(PathBuf, BitFlags<AccessFs>)],
) -> Vec<Limit> {
    let roots: Vec<Vec<Component<'_>>> = roots
        .iter()
        .map(|(r, _)| r.components().collect())
        .collect();
    let mut l: Vec<Component<'_>> = Vec::new();
    limits
        .iter()
        .filter(|(p, _)| {
            l.clear();
            l.extend(p.components());
            roots.iter().any(|r| l.starts_with(r) || r.starts_with(&l))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Component slices answer as `Path::starts_with` does, on the spellings where a byte
    /// prefix would not: a sibling sharing a prefix, the root, doubled and trailing slashes.
    #[test]
    fn walked_limits_match_path_starts_with() {
        let paths = [
            "/", "/a", "/ab", "/a/b", "/a//b", "/a/b/", "/a/./b", "/a/b/c", "/b", "/a/bc",
        ];
        let all = BitFlags::<AccessFs>::all();
        for r in paths {
            let roots = [(PathBuf::from(r), all)];
            let limits: Vec<Limit> = paths.iter().map(|p| (PathBuf::from(p), all)).collect();
            let want: Vec<Limit> = limits
                .iter()
                .filter(|(l, _)| l.starts_with(r) || Path::new(r).starts_with(l))
                .cloned()
                .collect();
            assert_eq!(walked_limits(&limits, &roots), want, "root {r}");
        }
    }
}
