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

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *m = argv[1];
    const char *arg = argc > 2 ? argv[2] : "";
    pid_t pp = getppid();
    setvbuf(stdout, NULL, _IONBF, 0);
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
