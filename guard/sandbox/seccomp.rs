//! The exec-child seccomp filter: `seccomp/exec-child.json` (seccompiler's JSON format, a
//! deny-list returning EPERM) compiled before the spawn, behind a hand-written prefix that kills
//! non-x86_64 arches and x32 syscall numbers and answers a few calls by number (clone3 and
//! inotify with ENOSYS, syscalls newer than seccompiler's table with EPERM).

use super::profile::{NetworkSpec, ResolvedProfile};
use super::SandboxError;
use seccompiler::TargetArch;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The filter as data, reviewed like code.
pub const EXEC_CHILD_JSON: &str = include_str!("../../seccomp/exec-child.json");

const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const NR_CLONE3: u32 = 435;
/// Newer than seccompiler's syscall table, so matched by number here.
const NR_SETXATTRAT: u32 = 463;
const NR_REMOVEXATTRAT: u32 = 466;
/// file_setattr(2) (Linux 6.17): chattr-style flags by path, newer than seccompiler's table.
const NR_FILE_SETATTR: u32 = 469;
const NR_INOTIFY_INIT: u32 = 253;
const NR_INOTIFY_INIT1: u32 = 294;

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K
#[cfg(test)] // seccompiler emits it in chains; only the test interpreter names it.
const JGT_K: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
const JA: u16 = 0x05; // BPF_JMP | BPF_JA
const RET_ALLOW: u32 = 0x7fff_0000;
/// Above every x86_64 syscall number (the highest is below 500).
const MAX_NR: u32 = 1024;

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The hand-written prefix: foreign arches die; A then holds the syscall number.
fn prefix() -> Vec<libc::sock_filter> {
    vec![
        insn(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        insn(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(RET_K, 0, 0, RET_KILL_PROCESS),
        insn(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
    ]
}

/// Hand-written answers, searched like the JSON rules (inclusive number ranges): x32
/// numbers die (seccompiler does not check the x32 bit), clone3 gets ENOSYS (its flags sit
/// behind a pointer; glibc and Node fall back to clone, whose flags the JSON checks), the
/// xattr/attr calls newer than seccompiler's syscall table get EPERM, and inotify gets ENOSYS:
/// a watch needs only read permission, which Landlock does not check, so a watch on a
/// deny-read directory would leak the names and timing of what happens in it; ENOSYS is
/// "no inotify in this kernel", on which tail, glib and inotify-tools fall back to polling.
fn special_spans() -> [(u32, u32, u32); 7] {
    let enosys = RET_ERRNO | libc::ENOSYS as u32;
    let eperm = RET_ERRNO | libc::EPERM as u32;
    [
        (NR_INOTIFY_INIT, NR_INOTIFY_INIT, enosys),
        (NR_INOTIFY_INIT1, NR_INOTIFY_INIT1, enosys),
        (NR_CLONE3, NR_CLONE3, enosys),
        (NR_SETXATTRAT, NR_SETXATTRAT, eperm),
        (NR_REMOVEXATTRAT, NR_REMOVEXATTRAT, eperm),
        (NR_FILE_SETATTR, NR_FILE_SETATTR, eperm),
        (X32_SYSCALL_BIT, u32::MAX, RET_KILL_PROCESS),
    ]
}

fn sc_err(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp(e.to_string())
}

/// Names of the JSON filters that apply to `profile`, in order.
pub fn parts(profile: &ResolvedProfile) -> Vec<&'static str> {
    let mut parts = vec!["exec-child"];
    parts.push(match profile.network {
        // Unresolved (no proxy port given): no network.
        NetworkSpec::None | NetworkSpec::ReadProxy => "socket-none",
        NetworkSpec::Ports(_) => "socket-tcp",
    });
    // No metadata change where nothing but devices and the run's own private tmp is
    // writable (Landlock does not cover chmod/utime).
    let tmp = profile.tmp.as_deref().map(|t| t.path());
    if (profile.write.iter()).all(|p| p.starts_with("/dev") || Some(p.as_path()) == tmp) {
        parts.push("metadata-read-only");
    }
    parts
}

/// The key that lets the child take its own session under the run's filter (see [`Filter`]).
pub type SessionKey = [u64; 4];

/// A run's filter, attached once to the thread that clones every run of it (`spawner`):
/// each child inherits it at clone instead of attaching it, which would cost the kernel a
/// conversion, a JIT compile and an emulation per syscall number on every spawn (about
/// 0.2 ms on a 2-core VM, measured with perf; even a six-instruction program costs 0.06 ms).
///
/// The child makes one call between clone and exec that the filter denies to the command:
/// `setsid` (a command in its own session would leave the process group the guard kills).
/// The filter lets `setsid` through only with `session_key` in its first four argument
/// registers, which setsid ignores. The key is 256 bits from getrandom, drawn per filter and
/// kept in the guard's memory only: the child passes it before exec, and after exec the
/// command has a new address space, no way to read a seccomp program, and no ptrace access
/// to the guard (seccomp and Landlock refuse it). Guessing is one EPERM per try.
#[derive(Debug)]
pub struct Filter {
    pub prog: Arc<Vec<libc::sock_filter>>,
    pub session_key: SessionKey,
}

type Cache = Mutex<HashMap<Vec<&'static str>, Arc<Filter>>>;

/// Compiles the filter for `profile` (cached per combination of parts: compiling costs more
/// than a spawn, and `spawner` keeps one thread per program). See `compile`.
pub fn build(profile: &ResolvedProfile) -> Result<Arc<Filter>, SandboxError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = parts(profile);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(p) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(p);
    }
    let session_key = new_session_key()?;
    let filter = Arc::new(Filter {
        prog: Arc::new(compile(&key, Some(&session_key))?),
        session_key,
    });
    if let Ok(mut c) = cache.lock() {
        c.insert(key, Arc::clone(&filter));
    }
    Ok(filter)
}

