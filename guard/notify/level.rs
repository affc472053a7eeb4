//! How loud a request is: a level 1..=5 per category (ntfy's priority scale), which a
//! channel's minimum category and quiet hours compare against, and the quiet hours themselves
//! (local wall-clock time, a window that may wrap past midnight).

use crate::policy::verdict::Category;

/// A category's loudness; a channel's `min_category` admits every category at or above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Level(pub u8);

impl Level {
    pub const LOWEST: Level = Level(1);
    pub const URGENT: Level = Level(5);

    /// Reads and listings are quiet; writes low; running code and installs the default;
    /// network writes and config changes high; what the policy blocks (were it ever asked)
    /// urgent.
    pub fn of(c: Category) -> Level {
        use Category::*;
        Level(match c {
            Read | Enumerate | Browse | HttpRead => 1,
            Write | Delete | ProcessExit => 2,
            RunCode | PackageInstall | Unanalysable | SecretInTree => 3,
            HttpWrite | ConfigChange => 4,
            Privilege | PipeToShell | DestructiveGit | DestructiveDelete | SkillInstall
            | SensitivePath | ApprovalsOff => 5,
        })
    }
}

/// `HH:MM-HH:MM` in local time; `22:00-07:00` wraps past midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    start: u16,
    end: u16,
}

fn minutes(s: &str) -> Option<u16> {
    let (h, m) = s.trim().split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

impl QuietHours {
    pub fn parse(s: &str) -> Option<QuietHours> {
        let (a, b) = s.split_once('-')?;
        let (start, end) = (minutes(a)?, minutes(b)?);
        (start != end).then_some(QuietHours { start, end })
    }

    /// Whether minute-of-day `now` (0..1440) falls inside.
    pub fn contains(&self, now: u16) -> bool {
        if self.start < self.end {
            (self.start..self.end).contains(&now)
        } else {
            now >= self.start || now < self.end
        }
    }
}

/// The local minute of the day (the system time zone: `TZ`, else `/etc/localtime`; UTC when
/// neither is readable).
pub fn local_minute() -> u16 {
    let now = jiff::Zoned::now();
    (u16::from(now.hour().unsigned_abs()) * 60) + u16::from(now.minute().unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hours_parse_and_wrap() {
        let q = QuietHours::parse("22:00-07:00").unwrap();
        for (t, inside) in [
            (22 * 60, true),
            (0, true),
            (6 * 60 + 59, true),
            (7 * 60, false),
            (12 * 60, false),
        ] {
            assert_eq!(q.contains(t), inside, "{t}");
        }
        let d = QuietHours::parse("09:30-17:00").unwrap();
        assert!(d.contains(9 * 60 + 30) && !d.contains(17 * 60) && !d.contains(60));
        for bad in [
            "",
            "22-07",
            "24:00-01:00",
            "10:00-10:00",
            "1:00-02:00",
            "10:60-11:00",
        ] {
            assert!(QuietHours::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn blocked_shapes_are_loudest_and_reads_quietest() {
        assert!(Level::of(Category::PipeToShell) == Level::URGENT);
        assert!(Level::of(Category::Read) == Level::LOWEST);
        assert!(Level::of(Category::HttpWrite) > Level::of(Category::RunCode));
        assert!(Level::of(Category::RunCode) > Level::of(Category::Write));
    }
}
