//! The exec-child seccomp filter: `seccomp/exec-child.json` (seccompiler's JSON format, a
//! deny-list returning EPERM) compiled before fork, behind a hand-written prefix that kills
//! non-x86_64 arches and x32 syscall numbers and answers clone3 with ENOSYS.

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

const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K
const JGT_K: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
const JA: u16 = 0x05; // BPF_JMP | BPF_JA
const RET_ALLOW: u32 = 0x7fff_0000;
/// Above every x86_64 syscall number (the highest is below 500).
const MAX_NR: u32 = 1024;

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The hand-written prefix. seccompiler kills foreign arches itself but does not check the
/// x32 bit, and it has one action per filter, so ENOSYS for clone3 lives here.
fn prefix() -> Vec<libc::sock_filter> {
    vec![
        insn(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        insn(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(RET_K, 0, 0, RET_KILL_PROCESS),
        insn(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        insn(JGE_K, 0, 1, X32_SYSCALL_BIT),
        insn(RET_K, 0, 0, RET_KILL_PROCESS),
        insn(JEQ_K, 0, 1, NR_CLONE3),
        insn(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32),
        insn(JEQ_K, 1, 0, NR_SETXATTRAT),
        insn(JEQ_K, 0, 1, NR_REMOVEXATTRAT),
        insn(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32),
    ]
}

fn sc_err(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp(e.to_string())
}

/// Names of the JSON filters that apply to `profile`, in order.
pub fn parts(profile: &ResolvedProfile) -> Vec<&'static str> {
    let mut parts = vec!["exec-child"];
    parts.push(match profile.network {
        NetworkSpec::None => "socket-none",
        NetworkSpec::Ports(_) => "socket-tcp",
    });
    if profile.write.iter().all(|p| p.starts_with("/dev")) {
        parts.push("metadata-read-only");
    }
    parts
}

type Cache = Mutex<HashMap<Vec<&'static str>, Arc<Vec<libc::sock_filter>>>>;

/// Compiles the filter for `profile` (cached per combination of parts: compiling costs more
/// than a spawn). See `compile`.
pub fn build(profile: &ResolvedProfile) -> Result<Arc<Vec<libc::sock_filter>>, SandboxError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = parts(profile);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(p) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(p);
    }
    let prog = Arc::new(compile(&key)?);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, Arc::clone(&prog));
    }
    Ok(prog)
}

/// A binary search over the syscall numbers `body` compares against, answering ALLOW at once
/// for every other number and jumping to `body` for the rest. Sound because seccompiler's body
/// allows (mismatch action) any syscall without a chain, and every chain starts with a JEQ of
/// its number, so the set of JEQ/JGT/JGE constants is a superset of the chained syscalls
/// (constants >= `MAX_NR` are argument values: no x86_64 syscall number comes near it).
/// Why: the kernel emulates the filter for every syscall number when it is attached (the
/// action cache) and the linear chain made that the largest part of a spawn. Expects the
/// syscall number in A (the prefix leaves it there). None if a jump would not fit in 8 bits.
fn fast_path(body: &[libc::sock_filter]) -> Option<Vec<libc::sock_filter>> {
    let mut nrs: Vec<u32> = body
        .iter()
        .filter(|f| matches!(f.code, JEQ_K | JGT_K | JGE_K) && f.k < MAX_NR)
        .map(|f| f.k)
        .collect();
    nrs.sort_unstable();
    nrs.dedup();
    if nrs.is_empty() {
        return None;
    }
    // Placeholder JA targets (u32::MAX) are patched to the end of the tree afterwards.
    fn tree(nrs: &[u32], out: &mut Vec<libc::sock_filter>) -> Option<()> {
        if let [nr] = nrs {
            out.push(insn(JEQ_K, 0, 1, *nr));
            out.push(insn(JA, 0, 0, u32::MAX));
            out.push(insn(RET_K, 0, 0, RET_ALLOW));
            return Some(());
        }
        let mid = (nrs.len() - 1) / 2;
        let at = out.len();
        out.push(insn(JGT_K, 0, 0, nrs[mid]));
        tree(&nrs[..=mid], out)?;
        out[at].jt = u8::try_from(out.len() - at - 1).ok()?;
        tree(&nrs[mid + 1..], out)
    }
    let mut out = Vec::new();
    tree(&nrs, &mut out)?;
    let len = out.len();
    for (i, f) in out.iter_mut().enumerate() {
        if f.code == JA {
            f.k = u32::try_from(len - i - 1).ok()?;
        }
    }
    Some(out)
}

