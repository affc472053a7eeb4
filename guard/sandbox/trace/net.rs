//! The recorder's private network: a namespace of the tracer thread with loopback only, and a
//! listener that counts connections, so a command that tries the network reaches nothing else.

use super::TraceError;
use nix::sched::{unshare, CloneFlags};
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
use std::io::Read;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Moves the calling thread into a new network namespace, brings its loopback up and starts a
/// listener on 127.0.0.1; returns its port. Children forked by this thread inherit the
/// namespace; the rest of the process keeps its own.
pub(super) fn private_loopback(accepted: Arc<AtomicU64>) -> Result<u16, TraceError> {
    unshare(CloneFlags::CLONE_NEWNET).map_err(TraceError::Netns)?;
    loopback_up()?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::Builder::new()
        .name("oracle-listener".into())
        .spawn(move || {
            for conn in listener.incoming() {
                accepted.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut c) = conn {
                    let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(200)));
                    let mut buf = [0u8; 4096];
                    let _ = c.read(&mut buf);
                }
            }
        })?;
    Ok(port)
}

/// `ip link set lo up`, with the two ioctls it makes.
fn loopback_up() -> Result<(), TraceError> {
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(TraceError::Netns)?;
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the name and writes the flags of the ifreq we own, on a
    // socket we own; the pointer is valid for the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) };
    if rc < 0 {
        return Err(TraceError::Netns(nix::Error::last()));
    }
    // SAFETY: the flags member of the union was just written by the kernel.
    unsafe {
        ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: as above; SIOCSIFFLAGS only reads the ifreq.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) };
    if rc < 0 {
        return Err(TraceError::Netns(nix::Error::last()));
    }
    Ok(())
}
