//! Hand-written grammars for programs whose `--help` is not GNU-shaped (tree, jq, less,
//! strings, hostname, ps, top, awk, the list modes of tar and unzip, and small listers).
//! Only the options listed here are understood; any other word gates the command.

use super::grammar::{o, Arg::*, Eff::*, Grammar};
use crate::policy::verdict::Category;

/// Programs with no options worth allowing: any option gates.
pub(super) static G_NONE: Grammar = Grammar {
    permute: true,
    numeric: false,
    opts: &[],
};

/// `tree` 2.x (`tree --help`).
#[rustfmt::skip]
pub(super) static G_TREE: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "", No, Safe), o('d', "", No, Safe), o('l', "", No, Safe), o('f', "", No, Safe),
    o('x', "", No, Safe), o('L', "", Req, Safe),
    o('R', "", No, Gate(Category::Write, "writes an HTML file per directory level")),
    o('P', "", Req, Safe), o('I', "", Req, Safe), o('\0', "gitignore", No, Safe),
    o('\0', "gitfile", Req, Read), o('\0', "ignore-case", No, Safe), o('\0', "matchdirs", No, Safe),
    o('\0', "metafirst", No, Safe), o('\0', "prune", No, Safe), o('\0', "info", No, Safe),
    o('\0', "infofile", Req, Read), o('\0', "noreport", No, Safe), o('\0', "charset", Req, Safe),
    o('\0', "filelimit", Req, Safe), o('\0', "timefmt", Req, Safe), o('o', "", Req, Write),
    o('q', "", No, Safe), o('N', "", No, Safe), o('Q', "", No, Safe), o('p', "", No, Safe),
    o('u', "", No, Safe), o('g', "", No, Safe), o('s', "", No, Safe), o('h', "", No, Safe),
    o('\0', "si", No, Safe), o('\0', "du", No, Safe), o('D', "", No, Safe),
    o('\0', "inodes", No, Safe), o('\0', "device", No, Safe), o('F', "", No, Safe),
    o('v', "", No, Safe), o('t', "", No, Safe), o('c', "", No, Safe), o('U', "", No, Safe),
    o('r', "", No, Safe), o('\0', "dirsfirst", No, Safe), o('\0', "filesfirst", No, Safe),
    o('\0', "sort", Req, Safe), o('i', "", No, Safe), o('A', "", No, Safe), o('S', "", No, Safe),
    o('n', "", No, Safe), o('C', "", No, Safe), o('X', "", No, Safe), o('J', "", No, Safe),
    o('H', "", Req, Safe), o('T', "", Req, Safe), o('\0', "nolinks", No, Safe),
    o('\0', "fromfile", No, Safe), o('\0', "fromtabfile", No, Safe), o('\0', "fflinks", No, Safe),
    o('\0', "hintro", Req, Read), o('\0', "houtro", Req, Read), o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `jq` 1.6/1.7. The filter is judged in the handler (`import`/`include` read modules).
#[rustfmt::skip]
pub(super) static G_JQ: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('n', "null-input", No, Safe), o('r', "raw-output", No, Safe), o('j', "join-output", No, Safe),
    o('a', "ascii-output", No, Safe), o('c', "compact-output", No, Safe), o('s', "slurp", No, Safe),
    o('e', "exit-status", No, Safe), o('S', "sort-keys", No, Safe), o('C', "color-output", No, Safe),
    o('M', "monochrome-output", No, Safe), o('R', "raw-input", No, Safe), o('h', "help", No, Safe),
    o('V', "version", No, Safe), o('\0', "tab", No, Safe), o('\0', "indent", Req, Safe),
    o('\0', "arg", Two, Safe), o('\0', "argjson", Two, Safe), o('\0', "slurpfile", Two, Read),
    o('\0', "rawfile", Two, Read), o('\0', "args", No, Check), o('\0', "jsonargs", No, Check),
    o('f', "from-file", Req, ReadList("reads its program from a file")),
    o('L', "", Req, Gate(Category::Unanalysable, "loads modules from a directory")),
    o('\0', "seq", No, Safe), o('\0', "stream", No, Safe), o('\0', "stream-errors", No, Safe),
    o('\0', "raw-output0", No, Safe), o('\0', "unbuffered", No, Safe),
    o('\0', "build-configuration", No, Safe),
]};

