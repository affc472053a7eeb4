//! Unit tests of the shell analyser: segment splitting, words, wrappers, bounds.

use super::*;

fn ctx() -> ShellContext {
    ShellContext {
        home: PathBuf::from("/home/agent"),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        cwd: PathBuf::from("/workspace"),
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
fn redirects_and_process_substitution() {
    let a = analyse(
        "echo hi > out.txt 2>&1 >/dev/null; diff <(cat ~/.ssh/a) b",
        &ctx(),
    );
    assert_eq!(a.segments[0].redirects.len(), 1);
    assert_eq!(a.segments[0].redirects[0].target.display(), "out.txt");
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
    assert!(!analyse("(( (((1))) + 2 ))", &ctx()).has_problem());
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
