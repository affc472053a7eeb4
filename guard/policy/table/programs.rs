//! The program lists the command table classifies by: which programs read, write,
//! delete, enumerate, escalate, reach the network or interpret code.

use crate::policy::shell::SHELLS;
use foldhash::HashMap;
use std::sync::LazyLock;

/// Programs that take no file operands: their words are never paths.
pub(super) const NO_FILES: &[&str] = &[
    "echo",
    "printf",
    "true",
    "false",
    ":",
    "test",
    "[",
    "[[",
    "sleep",
    "seq",
    "date",
    "whoami",
    "id",
    "uname",
    "pwd",
    "hostname",
    "uptime",
    "groups",
    "nproc",
    "arch",
    "tty",
    "locale",
    "set",
    "shopt",
    "export",
    "declare",
    "local",
    "readonly",
    "typeset",
    "unset",
    "alias",
    "unalias",
    "hash",
    "type",
    "which",
    "command",
    "wait",
    "jobs",
    "read",
    "exit",
    "logout",
    "return",
    "cd",
    "pushd",
    "popd",
    "dirs",
    "basename",
    "dirname",
    "expr",
    "let",
    "yes",
    "free",
    "ps",
    "top",
    "htop",
    "getconf",
    "lsb_release",
    "umask",
    "ulimit",
    "history",
    "bg",
    "fg",
    "exec",
    "nohup",
    "time",
    "shift",
    "break",
    "continue",
    "caller",
    "times",
    "help",
    "bc",
    "cal",
];

/// Programs that list or describe files (enumeration).
pub(super) const ENUMERATE: &[&str] = &[
    "ls", "dir", "vdir", "du", "tree", "stat", "file", "realpath", "readlink", "df", "lsblk",
    "findmnt", "lsof", "pgrep", "whereis",
];

/// Programs that read their file operands.
pub(super) const READ: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "wc",
    "less",
    "more",
    "most",
    "sort",
    "uniq",
    "cut",
    "tr",
    "diff",
    "diff3",
    "cmp",
    "comm",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "base64",
    "base32",
    "jq",
    "yq",
    "column",
    "fold",
    "fmt",
    "paste",
    "join",
    "expand",
    "unexpand",
    "rev",
    "zcat",
    "bzcat",
    "xzcat",
    "zless",
    "look",
    "iconv",
    "numfmt",
    "csplit",
    "split",
    "shuf",
    "tsort",
    "ptx",
    "pr",
];

pub(super) const GREPS: &[&str] = &[
    "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "git-grep",
];

/// Programs that create or modify their operands.
pub(super) const WRITE_ALL: &[&str] = &[
    "touch", "mkdir", "mktemp", "truncate", "tee", "mkfifo", "mknod", "mv",
];

pub(super) const DELETE: &[&str] = &["rm", "rmdir", "unlink", "shred"];

pub(super) const PRIVILEGE: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "chmod",
    "chown",
    "chgrp",
    "setcap",
    "setfacl",
    "chattr",
    "apt",
    "apt-get",
    "aptitude",
    "dpkg",
    "rpm",
    "yum",
    "dnf",
    "apk",
    "pacman",
    "zypper",
    "snap",
    "mount",
    "umount",
    "chroot",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "passwd",
    "chpasswd",
    "visudo",
    "pkexec",
    "nsenter",
    "unshare",
    "capsh",
    "insmod",
    "rmmod",
    "modprobe",
    "iptables",
    "ip6tables",
    "nft",
    "sysctl",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "at",
    "batch",
    "launchctl",
    "runuser",
    "setpriv",
    "newgrp",
    "sg",
];

pub(super) const NETWORK: &[&str] = &[
    "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "tftp", "rsh",
];

pub(super) const INTERPRETERS: &[&str] = &[
    "node",
    "nodejs",
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "ruby",
    "perl",
    "php",
    "deno",
    "lua",
    "luajit",
    "Rscript",
    "tsx",
    "ts-node",
    "osascript",
    "pwsh",
    "tclsh",
    "irb",
    "julia",
    "R",
];

/// Which list of this file (or [`SHELLS`]) a program is in. The lists are disjoint (tested),
/// so one map lookup replaces scanning each list in turn, per segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Listed {
    NoFiles,
    Enumerate,
    Read,
    Grep,
    WriteAll,
    Delete,
    Network,
    Privilege,
    Shell,
    Interpreter,
}

const LISTS: [(Listed, &[&str]); 10] = [
    (Listed::NoFiles, NO_FILES),
    (Listed::Enumerate, ENUMERATE),
    (Listed::Read, READ),
    (Listed::Grep, GREPS),
    (Listed::WriteAll, WRITE_ALL),
    (Listed::Delete, DELETE),
    (Listed::Network, NETWORK),
    (Listed::Privilege, PRIVILEGE),
    (Listed::Shell, SHELLS),
    (Listed::Interpreter, INTERPRETERS),
];

/// The list `program` is in, if any.
pub(super) fn listed(program: &str) -> Option<Listed> {
    static MAP: LazyLock<HashMap<&'static str, Listed>> = LazyLock::new(|| {
        LISTS
            .iter()
            .flat_map(|(kind, names)| names.iter().map(move |n| (*n, *kind)))
            .collect()
    });
    MAP.get(program).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Disjoint lists make the map answer what the old first-list-wins scan answered.
    #[test]
    fn lists_are_disjoint_and_all_mapped() {
        let mut seen = std::collections::HashMap::new();
        for (kind, names) in LISTS {
            for n in names {
                if let Some(other) = seen.insert(*n, kind) {
                    panic!("{n} is in both {other:?} and {kind:?}");
                }
                assert_eq!(listed(n), Some(kind), "{n}");
            }
        }
        assert_eq!(listed("no-such-program"), None);
    }
}