/// `less` (non-interactive use prints like `cat`); log files, lesskey and tag files gate.
#[rustfmt::skip]
pub(super) static G_LESS: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('N', "LINE-NUMBERS", No, Safe), o('n', "line-numbers", No, Safe), o('S', "chop-long-lines", No, Safe),
    o('R', "RAW-CONTROL-CHARS", No, Safe), o('r', "raw-control-chars", No, Safe),
    o('F', "quit-if-one-screen", No, Safe), o('X', "no-init", No, Safe), o('i', "ignore-case", No, Safe),
    o('I', "IGNORE-CASE", No, Safe), o('M', "LONG-PROMPT", No, Safe), o('m', "long-prompt", No, Safe),
    o('e', "quit-at-eof", No, Safe), o('E', "QUIT-AT-EOF", No, Safe), o('q', "quiet", No, Safe),
    o('Q', "QUIET", No, Safe), o('s', "squeeze-blank-lines", No, Safe), o('J', "status-column", No, Safe),
    o('g', "hilite-search", No, Safe), o('G', "HILITE-SEARCH", No, Safe), o('w', "hilite-unread", No, Safe),
    o('W', "HILITE-UNREAD", No, Safe), o('x', "tabs", Req, Safe), o('z', "window", Req, Safe),
    o('j', "jump-target", Req, Safe), o('#', "shift", Req, Safe), o('K', "quit-on-intr", No, Safe),
    o('~', "tilde", No, Safe), o('L', "no-lessopen", No, Safe), o('u', "underline-special", No, Safe),
    o('U', "UNDERLINE-SPECIAL", No, Safe), o('V', "version", No, Safe), o('\0', "help", No, Safe),
    o('\0', "follow-name", No, Safe), o('\0', "mouse", No, Safe), o('\0', "no-keypad", No, Safe),
]};

/// binutils `strings` (an `@FILE` operand reads options from FILE: gated by the handler).
#[rustfmt::skip]
pub(super) static G_STRINGS: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('a', "all", No, Safe), o('d', "data", No, Safe), o('f', "print-file-name", No, Safe),
    o('n', "bytes", Req, Safe), o('t', "radix", Req, Safe), o('o', "", No, Safe),
    o('e', "encoding", Req, Safe), o('w', "include-all-whitespace", No, Safe),
    o('s', "output-separator", Req, Safe), o('T', "target", Req, Safe), o('U', "unicode", Req, Safe),
    o('h', "help", No, Safe), o('v', "version", No, Safe),
]};

/// net-tools `hostname`: an operand or `-F`/`-b` sets the name (handler).
#[rustfmt::skip]
pub(super) static G_HOSTNAME: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "alias", No, Safe), o('A', "all-fqdns", No, Safe), o('d', "domain", No, Safe),
    o('f', "fqdn", No, Safe), o('\0', "long", No, Safe), o('i', "ip-address", No, Safe),
    o('I', "all-ip-addresses", No, Safe), o('s', "short", No, Safe), o('y', "yp", No, Safe),
    o('\0', "nis", No, Safe), o('V', "version", No, Safe), o('h', "help", No, Safe),
    o('v', "verbose", No, Safe),
    o('b', "boot", No, Gate(Category::Privilege, "sets the host name")),
    o('F', "file", Req, Gate(Category::Privilege, "sets the host name from a file")),
]};

/// procps `top` in batch mode.
#[rustfmt::skip]
pub(super) static G_TOP: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "", No, Safe), o('c', "", No, Safe), o('H', "", No, Safe), o('i', "", No, Safe),
    o('S', "", No, Safe), o('s', "", No, Safe), o('1', "", No, Safe), o('d', "", Req, Safe),
    o('n', "", Req, Safe), o('o', "", Req, Safe), o('p', "", Req, Safe), o('u', "", Req, Safe),
    o('U', "", Req, Safe), o('E', "", Req, Safe), o('e', "", Req, Safe), o('w', "", Opt, Safe),
    o('h', "", No, Safe), o('v', "", No, Safe),
]};

/// procps `ps`, dashed (UNIX and GNU) options; BSD words are judged by the handler.
#[rustfmt::skip]
pub(super) static G_PS: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('A', "", No, Safe), o('a', "", No, Safe), o('d', "", No, Safe), o('e', "", No, Safe),
    o('N', "deselect", No, Safe), o('T', "", No, Safe), o('r', "", No, Safe), o('x', "", No, Safe),
    o('f', "", No, Safe), o('F', "", No, Safe), o('l', "", No, Safe), o('j', "", No, Safe),
    o('L', "", No, Safe), o('m', "", No, Safe), o('H', "", No, Safe), o('w', "", No, Safe),
    o('y', "", No, Safe), o('c', "", No, Safe), o('M', "", No, Safe), o('Z', "context", No, Safe),
    o('C', "", Req, Safe), o('G', "Group", Req, Safe), o('g', "group", Req, Safe),
    o('o', "format", Req, Safe), o('O', "", Req, Safe), o('p', "pid", Req, Safe),
    o('q', "quick-pid", Req, Safe), o('s', "sid", Req, Safe), o('t', "tty", Req, Safe),
    o('u', "user", Req, Safe), o('U', "User", Req, Safe), o('k', "sort", Req, Safe),
    o('\0', "ppid", Req, Safe), o('\0', "cols", Req, Safe), o('\0', "columns", Req, Safe),
    o('\0', "width", Req, Safe), o('\0', "lines", Req, Safe), o('\0', "rows", Req, Safe),
    o('\0', "headers", No, Safe), o('\0', "no-headers", No, Safe), o('\0', "forest", No, Safe),
    o('\0', "cumulative", No, Safe), o('\0', "signames", No, Safe), o('\0', "help", Opt, Safe),
    o('V', "version", No, Safe), o('\0', "info", No, Safe),
]};

