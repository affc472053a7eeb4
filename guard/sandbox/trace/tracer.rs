//! The ptrace loop: one command, every process and thread it starts, until all have exited.

use super::child;
use super::record::{Connect, Exec, Record, WriteOp};
use super::syscalls::{lookup, Call, Flags, PathArg};
use super::{Scene, TraceError};
use nix::sys::ptrace::{self, Event, Options};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{Pid, Uid};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};

/// Output kept per command; the rest is read and dropped.
const OUTPUT_CAP: usize = 64 << 10;
/// Longest path string read from a tracee.
const PATH_MAX: usize = 4096;

/// A syscall entry waiting for its exit, per thread.
enum Pending {
    Open {
        path: PathBuf,
        write: bool,
        o_path: bool,
    },
    Write {
        name: &'static str,
        paths: Vec<PathBuf>,
    },
    Connect {
        family: String,
        address: String,
    },
}

/// Runs `command` under the scene's shell (`-c`), traced, and returns its record.
pub(super) fn run(scene: &Scene, command: &str) -> Result<Record, TraceError> {
    let ruleset = child::ruleset(scene)?;
    let ll_fd = child::raw(&ruleset);
    let as_nobody = Uid::effective().is_root();
    let (out_rd, out_wr) = nix::unistd::pipe().map_err(TraceError::Ptrace)?;
    let err_wr: OwnedFd = out_wr.try_clone()?;
    let mut cmd = Command::new(&scene.shell);
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .env("HOME", &scene.home)
        .env("PATH", &scene.path)
        .env("TMPDIR", &scene.tmp)
        .env("USER", "nobody")
        .env("LOGNAME", "nobody")
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .envs(scene.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&scene.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_wr))
        .stderr(Stdio::from(err_wr));
    // SAFETY: `confine` only makes system calls (no allocation, no locks), as a pre_exec hook
    // must in a multi-threaded parent.
    unsafe {
        cmd.pre_exec(move || child::confine(ll_fd, as_nobody));
    }
    let spawned = cmd.spawn().map_err(TraceError::Spawn)?;
    drop(cmd);
    let root = Pid::from_raw(spawned.id() as i32);
    drop(spawned);
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(out_rd);
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            let room = OUTPUT_CAP.saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
        kept
    });
    let flags = Some(WaitPidFlag::__WALL | WaitPidFlag::__WNOTHREAD);
    match waitpid(root, flags).map_err(TraceError::Ptrace)? {
        WaitStatus::Stopped(_, Signal::SIGTRAP) => {}
        other => {
            let _ = kill(root, Signal::SIGKILL);
            let _ = waitpid(root, flags);
            return Err(TraceError::FirstStop(format!("{other:?}")));
        }
    }
    drop(ruleset);
    let opts = Options::PTRACE_O_TRACESYSGOOD
        | Options::PTRACE_O_TRACEEXEC
        | Options::PTRACE_O_TRACEFORK
        | Options::PTRACE_O_TRACEVFORK
        | Options::PTRACE_O_TRACECLONE
        | Options::PTRACE_O_EXITKILL;
    if let Err(e) = ptrace::setoptions(root, opts) {
        let _ = kill(root, Signal::SIGKILL);
        let _ = waitpid(root, flags);
        return Err(TraceError::Ptrace(e));
    }
    let live = Arc::new(Mutex::new(HashSet::from([root])));
    let (cancel, cancelled) = mpsc::channel::<()>();
    let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let live = Arc::clone(&live);
        let timed_out = Arc::clone(&timed_out);
        let timeout = scene.timeout;
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(timeout) {
                timed_out.store(true, std::sync::atomic::Ordering::SeqCst);
                // Every pid in the set is alive or an unreaped zombie: none can be reused.
                if let Ok(set) = live.lock() {
                    for p in set.iter() {
                        let _ = kill(*p, Signal::SIGKILL);
                    }
                }
            }
        })
    };
    let mut rec = Record::default();
    let mut pending: HashMap<Pid, Pending> = HashMap::new();
    // New tracees start with a SIGSTOP that is ours to swallow.
    let mut fresh: HashSet<Pid> = HashSet::new();
    let _ = ptrace::syscall(root, None);
    loop {
        if live.lock().map(|s| s.is_empty()).unwrap_or(true) {
            break;
        }
        let status = match waitpid(None, flags) {
            Ok(s) => s,
            Err(nix::Error::EINTR) => continue,
            Err(_) => break,
        };
        match status {
            WaitStatus::PtraceSyscall(pid) => {
                on_syscall(pid, &mut pending, &mut rec);
                let _ = ptrace::syscall(pid, None);
            }
            WaitStatus::PtraceEvent(pid, _, ev) => {
                if ev == Event::PTRACE_EVENT_FORK as i32
                    || ev == Event::PTRACE_EVENT_VFORK as i32
                    || ev == Event::PTRACE_EVENT_CLONE as i32
                {
                    if let Ok(new) = ptrace::getevent(pid) {
                        let new = Pid::from_raw(new as i32);
                        if let Ok(mut s) = live.lock() {
                            if s.insert(new) {
                                fresh.insert(new);
                            }
                        }
                    }
                } else if ev == Event::PTRACE_EVENT_EXEC as i32 {
                    // A non-leader thread that exec'd took over the leader's pid.
                    if let Ok(old) = ptrace::getevent(pid) {
                        let old = Pid::from_raw(old as i32);
                        if old != pid {
                            pending.remove(&old);
                            if let Ok(mut s) = live.lock() {
                                s.remove(&old);
                            }
                        }
                    }
                    pending.remove(&pid);
                    rec.execs.push(exec_of(pid));
                }
                let _ = ptrace::syscall(pid, None);
            }
            WaitStatus::Stopped(pid, sig) => {
                let known = live.lock().map(|mut s| s.insert(pid)).unwrap_or(false);
                let swallow = matches!(
                    sig,
                    Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU
                );
                if (sig == Signal::SIGSTOP && (fresh.remove(&pid) || known)) || swallow {
                    let _ = ptrace::syscall(pid, None);
                } else {
                    let _ = ptrace::syscall(pid, Some(sig));
                }
            }
            WaitStatus::Exited(pid, code) => {
                gone(pid, &live, &mut pending);
                if pid == root {
                    rec.exit = Some(code);
                }
            }
            WaitStatus::Signaled(pid, sig, _) => {
                gone(pid, &live, &mut pending);
                if pid == root {
                    rec.exit = Some(128 + sig as i32);
                }
            }
            _ => {}
        }
    }
    let _ = cancel.send(());
    let _ = watchdog.join();
    rec.timed_out = timed_out.load(std::sync::atomic::Ordering::SeqCst);
    rec.output = reader.join().unwrap_or_default();
    Ok(rec)
}

