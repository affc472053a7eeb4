//! When a gateway client of ours (the node host, the approver) connects again after a
//! session ended. Two endings are waits on something outside the guard, not failures to
//! back off from: the gateway not listening yet (it starts after us in a pod or a compose
//! stack, and Node takes tens of seconds), and the device waiting for a person to pair it.
//! Backing off to 30 s there made a fresh deployment usable up to a minute after both were
//! ready; a refused connect or an unpaired connect costs the gateway next to nothing (a
//! repeated unpaired connect refreshes the same pending request, not a new one).

use super::ws::ChallengeError;
use std::time::Duration;

/// The first wait, and the wait after a session that lasted [`STEADY`].
pub const FIRST: Duration = Duration::from_millis(500);
/// The longest wait after an unexplained ending (doubling from [`FIRST`]).
pub const MAX: Duration = Duration::from_secs(30);
/// The longest wait while the gateway refuses connections or is unreachable.
pub const UNREACHABLE_MAX: Duration = Duration::from_secs(2);
/// The wait while the device waits to be paired.
pub const PAIRING_POLL: Duration = Duration::from_secs(3);
/// A session this long was a working connection: the next ending starts from [`FIRST`].
pub const STEADY: Duration = Duration::from_secs(60);

/// Why one session of a gateway client (the node host, the approver) ended.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("websocket: {0}")]
    Ws(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("the gateway closed the connection")]
    Closed,
    #[error("{0}")]
    Challenge(#[from] ChallengeError),
    #[error("connect refused: {0}")]
    Refused(String),
    /// The gateway has not paired this device yet: a person must approve request `0`.
    #[error("not paired yet (pairing request {0})")]
    NotPaired(String),
}

impl SessionError {
    /// How the next connect waits after this ending.
    pub fn ended(&self) -> Ended {
        match self {
            SessionError::Ws(e) | SessionError::Challenge(ChallengeError::Ws(e)) => Ended::of_ws(e),
            SessionError::NotPaired(_) => Ended::AwaitingPairing,
            _ => Ended::Other,
        }
    }
}

/// How a session ended, as far as the next connect is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Nothing listened (refused, host or network unreachable).
    Unreachable,
    /// The gateway answered `NOT_PAIRED`: a person has yet to approve the device.
    AwaitingPairing,
    /// Anything else: closed, timed out, refused for another reason.
    Other,
}

impl Ended {
    /// The ending of a WebSocket error: unreachable when the TCP connect itself was refused.
    pub fn of_ws(e: &tokio_tungstenite::tungstenite::Error) -> Ended {
        use std::io::ErrorKind::{ConnectionRefused, HostUnreachable, NetworkUnreachable};
        match e {
            tokio_tungstenite::tungstenite::Error::Io(io)
                if matches!(
                    io.kind(),
                    ConnectionRefused | HostUnreachable | NetworkUnreachable
                ) =>
            {
                Ended::Unreachable
            }
            _ => Ended::Other,
        }
    }
}

/// The waits between one client's sessions.
#[derive(Debug)]
pub struct Reconnect {
    backoff: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect { backoff: FIRST }
    }
}

impl Reconnect {
    /// The wait before the next connect, after a session that lasted `lasted` and ended so.
    pub fn next(&mut self, ended: Ended, lasted: Duration) -> Duration {
        if lasted > STEADY {
            self.backoff = FIRST;
        }
        match ended {
            Ended::Unreachable => {
                let wait = self.backoff.min(UNREACHABLE_MAX);
                self.backoff = (wait * 2).min(UNREACHABLE_MAX);
                wait
            }
            // A person's pace: neither grows the backoff nor waits on it.
            Ended::AwaitingPairing => PAIRING_POLL,
            Ended::Other => {
                let wait = self.backoff;
                self.backoff = (wait * 2).min(MAX);
                wait
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(10);

    /// What a case says, the endings (how each session ended, how long it lasted), the
    /// waits wanted in milliseconds.
    type Case = (&'static str, Vec<(Ended, Duration)>, Vec<u64>);

    /// The waits for a run of endings, each session lasting `SHORT` unless given.
    fn waits(endings: &[(Ended, Duration)]) -> Vec<u64> {
        let mut r = Reconnect::default();
        endings
            .iter()
            .map(|(e, lasted)| r.next(*e, *lasted).as_millis() as u64)
            .collect()
    }

    #[test]
    fn waits_by_ending() {
        use Ended::*;
        let cases: Vec<Case> = vec![
            (
                "unexplained endings double to 30 s",
                vec![(Other, SHORT); 9],
                vec![500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000],
            ),
            (
                "a gateway not up yet is tried every 2 s at most",
                vec![(Unreachable, SHORT); 7],
                vec![500, 1000, 2000, 2000, 2000, 2000, 2000],
            ),
            (
                "a device waiting for a person asks every 3 s",
                vec![(AwaitingPairing, SHORT); 5],
                vec![3000, 3000, 3000, 3000, 3000],
            ),
            (
                "a long working session starts the doubling over",
                vec![
                    (Other, SHORT),
                    (Other, SHORT),
                    (Other, SHORT),
                    (Other, STEADY * 2),
                ],
                vec![500, 1000, 2000, 500],
            ),
            (
                "a gateway that comes up and fails otherwise is retried from 2 s, not 30",
                vec![(Unreachable, SHORT); 6]
                    .into_iter()
                    .chain([(Other, SHORT), (Other, SHORT)])
                    .collect(),
                vec![500, 1000, 2000, 2000, 2000, 2000, 2000, 4000],
            ),
            (
                "waiting for pairing leaves the backoff where it was",
                vec![
                    (Other, SHORT),
                    (AwaitingPairing, SHORT),
                    (AwaitingPairing, SHORT),
                    (Other, SHORT),
                ],
                vec![500, 3000, 3000, 1000],
            ),
        ];
        for (what, endings, want) in cases {
            assert_eq!(waits(&endings), want, "{what}");
        }
    }

    #[test]
    fn only_a_refused_or_unreachable_connect_is_unreachable() {
        use std::io::{Error, ErrorKind};
        use tokio_tungstenite::tungstenite::Error as WsError;
        let io = |k: ErrorKind| WsError::Io(Error::from(k));
        for (e, want) in [
            (io(ErrorKind::ConnectionRefused), Ended::Unreachable),
            (io(ErrorKind::HostUnreachable), Ended::Unreachable),
            (io(ErrorKind::NetworkUnreachable), Ended::Unreachable),
            (io(ErrorKind::ConnectionReset), Ended::Other),
            (io(ErrorKind::TimedOut), Ended::Other),
            (WsError::ConnectionClosed, Ended::Other),
        ] {
            assert_eq!(Ended::of_ws(&e), want, "{e}");
        }
    }

    #[test]
    fn each_session_ending_waits_as_its_kind() {
        use std::io::{Error, ErrorKind};
        use tokio_tungstenite::tungstenite::Error as WsError;
        let refused = || WsError::Io(Error::from(ErrorKind::ConnectionRefused));
        for (e, want) in [
            (SessionError::Ws(refused()), Ended::Unreachable),
            (
                SessionError::Challenge(ChallengeError::Ws(refused())),
                Ended::Unreachable,
            ),
            (
                SessionError::NotPaired("r-1".into()),
                Ended::AwaitingPairing,
            ),
            (SessionError::Closed, Ended::Other),
            (SessionError::Refused("{}".into()), Ended::Other),
            (
                SessionError::Challenge(ChallengeError::NoChallenge),
                Ended::Other,
            ),
        ] {
            assert_eq!(e.ended(), want, "{e}");
        }
    }
}