/// gawk and mawk. Program text (`-e`, operands, `-f` files) is judged by the handler.
#[rustfmt::skip]
pub(super) static G_AWK: Grammar = Grammar { permute: false, numeric: false, opts: &[
    o('F', "field-separator", Req, Safe), o('v', "assign", Req, Safe), o('f', "file", Req, Check),
    o('e', "source", Req, Check), o('b', "characters-as-bytes", No, Safe), o('c', "traditional", No, Safe),
    o('C', "copyright", No, Safe), o('d', "dump-variables", Opt, Check),
    o('D', "debug", Opt, Gate(Category::RunCode, "starts the interactive debugger")),
    o('E', "exec", Req, Gate(Category::RunCode, "runs an awk program file")),
    o('g', "gen-pot", No, Safe), o('h', "help", No, Safe),
    o('i', "include", Req, Gate(Category::RunCode, "loads an awk library (`inplace` edits files)")),
    o('I', "trace", No, Safe), o('k', "csv", No, Safe),
    o('l', "load", Req, Gate(Category::RunCode, "loads a shared library")),
    o('L', "lint", Opt, Safe), o('M', "bignum", No, Safe), o('N', "use-lc-numeric", No, Safe),
    o('n', "non-decimal-data", No, Safe), o('o', "pretty-print", Opt, Check), o('O', "optimize", No, Safe),
    o('p', "profile", Opt, Check), o('P', "posix", No, Safe), o('r', "re-interval", No, Safe),
    o('s', "no-optimize", No, Safe), o('S', "sandbox", No, Safe), o('t', "lint-old", No, Safe),
    o('V', "version", No, Safe), o('W', "", Req, Check),
]};

/// `tar` listing (`-t`) and extraction to standard output (`-xO`); any other mode is
/// judged as a write by the archive handler.
#[rustfmt::skip]
pub(super) static G_TAR_READ: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('t', "list", No, Check), o('x', "extract", No, Check), o('\0', "get", No, Check),
    o('O', "to-stdout", No, Check), o('v', "verbose", No, Safe), o('z', "gzip", No, Safe),
    o('\0', "gunzip", No, Safe), o('\0', "ungzip", No, Safe), o('j', "bzip2", No, Safe),
    o('J', "xz", No, Safe), o('\0', "zstd", No, Safe), o('\0', "lzip", No, Safe),
    o('\0', "lzma", No, Safe), o('\0', "lzop", No, Safe), o('a', "auto-compress", No, Safe),
    o('f', "file", Req, Check), o('\0', "force-local", No, Safe), o('\0', "wildcards", No, Safe),
    o('\0', "no-wildcards", No, Safe), o('\0', "anchored", No, Safe), o('\0', "no-anchored", No, Safe),
    o('\0', "ignore-case", No, Safe), o('\0', "exclude", Req, Safe), o('\0', "exclude-vcs", No, Safe),
    o('\0', "full-time", No, Safe), o('\0', "utc", No, Safe), o('\0', "numeric-owner", No, Safe),
    o('\0', "quoting-style", Req, Safe), o('\0', "show-transformed-names", No, Safe),
    o('\0', "show-stored-names", No, Safe), o('R', "block-number", No, Safe),
    o('i', "ignore-zeros", No, Safe), o('\0', "occurrence", Opt, Safe), o('\0', "null", No, Safe),
    o('\0', "wildcards-match-slash", No, Safe), o('\0', "no-wildcards-match-slash", No, Safe),
    o('T', "files-from", Req, ReadList("reads the member names from a file")),
    o('X', "exclude-from", Req, Read), o('\0', "strip-components", Req, Safe),
    o('\0', "transform", Req, Safe), o('\0', "xform", Req, Safe), o('b', "blocking-factor", Req, Safe),
    o('B', "read-full-records", No, Safe), o('\0', "warning", Req, Safe),
    o('\0', "checkpoint", Opt, Safe), o('\0', "checkpoint-action", Req, Exec),
    o('I', "use-compress-program", Req, Exec), o('\0', "to-command", Req, Exec),
    o('F', "info-script", Req, Exec), o('\0', "new-volume-script", Req, Exec),
    o('\0', "rsh-command", Req, Exec), o('\0', "rmt-command", Req, Exec),
    o('\0', "index-file", Req, Write), o('\0', "help", No, Safe), o('\0', "version", No, Safe),
]};

