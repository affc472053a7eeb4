//! Queries whose answer is certain although the program is not a plain reader: a build
//! tool's or compiler's version, the socket, address and CPU listings (`ss`, `ip -br addr`,
//! `lscpu`), and the dump programs (`hexdump`, `xxd`) with the options that only format.
//! Anything else about these programs falls through to the table's usual rows.

use super::judge::read_files;
use super::paths_check::Checker;
use super::Classification;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

/// Compilers and build tools whose lone `--version` (or `-V`, `-vV`, `-version`) only prints.
/// Not here, because the oracle saw them do more: the node package managers load ~/.npmrc
/// (registry tokens) even for `--version`, and a JVM (java, javac, kotlinc, scalac, gradle,
/// mvn) writes /tmp/hsperfdata_USER outside the private tmp; dotnet and bazel start
/// first-run set-up or a server.
const VERSION_TOOLS: &[&str] = &[
    "gcc",
    "cc",
    "g++",
    "c++",
    "clang",
    "clang++",
    "rustc",
    "cargo",
    "make",
    "gmake",
    "cmake",
    "ninja",
    "meson",
    "node",
    "python3",
    "python",
    "ld",
    "as",
    "go",
    "rustup",
    "tsc",
    "deno",
    "swift",
    "zig",
    "ruby",
    "perl",
    "php",
    "ghc",
    "pkg-config",
    "autoconf",
    "automake",
    "libtool",
    "gdb",
    "lldb",
    "git",
];

const VERSION_FLAGS: &[&str] = &["--version", "-V", "-vV", "-version", "version"];

fn vals(args: &[Word]) -> Option<Vec<&str>> {
    args.iter().map(|w| w.value.as_deref()).collect()
}

/// Judges `p args` when it is one of these certain queries; false when the table decides.
pub(super) fn certain_query(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    args: &[Word],
) -> bool {
    let Some(a) = vals(args) else {
        return false;
    };
    let say = |c: &mut Classification, what: &str| {
        c.add(Category::Enumerate, "enumerate", format!("`{p}` {what}"));
        true
    };
    match p {
        _ if VERSION_TOOLS.contains(&p) && a.len() == 1 && VERSION_FLAGS.contains(&a[0]) => {
            // `go version` is the subcommand; `version` alone is not another tool's flag.
            (a[0] != "version" || p == "go") && say(c, "prints its version")
        }
        "ss" if ss_lists(&a) => say(c, "lists sockets"),
        "ip" if ip_shows(&a) => say(c, "shows network configuration"),
        "lscpu" if a.iter().all(|o| LSCPU_FLAGS.contains(o)) => say(c, "describes the CPU"),
        "hexdump" | "xxd" => match dump_files(p, args) {
            Some(files) => {
                c.add(Category::Read, "read", format!("`{p}` prints files in hex"));
                read_files(seg, k, c, &files);
                true
            }
            None => false,
        },
        _ => false,
    }
}

const LSCPU_FLAGS: &[&str] = &[
    "-J",
    "--json",
    "-e",
    "--extended",
    "-p",
    "--parse",
    "-a",
    "--all",
    "-b",
    "--online",
    "-c",
    "--offline",
    "-x",
    "--hex",
    "-y",
    "--physical",
    "-B",
    "--bytes",
    "-C",
    "--caches",
];

/// `ss` with only flags that list (no `-K` kill, `-D` dump file, `-F` filter file, no filter;
/// no `-r`/`--resolve`, which asks DNS for every address).
fn ss_lists(a: &[&str]) -> bool {
    a.iter().all(|o| {
        o.strip_prefix('-')
            .filter(|r| !r.starts_with('-') && !r.is_empty())
            .is_some_and(|r| r.chars().all(|ch| "tulnpaswxe46ioHmZO0".contains(ch)))
            || matches!(
                *o,
                "--tcp"
                    | "--udp"
                    | "--listening"
                    | "--numeric"
                    | "--processes"
                    | "--all"
                    | "--summary"
                    | "--extended"
                    | "--info"
                    | "--memory"
                    | "--no-header"
                    | "--oneline"
                    | "--ipv4"
                    | "--ipv6"
            )
    })
}

/// `ip [-br|-4|-6|-c|-d|-s|-j|-p|-o…] OBJECT [show|list|ls]` for the objects that only show.
fn ip_shows(a: &[&str]) -> bool {
    let flags = [
        "-br", "-brief", "-4", "-6", "-c", "-color", "-d", "-details", "-s", "-stats", "-j",
        "-json", "-p", "-pretty", "-o", "-oneline", "-h", "-human",
    ];
    let mut i = 0;
    while i < a.len() && a[i].starts_with('-') {
        if !flags.contains(&a[i]) {
            return false;
        }
        i += 1;
    }
    let objects = [
        "a",
        "addr",
        "address",
        "l",
        "link",
        "r",
        "route",
        "n",
        "neigh",
        "neighbour",
        "rule",
    ];
    let Some(obj) = a.get(i) else {
        return false;
    };
    objects.contains(obj)
        && match a.get(i + 1..) {
            Some([]) | None => true,
            Some([verb]) => matches!(*verb, "show" | "list" | "ls" | "lst"),
            Some([verb, "dev", _]) => matches!(*verb, "show" | "list" | "ls"),
            _ => false,
        }
}

/// The files `hexdump`/`xxd` read when every option only formats; `None` otherwise
/// (`xxd -r`, an output file, `hexdump -f FILE` are the table's to judge).
fn dump_files<'a>(p: &str, args: &'a [Word]) -> Option<Vec<&'a Word>> {
    let (flags, valued): (&[&str], &[&str]) = if p == "hexdump" {
        (
            &[
                "-b",
                "-c",
                "-C",
                "-d",
                "-o",
                "-x",
                "-v",
                "--canonical",
                "--no-squeezing",
            ],
            &["-e", "-n", "-s", "--format", "--length", "--skip"],
        )
    } else {
        (
            &[
                "-a",
                "-b",
                "-C",
                "-e",
                "-E",
                "-i",
                "-p",
                "-ps",
                "-u",
                "-d",
                "-autoskip",
                "-bits",
                "-include",
                "-plain",
                "-postscript",
                "-uppercase",
            ],
            &[
                "-c",
                "-cols",
                "-g",
                "-groupsize",
                "-l",
                "-len",
                "-o",
                "-s",
                "-seek",
                "-n",
                "-name",
            ],
        )
    };
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].value.as_deref()?;
        if flags.contains(&a) {
        } else if valued.contains(&a) {
            i += 1;
            args.get(i)?.value.as_ref()?;
        } else if a.starts_with('-') && a != "-" {
            return None;
        } else {
            files.push(&args[i]);
        }
        i += 1;
    }
    // xxd's second operand is its output file.
    (p != "xxd" || files.len() <= 1).then_some(files)
}