fn gone(pid: Pid, live: &Mutex<HashSet<Pid>>, pending: &mut HashMap<Pid, Pending>) {
    pending.remove(&pid);
    if let Ok(mut s) = live.lock() {
        s.remove(&pid);
    }
}

/// One syscall stop: at entry, read and resolve the arguments; at exit, record with the result.
fn on_syscall(pid: Pid, pending: &mut HashMap<Pid, Pending>, rec: &mut Record) {
    let Some(info) = syscall_info(pid) else {
        return;
    };
    match info.op {
        libc::PTRACE_SYSCALL_INFO_ENTRY => {
            // SAFETY: op ENTRY says the kernel filled the `entry` member of the union.
            let entry = unsafe { info.u.entry };
            if let Some(p) = entry_of(pid, entry.nr as i64, &entry.args) {
                pending.insert(pid, p);
            }
        }
        libc::PTRACE_SYSCALL_INFO_EXIT => {
            // SAFETY: op EXIT says the kernel filled the `exit` member of the union.
            let exit = unsafe { info.u.exit };
            if let Some(p) = pending.remove(&pid) {
                finish(pid, p, exit.sval, exit.is_error != 0, rec);
            }
        }
        _ => {}
    }
}

/// `PTRACE_GET_SYSCALL_INFO`. nix's wrapper passes a zero size, so the kernel copies nothing
/// and the struct it returns is uninitialised: this one passes the size.
fn syscall_info(pid: Pid) -> Option<libc::ptrace_syscall_info> {
    // SAFETY: all-zero is a valid ptrace_syscall_info (plain integers and a union of them).
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::ptrace_syscall_info>();
    // SAFETY: the kernel writes at most `size` bytes into `info`, which we own and which
    // outlives the call.
    let rc = unsafe {
        libc::ptrace(
            libc::PTRACE_GET_SYSCALL_INFO,
            pid.as_raw(),
            size as *mut libc::c_void,
            &mut info as *mut libc::ptrace_syscall_info,
        )
    };
    (rc > 0).then_some(info)
}

