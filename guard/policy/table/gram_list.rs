//! Generated from the programs' `--help` (GNU coreutils 9.1, grep 3.8, sed 4.9, diffutils 3.8,
//! file 5.44, ripgrep 13) by gen/grammar-gen.py, then reviewed: every option that reads,
//! writes or runs something other than its operands has an effect other than `Safe`.
//! Regenerate and diff when a tool gains options; an option missing here is gated, never allowed.

use super::grammar::{o, Arg::*, Eff::*, Grammar};
use crate::policy::verdict::Category;
/// `md5sum` (from `md5sum --help`).
#[rustfmt::skip]
pub(super) static G_MD5SUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "binary", No, Safe),
    o('c', "check", No, Check),
    o('\0', "tag", No, Safe),
    o('t', "text", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `sha1sum` (from `sha1sum --help`).
#[rustfmt::skip]
pub(super) static G_SHA1SUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "binary", No, Safe),
    o('c', "check", No, Check),
    o('\0', "tag", No, Safe),
    o('t', "text", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `sha224sum` (from `sha224sum --help`).
#[rustfmt::skip]
pub(super) static G_SHA224SUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "binary", No, Safe),
    o('c', "check", No, Check),
    o('\0', "tag", No, Safe),
    o('t', "text", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `sha256sum` (from `sha256sum --help`).
#[rustfmt::skip]
pub(super) static G_SHA256SUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "binary", No, Safe),
    o('c', "check", No, Check),
    o('\0', "tag", No, Safe),
    o('t', "text", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `sha384sum` (from `sha384sum --help`).
#[rustfmt::skip]
pub(super) static G_SHA384SUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "binary", No, Safe),
    o('c', "check", No, Check),
    o('\0', "tag", No, Safe),
    o('t', "text", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `sha512sum` (from `sha512sum --help`).
#[rustfmt::skip]
pub(super) static G_SHA512SUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "binary", No, Safe),
    o('c', "check", No, Check),
    o('\0', "tag", No, Safe),
    o('t', "text", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `b2sum` (from `b2sum --help`).
#[rustfmt::skip]
pub(super) static G_B2SUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "binary", No, Safe),
    o('c', "check", No, Check),
    o('l', "length", Req, Safe),
    o('\0', "tag", No, Safe),
    o('t', "text", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `cksum` (from `cksum --help`).
#[rustfmt::skip]
pub(super) static G_CKSUM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "algorithm", Req, Safe),
    o('c', "check", No, Check),
    o('l', "length", Req, Safe),
    o('\0', "tag", No, Safe),
    o('\0', "untagged", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "ignore-missing", No, Safe),
    o('\0', "quiet", No, Safe),
    o('\0', "status", No, Safe),
    o('\0', "strict", No, Safe),
    o('w', "warn", No, Safe),
    o('\0', "debug", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `ls` (from `ls --help`).
#[rustfmt::skip]
pub(super) static G_LS: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "all", No, Safe),
    o('A', "almost-all", No, Safe),
    o('\0', "author", No, Safe),
    o('b', "escape", No, Safe),
    o('\0', "block-size", Req, Safe),
    o('B', "ignore-backups", No, Safe),
    o('c', "", No, Safe),
    o('C', "", No, Safe),
    o('\0', "color", Opt, Safe),
    o('d', "directory", No, Safe),
    o('D', "dired", No, Safe),
    o('f', "", No, Safe),
    o('F', "", No, Safe),
    o('\0', "classify", Opt, Safe),
    o('\0', "file-type", No, Safe),
    o('\0', "format", Req, Safe),
    o('\0', "full-time", No, Safe),
    o('g', "", No, Safe),
    o('\0', "group-directories-first", No, Safe),
    o('G', "no-group", No, Safe),
    o('h', "human-readable", No, Safe),
    o('\0', "si", No, Safe),
    o('H', "dereference-command-line", No, Safe),
    o('\0', "dereference-command-line-symlink-to-dir", No, Safe),
    o('\0', "hide", Req, Safe),
    o('\0', "hyperlink", Opt, Safe),
    o('\0', "indicator-style", Req, Safe),
    o('i', "inode", No, Safe),
    o('I', "ignore", Req, Safe),
    o('k', "kibibytes", No, Safe),
    o('l', "", No, Safe),
    o('L', "dereference", No, Safe),
    o('m', "", No, Safe),
    o('n', "numeric-uid-gid", No, Safe),
    o('N', "literal", No, Safe),
    o('o', "", No, Safe),
    o('p', "", No, Safe),
    o('q', "hide-control-chars", No, Safe),
    o('\0', "show-control-chars", No, Safe),
    o('Q', "quote-name", No, Safe),
    o('\0', "quoting-style", Req, Safe),
    o('r', "reverse", No, Safe),
    o('R', "recursive", No, Safe),
    o('s', "size", No, Safe),
    o('S', "", No, Safe),
    o('\0', "sort", Req, Safe),
    o('\0', "time", Req, Safe),
    o('\0', "time-style", Req, Safe),
    o('t', "", No, Safe),
    o('T', "tabsize", Req, Safe),
    o('u', "", No, Safe),
    o('U', "", No, Safe),
    o('v', "", No, Safe),
    o('w', "width", Req, Safe),
    o('x', "", No, Safe),
    o('X', "", No, Safe),
    o('Z', "context", No, Safe),
    o('\0', "zero", No, Safe),
    o('1', "", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `du` (from `du --help`).
#[rustfmt::skip]
pub(super) static G_DU: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('0', "null", No, Safe),
    o('a', "all", No, Safe),
    o('\0', "apparent-size", No, Safe),
    o('B', "block-size", Req, Safe),
    o('b', "bytes", No, Safe),
    o('c', "total", No, Safe),
    o('D', "dereference-args", No, Safe),
    o('d', "max-depth", Req, Safe),
    o('\0', "files0-from", Req, ReadList("reads the names of the files to measure from a file")),
    o('H', "", No, Safe),
    o('h', "human-readable", No, Safe),
    o('\0', "inodes", No, Safe),
    o('k', "", No, Safe),
    o('L', "dereference", No, Safe),
    o('l', "count-links", No, Safe),
    o('m', "", No, Safe),
    o('P', "no-dereference", No, Safe),
    o('S', "separate-dirs", No, Safe),
    o('\0', "si", No, Safe),
    o('s', "summarize", No, Safe),
    o('t', "threshold", Req, Safe),
    o('\0', "time", No, Safe),
    o('\0', "time-style", Req, Safe),
    o('X', "exclude-from", Req, Read),
    o('\0', "exclude", Req, Safe),
    o('x', "one-file-system", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `df` (from `df --help`).
#[rustfmt::skip]
pub(super) static G_DF: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "all", No, Safe),
    o('B', "block-size", Req, Safe),
    o('h', "human-readable", No, Safe),
    o('H', "si", No, Safe),
    o('i', "inodes", No, Safe),
    o('k', "", No, Safe),
    o('l', "local", No, Safe),
    o('\0', "no-sync", No, Safe),
    o('\0', "output", Opt, Safe),
    o('P', "portability", No, Safe),
    o('\0', "sync", No, Safe),
    o('\0', "total", No, Safe),
    o('t', "type", Req, Safe),
    o('T', "print-type", No, Safe),
    o('x', "exclude-type", Req, Safe),
    o('v', "", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `stat` (from `stat --help`).
#[rustfmt::skip]
pub(super) static G_STAT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('L', "dereference", No, Safe),
    o('f', "file-system", No, Safe),
    o('\0', "cached", Req, Safe),
    o('c', "format", Req, Safe),
    o('\0', "printf", Req, Safe),
    o('t', "terse", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `realpath` (from `realpath --help`).
#[rustfmt::skip]
pub(super) static G_REALPATH: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('e', "canonicalize-existing", No, Safe),
    o('m', "canonicalize-missing", No, Safe),
    o('L', "logical", No, Safe),
    o('P', "physical", No, Safe),
    o('q', "quiet", No, Safe),
    o('\0', "relative-to", Req, Safe),
    o('\0', "relative-base", Req, Safe),
    o('s', "strip", No, Safe),
    o('\0', "no-symlinks", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `readlink` (from `readlink --help`).
#[rustfmt::skip]
pub(super) static G_READLINK: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('f', "canonicalize", No, Safe),
    o('e', "canonicalize-existing", No, Safe),
    o('m', "canonicalize-missing", No, Safe),
    o('n', "no-newline", No, Safe),
    o('q', "quiet", No, Safe),
    o('s', "silent", No, Safe),
    o('v', "verbose", No, Safe),
    o('z', "zero", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `date` (from `date --help`).
#[rustfmt::skip]
pub(super) static G_DATE: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('d', "date", Req, Safe),
    o('\0', "debug", No, Safe),
    o('f', "file", Req, ReadList("reads dates from a file and echoes bad lines")),
    o('I', "iso-8601", Opt, Safe),
    o('\0', "resolution", No, Safe),
    o('R', "rfc-email", No, Safe),
    o('\0', "rfc-3339", Req, Safe),
    o('r', "reference", Req, Read),
    o('s', "set", Req, Gate(Category::Privilege, "sets the system clock")),
    o('u', "utc", No, Safe),
    o('\0', "universal", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `file` (from `file --help`).
#[rustfmt::skip]
pub(super) static G_FILE: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('\0', "help", No, Safe),
    o('v', "version", No, Safe),
    o('m', "magic-file", Req, Read),
    o('z', "uncompress", No, Gate(Category::RunCode, "runs decompressors")),
    o('Z', "uncompress-noreport", No, Gate(Category::RunCode, "runs decompressors")),
    o('b', "brief", No, Safe),
    o('c', "checking-printout", No, Safe),
    o('e', "exclude", Req, Safe),
    o('\0', "exclude-quiet", Req, Safe),
    o('f', "files-from", Req, ReadList("reads the names of the files to examine from a file")),
    o('F', "separator", Req, Safe),
    o('i', "mime", No, Safe),
    o('\0', "apple", No, Safe),
    o('\0', "extension", No, Safe),
    o('\0', "mime-type", No, Safe),
    o('\0', "mime-encoding", No, Safe),
    o('k', "keep-going", No, Safe),
    o('l', "list", No, Safe),
    o('L', "dereference", No, Safe),
    o('h', "no-dereference", No, Safe),
    o('n', "no-buffer", No, Safe),
    o('N', "no-pad", No, Safe),
    o('0', "print0", No, Safe),
    o('p', "preserve-date", No, Gate(Category::Write, "resets file access times")),
    o('P', "parameter", Req, Safe),
    o('r', "raw", No, Safe),
    o('s', "special-files", No, Safe),
    o('S', "no-sandbox", No, Gate(Category::RunCode, "turns its sandbox off")),
    o('C', "compile", No, Gate(Category::Write, "compiles a magic file")),
    o('d', "debug", No, Safe),
]};
