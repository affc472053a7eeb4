//! Unit tests of the shell analyser: segment splitting, words, wrappers, bounds.

use super::*;

fn ctx() -> ShellContext {
    ShellContext {
        home: PathBuf::from("/home/agent"),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        cwd: PathBuf::from("/workspace"),
        set_at_start: None,
    }
}

fn argvs(text: &str) -> Vec<Vec<String>> {
    analyse(text, &ctx())
        .segments
        .iter()
        .map(|s| s.argv.iter().map(|w| w.display().to_string()).collect())
        .collect()
}

#[test]
fn splits_lists_pipelines_and_substitutions() {
    let got = argvs("ls -la; echo ok && touch x || cat a | wc -l & echo \"$(id)\" `whoami`");
    let names: Vec<&str> = got.iter().map(|a| a[0].as_str()).collect();
    for want in ["ls", "echo", "touch", "cat", "wc", "id", "whoami"] {
        assert!(names.contains(&want), "{want} missing in {names:?}");
    }
}

#[test]
fn words_expand_home_and_quotes() {
    let a = analyse(r#"cat ~/.ssh/id_rsa "$HOME/.aws" 'x y' a\ b "$X""#, &ctx());
    let s = &a.segments[0];
    let vals: Vec<Option<&str>> = s.argv.iter().map(|w| w.value.as_deref()).collect();
    assert_eq!(
        vals,
        vec![
            Some("cat"),
            Some("/home/agent/.ssh/id_rsa"),
            Some("/home/agent/.aws"),
            Some("x y"),
            Some("a b"),
            None
        ]
    );
}

#[test]
fn unwraps_wrappers_recursively() {
    let a = analyse(
        "sudo env A=1 nice -n 5 timeout 3 bash -lc 'zsh -c \"rm -rf /\"'",
        &ctx(),
    );
    assert_eq!(a.segments.len(), 1, "{a:?}");
    let s = &a.segments[0];
    assert!(s.privileged);
    assert_eq!(s.argv[0].display(), "rm");
    assert_eq!(s.env_assignments, vec!["A".to_string()]);
    assert!(s.wrappers.iter().any(|w| w == "zsh -c"));
}

#[test]
fn heredoc_pipeline_stage_reads_a_pipe() {
    let a = analyse("cat <<EOF | sh\nrm -rf /\nEOF", &ctx());
    let sh = a
        .segments
        .iter()
        .find(|s| s.argv[0].display() == "sh")
        .unwrap();
    assert_eq!(sh.stdin, Stdin::Pipe);
    let cat = a
        .segments
        .iter()
        .find(|s| s.argv[0].display() == "cat")
        .unwrap();
    assert_eq!(cat.stdin, Stdin::Here(Some("rm -rf /\n".into())));
}

#[test]
fn heredoc_body_runs_to_the_line_the_shells_end_it_at() {
    // `EOF; …` is not the delimiter line: the rest is body text, as bash and dash read it.
    let a = analyse("cat <<'EOF'\nhello\nEOF; sh run.sh", &ctx());
    let argvs: Vec<&str> = a.segments.iter().map(|s| s.argv[0].display()).collect();
    assert_eq!(argvs, ["cat"]);
    let body = "hello\nEOF; sh run.sh\n";
    assert_eq!(a.segments[0].stdin, Stdin::Here(Some(body.into())));
    // The exact line ends it: what follows runs.
    let a = analyse("cat <<EOF\nx\nEOF\nsh run.sh", &ctx());
    assert!(a.segments.iter().any(|s| s.argv[0].display() == "sh"));
}

#[test]
fn redirects_and_process_substitution() {
    let a = analyse(
        "echo hi > out.txt 2>&1 >/dev/null; diff <(cat ~/.ssh/a) b",
        &ctx(),
    );
    // `<(…)` is bash's: the text gates where the shell may be another (`dialect`), and is
    // still walked.
    assert!(a.has_problem());
    let echo = a
        .segments
        .iter()
        .find(|s| s.argv.first().is_some_and(|w| w.display() == "echo"))
        .unwrap();
    assert_eq!(echo.redirects.len(), 1);
    assert_eq!(echo.redirects[0].target.display(), "out.txt");
    assert!(a
        .segments
        .iter()
        .any(|s| s.argv.iter().any(|w| w.display() == "/home/agent/.ssh/a")));
}

#[test]
fn syntax_errors_and_dynamic_names_are_problems() {
    assert!(analyse("echo 'unterminated", &ctx()).has_problem());
    assert!(analyse("$CMD x", &ctx()).has_problem());
    assert!(analyse("bash -c \"$X\"", &ctx()).has_problem());
    assert!(!analyse("ls -la", &ctx()).has_problem());
}

#[test]
fn xargs_find_exec_and_cd() {
    let a = analyse(
        "find . -exec rm {} \\; ; cd ~ && cat .env; ls | xargs -0 grep x",
        &ctx(),
    );
    assert!(a
        .segments
        .iter()
        .any(|s| s.argv[0].display() == "rm" && s.argv[1].value.is_none()));
    let cat = a
        .segments
        .iter()
        .find(|s| s.argv[0].display() == "cat")
        .unwrap();
    assert!(cat.cwds.contains(&PathBuf::from("/home/agent")));
    let grep = a
        .segments
        .iter()
        .find(|s| s.argv[0].display() == "grep")
        .unwrap();
    assert!(grep.argv.last().unwrap().value.is_none());
}

#[test]
fn bounds_hold_on_hostile_input() {
    let deep = format!("{}ls{}", "( ".repeat(5000), " )".repeat(5000));
    assert!(!analyse("echo $(( (((1))) + 2 ))", &ctx()).has_problem());
    assert!(analyse(&deep, &ctx()).has_problem());
    let big = "ls;".repeat(40_000);
    assert!(analyse(&big, &ctx()).has_problem());
    let mut nested = "ls".to_string();
    for _ in 0..10 {
        nested = format!("sh -c {}", super::wrappers_quote_for_test(&nested));
    }
    assert!(analyse(&nested, &ctx()).has_problem());
}

#[test]
fn a_word_the_parser_splits_is_a_problem() {
    // tree-sitter-bash reads `~/$a$b/id_rsa` as two words; bash as one.
    for text in [
        "a=.s; b=sh; cat ~/$a$b/id_rsa",
        "for f in ~/$a$b/x; do cat $f; done",
    ] {
        assert!(analyse(text, &ctx()).has_problem(), "{text}");
    }
    assert!(!analyse("cat a>b 'x'\"y\"", &ctx()).has_problem());
}

/// The value the last segment named `prog` gives its argument `i`, and whether it is a glob.
fn arg_of(text: &str, prog: &str, i: usize) -> (Option<String>, bool) {
    let a = analyse(text, &ctx());
    let seg = a
        .segments
        .iter()
        .rev()
        .find(|s| s.program.as_deref() == Some(prog))
        .unwrap_or_else(|| panic!("no {prog} in {text}"));
    let w = &seg.argv[i];
    (w.value.clone(), w.glob)
}

#[test]
fn variables_bound_once_to_a_literal_are_known() {
    for (text, prog, want, glob) in [
        (r#"f=a.txt; cat "$f""#, "cat", "a.txt", false),
        ("dir=src\nls $dir", "ls", "src", false),
        (r#"f=a.txt; cat "${f}""#, "cat", "a.txt", false),
        (r#"f='a b'; cat "$f""#, "cat", "a b", false),
        (r#"f='*.rs'; cat "$f""#, "cat", "*.rs", false),
        (
            r#"for f in src/*.rs; do wc "$f"; done"#,
            "wc",
            "src/*.rs",
            true,
        ),
        (r#"for f in a b; do wc "$f"; done"#, "wc", "b", false),
        (r#"for f in a; do wc "x-$f"; done"#, "wc", "x-a", false),
        // A literal echo's output is known (words/printed.rs).
        (r#"f=$(echo a); cat "$f""#, "cat", "a", false),
    ] {
        assert_eq!(
            arg_of(text, prog, 1),
            (Some(want.to_string()), glob),
            "{text}"
        );
    }
}

#[test]
fn variables_anything_else_may_change_are_not_known() {
    for text in [
        r#"f=a.txt; (f=b); cat "$f""#,
        r#"f=a.txt; read f; cat "$f""#,
        r#"f=a.txt; unset f; cat "$f""#,
        r#"f=a.txt; export f; cat "$f""#,
        r#"f=a.txt; : ${f:=b}; cat "$f""#,
        r#"f=a.txt; g() { f=b; }; g; cat "$f""#,
        r#"f=a.txt; eval 'f=b'; cat "$f""#,
        r#"f=a.txt; f+=b; cat "$f""#,
        r#"f=a.txt & cat "$f""#,
        r#"true && f=a.txt; cat "$f""#,
        r#"cat "$f"; f=a.txt"#,
        r#"f=a.txt cat "$f""#,
        r#"f=$(cat a); cat "$f""#,
        r#"f=$(echo -e a); cat "$f""#,
        r#"f='a b'; cat $f"#,
        r#"f='*'; cat $f"#,
        r#"_=a; cat "$_""#,
        r#"for f in src/*.rs; do cat $f; done"#,
        r#"for f in src/*.rs; do f=b; cat "$f"; done"#,
        r#"for f in $(ls); do cat "$f"; done"#,
        r#"for f in a; do :; done; cat "$f""#,
    ] {
        assert_eq!(arg_of(text, "cat", 1).0, None, "{text}");
    }
}

#[test]
fn find_piped_to_xargs_is_find_exec() {
    let a = analyse("find src -name '*.rs' | xargs grep -n foo", &ctx());
    let find = &a.segments[0];
    let words: Vec<&str> = find.argv.iter().map(|w| w.display()).collect();
    assert_eq!(
        words,
        ["find", "src", "-name", "*.rs", "-exec", "grep", "-n", "foo", "{}", "+"]
    );
    assert!(find.wrappers.iter().any(|w| w == XARGS_FROM_FIND));
    let grep = &a.segments[1];
    assert!(grep.wrappers.iter().any(|w| w == "find -exec"), "{grep:?}");
    // Not the same as find -exec: xargs input stays unknown.
    for text in [
        "cat list | xargs rm",
        "find src -print0 | xargs rm",
        "find src | xargs -0 rm",
        "find src | xargs -I{} rm {}",
        "find src -delete | xargs echo",
        "find $d | xargs rm",
        "find src | xargs expr 1 + 2",
    ] {
        let a = analyse(text, &ctx());
        assert!(
            a.segments.iter().all(|s| !s
                .wrappers
                .iter()
                .any(|w| w == XARGS_FROM_FIND || w == XARGS0_FROM_FIND)),
            "{text}: {:?}",
            a.segments
        );
    }
}

#[test]
fn git_ls_files_as_arguments_gates_with_its_reason() {
    for text in [
        "wc -l $(git ls-files)",
        "cat `git ls-files src`",
        "x \"$(git ls-tree -r --name-only HEAD)\"",
    ] {
        let a = analyse(text, &ctx());
        assert!(
            a.gates.iter().any(|g| g.contains("may start with `-`")),
            "{text}: {:?}",
            a.gates
        );
    }
    assert!(analyse("echo $(git ls-files | wc -l)", &ctx())
        .gates
        .is_empty());
}

/// `basename` by bytes answers as `rsplit('/')` did.
#[test]
fn basename_is_the_text_after_the_last_slash() {
    for name in ["cat", "/usr/bin/cat", "./x", "dir/", "/", "", "a//b", "é/ü"] {
        assert_eq!(
            basename(name),
            name.rsplit('/').next().unwrap_or(name),
            "{name}"
        );
    }
}

#[test]
fn xargs_under_env_looks_its_command_up_on_that_path() {
    let fs = crate::policy::facts::FakeFs::new()
        .file("/bin/echo", 0o755)
        .file("/usr/bin/echo", 0o755)
        .file("/usr/bin/xargs", 0o755)
        .file("/usr/bin/env", 0o755);
    let _facts = crate::policy::fs_memo::Scope::enter(std::sync::Arc::new(fs));
    let resolved = |text: &str| {
        let a = analyse(text, &ctx());
        a.segments.last().and_then(|s| s.resolved.clone())
    };
    // The agent's PATH puts /usr/bin first; env's standard PATH puts /bin first.
    assert_eq!(resolved("xargs echo"), Some(PathBuf::from("/usr/bin/echo")));
    assert_eq!(
        resolved("env -i xargs echo"),
        Some(PathBuf::from("/bin/echo"))
    );
    assert_eq!(
        resolved("env PATH=/bin:/usr/bin xargs echo"),
        Some(PathBuf::from("/bin/echo"))
    );
    // `command -p` looks xargs up there; xargs keeps the agent's PATH.
    assert_eq!(
        resolved("command -p xargs echo"),
        Some(PathBuf::from("/usr/bin/echo"))
    );
}