/// `unzip` listing, testing and printing modes (`-l -v -t -z -p -c`).
#[rustfmt::skip]
pub(super) static G_UNZIP_READ: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('l', "", No, Check), o('v', "", No, Check), o('t', "", No, Check), o('z', "", No, Check),
    o('p', "", No, Check), o('c', "", No, Check), o('q', "", No, Safe), o('C', "", No, Safe),
    o('a', "", No, Safe), o('b', "", No, Safe), o('P', "", Req, Safe), o('x', "", No, Safe),
]};

/// gzip-family `zcat`/`bzcat`/`xzcat`.
#[rustfmt::skip]
pub(super) static G_ZCAT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('f', "force", No, Safe), o('q', "quiet", No, Safe), o('v', "verbose", No, Safe),
    o('h', "help", No, Safe), o('V', "version", No, Safe),
]};

/// util-linux `look`: the first operand is the string, the second the file.
#[rustfmt::skip]
pub(super) static G_LOOK: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "alternative", No, Safe), o('b', "", No, Safe), o('d', "alphanum", No, Safe),
    o('f', "ignore-case", No, Safe), o('t', "terminate", Req, Safe), o('h', "help", No, Safe),
    o('V', "version", No, Safe),
]};

/// procps `pgrep` (not `--env`, which matches other processes' environments).
#[rustfmt::skip]
pub(super) static G_PGREP: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('l', "list-name", No, Safe), o('a', "list-full", No, Safe), o('f', "full", No, Safe),
    o('x', "exact", No, Safe), o('n', "newest", No, Safe), o('o', "oldest", No, Safe),
    o('c', "count", No, Safe), o('v', "inverse", No, Safe), o('w', "lightweight", No, Safe),
    o('i', "ignore-case", No, Safe), o('d', "delimiter", Req, Safe), o('u', "euid", Req, Safe),
    o('U', "uid", Req, Safe), o('g', "pgroup", Req, Safe), o('G', "group", Req, Safe),
    o('P', "parent", Req, Safe), o('s', "session", Req, Safe), o('t', "terminal", Req, Safe),
    o('F', "pidfile", Req, Read), o('r', "runstates", Req, Safe), o('h', "help", No, Safe),
    o('V', "version", No, Safe),
]};

/// `whereis`, `lsblk`, `findmnt`, `lsof`: the common listing flags.
#[rustfmt::skip]
pub(super) static G_WHEREIS: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "", No, Safe), o('m', "", No, Safe), o('s', "", No, Safe), o('u', "", No, Safe),
    o('l', "", No, Safe),
]};
#[rustfmt::skip]
pub(super) static G_LSBLK: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "all", No, Safe), o('b', "bytes", No, Safe), o('d', "nodeps", No, Safe),
    o('f', "fs", No, Safe), o('l', "list", No, Safe), o('m', "perms", No, Safe),
    o('n', "noheadings", No, Safe), o('o', "output", Req, Safe), o('p', "paths", No, Safe),
    o('r', "raw", No, Safe), o('S', "scsi", No, Safe), o('t', "topology", No, Safe),
    o('J', "json", No, Safe), o('O', "output-all", No, Safe), o('e', "exclude", Req, Safe),
    o('I', "include", Req, Safe), o('x', "sort", Req, Safe), o('h', "help", No, Safe),
]};
#[rustfmt::skip]
pub(super) static G_FINDMNT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('l', "list", No, Safe), o('n', "noheadings", No, Safe), o('o', "output", Req, Safe),
    o('t', "types", Req, Safe), o('J', "json", No, Safe), o('r', "raw", No, Safe),
    o('a', "ascii", No, Safe), o('D', "df", No, Safe), o('T', "target", Req, Safe),
    o('S', "source", Req, Safe), o('M', "mountpoint", Req, Safe), o('k', "kernel", No, Safe),
    o('m', "mtab", No, Safe), o('s', "fstab", No, Safe), o('F', "tab-file", Req, Read),
    o('h', "help", No, Safe),
]};
#[rustfmt::skip]
pub(super) static G_LSOF: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('n', "", No, Safe), o('P', "", No, Safe), o('t', "", No, Safe), o('a', "", No, Safe),
    o('l', "", No, Safe), o('U', "", No, Safe), o('w', "", No, Safe), o('i', "", Opt, Safe),
    o('p', "", Req, Safe), o('u', "", Req, Safe), o('c', "", Req, Safe), o('g', "", Req, Safe),
]};