fn entry_of(pid: Pid, nr: i64, args: &[u64; 6]) -> Option<Pending> {
    match lookup(nr)? {
        Call::Open { path, flags } => {
            let flags = match flags {
                Flags::Arg(i) => args[i] as i64,
                Flags::How(i) => read_u64(pid, args[i]).unwrap_or(0) as i64,
                Flags::Creat => (libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC) as i64,
            } as i32;
            let write = flags & libc::O_ACCMODE != libc::O_RDONLY
                || flags & (libc::O_CREAT | libc::O_TRUNC) != 0;
            Some(Pending::Open {
                path: path_arg(pid, path, args)?,
                write,
                o_path: flags & libc::O_PATH != 0,
            })
        }
        Call::Write { name, paths } => Some(Pending::Write {
            name,
            paths: paths
                .iter()
                .filter_map(|p| path_arg(pid, *p, args))
                .collect(),
        }),
        Call::Connect => {
            let (family, address) = sockaddr(pid, args[1], args[2] as usize)?;
            Some(Pending::Connect { family, address })
        }
        Call::SendTo => {
            if args[4] == 0 {
                return None;
            }
            let (family, address) = sockaddr(pid, args[4], args[5] as usize)?;
            Some(Pending::Connect { family, address })
        }
    }
}

fn finish(pid: Pid, p: Pending, sval: i64, is_error: bool, rec: &mut Record) {
    match p {
        Pending::Open {
            path,
            write,
            o_path,
        } => {
            // A successful open is named by the fd the kernel returned: symlinks, `..` and
            // magic links are already resolved there.
            let real = if is_error {
                None
            } else {
                std::fs::read_link(format!("/proc/{pid}/fd/{sval}")).ok()
            };
            let path = real.unwrap_or(path);
            // `pipe:[N]`, `socket:[N]`, `anon_inode:…`: not a file of any filesystem.
            if !path.is_absolute() {
                return;
            }
            if write {
                rec.writes.push(WriteOp {
                    call: "open",
                    path,
                    ok: !is_error,
                });
            } else if !is_error && !o_path {
                rec.reads.push(path);
            }
        }
        Pending::Write { name, paths } => {
            for path in paths {
                rec.writes.push(WriteOp {
                    call: name,
                    path,
                    ok: !is_error,
                });
            }
        }
        Pending::Connect { family, address } => rec.connects.push(Connect {
            family,
            address,
            ok: !is_error || sval == -(libc::EINPROGRESS as i64),
        }),
    }
}

/// The program image `pid` runs now, right after its exec.
fn exec_of(pid: Pid) -> Exec {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default();
    Exec { exe, argv }
}

