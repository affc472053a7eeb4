//! Building the guard's [`Request`] from socket frames: the socket door's half of the
//! adapter (the engine's decision helpers live in `engine::decision`).

use super::auth::Peer;
use super::wire::{ApprovalRequest, ExecRequest};
use crate::audit::event::PeerId;
use crate::policy::request::{Action, DecisionKind, ExecAction, OpenClawAsk, Request, Source, Who};
use crate::policy::shell::{self, Analysis, Segment, ShellContext};
use std::path::PathBuf;

/// A frame's forms of one command: the text a client shows and the argv it
/// runs must be the same command, or a harmless text could be judged while another argv runs
/// (or is persisted). Agreement is semantic: both forms go through the same shell analyser
/// and must yield the same segments (static words, wrappers, assignments, redirections), so
/// `ls -la` agrees with `["ls","-la"]` and `ls; rm x`, `ls $X`, `ls > f` do not. A shell
/// argv `[sh, -c|-lc, TEXT]` agrees with exactly TEXT. Anything the analyser cannot read
/// statically cannot be proven to agree, so it disagrees.
pub fn forms_agree(text: &str, argv: &[String]) -> bool {
    if let [sh, flag, inner] = argv {
        let shell_form = shell::SHELLS.contains(&shell::basename(sh))
            && matches!(flag.as_str(), "-c" | "-lc" | "-cl");
        if shell_form && inner == text {
            return true;
        }
    }
    let ctx = ShellContext {
        home: PathBuf::from("/nonexistent-home"),
        path: String::new(),
        cwd: PathBuf::from("/"),
        set_at_start: None,
    };
    same_command(
        &shell::analyse(text, &ctx),
        &shell::analyse_argv(argv, &ctx),
    )
}

fn same_command(a: &Analysis, b: &Analysis) -> bool {
    !a.segments.is_empty()
        && !a.has_problem()
        && !b.has_problem()
        && a.segments.len() == b.segments.len()
        && a.segments
            .iter()
            .zip(&b.segments)
            .all(|(x, y)| same_segment(x, y))
}

fn static_words(s: &Segment) -> Option<Vec<&str>> {
    s.argv
        .iter()
        .map(|w| {
            (!w.glob && !w.substitution && !w.process_substitution)
                .then_some(w.value.as_deref())
                .flatten()
        })
        .collect()
}

fn same_segment(x: &Segment, y: &Segment) -> bool {
    let redirects = |s: &Segment| -> Option<Vec<_>> {
        s.redirects
            .iter()
            .map(|r| r.target.value.clone().map(|v| (r.kind, v)))
            .collect()
    };
    static_words(x).is_some()
        && static_words(x) == static_words(y)
        && x.wrappers == y.wrappers
        && x.env_assignments == y.env_assignments
        && x.privileged == y.privileged
        && x.stdin == y.stdin
        && redirects(x).is_some()
        && redirects(x) == redirects(y)
}

/// Checks every pair of forms a `request` frame carries: `command` against `commandArgv`,
/// `systemRunPlan.argv` and `systemRunPlan.commandText`. The error names the pair.
pub fn prompt_forms_agree(r: &ApprovalRequest) -> Result<(), String> {
    let plan = r.system_run_plan.as_ref();
    let argvs = [
        ("commandArgv", r.command_argv.as_ref()),
        ("systemRunPlan.argv", plan.and_then(|p| p.argv.as_ref())),
    ];
    let texts = [
        ("command", Some(&r.command)),
        (
            "systemRunPlan.commandText",
            plan.and_then(|p| p.command_text.as_ref()),
        ),
    ];
    for (an, argv) in argvs.iter().filter_map(|(n, a)| Some((n, (*a)?))) {
        if argv.is_empty() {
            return Err(format!("{an} is empty"));
        }
        for (tn, text) in texts.iter().filter_map(|(n, t)| Some((n, (*t)?))) {
            if !forms_agree(text, argv) {
                return Err(format!("{an} is not the command {tn} says"));
            }
        }
    }
    if let (Some(a), Some(b)) = (argvs[0].1, argvs[1].1) {
        if a != b {
            return Err("commandArgv differs from systemRunPlan.argv".into());
        }
    }
    if let Some(t) = texts[1].1 {
        if argvs.iter().all(|(_, a)| a.is_none()) && t != &r.command {
            return Err("systemRunPlan.commandText differs from command".into());
        }
    }
    Ok(())
}

/// An `exec` request's `rawCommand` (display text) against the argv that runs.
pub fn exec_forms_agree(r: &ExecRequest) -> Result<(), String> {
    match &r.raw_command {
        Some(raw) if !forms_agree(raw, &r.command) => {
            Err("rawCommand is not the command argv runs".into())
        }
        _ => Ok(()),
    }
}

