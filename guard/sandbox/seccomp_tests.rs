//! Tests of `seccomp.rs`: the dispatch against seccompiler's own linear program.

use super::*;
use crate::sandbox::builtin_profiles;

/// A cBPF interpreter for the instructions our filters use.
fn eval(prog: &[libc::sock_filter], nr: u32, args: [u64; 6]) -> u32 {
    let data = |off: u32| -> u32 {
        match off {
            0 => nr,
            4 => AUDIT_ARCH_X86_64,
            o if o >= 16 => {
                let arg = args[((o - 16) / 8) as usize];
                if (o - 16) % 8 == 0 {
                    arg as u32
                } else {
                    (arg >> 32) as u32
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

/// What seccompiler alone makes of the merged rules: one linear program.
fn reference(part_names: &[&str]) -> Vec<libc::sock_filter> {
    let doc = serde_json::json!({ "merged": {
        "mismatch_action": "allow",
        "match_action": { "errno": libc::EPERM },
        "filter": merged_rules(part_names).unwrap(),
    }});
    let bytes = serde_json::to_vec(&doc).unwrap();
    let mut map = seccompiler::compile_from_json(bytes.as_slice(), TargetArch::x86_64).unwrap();
    // The documented prefix, then each hand-written span as a linear check.
    let mut prog = vec![
        insn(LD_W_ABS, 0, 0, 4),
        insn(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(RET_K, 0, 0, RET_KILL_PROCESS),
        insn(LD_W_ABS, 0, 0, 0),
    ];
    for (first, last, ret) in special_spans() {
        prog.push(insn(JGE_K, 0, 2, first));
        prog.push(insn(JGT_K, 1, 0, last));
        prog.push(insn(RET_K, 0, 0, ret));
    }
    prog.extend(
        map.remove("merged")
            .unwrap()
            .iter()
            .map(|f| insn(f.code, f.jt, f.jf, f.k)),
    );
    prog
}

/// Argument values the rules compare against, and neighbours of them.
const ARGS: [u64; 26] = [
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    16,
    30,
    132,
    262,
    1026,
    0x1000,
    0x5410,
    0x4008_6602,
    0x2000_0000,
    0o2000,
    0o4000,
    0o6755,
    0x5412,
    0x541C,
    0x2_0000,
    0x1000_0000,
    u64::MAX,
];

#[test]
fn dispatch_answers_like_seccompiler_alone() {
    let dir = tempfile::tempdir().unwrap();
    for (_, spec) in builtin_profiles() {
        let mut p = spec.resolve(dir.path()).unwrap();
        for net in [NetworkSpec::None, NetworkSpec::Ports(vec![443])] {
            p.network = net;
            let key = parts(&p);
            let ours = compile(&key, None).unwrap();
            let slow = reference(&key);
            assert!(ours.len() < slow.len(), "{} >= {}", ours.len(), slow.len());
            // Every number up to past the highest x86_64 syscall, then samples.
            let sample = [
                1023,
                1024,
                2047,
                X32_SYSCALL_BIT - 1,
                X32_SYSCALL_BIT,
                u32::MAX,
            ];
            for nr in (0..520).chain(sample) {
                for a0 in ARGS {
                    for a1 in ARGS {
                        for a2 in [0, 6, 23, 30, 132, 262, 0o2000, 0o4000, 0x2000_0000] {
                            let args = [a0, a1, a2, a0, a1, a2];
                            assert_eq!(
                                eval(&ours, nr, args),
                                eval(&slow, nr, args),
                                "nr {nr} args {args:?}"
                            );
                        }
                    }
                }
            }
            // Most syscalls are answered within a few instructions.
            assert_eq!(eval(&ours, libc::SYS_getpid as u32, [0; 6]), RET_ALLOW);
            assert_eq!(
                eval(&ours, libc::SYS_kexec_load as u32, [0; 6]),
                RET_ERRNO | 1
            );
            let ns = [0x1000_0000, 0, 0, 0, 0, 0];
            assert_eq!(eval(&ours, libc::SYS_clone as u32, ns), RET_ERRNO | 1);
            // CLONE_PARENT would make the child the guard's, outside the run.
            let parent = [0x8000 | 0x11, 0, 0, 0, 0, 0];
            assert_eq!(eval(&ours, libc::SYS_clone as u32, parent), RET_ERRNO | 1);
            assert_eq!(
                eval(&ours, libc::SYS_clone as u32, [0x11, 0, 0, 0, 0, 0]),
                RET_ALLOW
            );
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
            let filter = build(&p).unwrap();
            assert!(
                filter.prog.len() > 100,
                "{name}: {} insns",
                filter.prog.len()
            );
            let ro = parts(&p).contains(&"metadata-read-only");
            assert_eq!(ro, name != "workspace-write", "{name}");
        }
    }
}

/// The keys of a run's setsid: `key` itself, then every one-bit change of it, zeros, and
/// the key's words in other registers, which must all be refused.
fn wrong_keys(key: &SessionKey) -> Vec<[u64; 6]> {
    let mut out = vec![[0; 6], [u64::MAX; 6]];
    for word in 0..4 {
        for bit in 0..64 {
            let mut k = [key[0], key[1], key[2], key[3], 0, 0];
            k[word] ^= 1 << bit;
            out.push(k);
        }
    }
    // Shifted by one register, and the key in the last four instead of the first four.
    out.push([0, key[0], key[1], key[2], key[3], 0]);
    out.push([0, 0, key[0], key[1], key[2], key[3]]);
    out.push([key[1], key[0], key[2], key[3], 0, 0]);
    out
}

/// The filter a spawner thread holds answers every syscall as the JSON does, except setsid
/// with the filter's own session key, which the child uses before exec.
#[test]
fn the_run_filter_answers_as_the_json_but_for_the_keyed_setsid() {
    let dir = tempfile::tempdir().unwrap();
    for (name, spec) in builtin_profiles() {
        let mut p = spec.resolve(dir.path()).unwrap();
        for net in [NetworkSpec::None, NetworkSpec::Ports(vec![443])] {
            p.network = net;
            let whole = compile(&parts(&p), None).unwrap();
            let filter = build(&p).unwrap();
            let sample = [
                1023,
                1024,
                X32_SYSCALL_BIT - 1,
                X32_SYSCALL_BIT,
                X32_SYSCALL_BIT + 112,
                u32::MAX,
            ];
            for nr in (0..520).chain(sample) {
                for a0 in ARGS {
                    for a1 in [0, 6, 0x2000_0000, u64::MAX] {
                        let args = [a0, a1, a0, a1, a0, a1];
                        assert_eq!(
                            eval(&filter.prog, nr, args),
                            eval(&whole, nr, args),
                            "{name}: nr {nr} args {args:?}"
                        );
                    }
                }
            }
            let setsid = libc::SYS_setsid as u32;
            let k = filter.session_key;
            let keyed = [k[0], k[1], k[2], k[3], 0, 0];
            assert_eq!(eval(&filter.prog, setsid, keyed), RET_ALLOW, "{name}");
            assert_eq!(eval(&whole, setsid, keyed), RET_ERRNO | 1, "{name}");
            for args in wrong_keys(&k) {
                assert_eq!(
                    eval(&filter.prog, setsid, args),
                    RET_ERRNO | 1,
                    "{name}: {args:x?}"
                );
            }
            // The key opens setsid only, not setpgid or any other call.
            for nr in [libc::SYS_setpgid as u32, libc::SYS_ptrace as u32] {
                assert_eq!(eval(&filter.prog, nr, keyed), RET_ERRNO | 1, "{name}");
            }
            // The child's own limits go through setrlimit(2); prlimit64 stays denied.
            assert_eq!(
                eval(&filter.prog, libc::SYS_setrlimit as u32, [0; 6]),
                RET_ALLOW
            );
        }
    }
}

/// Each filter gets its own key, from getrandom (never zero in practice, never shared).
#[test]
fn session_keys_are_random_per_filter() {
    let a = new_session_key().unwrap();
    let b = new_session_key().unwrap();
    assert_ne!(a, b);
    assert_ne!(a, [0; 4]);
}
