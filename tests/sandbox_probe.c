/* Attack probes for tests/sandbox_escape.rs: each mode makes one syscall (or a few) and
 * prints "OK" or "ERR <errno-name>", so a test asserts the specific denial. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/fs.h>
#include <linux/capability.h>
#include <linux/ioprio.h>
#include <netinet/tcp.h>
#include <sys/inotify.h>
#include <sys/fanotify.h>
#include <poll.h>

static int report(long rc) {
    if (rc < 0) { printf("ERR %s\n", strerrorname_np(errno)); return 1; }
    printf("OK\n");
    return 0;
}

static int tcp(int family, int type, int proto, const char *ip, int port, int do_bind) {
    int s = socket(family, type, proto);
    if (s < 0) return report(-1);
    struct sockaddr_storage ss; memset(&ss, 0, sizeof ss); socklen_t len;
    if (family == AF_INET) {
        struct sockaddr_in *a = (void *)&ss; a->sin_family = AF_INET; a->sin_port = htons(port);
        inet_pton(AF_INET, ip, &a->sin_addr); len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (void *)&ss; a->sin6_family = AF_INET6; a->sin6_port = htons(port);
        inet_pton(AF_INET6, ip, &a->sin6_addr); len = sizeof *a;
    }
    return report(do_bind ? bind(s, (void *)&ss, len) : connect(s, (void *)&ss, len));
}


/* An address of `fam` for 127.0.0.1/::1/::ffff:127.0.0.1/AF_UNSPEC: "4", "6", "m" or "u". */
static socklen_t addr_of(const char *fam, int port, struct sockaddr_storage *ss) {
    memset(ss, 0, sizeof *ss);
    if (!strcmp(fam, "4") || !strcmp(fam, "u")) {
        struct sockaddr_in *a = (void *)ss; a->sin_family = fam[0] == 'u' ? AF_UNSPEC : AF_INET;
        a->sin_port = htons(port); inet_pton(AF_INET, "127.0.0.1", &a->sin_addr); return sizeof *a;
    }
    struct sockaddr_in6 *a = (void *)ss; a->sin6_family = AF_INET6; a->sin6_port = htons(port);
    inet_pton(AF_INET6, fam[0] == 'm' ? "::ffff:127.0.0.1" : "::1", &a->sin6_addr);
    return sizeof *a;
}

/* net OP DOMAIN TYPE PROTO FAM PORT: one network attack; DOMAIN/TYPE/PROTO are numbers. */
static int net(int argc, char **argv) {
    if (argc < 8) return 2;
    const char *op = argv[2];
    int dom = atoi(argv[3]), type = atoi(argv[4]), proto = atoi(argv[5]), port = atoi(argv[7]);
    struct sockaddr_storage ss; socklen_t len = addr_of(argv[6], port, &ss);
    int s = socket(dom, type, proto);
    if (s < 0) return report(-1);
    char c = 'x';
    if (!strcmp(op, "socket")) return report(0);
    if (!strcmp(op, "connect")) return report(connect(s, (void *)&ss, len));
    if (!strcmp(op, "bind")) return report(bind(s, (void *)&ss, len));
    if (!strcmp(op, "listen")) return report(listen(s, 8));
    if (!strcmp(op, "sendto")) return report(sendto(s, &c, 1, 0, (void *)&ss, len));
    if (!strcmp(op, "fastopen")) return report(sendto(s, &c, 1, MSG_FASTOPEN, (void *)&ss, len));
    if (!strcmp(op, "fastopen_nosig")) return report(sendto(s, &c, 1, MSG_FASTOPEN | MSG_NOSIGNAL | MSG_DONTWAIT, (void *)&ss, len));
    struct iovec iov = {&c, 1};
    struct msghdr mh = {.msg_name = &ss, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1};
    if (!strcmp(op, "sendmsg_fastopen")) return report(sendmsg(s, &mh, MSG_FASTOPEN));
    if (!strcmp(op, "sendmsg_fastopen_in_hdr")) { mh.msg_flags = MSG_FASTOPEN; return report(sendmsg(s, &mh, 0)); }
    if (!strcmp(op, "sendmmsg_fastopen")) {
        struct mmsghdr mm = {.msg_hdr = mh};
        return report(sendmmsg(s, &mm, 1, MSG_FASTOPEN));
    }
    if (!strcmp(op, "fastopen_connect")) { /* TCP_FASTOPEN_CONNECT then connect */
        int one = 1;
        if (setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one) < 0) return report(-1);
        return report(connect(s, (void *)&ss, len));
    }
    if (!strcmp(op, "fastopen_listener")) { int q = 5; return report(setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN, &q, sizeof q)); }
    if (!strcmp(op, "unspec_then_connect")) { /* disconnect-by-AF_UNSPEC, then a real connect */
        struct sockaddr u = {.sa_family = AF_UNSPEC}; connect(s, &u, sizeof u);
        return report(connect(s, (void *)&ss, len));
    }
    fprintf(stderr, "unknown net op %s\n", op);
    return 2;
}

