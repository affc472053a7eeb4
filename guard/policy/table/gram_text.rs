//! Generated from the programs' `--help` (GNU coreutils 9.1, grep 3.8, sed 4.9, diffutils 3.8,
//! file 5.44, ripgrep 13) by gen/grammar-gen.py, then reviewed: every option that reads,
//! writes or runs something other than its operands has an effect other than `Safe`.
//! Regenerate and diff when a tool gains options; an option missing here is gated, never allowed.

use super::grammar::{o, Arg::*, Eff::*, Grammar};
/// `cat` (from `cat --help`).
#[rustfmt::skip]
pub(super) static G_CAT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('A', "show-all", No, Safe),
    o('b', "number-nonblank", No, Safe),
    o('e', "", No, Safe),
    o('E', "show-ends", No, Safe),
    o('n', "number", No, Safe),
    o('s', "squeeze-blank", No, Safe),
    o('t', "", No, Safe),
    o('T', "show-tabs", No, Safe),
    o('u', "", No, Safe),
    o('v', "show-nonprinting", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `tac` (from `tac --help`).
#[rustfmt::skip]
pub(super) static G_TAC: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "before", No, Safe),
    o('r', "regex", No, Safe),
    o('s', "separator", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `head` (from `head --help`).
#[rustfmt::skip]
pub(super) static G_HEAD: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('c', "bytes", Req, Safe),
    o('n', "lines", Req, Safe),
    o('q', "quiet", No, Safe),
    o('\0', "silent", No, Safe),
    o('v', "verbose", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `tail` (from `tail --help`).
#[rustfmt::skip]
pub(super) static G_TAIL: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('c', "bytes", Req, Safe),
    o('f', "", No, Safe),
    o('\0', "follow", Opt, Safe),
    o('F', "", No, Safe),
    o('n', "lines", Req, Safe),
    o('\0', "max-unchanged-stats", Req, Safe),
    o('\0', "pid", Req, Safe),
    o('q', "quiet", No, Safe),
    o('\0', "silent", No, Safe),
    o('\0', "retry", No, Safe),
    o('s', "sleep-interval", Req, Safe),
    o('v', "verbose", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `wc` (from `wc --help`).
#[rustfmt::skip]
pub(super) static G_WC: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('c', "bytes", No, Safe),
    o('m', "chars", No, Safe),
    o('l', "lines", No, Safe),
    o('\0', "files0-from", Req, ReadList("reads the names of the files to count from a file")),
    o('L', "max-line-length", No, Safe),
    o('w', "words", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `sort` (from `sort --help`).
#[rustfmt::skip]
pub(super) static G_SORT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "ignore-leading-blanks", No, Safe),
    o('d', "dictionary-order", No, Safe),
    o('f', "ignore-case", No, Safe),
    o('g', "general-numeric-sort", No, Safe),
    o('i', "ignore-nonprinting", No, Safe),
    o('M', "month-sort", No, Safe),
    o('h', "human-numeric-sort", No, Safe),
    o('n', "numeric-sort", No, Safe),
    o('R', "random-sort", No, Safe),
    o('\0', "random-source", Req, Read),
    o('r', "reverse", No, Safe),
    o('\0', "sort", Req, Safe),
    o('V', "version-sort", No, Safe),
    o('\0', "batch-size", Req, Safe),
    o('c', "", No, Safe),
    o('\0', "check", Opt, Safe),
    o('C', "", No, Safe),
    o('\0', "compress-program", Req, Exec),
    o('\0', "debug", No, Safe),
    o('\0', "files0-from", Req, ReadList("reads the names of the files to sort from a file")),
    o('k', "key", Req, Safe),
    o('m', "merge", No, Safe),
    o('o', "output", Req, Write),
    o('s', "stable", No, Safe),
    o('S', "buffer-size", Req, Safe),
    o('t', "field-separator", Req, Safe),
    o('T', "temporary-directory", Req, Write),
    o('\0', "parallel", Req, Safe),
    o('u', "unique", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `uniq` (from `uniq --help`).
#[rustfmt::skip]
pub(super) static G_UNIQ: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('c', "count", No, Safe),
    o('d', "repeated", No, Safe),
    o('D', "", No, Safe),
    o('\0', "all-repeated", Opt, Safe),
    o('f', "skip-fields", Req, Safe),
    o('\0', "group", Opt, Safe),
    o('i', "ignore-case", No, Safe),
    o('s', "skip-chars", Req, Safe),
    o('u', "unique", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('w', "check-chars", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `cut` (from `cut --help`).
#[rustfmt::skip]
pub(super) static G_CUT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "bytes", Req, Safe),
    o('c', "characters", Req, Safe),
    o('d', "delimiter", Req, Safe),
    o('f', "fields", Req, Safe),
    o('n', "", No, Safe),
    o('\0', "complement", No, Safe),
    o('s', "only-delimited", No, Safe),
    o('\0', "output-delimiter", Req, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
    o('M', "", No, Safe),
]};

/// `tr` (from `tr --help`).
#[rustfmt::skip]
pub(super) static G_TR: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('c', "complement", No, Safe),
    o('C', "", No, Safe),
    o('d', "delete", No, Safe),
    o('s', "squeeze-repeats", No, Safe),
    o('t', "truncate-set1", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `nl` (from `nl --help`).
#[rustfmt::skip]
pub(super) static G_NL: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "body-numbering", Req, Safe),
    o('d', "section-delimiter", Req, Safe),
    o('f', "footer-numbering", Req, Safe),
    o('h', "header-numbering", Req, Safe),
    o('i', "line-increment", Req, Safe),
    o('l', "join-blank-lines", Req, Safe),
    o('n', "number-format", Req, Safe),
    o('p', "no-renumber", No, Safe),
    o('s', "number-separator", Req, Safe),
    o('v', "starting-line-number", Req, Safe),
    o('w', "number-width", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `od` (from `od --help`).
#[rustfmt::skip]
pub(super) static G_OD: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('A', "address-radix", Req, Safe),
    o('\0', "endian", Req, Safe),
    o('j', "skip-bytes", Req, Safe),
    o('N', "read-bytes", Req, Safe),
    o('S', "", Req, Safe),
    o('\0', "strings", Opt, Safe),
    o('t', "format", Req, Safe),
    o('v', "output-duplicates", No, Safe),
    o('w', "width", Opt, Safe),
    o('\0', "traditional", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
    o('a', "", No, Safe),
    o('b', "", No, Safe),
    o('c', "", No, Safe),
    o('d', "", No, Safe),
    o('f', "", No, Safe),
    o('i', "", No, Safe),
    o('l', "", No, Safe),
    o('o', "", No, Safe),
    o('s', "", No, Safe),
    o('x', "", No, Safe),
]};

/// `base64` (from `base64 --help`).
#[rustfmt::skip]
pub(super) static G_BASE64: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('d', "decode", No, Safe),
    o('i', "ignore-garbage", No, Safe),
    o('w', "wrap", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `base32` (from `base32 --help`).
#[rustfmt::skip]
pub(super) static G_BASE32: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('d', "decode", No, Safe),
    o('i', "ignore-garbage", No, Safe),
    o('w', "wrap", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `fold` (from `fold --help`).
#[rustfmt::skip]
pub(super) static G_FOLD: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "bytes", No, Safe),
    o('s', "spaces", No, Safe),
    o('w', "width", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `fmt` (from `fmt --help`).
#[rustfmt::skip]
pub(super) static G_FMT: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('c', "crown-margin", No, Safe),
    o('p', "prefix", Req, Safe),
    o('s', "split-only", No, Safe),
    o('t', "tagged-paragraph", No, Safe),
    o('u', "uniform-spacing", No, Safe),
    o('w', "width", Req, Safe),
    o('g', "goal", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `paste` (from `paste --help`).
#[rustfmt::skip]
pub(super) static G_PASTE: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('d', "delimiters", Req, Safe),
    o('s', "serial", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `join` (from `join --help`).
#[rustfmt::skip]
pub(super) static G_JOIN: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "", Req, Safe),
    o('e', "", Req, Safe),
    o('i', "ignore-case", No, Safe),
    o('j', "", Req, Safe),
    o('o', "", Req, Safe),
    o('t', "", Req, Safe),
    o('v', "", Req, Safe),
    o('1', "", Req, Safe),
    o('2', "", Req, Safe),
    o('\0', "check-order", No, Safe),
    o('\0', "nocheck-order", No, Safe),
    o('\0', "header", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `expand` (from `expand --help`).
#[rustfmt::skip]
pub(super) static G_EXPAND: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('i', "initial", No, Safe),
    o('t', "tabs", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `unexpand` (from `unexpand --help`).
#[rustfmt::skip]
pub(super) static G_UNEXPAND: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('a', "all", No, Safe),
    o('\0', "first-only", No, Safe),
    o('t', "tabs", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `shuf` (from `shuf --help`).
#[rustfmt::skip]
pub(super) static G_SHUF: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('e', "echo", No, Check),
    o('i', "input-range", Req, Check),
    o('n', "head-count", Req, Safe),
    o('o', "output", Req, Write),
    o('\0', "random-source", Req, Read),
    o('r', "repeat", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `split` (from `split --help`).
#[rustfmt::skip]
pub(super) static G_SPLIT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('a', "suffix-length", Req, Safe),
    o('\0', "additional-suffix", Req, Safe),
    o('b', "bytes", Req, Safe),
    o('C', "line-bytes", Req, Safe),
    o('d', "", No, Safe),
    o('\0', "numeric-suffixes", Opt, Safe),
    o('x', "", No, Safe),
    o('\0', "hex-suffixes", Opt, Safe),
    o('e', "elide-empty-files", No, Safe),
    o('\0', "filter", Req, Exec),
    o('l', "lines", Req, Safe),
    o('n', "number", Req, Safe),
    o('t', "separator", Req, Safe),
    o('u', "unbuffered", No, Safe),
    o('\0', "verbose", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `csplit` (from `csplit --help`).
#[rustfmt::skip]
pub(super) static G_CSPLIT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "suffix-format", Req, Safe),
    o('f', "prefix", Req, Safe),
    o('k', "keep-files", No, Safe),
    o('\0', "suppress-matched", No, Safe),
    o('n', "digits", Req, Safe),
    o('s', "quiet", No, Safe),
    o('\0', "silent", No, Safe),
    o('z', "elide-empty-files", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `pr` (from `pr --help`).
#[rustfmt::skip]
pub(super) static G_PR: Grammar = Grammar { permute: true, numeric: true, opts: &[
    o('C', "columns", Req, Safe),
    o('a', "across", No, Safe),
    o('c', "show-control-chars", No, Safe),
    o('d', "double-space", No, Safe),
    o('D', "date-format", Req, Safe),
    o('e', "expand-tabs", Opt, Safe),
    o('F', "form-feed", No, Safe),
    o('f', "", No, Safe),
    o('h', "header", Req, Safe),
    o('i', "output-tabs", Opt, Safe),
    o('J', "join-lines", No, Safe),
    o('l', "length", Req, Safe),
    o('m', "merge", No, Safe),
    o('n', "number-lines", Opt, Safe),
    o('N', "first-line-number", Req, Safe),
    o('o', "indent", Req, Safe),
    o('r', "no-file-warnings", No, Safe),
    o('s', "separator", Opt, Safe),
    o('S', "sep-string", Opt, Safe),
    o('t', "omit-header", No, Safe),
    o('T', "omit-pagination", No, Safe),
    o('v', "show-nonprinting", No, Safe),
    o('w', "width", Req, Safe),
    o('W', "page-width", Req, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};

/// `numfmt` (from `numfmt --help`).
#[rustfmt::skip]
pub(super) static G_NUMFMT: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('\0', "debug", No, Safe),
    o('d', "delimiter", Req, Safe),
    o('\0', "field", Req, Safe),
    o('\0', "format", Req, Safe),
    o('\0', "from", Req, Safe),
    o('\0', "from-unit", Req, Safe),
    o('\0', "grouping", No, Safe),
    o('\0', "header", Opt, Safe),
    o('\0', "invalid", Req, Safe),
    o('\0', "padding", Req, Safe),
    o('\0', "round", Req, Safe),
    o('\0', "suffix", Req, Safe),
    o('\0', "to", Req, Safe),
    o('\0', "to-unit", Req, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
    o('M', "", No, Safe),
]};

/// `column` (from `column --help`).
#[rustfmt::skip]
pub(super) static G_COLUMN: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('t', "table", No, Safe),
    o('n', "table-name", Req, Safe),
    o('O', "table-order", Req, Safe),
    o('N', "table-columns", Req, Safe),
    o('l', "table-columns-limit", Req, Safe),
    o('E', "table-noextreme", Req, Safe),
    o('d', "table-noheadings", No, Safe),
    o('e', "table-header-repeat", No, Safe),
    o('H', "table-hide", Req, Safe),
    o('R', "table-right", Req, Safe),
    o('T', "table-truncate", Req, Safe),
    o('W', "table-wrap", Req, Safe),
    o('L', "keep-empty-lines", No, Safe),
    o('J', "json", No, Safe),
    o('r', "tree", Req, Safe),
    o('i', "tree-id", Req, Safe),
    o('p', "tree-parent", Req, Safe),
    o('c', "output-width", Req, Safe),
    o('o', "output-separator", Req, Safe),
    o('s', "separator", Req, Safe),
    o('x', "fillrows", No, Safe),
    o('h', "help", No, Safe),
    o('V', "version", No, Safe),
]};

/// `iconv` (from `iconv --help`).
#[rustfmt::skip]
pub(super) static G_ICONV: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('f', "from-code", Req, Safe),
    o('t', "to-code", Req, Safe),
    o('l', "list", No, Safe),
    o('c', "", No, Safe),
    o('o', "output", Req, Write),
    o('s', "silent", No, Safe),
    o('\0', "verbose", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "usage", No, Safe),
    o('V', "version", No, Safe),
]};

/// `cmp` (from `cmp --help`).
#[rustfmt::skip]
pub(super) static G_CMP: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('b', "print-bytes", No, Safe),
    o('i', "ignore-initial", Req, Safe),
    o('l', "verbose", No, Safe),
    o('n', "bytes", Req, Safe),
    o('s', "quiet", No, Safe),
    o('\0', "silent", No, Safe),
    o('\0', "help", No, Safe),
    o('v', "version", No, Safe),
]};

/// `comm` (from `comm --help`).
#[rustfmt::skip]
pub(super) static G_COMM: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('1', "", No, Safe),
    o('2', "", No, Safe),
    o('3', "", No, Safe),
    o('\0', "check-order", No, Safe),
    o('\0', "nocheck-order", No, Safe),
    o('\0', "output-delimiter", Req, Safe),
    o('\0', "total", No, Safe),
    o('z', "zero-terminated", No, Safe),
    o('\0', "help", No, Safe),
    o('\0', "version", No, Safe),
]};