fn new_session_key() -> Result<SessionKey, SandboxError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| sc_err(format!("session key: {e}")))?;
    let mut key = [0u64; 4];
    for (k, chunk) in key.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        *k = u64::from_ne_bytes(word);
    }
    Ok(key)
}

/// The rules for `setsid` under `key`: denied when any of the four first arguments differs
/// (seccompiler ORs the rules of one syscall, and a rule matches when all its conditions do).
fn session_rules(key: &SessionKey) -> Vec<Value> {
    key.iter()
        .enumerate()
        .map(|(index, val)| {
            serde_json::json!({
                "syscall": "setsid",
                "args": [{ "index": index, "type": "qword", "op": "ne", "val": val }],
                "comment": "the child's own session, with the key only",
            })
        })
        .collect()
}

/// One syscall's rules as seccompiler compiled them, cut out of a single-syscall filter.
struct Chain {
    nr: u32,
    /// Starts with seccompiler's `JEQ nr` (A holds the number on entry); every path ends in a
    /// RET or falls off the end, which the caller follows with RET ALLOW (the mismatch action).
    insns: Vec<libc::sock_filter>,
}

impl Chain {
    /// The action when the chain answers without looking at arguments (seccompiler's form for
    /// a rule-less syscall: `JEQ nr,0,1; JA 1; JA 2; RET match; RET mismatch`).
    fn unconditional(&self) -> Option<u32> {
        match self.insns.as_slice() {
            [eq, a, b, m, _]
                if eq.code == JEQ_K
                    && a.code == JA
                    && a.k == 1
                    && b.code == JA
                    && b.k == 2
                    && m.code == RET_K =>
            {
                Some(m.k)
            }
            _ => None,
        }
    }
}

/// Compiles the rules of one syscall with seccompiler and cuts its chain out of the program
/// (`LD arch; JEQ; RET KILL; LD nr; chain; RET mismatch`). Any other shape is an error: the
/// layout is seccompiler's, so a new version that changes it must fail here, not misfilter.
fn chain(rules: &[Value]) -> Result<Chain, SandboxError> {
    let doc = serde_json::json!({ "one": {
        "mismatch_action": "allow",
        "match_action": { "errno": libc::EPERM },
        "filter": rules,
    }});
    let bytes = serde_json::to_vec(&doc).map_err(sc_err)?;
    let mut map =
        seccompiler::compile_from_json(bytes.as_slice(), TargetArch::x86_64).map_err(sc_err)?;
    let prog = map
        .remove("one")
        .ok_or_else(|| sc_err("compiled filter missing"))?;
    let prog: Vec<libc::sock_filter> = prog.iter().map(|f| insn(f.code, f.jt, f.jf, f.k)).collect();
    match prog.as_slice() {
        [_, _, _, ld, eq, .., last]
            if ld.code == LD_W_ABS
                && ld.k == 0
                && eq.code == JEQ_K
                && (eq.jt, eq.jf) == (0, 1)
                && eq.k < MAX_NR
                && (last.code, last.k) == (RET_K, RET_ALLOW) =>
        {
            Ok(Chain {
                nr: eq.k,
                insns: prog[4..prog.len() - 1].to_vec(),
            })
        }
        _ => Err(sc_err("unexpected seccompiler output layout")),
    }
}

/// What a range of syscall numbers gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// RET ALLOW (seccompiler's mismatch action).
    Allow,
    /// RET with this action (an unconditional rule).
    Ret(u32),
    /// The chain of a syscall with argument checks (index into the sorted chains).
    Chain(usize),
}

/// Which field of an instruction a [`Target`] fills.
#[derive(Debug, Clone, Copy)]
enum Field {
    Jt,
    Jf,
}