static volatile sig_atomic_t got;
static void on_sig(int sig) { got = sig; }

/* victim FILE: a same-uid sibling that notes every SIGURG/SIGIO it receives in FILE. It drops
 * its capabilities (like a guard running as a plain user), so the kernel's "target has more
 * capabilities" checks do not hide a lever that works against a non-root guard. */
static int victim(const char *file) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2]; memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) < 0) { perror("capset"); return 1; }
    struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_sig;
    sigaction(SIGURG, &sa, 0); sigaction(SIGIO, &sa, 0); sigaction(SIGUSR1, &sa, 0);
    /* and listens on the abstract unix socket "sanctum-victim-PID" */
    int us = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un ua = {.sun_family = AF_UNIX};
    int nl = snprintf(ua.sun_path + 1, sizeof ua.sun_path - 2, "sanctum-victim-%d", getpid());
    if (us < 0 || bind(us, (void *)&ua, offsetof(struct sockaddr_un, sun_path) + 1 + nl) < 0 || listen(us, 4) < 0) { perror("abstract"); return 1; }
    printf("%d\n", getpid());
    for (int i = 0; i < 600; i++) {
        usleep(50000);
        if (got) { FILE *f = fopen(file, "a"); fprintf(f, "GOT %d\n", got); fclose(f); got = 0; }
    }
    return 0;
}