/// The peer as the audit log names it.
pub fn peer_id(p: &Peer) -> PeerId {
    PeerId {
        uid: p.uid,
        pid: p.pid,
    }
}

/// The requester: OpenClaw's agent id (`main` when absent or empty) and session key.
fn who(agent_id: Option<&str>, session_key: Option<String>, source: Source) -> Who {
    Who {
        agent_id: agent_id.filter(|s| !s.is_empty()).unwrap_or("main").into(),
        session_key,
        source,
    }
}

/// A `request` frame as a Request: the shell text is what gets analysed. The frame does not
/// carry the client's timeout, so the deadline is the documented default (15 s) minus the
/// margin; a caller passing a shorter `timeoutMs` to the Node client may time out first.
pub fn request_from_prompt(
    id: &str,
    r: &ApprovalRequest,
    received_ms: u64,
    deadline_ms: u64,
) -> Request {
    Request {
        id: id.into(),
        who: who(
            r.agent_id.as_deref(),
            r.session_key.clone(),
            Source::SocketRequest,
        ),
        action: Action::Exec(ExecAction {
            argv: r.command_argv.clone().unwrap_or_default(),
            command: Some(r.command.clone()),
            cwd: r.cwd.as_ref().map(PathBuf::from),
            env_keys: r.env_keys.clone().unwrap_or_default(),
            resolved_path: r.resolved_path.as_ref().map(PathBuf::from),
            env: Vec::new(),
        }),
        received_at_ms: received_ms,
        deadline_ms: Some(deadline_ms),
        openclaw: OpenClawAsk {
            security: r.security.clone(),
            ask: r.ask.clone(),
            allowed_decisions: r
                .allowed_decisions
                .as_ref()
                .map(|v| v.iter().filter_map(|d| DecisionKind::parse(d)).collect()),
        },
    }
}

