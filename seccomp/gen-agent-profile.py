#!/usr/bin/env python3
"""Derives seccomp/agent-profile.json (OCI/Docker format) from the container engine's default
profile (/usr/share/containers/seccomp.json, the moby default in containers-common format):
its unconditional allow-list minus the dangerous set, with clone namespace flags masked,
clone3 -> ENOSYS (glibc falls back to clone only on ENOSYS), and statx/inotify kept so Node,
ls and fs.watch work. Capability-conditional entries are dropped (the agent runs cap_drop ALL).
Usage: seccomp/gen-agent-profile.py [/usr/share/containers/seccomp.json] > seccomp/agent-profile.json
"""
import json
import sys

DANGEROUS = {
    "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount", "umount2",
    "fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree", "mount_setattr",
    "unshare", "setns", "bpf", "keyctl", "add_key", "request_key", "kexec_load",
    "kexec_file_load", "open_by_handle_at", "name_to_handle_at", "init_module", "finit_module",
    "delete_module", "iopl", "ioperm", "swapon", "swapoff", "syslog", "pivot_root", "chroot",
    "userfaultfd", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "clone", "clone3", "personality", "acct", "quotactl", "lookup_dcookie", "vhangup",
    "settimeofday", "clock_settime", "clock_settime64", "stime", "reboot", "sethostname",
    "setdomainname", "kcmp", "process_madvise", "fanotify_init", "bdflush", "nfsservctl",
    "uselib", "vm86", "vm86old", "_sysctl", "sysfs", "ustat", "get_kernel_syms",
    "create_module", "query_module", "afs_syscall", "migrate_pages", "move_pages",
}
REQUIRED = {"statx", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
            "close_range", "faccessat2", "rseq", "epoll_pwait2"}
NS_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

src = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"))
allow = set()
for entry in src["syscalls"]:
    if entry["action"] != "SCMP_ACT_ALLOW" or entry.get("args") or entry.get("includes"):
        continue
    allow.update(entry["names"])
missing = REQUIRED - allow
if missing:
    sys.exit(f"source profile lacks {sorted(missing)}")
allow -= DANGEROUS
profile = {
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 1,
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "syscalls": [
        {"names": sorted(allow), "action": "SCMP_ACT_ALLOW"},
        {"names": ["arch_prctl", "modify_ldt", "socket"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": NS_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
    ] + [
        {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": v, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]}
        for v in (0, 8, 0x20000, 0x20008, 0xFFFFFFFF)
    ],
}
json.dump(profile, sys.stdout, indent=1)
print()