/* lever NAME PID: one way a same-uid process could act on another. */
static int lever(const char *name, const char *pidarg) {
    pid_t pid = atoi(pidarg);
    char path[128];
    if (!strcmp(name, "prlimit")) { struct rlimit r = {1, 1}; return report(prlimit(pid, RLIMIT_NOFILE, &r, 0)); }
    if (!strcmp(name, "prlimit_fsize")) { struct rlimit r = {0, 0}; return report(prlimit(pid, RLIMIT_FSIZE, &r, 0)); }
    if (!strcmp(name, "prlimit_read")) { struct rlimit r; return report(prlimit(pid, RLIMIT_NOFILE, 0, &r)); }
    if (!strcmp(name, "kill")) return report(kill(pid, SIGURG));
    if (!strcmp(name, "kill_all")) return report(kill(-1, SIGURG));
    if (!strcmp(name, "kill_pgrp")) return report(kill(-getpgid(pid), SIGURG));
    if (!strcmp(name, "tgsigqueue")) { siginfo_t si; memset(&si, 0, sizeof si); si.si_code = SI_QUEUE; return report(syscall(SYS_rt_tgsigqueueinfo, pid, pid, SIGURG, &si)); }
    if (!strcmp(name, "tgkill")) return report(syscall(SYS_tgkill, pid, pid, SIGURG));
    if (!strcmp(name, "sigqueue")) { siginfo_t si; memset(&si, 0, sizeof si); si.si_code = SI_QUEUE; return report(syscall(SYS_rt_sigqueueinfo, pid, SIGURG, &si)); }
    if (!strcmp(name, "pidfd_signal")) {
        int fd = syscall(SYS_pidfd_open, pid, 0); if (fd < 0) return report(-1);
        return report(syscall(SYS_pidfd_send_signal, fd, SIGURG, 0, 0));
    }
    if (!strcmp(name, "pidfd_getfd")) {
        int fd = syscall(SYS_pidfd_open, pid, 0); if (fd < 0) return report(-1);
        return report(syscall(SYS_pidfd_getfd, fd, 0, 0));
    }
    if (!strcmp(name, "process_madvise")) {
        int fd = syscall(SYS_pidfd_open, pid, 0); if (fd < 0) return report(-1);
        struct iovec v = {(void *)0x400000, 4096};
        return report(syscall(SYS_process_madvise, fd, &v, 1, 21 /*MADV_PAGEOUT*/, 0));
    }
    if (!strcmp(name, "fsetown") || !strcmp(name, "fioasync")) { /* SIGIO-style signal via a pipe */
        int p[2]; if (pipe(p) < 0) return report(-1);
        if (fcntl(p[0], F_SETSIG, SIGURG) < 0) return report(-1);
        if (fcntl(p[0], F_SETOWN, pid) < 0) return report(-1);
        int on = 1;
        long r = !strcmp(name, "fsetown") ? fcntl(p[0], F_SETFL, O_ASYNC) : ioctl(p[0], FIOASYNC, &on);
        if (r < 0) return report(-1);
        struct f_owner_ex ow = {F_OWNER_PID, pid};
        if (fcntl(p[0], F_SETOWN_EX, &ow) < 0) return report(-1);
        write(p[1], "x", 1); usleep(100000);
        return report(0);
    }
    if (!strcmp(name, "setpriority")) return report(setpriority(PRIO_PROCESS, pid, 19));
    if (!strcmp(name, "setpriority_pgrp")) return report(setpriority(PRIO_PGRP, getpgid(pid), 19));
    if (!strcmp(name, "setpriority_user")) return report(setpriority(PRIO_USER, 0, getpriority(PRIO_PROCESS, 0)));
    if (!strcmp(name, "ioprio")) return report(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, pid, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)));
    if (!strcmp(name, "ioprio_user")) return report(syscall(SYS_ioprio_set, IOPRIO_WHO_USER, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 4)));
    if (!strcmp(name, "affinity")) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); return report(sched_setaffinity(pid, sizeof s, &s)); }
    if (!strcmp(name, "scheduler")) { struct sched_param sp = {0}; return report(sched_setscheduler(pid, SCHED_IDLE, &sp)); }
    if (!strcmp(name, "schedparam")) { struct sched_param sp = {0}; return report(sched_setparam(pid, &sp)); }
    if (!strcmp(name, "sched_setattr")) {
        struct { uint32_t size, policy; uint64_t flags; int32_t nice; uint32_t prio; uint64_t rt, dl, per; } a;
        memset(&a, 0, sizeof a); a.size = 48; a.policy = SCHED_IDLE;
        return report(syscall(SYS_sched_setattr, pid, &a, 0));
    }
    if (!strcmp(name, "migrate_pages")) { unsigned long m = 1; return report(syscall(SYS_migrate_pages, pid, 64, &m, &m)); }
    if (!strcmp(name, "move_pages")) { void *pg = (void *)0x400000; int st; return report(syscall(SYS_move_pages, pid, 1, &pg, 0, &st, 0)); }
    if (!strcmp(name, "kcmp")) return report(syscall(SYS_kcmp, getpid(), pid, 0 /*KCMP_FILE*/, 0, 0));
    if (!strcmp(name, "robust_list")) { void *h; size_t l; return report(syscall(SYS_get_robust_list, pid, &h, &l)); }
    if (!strcmp(name, "ptrace_seize")) return report(syscall(SYS_ptrace, 0x4206 /*SEIZE*/, pid, 0, 0));
    if (!strcmp(name, "vm_writev")) {
        char buf[8] = {0}; struct iovec l = {buf, 8}, r = {(void *)0x400000, 8};
        return report(process_vm_writev(pid, &l, 1, &r, 1, 0));
    }
    if (!strncmp(name, "procw:", 6)) { snprintf(path, sizeof path, "/proc/%d/%s", pid, name + 6); return report(open(path, O_WRONLY)); }
    if (!strncmp(name, "procr:", 6)) { snprintf(path, sizeof path, "/proc/%d/%s", pid, name + 6); return report(open(path, O_RDONLY)); }
    if (!strcmp(name, "abstract")) { /* connect to the abstract unix socket named by PID arg */
        int s = socket(AF_UNIX, SOCK_STREAM, 0); if (s < 0) return report(-1);
        struct sockaddr_un a = {.sun_family = AF_UNIX}; strncpy(a.sun_path + 1, pidarg, sizeof a.sun_path - 2);
        return report(connect(s, (void *)&a, offsetof(struct sockaddr_un, sun_path) + 1 + strlen(pidarg)));
    }
    fprintf(stderr, "unknown lever %s\n", name);
    return 2;
}