/// The prefix, then the JSON parts merged into one seccompiler filter (one program, one
/// seccomp(2) call in the child).
fn compile(part_names: &[&str]) -> Result<Vec<libc::sock_filter>, SandboxError> {
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
    // seccompiler merges all entries of one syscall into one rule list, where a condition-less
    // entry would be lost: an unconditional deny must replace the conditional ones.
    let unconditional: Vec<Value> = rules
        .iter()
        .filter(|r| r.get("args").is_none())
        .filter_map(|r| r.get("syscall").cloned())
        .collect();
    rules.retain(|r| {
        r.get("args").is_none() || !r.get("syscall").is_some_and(|n| unconditional.contains(n))
    });
    let merged = serde_json::json!({ "merged": {
        "mismatch_action": "allow",
        "match_action": { "errno": libc::EPERM },
        "filter": rules,
    }});
    let bytes = serde_json::to_vec(&merged).map_err(sc_err)?;
    let mut map =
        seccompiler::compile_from_json(bytes.as_slice(), TargetArch::x86_64).map_err(sc_err)?;
    let body = map
        .remove("merged")
        .ok_or_else(|| sc_err("compiled filter missing"))?;
    let body: Vec<libc::sock_filter> = body.iter().map(|f| insn(f.code, f.jt, f.jf, f.k)).collect();
    let mut prog = prefix();
    prog.extend(fast_path(&body).unwrap_or_default());
    prog.extend(body);
    if prog.len() > 4096 {
        return Err(sc_err(format!(
            "filter too long: {} instructions",
            prog.len()
        )));
    }
    Ok(prog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::builtin_profiles;

    /// A cBPF interpreter for the instructions our filters use.
    fn eval(prog: &[libc::sock_filter], nr: u32, args: u64) -> u32 {
        let data = |off: u32| -> u32 {
            match off {
                0 => nr,
                4 => AUDIT_ARCH_X86_64,
                o if o >= 16 => {
                    if (o - 16) % 8 == 0 {
                        args as u32
                    } else {
                        (args >> 32) as u32
                    }
                }
                _ => 0,
            }
        };
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let f = prog[pc];
            pc += 1;
            let cond = |c: bool| if c { f.jt } else { f.jf } as usize;
            match f.code {
                LD_W_ABS => a = data(f.k),
                JA => pc += f.k as usize,
                JEQ_K => pc += cond(a == f.k),
                JGT_K => pc += cond(a > f.k),
                JGE_K => pc += cond(a >= f.k),
                0x45 => pc += cond(a & f.k != 0), // JSET
                0x54 => a &= f.k,                 // ALU AND K
                RET_K => return f.k,
                c => panic!("unexpected opcode {c:#x}"),
            }
        }
    }

    #[test]
    fn fast_path_changes_no_answer() {
        let dir = tempfile::tempdir().unwrap();
        for (_, spec) in builtin_profiles() {
            let mut p = spec.resolve(dir.path()).unwrap();
            for net in [NetworkSpec::None, NetworkSpec::Ports(vec![443])] {
                p.network = net;
                let key = parts(&p);
                let full = compile(&key).unwrap();
                let fast = fast_path(&full[prefix().len()..]).unwrap();
                let mut slow = prefix();
                slow.extend_from_slice(&full[prefix().len() + fast.len()..]);
                for nr in (0..2048).chain([X32_SYSCALL_BIT - 1, X32_SYSCALL_BIT, u32::MAX]) {
                    for args in [0, 1, 2, 3, u64::MAX, 0x8_0000, 0xffff_ffff] {
                        assert_eq!(eval(&full, nr, args), eval(&slow, nr, args), "nr {nr}");
                    }
                }
                // The fast path answers most syscalls within a few instructions.
                assert_eq!(eval(&full, libc::SYS_getpid as u32, 0), RET_ALLOW);
                assert_eq!(eval(&full, libc::SYS_kexec_load as u32, 0), RET_ERRNO | 1);
            }
        }
    }

    #[test]
    fn every_json_part_compiles_for_both_profiles() {
        let dir = tempfile::tempdir().unwrap();
        for (name, spec) in builtin_profiles() {
            let mut p = spec.resolve(dir.path()).unwrap();
            for net in [NetworkSpec::None, NetworkSpec::Ports(vec![443])] {
                p.network = net;
                let prog = build(&p).unwrap();
                assert!(prog.len() > 100, "{name}: {} insns", prog.len());
                let ro = parts(&p).contains(&"metadata-read-only");
                assert_eq!(ro, name == "read-only", "{name}");
            }
        }
    }
}
