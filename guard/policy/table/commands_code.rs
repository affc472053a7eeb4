//! Code runners of the table: shells without `-c` and interpreters (inline code, scripts,
//! programs read from a pipe: pipe-to-shell).

use super::args::{flag, operands_skipping, opt_values, read_all, v};
use super::paths_check::Checker;
use super::{stdin_is_pipe, Classification};
use crate::policy::shell::{Segment, Stdin, Word};
use crate::policy::verdict::Category;

pub(super) fn shell(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let ops = operands_skipping(args, &["-o", "-O", "+o", "+O"], &["rcfile", "init-file"]);
    let reads_stdin = flag(args, "s", &[]) || ops.is_empty();
    script_or_stdin(
        seg,
        k,
        c,
        p,
        ops.first().copied().filter(|_| !flag(args, "s", &[])),
        reads_stdin,
    );
}

/// An interpreter running a script operand, or reading its program from stdin.
fn script_or_stdin(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    script: Option<&Word>,
    reads_stdin: bool,
) {
    if let Some(w) = script {
        if w.process_substitution || w.substitution {
            c.add(
                Category::PipeToShell,
                "pipe-to-shell",
                format!("`{p}` runs code produced by another command"),
            );
            return;
        }
        if matches!(w.value.as_deref(), Some("-" | "/dev/stdin")) {
            return script_or_stdin(seg, k, c, p, None, true);
        }
        c.add(
            Category::RunCode,
            "run-code",
            format!("`{p}` runs {}", w.display()),
        );
        k.read(c, w);
        return;
    }
    if !reads_stdin {
        c.add(Category::RunCode, "run-code", format!("runs `{p}`"));
        return;
    }
    match &seg.stdin {
        s if stdin_is_pipe(s) => c.add(
            Category::PipeToShell,
            "pipe-to-shell",
            format!("`{p}` runs code piped from another command"),
        ),
        Stdin::Here(_) => {
            c.inline_eval = true;
            c.add(
                Category::RunCode,
                "inline-eval",
                format!("`{p}` runs a here-document"),
            );
        }
        Stdin::File => c.add(
            Category::RunCode,
            "run-code",
            format!("`{p}` runs a script from a redirect"),
        ),
        _ => c.add(
            Category::RunCode,
            "run-code",
            format!("starts an interactive `{p}`"),
        ),
    }
}

/// How one interpreter is called: the programs (exact names, or a name prefix), the one
/// word that prints its version or help, the options that take inline code, and the
/// options whose value is the next word (not the script).
struct Interp {
    names: &'static [&'static str],
    prefix: &'static str,
    info: &'static [&'static str],
    inline: &'static [&'static str],
    value_opts: &'static [&'static str],
}

const NODE_INFO: &[&str] = &["--version", "-v", "--help", "-h"];
const NODE_INLINE: &[&str] = &["-e", "--eval", "-p", "--print"];
const NODE_VALUES: &[&str] = &[
    "-r",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "--env-file",
    "-C",
    "--conditions",
    "--input-type",
    "--title",
];
const PY_INFO: &[&str] = &["--version", "-V", "-VV", "--help", "-h"];
const PY_VALUES: &[&str] = &["-W", "-X", "-Q"];
const VERSION: &[&str] = &["--version"];
const OTHER_VALUES: &[&str] = &["-I", "-M"];

const fn interp(
    names: &'static [&'static str],
    info: &'static [&'static str],
    inline: &'static [&'static str],
    value_opts: &'static [&'static str],
) -> Interp {
    Interp {
        names,
        prefix: "",
        info,
        inline,
        value_opts,
    }
}

/// The interpreters; the last row is any other.
#[rustfmt::skip]
static INTERPRETERS: &[Interp] = &[
    interp(&["node", "nodejs"], NODE_INFO, NODE_INLINE, NODE_VALUES),
    interp(&["bun"], NODE_INFO, NODE_INLINE, OTHER_VALUES),
    interp(&["deno"], NODE_INFO, &["eval"], &["--allow-read", "--config", "-c"]),
    Interp { prefix: "python", ..interp(&[], PY_INFO, &["-c"], PY_VALUES) },
    Interp { prefix: "pypy", ..interp(&[], PY_INFO, &["-c"], PY_VALUES) },
    interp(&["perl"], NODE_INFO, &["-e", "-E"], OTHER_VALUES),
    interp(&["php"], NODE_INFO, &["-r"], OTHER_VALUES),
    interp(&["ruby", "irb", "lua", "luajit", "julia", "osascript", "Rscript", "R"], VERSION, &["-e"], OTHER_VALUES),
    interp(&["pwsh"], VERSION, &["-c", "-Command", "-command"], OTHER_VALUES),
    interp(&[], VERSION, &["-c"], OTHER_VALUES),
];

fn interp_of(p: &str) -> &'static Interp {
    let last = &INTERPRETERS[INTERPRETERS.len() - 1];
    INTERPRETERS
        .iter()
        .find(|i| i.names.contains(&p) || (!i.prefix.is_empty() && p.starts_with(i.prefix)))
        .unwrap_or(last)
}

pub(super) fn interpreter(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    args: &[Word],
) {
    let it = interp_of(p);
    // `python3 --version`, `node -v`: the one word prints the version or help and exits.
    if let [only] = args {
        if only.value.as_deref().is_some_and(|s| it.info.contains(&s)) {
            c.add(
                Category::Enumerate,
                "version",
                format!("`{p}` prints its version or help"),
            );
            return;
        }
    }
    if args
        .iter()
        .any(|w| w.value.as_deref().is_some_and(|s| inline_option(it, s)))
    {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            format!("`{p}` runs code given inline"),
        );
        read_all(k, c, args, true);
        return;
    }
    if p.starts_with("python") && python_module(k, c, p, args) {
        return;
    }
    let ops = operands_skipping(args, it.value_opts, &[]);
    let mut ops = ops.into_iter();
    let mut script = ops.next();
    if p == "deno" && script.is_some_and(|w| matches!(v(w), "run" | "task" | "test" | "serve")) {
        script = ops.next();
    }
    script_or_stdin(seg, k, c, p, script, true);
    for w in ops {
        if w.value.is_some() {
            k.read(c, w);
        }
    }
}

/// Does the word give inline code (`-c`, or a short one with the code attached: `-cCODE`)?
fn inline_option(it: &Interp, s: &str) -> bool {
    it.inline.contains(&s)
        || (s.len() > 2
            && it
                .inline
                .iter()
                .any(|i| i.len() == 2 && s.starts_with(i) && !s.starts_with("--")))
}

/// `python -m MODULE`: runs the module (`pip install` installs). True when it is one.
fn python_module(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) -> bool {
    let modules = opt_values(args, &["-m"], &[]);
    let Some(m) = modules.first() else {
        return false;
    };
    if v(m) == "pip" && args.iter().any(|w| matches!(v(w), "install" | "uninstall")) {
        c.add(
            Category::PackageInstall,
            "package-install",
            "`python -m pip install` installs packages",
        );
    } else {
        c.add(
            Category::RunCode,
            "run-code",
            format!("`{p} -m {}` runs a module", m.display()),
        );
    }
    read_all(k, c, args, true);
    true
}