/* tty NAME: an ioctl on stdin that would act on the terminal the guard's user sees. */
static int tty(const char *name) {
    int v = 0;
    if (!strcmp(name, "tiocsetd")) { int ld = 0 /*N_TTY*/; return report(ioctl(0, TIOCSETD, &ld)); }
    if (!strcmp(name, "tioccons")) return report(ioctl(0, TIOCCONS));
    if (!strcmp(name, "tiocspgrp")) { signal(SIGTTOU, SIG_IGN); pid_t g = getpgrp(); return report(ioctl(0, TIOCSPGRP, &g)); }
    if (!strcmp(name, "tiocsctty")) return report(ioctl(0, TIOCSCTTY, 1));
    if (!strcmp(name, "tiocsti")) { char c = 'x'; return report(ioctl(0, TIOCSTI, &c)); }
    if (!strcmp(name, "tiocswinsz")) { struct winsize w = {1, 1, 0, 0}; return report(ioctl(0, TIOCSWINSZ, &w)); }
    if (!strcmp(name, "tiocvhangup")) return report(ioctl(0, 0x5437));
    if (!strcmp(name, "tcflsh")) return report(ioctl(0, TCFLSH, 2));
    (void)v;
    fprintf(stderr, "unknown tty op %s\n", name);
    return 2;
}

/* inode OP PATH: inode flags, watches and fileless exec. */
static int inode(const char *op, const char *path) {
    if (!strcmp(op, "setflags")) {
        int fd = open(path, O_RDONLY | O_NONBLOCK); if (fd < 0) return report(-1);
        int fl = 0; if (ioctl(fd, FS_IOC_GETFLAGS, &fl) < 0) fl = 0;
        fl |= FS_NODUMP_FL;
        return report(ioctl(fd, FS_IOC_SETFLAGS, &fl));
    }
    if (!strcmp(op, "setflags_noatime")) {
        int fd = open(path, O_RDONLY | O_NONBLOCK); if (fd < 0) return report(-1);
        int fl = 0; if (ioctl(fd, FS_IOC_GETFLAGS, &fl) < 0) fl = 0;
        fl |= FS_NOATIME_FL;
        return report(ioctl(fd, FS_IOC_SETFLAGS, &fl));
    }
    if (!strcmp(op, "fssetxattr")) {
        int fd = open(path, O_RDONLY | O_NONBLOCK); if (fd < 0) return report(-1);
        struct fsxattr x; memset(&x, 0, sizeof x); ioctl(fd, FS_IOC_FSGETXATTR, &x);
        x.fsx_xflags |= FS_XFLAG_NODUMP;
        return report(ioctl(fd, FS_IOC_FSSETXATTR, &x));
    }
    if (!strcmp(op, "file_setattr")) { /* file_setattr(2), Linux 6.17, by path */
        struct fsxattr x; memset(&x, 0, sizeof x); x.fsx_xflags = FS_XFLAG_NODUMP;
        return report(syscall(469, AT_FDCWD, path, &x, 24 /*FILE_ATTR_SIZE_VER0*/, 0));
    }
    if (!strcmp(op, "setversion")) {
        int fd = open(path, O_RDONLY | O_NONBLOCK); if (fd < 0) return report(-1);
        int v = 7; return report(ioctl(fd, FS_IOC_SETVERSION, &v));
    }
    if (!strcmp(op, "inotify")) {
        int fd = inotify_init1(0); if (fd < 0) return report(-1);
        return report(inotify_add_watch(fd, path, IN_ALL_EVENTS));
    }
    if (!strcmp(op, "dnotify")) {
        int fd = open(path, O_RDONLY | O_DIRECTORY); if (fd < 0) return report(-1);
        return report(fcntl(fd, F_NOTIFY, DN_CREATE | DN_MODIFY | DN_ACCESS | DN_MULTISHOT));
    }
    if (!strcmp(op, "fanotify")) {
        int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID, O_RDONLY); if (fd < 0) return report(-1);
        return report(fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN | FAN_ACCESS, AT_FDCWD, path));
    }
    /* Fileless exec of /bin/true's bytes from a file with no name in directory `path`. */
    if (!strcmp(op, "tmpfile_exec") || !strcmp(op, "tmpfile_execveat") || !strcmp(op, "file_exec")) {
        int src = open("/bin/true", O_RDONLY); if (src < 0) return report(-1);
        int fd;
        char name[256];
        if (!strcmp(op, "file_exec")) { snprintf(name, sizeof name, "%s/payload", path); fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0755); }
        else fd = open(path, O_TMPFILE | O_RDWR, 0755);
        if (fd < 0) return report(-1);
        char buf[65536]; ssize_t n;
        while ((n = read(src, buf, sizeof buf)) > 0) write(fd, buf, n);
        fchmod(fd, 0755);
        char *args[] = {"true", 0}, *env[] = {0};
        if (!strcmp(op, "file_exec")) { close(fd); execve(name, args, env); return report(-1); }
        /* reopen read-only so the write fd does not make exec fail with ETXTBSY */
        char self[64]; snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        int ro = open(self, O_RDONLY); close(fd);
        if (ro < 0) return report(-1);
        if (!strcmp(op, "tmpfile_exec")) { snprintf(self, sizeof self, "/proc/self/fd/%d", ro); execve(self, args, env); }
        else syscall(SYS_execveat, ro, "", args, env, AT_EMPTY_PATH);
        return report(-1);
    }
    if (!strcmp(op, "execveat_empty")) { /* AT_EMPTY_PATH on a file that has a name */
        int fd = open(path, O_PATH); if (fd < 0) return report(-1);
        char *args[] = {"true", 0}, *env[] = {0};
        syscall(SYS_execveat, fd, "", args, env, AT_EMPTY_PATH);
        return report(-1);
    }
    if (!strcmp(op, "memfd_secret")) return report(syscall(447, 0));
    fprintf(stderr, "unknown inode op %s\n", op);
    return 2;
}