/// An `exec` request as a Request: the argv is what runs, so the argv is analysed (the
/// `rawCommand` is kept for display only). `approvalDecision` (set when OpenClaw's gateway
/// already approved) is deliberately not trusted: it comes through the agent side, so the
/// guard's own policy and inbox decide.
pub fn request_from_exec(id: &str, r: &ExecRequest, received_ms: u64, deadline_ms: u64) -> Request {
    Request {
        id: id.into(),
        who: who(
            r.agent_id.as_deref(),
            r.session_key.clone(),
            Source::SocketExec,
        ),
        action: Action::Exec(ExecAction {
            argv: r.command.clone(),
            command: None,
            cwd: r.cwd.as_ref().map(PathBuf::from),
            env_keys: r
                .env
                .as_ref()
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default(),
            resolved_path: None,
            env: Vec::new(),
        }),
        received_at_ms: received_ms,
        deadline_ms: Some(deadline_ms),
        openclaw: OpenClawAsk::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompt_frames_become_shell_text_requests() {
        let r = ApprovalRequest {
            command: "ls | wc -l".into(),
            cwd: Some("/tmp".into()),
            agent_id: Some(String::new()),
            allowed_decisions: Some(vec!["allow-once".into(), "bogus".into(), "deny".into()]),
            ..Default::default()
        };
        let req = request_from_prompt("i1", &r, 5, 10);
        assert_eq!(req.who.agent_id, "main", "an empty agent id means main");
        assert_eq!(req.who.source, Source::SocketRequest);
        assert_eq!(req.deadline_ms, Some(10));
        let Action::Exec(e) = &req.action else {
            panic!("exec action")
        };
        assert_eq!(e.command.as_deref(), Some("ls | wc -l"));
        assert_eq!(
            req.openclaw.allowed_decisions,
            Some(vec![DecisionKind::AllowOnce, DecisionKind::Deny]),
            "unknown decisions are dropped"
        );
    }

    #[test]
    fn exec_frames_are_analysed_by_argv_and_env_names_only() {
        let r = ExecRequest {
            command: vec!["/bin/echo".into(), "a b".into()],
            raw_command: Some("echo 'a b' ; rm -rf /".into()),
            env: Some([("API_KEY".to_owned(), "s3cret".to_owned())].into()),
            agent_id: Some("ops".into()),
            ..Default::default()
        };
        let req = request_from_exec("i2", &r, 1, 2);
        let Action::Exec(e) = &req.action else {
            panic!("exec action")
        };
        assert_eq!(
            e.command, None,
            "the rawCommand is display text, not what runs"
        );
        assert_eq!(e.argv, r.command);
        assert_eq!(e.env_keys, vec!["API_KEY"]);
        assert!(!serde_json::to_string(&req)
            .unwrap_or_default()
            .contains("s3cret"));
        assert_eq!(req.who.agent_id, "ops");
    }

    #[test]
    fn forms_agree_only_when_they_are_the_same_command() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // (text, argv, agree)
        let cases: &[(&str, &[&str], bool)] = &[
            ("ls -la", &["ls", "-la"], true),
            ("ls 'a b'", &["ls", "a b"], true),
            ("/usr/bin/uname -s", &["/usr/bin/uname", "-s"], true),
            ("ls | wc -l", &["/bin/sh", "-lc", "ls | wc -l"], true),
            ("ls | wc -l", &["bash", "-c", "ls | wc -l"], true),
            ("env FOO=1 ls", &["env", "FOO=1", "ls"], true),
            ("ls", &["rm", "-rf", "/"], false),
            ("ls a b", &["ls", "a b"], false),
            ("ls; rm -rf ~", &["ls"], false),
            ("ls && curl x | sh", &["ls"], false),
            ("ls > /etc/passwd", &["ls"], false),
            ("ls $HOME", &["ls", "/root"], false),
            ("ls `id`", &["ls", "uid=0"], false),
            ("ls *", &["ls", "*"], false),
            ("ls", &["sh", "-c", "ls; rm -rf /"], false),
            ("echo hi", &["sh", "-c", "echo hi", "extra"], false),
            ("echo hi", &["python3", "-c", "echo hi"], false),
            ("", &["ls"], false),
            ("ls\nrm x", &["ls"], false),
            ("ls", &["ls", ""], false),
        ];
        for (text, argv, agree) in cases {
            assert_eq!(forms_agree(text, &v(argv)), *agree, "{text:?} vs {argv:?}");
        }
    }

    #[test]
    fn every_pair_of_prompt_forms_is_checked() {
        use crate::socket::wire::SystemRunPlan;
        let base = ApprovalRequest {
            command: "ls -la".into(),
            ..Default::default()
        };
        assert!(prompt_forms_agree(&base).is_ok(), "text alone");
        let mut r = base.clone();
        r.command_argv = Some(vec!["rm".into(), "-rf".into(), "/".into()]);
        assert!(prompt_forms_agree(&r).is_err());
        let mut r = base.clone();
        r.command_argv = Some(vec![]);
        assert!(prompt_forms_agree(&r).is_err(), "an empty argv");
        let mut r = base.clone();
        r.system_run_plan = Some(SystemRunPlan {
            argv: Some(vec!["ls".into(), "-la".into()]),
            command_text: Some("rm -rf /".into()),
        });
        assert!(prompt_forms_agree(&r).is_err(), "plan text disagrees");
        let mut r = base.clone();
        r.system_run_plan = Some(SystemRunPlan {
            argv: None,
            command_text: Some("rm -rf /".into()),
        });
        assert!(prompt_forms_agree(&r).is_err(), "plan text alone disagrees");
        let mut r = base.clone();
        r.command_argv = Some(vec!["ls".into(), "-la".into()]);
        r.system_run_plan = Some(SystemRunPlan {
            argv: Some(vec!["/bin/sh".into(), "-lc".into(), "ls -la".into()]),
            command_text: Some("ls -la".into()),
        });
        assert!(prompt_forms_agree(&r).is_err(), "two argvs that differ");
        r.system_run_plan = Some(SystemRunPlan {
            argv: Some(vec!["ls".into(), "-la".into()]),
            command_text: Some("ls -la".into()),
        });
        assert!(prompt_forms_agree(&r).is_ok(), "all four agree");
        let e = ExecRequest {
            command: vec!["/bin/echo".into(), "a b".into()],
            raw_command: Some("echo 'a b' ; rm -rf /".into()),
            ..Default::default()
        };
        assert!(exec_forms_agree(&e).is_err());
        let e = ExecRequest {
            command: vec!["/bin/echo".into(), "a b".into()],
            raw_command: None,
            ..Default::default()
        };
        assert!(exec_forms_agree(&e).is_ok(), "no text: nothing to disagree");
    }

    #[test]
    fn deny_reasons_and_messages() {
        use crate::engine::decision::{deny_message, fallback};
        use crate::policy::request::DecidedBy;
        assert_eq!(deny_message("user-denied"), "user denied");
        assert_eq!(
            deny_message("sensitive-path"),
            "blocked by sanctum-guard (sensitive-path)"
        );
        let d = fallback("approval-timeout");
        assert_eq!((d.kind, d.by), (DecisionKind::Deny, DecidedBy::Fallback));
        assert_eq!(
            serde_json::to_value(peer_id(&Peer {
                uid: 3,
                pid: Some(4)
            }))
            .ok(),
            Some(json!({"uid":3,"pid":4}))
        );
    }
}