/// The dispatch: a binary search (`JGE` on range boundaries) over the syscall numbers, cut
/// into ranges that share one answer: no rule (ALLOW), one unconditional action (a run of
/// neighbouring numbers denied alike is one range), or one syscall's own seccompiler chain
/// for argument checks. The search's last comparisons jump straight to shared RETs (or to a
/// `JA` per chain), so the whole program stays short. Why not seccompiler's single linear
/// program: when a filter is attached the kernel JIT-compiles it and emulates it for every
/// syscall number (the action cache), so both the instruction count and the length of the
/// walk are paid on every spawn. Expects the syscall number in A (the prefix leaves it there).
/// None if a jump would not fit in 8 bits or two spans overlap.
///
/// Layout: `search | leaves (one RET per answer, one JA per chain) | chains`.
fn dispatch(chains: &[Chain]) -> Option<Vec<libc::sock_filter>> {
    let mut sorted: Vec<&Chain> = chains.iter().collect();
    sorted.sort_by_key(|c| c.nr);
    let ranges = ranges(spans(&sorted)?);
    if ranges.len() < 2 {
        return Some(vec![insn(RET_K, 0, 0, RET_ALLOW)]);
    }
    let (mut out, mut fix) = (Vec::new(), Fixups::new());
    search(&ranges, &mut out, &mut fix)?;
    let leaves = emit_leaves(&ranges, &mut out);
    let chain_at = emit_chains(&sorted, &mut out);
    aim_chain_leaves(&mut out, &leaves, &chain_at)?;
    aim_search(&mut out, &leaves, fix)?;
    Some(out)
}

/// Every numbered answer as `(first, last, target)`, sorted: one per JSON syscall (its
/// unconditional action, or its chain by index into `sorted`) and the hand-written spans.
/// Overlapping spans (a JSON rule for a number the prefix answers, or one syscall twice) are
/// a build error (None).
fn spans(sorted: &[&Chain]) -> Option<Vec<(u32, u32, Target)>> {
    let mut spans: Vec<(u32, u32, Target)> = sorted
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let t = c.unconditional().map_or(Target::Chain(i), Target::Ret);
            (c.nr, c.nr, t)
        })
        .chain(special_spans().map(|(a, b, r)| (a, b, Target::Ret(r))))
        .collect();
    spans.sort_by_key(|s| s.0);
    if spans.windows(2).any(|w| w[1].0 <= w[0].1) {
        return None;
    }
    Some(spans)
}

/// The spans as ranges `(first number, target)` covering 0..=u32::MAX, the gaps between them
/// ALLOW, neighbours merged when they share a target.
fn ranges(spans: Vec<(u32, u32, Target)>) -> Vec<(u32, Target)> {
    let mut ranges: Vec<(u32, Target)> = vec![(0, Target::Allow)];
    let mut push = |from: u32, t: Target| {
        match ranges.last_mut() {
            // The previous range is empty (this number follows a denied neighbour): reuse it.
            Some(last) if last.0 == from => last.1 = t,
            Some(last) if last.1 == t => return,
            _ => ranges.push((from, t)),
        }
        let n = ranges.len();
        if n >= 2 && ranges[n - 2].1 == ranges[n - 1].1 {
            ranges.pop();
        }
    };
    for (first, last, t) in spans {
        push(first, t);
        if let Some(next) = last.checked_add(1) {
            push(next, Target::Allow);
        }
    }
    ranges
}

/// Jumps from the search to a leaf, filled in once the leaves are placed.
type Fixups = Vec<(usize, Field, Target)>;

/// Emits the search over `ranges` (at least two); records jumps to leaves in `fix` and
/// patches jumps to inner nodes itself.
fn search(
    ranges: &[(u32, Target)],
    out: &mut Vec<libc::sock_filter>,
    fix: &mut Fixups,
) -> Option<()> {
    let mid = ranges.len() / 2;
    let (left, right) = ranges.split_at(mid);
    let at = out.len();
    // A >= first number of the right half: go right (jt), else left (jf).
    out.push(insn(JGE_K, 0, 0, right[0].0));
    for (half, field) in [(left, Field::Jf), (right, Field::Jt)] {
        if let [(_, leaf)] = half {
            fix.push((at, field, *leaf));
        } else {
            let off = u8::try_from(out.len() - at - 1).ok()?;
            set_jump(&mut out[at], field, off);
            search(half, out, fix)?;
        }
    }
    Some(())
}