/* Tries every way a run's processes could outlive it or end up the guard's children:
 * clone(CLONE_PARENT) (a sibling of the run: a child of the guard), a double fork (an
 * orphan), setsid and setpgid in a child (out of the run's group), children that exit at
 * once (zombies) and children that sleep. Prints one line: how each clone(CLONE_PARENT)
 * answered, "OK" when it made a process. */
static int orphans(void) {
    int made = 0, refused = 0;
    for (int i = 0; i < 3; i++) {
        long r = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
        if (r == 0) { if (i == 0) _exit(0); sleep(30); _exit(0); }
        if (r > 0) made++; else refused++;
    }
    pid_t a = fork();
    if (a == 0) {
        pid_t b = fork();
        if (b == 0) { setsid(); setpgid(0, 0); sleep(30); _exit(0); }
        _exit(0);
    }
    if (a > 0) waitpid(a, 0, 0);
    for (int i = 0; i < 3; i++) if (fork() == 0) _exit(0); /* zombies until we exit */
    if (fork() == 0) { sleep(30); _exit(0); }
    printf(made ? "OK made %d\n" : "ERR refused %d\n", made ? made : refused);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *m = argv[1];
    const char *arg = argc > 2 ? argv[2] : "";
    pid_t pp = getppid();
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(m, "net")) return net(argc, argv);
    if (!strcmp(m, "orphans")) return orphans();
    if (!strcmp(m, "victim")) return victim(arg);
    if (!strcmp(m, "lever") && argc > 3) return lever(arg, argv[3]);
    if (!strcmp(m, "tty")) return tty(arg);
    if (!strcmp(m, "inode") && argc > 3) return inode(arg, argv[3]);
    if (!strcmp(m, "ptrace")) return report(syscall(SYS_ptrace, 16 /*PTRACE_ATTACH*/, pp, 0, 0));
    if (!strcmp(m, "vm_writev")) {
        char buf[8] = {0}; struct iovec l = {buf, 8}, r = {(void *)0x400000, 8};
        return report(process_vm_writev(pp, &l, 1, &r, 1, 0));
    }
    if (!strcmp(m, "vm_readv")) {
        char buf[8]; struct iovec l = {buf, 8}, r = {(void *)0x400000, 8};
        return report(process_vm_readv(pp, &l, 1, &r, 1, 0));
    }
    if (!strcmp(m, "parent_mem")) {
        char p[64]; snprintf(p, sizeof p, "/proc/%d/mem", pp);
        return report(open(p, O_RDWR));
    }
    if (!strcmp(m, "kill_parent")) return report(kill(pp, SIGCONT));
    if (!strcmp(m, "kill_pid")) return report(kill(atoi(arg), SIGCONT));
    if (!strcmp(m, "open_read")) return report(open(arg, O_RDONLY));
    if (!strcmp(m, "unshare_user")) return report(unshare(CLONE_NEWUSER));
    if (!strcmp(m, "unshare_net")) return report(unshare(CLONE_NEWNET));
    if (!strcmp(m, "clone_newuser")) {
        long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (r == 0) _exit(0);
        return report(r);
    }
    if (!strcmp(m, "clone3")) {
        struct clone_args ca; memset(&ca, 0, sizeof ca); ca.exit_signal = SIGCHLD;
        long r = syscall(SYS_clone3, &ca, sizeof ca);
        if (r == 0) _exit(0);
        return report(r);
    }
    if (!strcmp(m, "fork")) { pid_t p = fork(); if (p == 0) _exit(0); waitpid(p, 0, 0); return report(p); }
    if (!strcmp(m, "mount")) return report(mount("none", "/tmp", "tmpfs", 0, NULL));
    if (!strcmp(m, "fsopen")) return report(syscall(SYS_fsopen, "tmpfs", 0));
    if (!strcmp(m, "pivot_root")) return report(syscall(SYS_pivot_root, "/", "/"));
    if (!strcmp(m, "chroot")) return report(chroot("/"));
    if (!strcmp(m, "personality")) return report(personality(ADDR_NO_RANDOMIZE));
    if (!strcmp(m, "personality_query")) return report(personality(0xffffffff));
    if (!strcmp(m, "setsid")) return report(setsid());
    if (!strcmp(m, "setsid_guess")) {
        /* The child's own setsid passes a key in unused argument registers; guessing it (or
           hoping the registers still hold it after exec) must not work. */
        long r = syscall(SYS_setsid, 0, 0, 0, 0, 0, 0);
        if (r >= 0) return report(r);
        r = syscall(SYS_setsid, -1L, -1L, -1L, -1L, -1L, -1L);
        if (r >= 0) return report(r);
        srandom((unsigned)getpid());
        for (int i = 0; i < 100000; i++) {
            long k[4];
            for (int j = 0; j < 4; j++) k[j] = ((long)random() << 33) ^ ((long)random() << 2) ^ random();
            r = syscall(SYS_setsid, k[0], k[1], k[2], k[3], 0, 0);
            if (r >= 0) return report(r);
        }
        return report(r);
    }
    if (!strcmp(m, "setpgid")) return report(setpgid(0, 0));
    if (!strcmp(m, "io_uring")) { struct io_uring_params p; memset(&p, 0, sizeof p); return report(syscall(SYS_io_uring_setup, 4, &p)); }
    if (!strcmp(m, "keyctl")) return report(syscall(SYS_keyctl, 0 /*GET_KEYRING_ID*/, -3, 0));
    if (!strcmp(m, "add_key")) return report(syscall(SYS_add_key, "user", "k", "v", 1, -3));
    if (!strcmp(m, "bpf")) { union bpf_attr a; memset(&a, 0, sizeof a); return report(syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a)); }
    if (!strcmp(m, "perf")) {
        struct perf_event_attr a; memset(&a, 0, sizeof a); a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE; a.config = PERF_COUNT_SW_CPU_CLOCK;
        return report(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
    }
    if (!strcmp(m, "userfaultfd")) return report(syscall(SYS_userfaultfd, 0));
    if (!strcmp(m, "kexec")) return report(syscall(SYS_kexec_load, 0, 0, NULL, 0));
    if (!strcmp(m, "finit_module")) return report(syscall(SYS_finit_module, 0, "", 0));
    if (!strcmp(m, "delete_module")) return report(syscall(SYS_delete_module, "loop", 0));
    if (!strcmp(m, "open_by_handle")) {
        struct { struct file_handle h; unsigned char b[128]; } fh; memset(&fh, 0, sizeof fh);
        fh.h.handle_bytes = 8; fh.h.handle_type = 1;
        return report(syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY));
    }
    if (!strcmp(m, "memfd")) return report(syscall(SYS_memfd_create, "x", 0));
    if (!strcmp(m, "int80")) {
        long r; __asm__ volatile ("int $0x80" : "=a"(r) : "a"(20) : "memory"); /* i386 getpid */
        printf("OK %ld\n", r); return 0;
    }
    if (!strcmp(m, "x32")) { long r = syscall(0x40000000 | 39); return report(r); }
    if (!strcmp(m, "tiocsti")) { char c = 'x'; return report(ioctl(0, TIOCSTI, &c)); }
    if (!strcmp(m, "tiocsti64")) { char c = 'x'; return report(syscall(SYS_ioctl, 0, 0x100005412UL, &c)); }
    if (!strcmp(m, "tioclinux")) { char c = 2; return report(ioctl(0, TIOCLINUX, &c)); }
    if (!strcmp(m, "fds")) {
        DIR *d = opendir("/proc/self/fd"); struct dirent *e; int n = 0;
        while ((e = readdir(d))) if (e->d_name[0] != '.') n++;
        printf("FDS %d\n", n - 1); return 0; /* minus the dir's own fd */
    }
    if (!strcmp(m, "tcp4")) return tcp(AF_INET, SOCK_STREAM, 0, "127.0.0.1", atoi(arg), 0);
    if (!strcmp(m, "tcp6")) return tcp(AF_INET6, SOCK_STREAM, 0, "::1", atoi(arg), 0);
    if (!strcmp(m, "metadata")) return tcp(AF_INET, SOCK_STREAM, 0, "169.254.169.254", 80, 0);
    if (!strcmp(m, "bind4")) return tcp(AF_INET, SOCK_STREAM, 0, "127.0.0.1", atoi(arg), 1);
    if (!strcmp(m, "mptcp")) return tcp(AF_INET, SOCK_STREAM, 262, "127.0.0.1", atoi(arg), 0);
    if (!strcmp(m, "udp")) return report(socket(AF_INET, SOCK_DGRAM, 0));
    if (!strcmp(m, "udp6")) return report(socket(AF_INET6, SOCK_DGRAM, 0));
    if (!strcmp(m, "raw_icmp")) return report(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
    if (!strcmp(m, "packet")) return report(socket(17 /*AF_PACKET*/, SOCK_RAW, 0));
    if (!strcmp(m, "netlink")) return report(socket(AF_NETLINK, SOCK_RAW, 0));
    if (!strcmp(m, "vsock")) return report(socket(40 /*AF_VSOCK*/, SOCK_STREAM, 0));
    if (!strcmp(m, "unix_path")) {
        int s = socket(AF_UNIX, SOCK_STREAM, 0); if (s < 0) return report(-1);
        struct sockaddr_un a = {.sun_family = AF_UNIX}; strncpy(a.sun_path, arg, sizeof a.sun_path - 1);
        return report(connect(s, (void *)&a, sizeof a));
    }
    if (!strcmp(m, "socketpair")) { int sv[2]; return report(socketpair(AF_UNIX, SOCK_STREAM, 0, sv)); }
    if (!strcmp(m, "chmod")) return report(chmod(arg, strtol(argv[3], 0, 8)));
    if (!strcmp(m, "chown")) return report(chown(arg, 0, 0));
    if (!strcmp(m, "setxattr")) return report(setxattr(arg, "user.x", "1", 1, 0));
    if (!strcmp(m, "rlimit")) {
        int res[] = {RLIMIT_NPROC, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_CPU, RLIMIT_NOFILE, RLIMIT_CORE};
        for (int i = 0; i < 6; i++) { struct rlimit r; getrlimit(res[i], &r); printf("%llu ", (unsigned long long)r.rlim_cur); }
        printf("\n"); return 0;
    }
    if (!strcmp(m, "alloc")) { /* MiB */
        size_t n = (size_t)atol(arg) << 20; char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return report(p == MAP_FAILED ? -1 : 0);
    }
    if (!strcmp(m, "touch")) { /* MiB, written, then held for 2 s */
        size_t n = (size_t)atol(arg) << 20; char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return report(-1);
        memset(p, 1, n); sleep(2); return report(0);
    }
    if (!strcmp(m, "nofile")) { int n = atoi(arg), i; for (i = 0; i < n; i++) if (open("/dev/null", O_RDONLY) < 0) return report(-1); return report(0); }
    if (!strcmp(m, "spin")) { for (;;) __asm__ volatile(""); }
    if (!strcmp(m, "forkbomb")) { /* fork up to N children that sleep; report the first failure */
        int n = atoi(arg), i;
        for (i = 0; i < n; i++) { pid_t p = fork(); if (p == 0) { sleep(30); _exit(0); } if (p < 0) { printf("after %d: ", i); return report(-1); } }
        return report(0);
    }
    fprintf(stderr, "unknown mode %s\n", m);
    return 2;
}