/// Reads `len` bytes at `addr` of the tracee through /proc/<pid>/mem.
fn read_mem(pid: Pid, addr: u64, len: usize) -> Option<Vec<u8>> {
    if addr == 0 {
        return None;
    }
    let f = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; len];
    let n = f.read_at(&mut buf, addr).ok()?;
    buf.truncate(n);
    Some(buf)
}

fn read_u64(pid: Pid, addr: u64) -> Option<u64> {
    let b = read_mem(pid, addr, 8)?;
    Some(u64::from_ne_bytes(b.get(..8)?.try_into().ok()?))
}

/// Reads a NUL-terminated string, in page-sized steps so a read never crosses into an unmapped
/// page it does not need.
fn read_cstr(pid: Pid, addr: u64) -> Option<Vec<u8>> {
    if addr == 0 {
        return None;
    }
    let f = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < PATH_MAX {
        let room = 4096 - (at % 4096) as usize;
        let mut buf = vec![0u8; room];
        let n = f.read_at(&mut buf, at).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = memchr::memchr(0, &buf[..n]) {
            out.extend_from_slice(&buf[..end]);
            return Some(out);
        }
        out.extend_from_slice(&buf[..n]);
        at += n as u64;
    }
    Some(out)
}

/// A path argument as the kernel will see it: absolute, relative to the dirfd's or cwd's path
/// at this stop, `/proc/self` meaning the tracee, `.` and `..` folded where they can be
/// (parents that exist are canonicalised, so a symlinked directory names its target).
fn path_arg(pid: Pid, (dirfd, arg): PathArg, args: &[u64; 6]) -> Option<PathBuf> {
    let raw = read_cstr(pid, args[arg])?;
    let raw = Path::new(OsStr::from_bytes(&raw));
    let joined = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        let fd = dirfd.map(|d| args[d] as i32).unwrap_or(libc::AT_FDCWD);
        let base = if fd == libc::AT_FDCWD {
            std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?
        } else {
            std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()?
        };
        if raw.as_os_str().is_empty() {
            base
        } else {
            base.join(raw)
        }
    };
    Some(resolve(pid, &joined))
}

fn resolve(pid: Pid, p: &Path) -> PathBuf {
    let mut p = p.to_path_buf();
    if let Ok(rest) = p.strip_prefix("/proc/self") {
        p = Path::new(&format!("/proc/{pid}")).join(rest);
    } else if let Ok(rest) = p.strip_prefix("/proc/thread-self") {
        p = Path::new(&format!("/proc/{pid}/task/{pid}")).join(rest);
    }
    let clean = lexical(&p);
    match (clean.parent(), clean.file_name()) {
        (Some(dir), Some(name)) => match std::fs::canonicalize(dir) {
            Ok(d) => d.join(name),
            Err(_) => clean,
        },
        _ => clean,
    }
}

fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// `(family, address)` of the sockaddr at `addr`.
fn sockaddr(pid: Pid, addr: u64, len: usize) -> Option<(String, String)> {
    let b = read_mem(pid, addr, len.min(128))?;
    let family = u16::from_ne_bytes(b.get(..2)?.try_into().ok()?) as i32;
    Some(match family {
        libc::AF_INET => {
            let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
            let ip = std::net::Ipv4Addr::from(<[u8; 4]>::try_from(b.get(4..8)?).ok()?);
            ("inet".into(), format!("{ip}:{port}"))
        }
        libc::AF_INET6 => {
            let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
            let ip = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(b.get(8..24)?).ok()?);
            ("inet6".into(), format!("[{ip}]:{port}"))
        }
        libc::AF_UNIX => {
            let path = b.get(2..).unwrap_or_default();
            let end = if path.first() == Some(&0) {
                path.len()
            } else {
                memchr::memchr(0, path).unwrap_or(path.len())
            };
            (
                "unix".into(),
                String::from_utf8_lossy(&path[..end]).replace('\0', "@"),
            )
        }
        f => (format!("other({f})"), String::new()),
    })
}
