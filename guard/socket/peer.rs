//! Is the requester still there? A gated request waits in the inbox while
//! its client waits on the socket; if the client is gone, nobody can receive the answer and an
//! approval must not run anything. "Gone" is a full close: the kernel then reports POLLHUP
//! (both directions shut). A half-close is not gone: OpenClaw 2026.9.6's Node client shuts
//! its write side after sending and keeps reading, which shows only as EOF/POLLRDHUP.
//!
//! Checked with a zero-timeout poll(2) every [`PROBE_INTERVAL`], only while a request waits
//! for a person, so answers that do not wait cost no syscall.

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::BorrowedFd;
use std::time::Duration;

/// How often a waiting request looks at its connection.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(200);

/// A borrowed view of the requester's connection (or none: never gone).
#[derive(Clone, Copy, Debug)]
pub struct PeerLink<'a> {
    fd: Option<BorrowedFd<'a>>,
}

impl<'a> PeerLink<'a> {
    pub fn new(fd: BorrowedFd<'a>) -> Self {
        PeerLink { fd: Some(fd) }
    }

    /// A requester that cannot go away (callers without a connection).
    pub fn detached() -> Self {
        PeerLink { fd: None }
    }

    /// True once the peer fully closed (or the socket failed).
    pub fn is_gone(&self) -> bool {
        let Some(fd) = self.fd else { return false };
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(_) => fds[0].revents().is_some_and(|r| {
                r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
            }),
            Err(_) => false,
        }
    }

    /// Resolves when the peer is gone; never, for a detached link.
    pub async fn gone(self) {
        if self.fd.is_none() {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(PROBE_INTERVAL).await;
            if self.is_gone() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn half_close_is_not_gone_full_close_is() {
        let (server, mut client) = UnixStream::pair().expect("pair");
        let link = PeerLink::new(server.as_fd());
        assert!(!link.is_gone());
        client.write_all(b"line\n").expect("write");
        client
            .shutdown(std::net::Shutdown::Write)
            .expect("half close");
        assert!(
            !link.is_gone(),
            "a half-closed client still reads its answer"
        );
        drop(client);
        assert!(link.is_gone(), "a closed client is gone");
        assert!(!PeerLink::detached().is_gone());
    }
}
