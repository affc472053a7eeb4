//! The uid and gid runs take when the guard can give them one (`run_as`). Landlock does not
//! cover metadata: a run under the guard's own uid could chmod the guard's state dir, audit
//! key and tokens. Under another uid it owns none of them, and the kernel refuses.

use super::SandboxError;
use nix::unistd::{Gid, Group, Uid, User};

/// A run's identity: its uid, its gid, and no supplementary groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

impl RunAs {
    /// `NAME` (its primary group), `NAME:GROUP`, or numeric `UID:GID`. Root (uid or gid 0) is
    /// refused: a run as root would own everything the separation is meant to keep from it.
    pub fn parse(text: &str) -> Result<RunAs, SandboxError> {
        let bad = |why: String| SandboxError::RunAs(format!("run_as {text:?}: {why}"));
        let (user, group) = match text.trim().split_once(':') {
            Some((u, g)) => (u, Some(g)),
            None => (text.trim(), None),
        };
        if user.is_empty() || group.is_some_and(str::is_empty) {
            return Err(bad("expected NAME, NAME:GROUP or UID:GID".into()));
        }
        let (uid, primary) = match user.parse::<u32>() {
            Ok(uid) => (uid, None),
            Err(_) => match User::from_name(user) {
                Ok(Some(u)) => (u.uid.as_raw(), Some(u.gid.as_raw())),
                Ok(None) => return Err(bad(format!("no user {user}"))),
                Err(e) => return Err(bad(format!("looking up {user}: {e}"))),
            },
        };
        let gid = match group {
            Some(g) => match g.parse::<u32>() {
                Ok(gid) => gid,
                Err(_) => match Group::from_name(g) {
                    Ok(Some(gr)) => gr.gid.as_raw(),
                    Ok(None) => return Err(bad(format!("no group {g}"))),
                    Err(e) => return Err(bad(format!("looking up {g}: {e}"))),
                },
            },
            None => primary.ok_or_else(|| bad("a numeric uid needs its gid: UID:GID".into()))?,
        };
        if uid == 0 || gid == 0 {
            return Err(bad("runs may not be root".into()));
        }
        Ok(RunAs { uid, gid })
    }

    /// Whether this process can start children as this identity: it must be root (the
    /// switch needs CAP_SETUID and CAP_SETGID), and the identity must not be its own uid
    /// (nothing would be separated).
    pub fn check_switchable(&self) -> Result<(), SandboxError> {
        let me = Uid::effective();
        if self.uid == me.as_raw() {
            return Err(SandboxError::RunAs(format!(
                "run_as uid {} is the guard's own uid: runs would own the guard's files",
                self.uid
            )));
        }
        if !me.is_root() {
            return Err(SandboxError::RunAs(format!(
                "run_as {}:{} needs the guard to run as root (it switches each run's uid); \
                 this guard runs as uid {me}",
                self.uid, self.gid
            )));
        }
        Ok(())
    }

    pub fn gid(&self) -> Gid {
        Gid::from_raw(self.gid)
    }

    pub fn uid(&self) -> Uid {
        Uid::from_raw(self.uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_parse_by_name_or_number_and_never_as_root() {
        // `nobody` and `nogroup` exist on Debian, where the tests run.
        let nobody = User::from_name("nobody").expect("passwd").expect("nobody");
        let cases: &[(&str, Option<(u32, u32)>)] = &[
            ("1000:1000", Some((1000, 1000))),
            (" 1234:99 ", Some((1234, 99))),
            ("nobody", Some((nobody.uid.as_raw(), nobody.gid.as_raw()))),
            ("nobody:1000", Some((nobody.uid.as_raw(), 1000))),
            ("1000", None),
            ("0:1000", None),
            ("1000:0", None),
            ("root", None),
            ("nobody:root", None),
            ("no-such-user-7f3a", None),
            ("nobody:no-such-group-7f3a", None),
            ("", None),
            (":1000", None),
            ("1000:", None),
        ];
        for (text, want) in cases {
            let got = RunAs::parse(text).ok().map(|r| (r.uid, r.gid));
            assert_eq!(got, *want, "{text:?}");
        }
    }

    #[test]
    fn the_guard_cannot_separate_runs_from_itself() {
        let me = Uid::effective().as_raw();
        let same = RunAs { uid: me, gid: 1000 };
        assert!(same.check_switchable().is_err());
        let other = RunAs {
            uid: me.wrapping_add(4242),
            gid: 4242,
        };
        assert_eq!(other.check_switchable().is_ok(), Uid::effective().is_root());
    }
}
