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

pub(super) fn interpreter(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    args: &[Word],
) {
    // `python3 --version`, `node -v`: the one word prints the version or help and exits.
    if let [only] = args {
        let info: &[&str] = match p {
            "node" | "nodejs" | "deno" | "bun" => &["--version", "-v", "--help", "-h"],
            _ if p.starts_with("python") || p.starts_with("pypy") => {
                &["--version", "-V", "-VV", "--help", "-h"]
            }
            "perl" | "php" => &["--version", "-v", "--help", "-h"],
            _ => &["--version"],
        };
        if only.value.as_deref().is_some_and(|s| info.contains(&s)) {
            c.add(
                Category::Enumerate,
                "version",
                format!("`{p}` prints its version or help"),
            );
            return;
        }
    }
    let inline: &[&str] = match p {
        "node" | "nodejs" | "bun" => &["-e", "--eval", "-p", "--print"],
        "ruby" | "irb" | "lua" | "luajit" | "julia" => &["-e"],
        "perl" => &["-e", "-E"],
        "php" => &["-r"],
        "deno" => &["eval"],
        "osascript" => &["-e"],
        "pwsh" => &["-c", "-Command", "-command"],
        "Rscript" | "R" => &["-e"],
        _ => &["-c"],
    };
    if args.iter().any(|w| {
        w.value.as_deref().is_some_and(|s| {
            inline.contains(&s)
                || (s.len() > 2
                    && inline
                        .iter()
                        .any(|i| i.len() == 2 && s.starts_with(i) && !s.starts_with("--")))
        })
    }) {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            format!("`{p}` runs code given inline"),
        );
        read_all(k, c, args, true);
        return;
    }
    if p.starts_with("python") {
        let modules = opt_values(args, &["-m"], &[]);
        if let Some(m) = modules.first() {
            let rest: Vec<String> = args.iter().map(|w| v(w).to_string()).collect();
            if v(m) == "pip" && rest.iter().any(|s| s == "install" || s == "uninstall") {
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
            return;
        }
    }
    let value_opts: &[&str] = match p {
        "node" | "nodejs" => &[
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
        ],
        _ if p.starts_with("python") || p.starts_with("pypy") => &["-W", "-X", "-Q"],
        "deno" => &["--allow-read", "--config", "-c"],
        _ => &["-I", "-M"],
    };
    let ops = operands_skipping(args, value_opts, &[]);
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