/// The leaves, right after the search: one shared RET per answer, and one JA per chain (a
/// chain may lie beyond an 8-bit jump; JA takes 32 bits, aimed by [`aim_chain_leaves`]).
/// Returns where each target's leaf is.
fn emit_leaves(ranges: &[(u32, Target)], out: &mut Vec<libc::sock_filter>) -> Vec<(Target, usize)> {
    let mut leaves: Vec<(Target, usize)> = Vec::new();
    for &(_, t) in ranges {
        if leaves.iter().any(|(l, _)| *l == t) {
            continue;
        }
        leaves.push((t, out.len()));
        out.push(match t {
            Target::Allow => insn(RET_K, 0, 0, RET_ALLOW),
            Target::Ret(action) => insn(RET_K, 0, 0, action),
            Target::Chain(_) => insn(JA, 0, 0, 0),
        });
    }
    leaves
}

/// Appends every conditional chain followed by RET ALLOW (its fall-off answer); returns
/// `(index into sorted, start)` of each.
fn emit_chains(sorted: &[&Chain], out: &mut Vec<libc::sock_filter>) -> Vec<(usize, usize)> {
    let mut chain_at = Vec::new();
    for (i, c) in sorted.iter().enumerate() {
        if c.unconditional().is_none() {
            chain_at.push((i, out.len()));
            out.extend_from_slice(&c.insns);
            out.push(insn(RET_K, 0, 0, RET_ALLOW));
        }
    }
    chain_at
}

/// Points each chain's JA leaf at the chain's start.
fn aim_chain_leaves(
    out: &mut [libc::sock_filter],
    leaves: &[(Target, usize)],
    chain_at: &[(usize, usize)],
) -> Option<()> {
    for &(t, at) in leaves {
        if let Target::Chain(i) = t {
            let start = chain_at.iter().find(|(c, _)| *c == i)?.1;
            out[at].k = u32::try_from(start.checked_sub(at + 1)?).ok()?;
        }
    }
    Some(())
}

/// Points the search's last comparisons at their leaves (8-bit forward jumps).
fn aim_search(
    out: &mut [libc::sock_filter],
    leaves: &[(Target, usize)],
    fix: Fixups,
) -> Option<()> {
    for (at, field, target) in fix {
        let pos = leaves.iter().find(|(t, _)| *t == target)?.1;
        let off = u8::try_from(pos.checked_sub(at + 1)?).ok()?;
        set_jump(&mut out[at], field, off);
    }
    Some(())
}

fn set_jump(f: &mut libc::sock_filter, field: Field, off: u8) {
    match field {
        Field::Jt => f.jt = off,
        Field::Jf => f.jf = off,
    }
}

/// The JSON rules of the named parts, merged: seccompiler merges all entries of one syscall
/// into one rule list, where a condition-less entry would be lost, so an unconditional deny
/// replaces the conditional ones.
fn merged_rules(part_names: &[&str]) -> Result<Vec<Value>, SandboxError> {
    let doc: Value = serde_json::from_str(EXEC_CHILD_JSON).map_err(sc_err)?;
    let mut rules: Vec<Value> = Vec::new();
    for &name in part_names {
        let list = doc
            .get(name)
            .and_then(|f| f.get("filter"))
            .and_then(Value::as_array)
            .ok_or_else(|| sc_err(format!("filter {name} missing in exec-child.json")))?;
        rules.extend(list.iter().cloned());
    }
    let unconditional: Vec<Value> = rules
        .iter()
        .filter(|r| r.get("args").is_none())
        .filter_map(|r| r.get("syscall").cloned())
        .collect();
    rules.retain(|r| {
        r.get("args").is_none() || !r.get("syscall").is_some_and(|n| unconditional.contains(n))
    });
    Ok(rules)
}

/// The whole filter in one program: the prefix, then the dispatch tree over one seccompiler
/// chain per syscall. With `session`, `setsid` is allowed with that key (see [`Filter`]);
/// without, it is denied as the JSON says.
fn compile(
    part_names: &[&str],
    session: Option<&SessionKey>,
) -> Result<Vec<libc::sock_filter>, SandboxError> {
    let mut rules = merged_rules(part_names)?;
    if let Some(key) = session {
        rules.retain(|r| r.get("syscall").and_then(Value::as_str) != Some("setsid"));
        rules.extend(session_rules(key));
    }
    let mut names: Vec<&Value> = Vec::new();
    for r in &rules {
        let n = r
            .get("syscall")
            .ok_or_else(|| sc_err("rule without syscall"))?;
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let chains = names
        .iter()
        .map(|n| {
            let group: Vec<Value> = rules
                .iter()
                .filter(|r| r.get("syscall") == Some(n))
                .cloned()
                .collect();
            chain(&group)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut prog = prefix();
    prog.extend(dispatch(&chains).ok_or_else(|| sc_err("filter dispatch does not fit"))?);
    if prog.len() > 4096 {
        return Err(sc_err(format!(
            "filter too long: {} instructions",
            prog.len()
        )));
    }
    Ok(prog)
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
