/*
 * The per-run sandbox of a forked runtime process (docs/decisions.md, "Isolation in depth"), one
 * piece of C for both fork servers: nodefork.c calls it from the node fork server's child, and the
 * Python fork server calls the same code through ctypes (coderunsandbox.so, built from this file).
 *
 * The fork server forks each sandboxed run into a pid namespace of its own (coderun_pid_namespace
 * around its fork): the child is pid 1 there. coderun_isolate(spec) then runs in that child, still
 * root, after it made its session, joined its memory cgroup and connected its three channels to the
 * runner as fds 1-3 (without their hello lines yet). It:
 *   1. joins the run's other cgroups (pids, cpu);
 *   2. unshares the mount, IPC and UTS namespaces (and the network one with `net=none`);
 *   3. builds the run's root: a size-limited tmpfs holding /tmp, /var/tmp and the run's directory
 *      (0700, owned by the run's uid), with /usr, /etc, the interpreters and the runtime files bound
 *      read-only, nosuid and nodev, a minimal /dev with its own size-limited /dev/shm, nothing else
 *      of the host (DATA_DIR, LOG_DIR, the keys, the checkout, /run's sockets, /home, /root: not
 *      there); pivots into it, detaches the host's tree and mounts its own /proc;
 *   4. takes a session of its own, drops to the run's uid and gid (no groups, no new privileges),
 *      gets SIGKILL as its parent-death signal, changes into the run's directory, sends the hello
 *      lines (with its pid as the runner sees it) and returns 0 to its caller, which serves the run
 *      protocol as the runtime.
 * Nothing here follows a path that a run could have touched: every path is in a tmpfs made a moment
 * ago, or on the host before any run.
 *
 * The fork server supervises its sandboxed runs (it is root, outside their namespaces): every poll
 * it asks coderun_limit_hit whether a run hit its process limit (pids.events) or filled its disk or
 * shared memory (statvfs of its tmpfs mounts through /proc/<pid>/root), kills it there and reports
 * the limit with the run's exit. When the run's process, pid 1 of its namespace, ends, the kernel
 * kills everything else in it: nothing a run started outlives it, and the tmpfs (its files, its
 * shared memory) goes with the last process of the mount namespace.
 *
 * Spec: text lines `key=value`: parent, uid, gid, dir, disk_mb, shm_mb, inodes, net (none|host),
 * ro (repeatable: a host path shown read-only at the same place), hide (repeatable: a path hidden
 * behind an empty tmpfs; in order with the ro lines), join (repeatable: a cgroup directory to join),
 * hello1/hello2/hello3 (JSON objects without their closing brace: `,"pid":N}` and a newline are
 * appended). Other keys (limit_pids, pids_events: the fork server's) are ignored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LIST 64
#define TEXT 4096

struct spec {
  pid_t parent;
  long uid, gid;
  char dir[TEXT];
  long disk_mb, shm_mb, inodes;
  int net_none;
  int layout_count, join_count;
  /* The layout, in order: 'r' a host path shown read-only, 'h' a path hidden behind an empty tmpfs. */
  char layout_kind[MAX_LIST];
  char layout[MAX_LIST][TEXT];
  char join[MAX_LIST][TEXT];
  char hello[3][TEXT];
};

static int fail(char *error, size_t size, const char *format, ...) {
  int saved = errno;
  char what[512];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  if (saved) snprintf(error, size, "%s: %s", what, strerror(saved));
  else snprintf(error, size, "%s", what);
  return -1;
}

static int parse(const char *text, struct spec *spec, char *error, size_t size) {
  memset(spec, 0, sizeof *spec);
  spec->uid = spec->gid = -1;
  spec->inodes = 65536;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t length = end ? (size_t)(end - line) : strlen(line);
    const char *equals = memchr(line, '=', length);
    if (equals != NULL) {
      size_t key_length = (size_t)(equals - line), value_length = length - key_length - 1;
      char key[32], value[TEXT];
      if (key_length >= sizeof key || value_length >= sizeof value) {
        errno = 0;
        return fail(error, size, "sandbox spec: line too long");
      }
      memcpy(key, line, key_length);
      key[key_length] = 0;
      memcpy(value, equals + 1, value_length);
      value[value_length] = 0;
      if (!strcmp(key, "parent")) spec->parent = (pid_t)atol(value);
      else if (!strcmp(key, "uid")) spec->uid = atol(value);
      else if (!strcmp(key, "gid")) spec->gid = atol(value);
      else if (!strcmp(key, "dir")) snprintf(spec->dir, TEXT, "%s", value);
      else if (!strcmp(key, "disk_mb")) spec->disk_mb = atol(value);
      else if (!strcmp(key, "shm_mb")) spec->shm_mb = atol(value);
      else if (!strcmp(key, "inodes")) spec->inodes = atol(value);
      else if (!strcmp(key, "net")) spec->net_none = !strcmp(value, "none");
      else if ((!strcmp(key, "ro") || !strcmp(key, "hide")) && spec->layout_count < MAX_LIST) {
        spec->layout_kind[spec->layout_count] = key[0] == 'r' ? 'r' : 'h';
        snprintf(spec->layout[spec->layout_count++], TEXT, "%s", value);
      }
      else if (!strcmp(key, "join") && spec->join_count < MAX_LIST) snprintf(spec->join[spec->join_count++], TEXT, "%s", value);
      else if (!strncmp(key, "hello", 5) && key[5] >= '1' && key[5] <= '3' && key[6] == 0) snprintf(spec->hello[key[5] - '1'], sizeof spec->hello[0], "%s", value);
    }
    line = end ? end + 1 : line + length;
  }
  errno = 0;
  if (spec->uid < 0 || spec->gid < 0 || spec->uid == 0) return fail(error, size, "sandbox spec: the run needs an unprivileged uid and gid");
  if (spec->dir[0] != '/' || strstr(spec->dir, "/..") != NULL) return fail(error, size, "sandbox spec: the run directory must be an absolute path");
  if (spec->disk_mb <= 0 || spec->shm_mb <= 0) return fail(error, size, "sandbox spec: disk_mb and shm_mb must be positive");
  return 0;
}

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -1;
  size_t length = strlen(text);
  ssize_t written = write(fd, text, length);
  int saved = errno;
  close(fd);
  errno = saved;
  return written == (ssize_t)length ? 0 : -1;
}

static int write_all(int fd, const char *text, size_t length) {
  while (length > 0) {
    ssize_t written = write(fd, text, length);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return -1;
    text += written;
    length -= (size_t)written;
  }
  return 0;
}

/* mkdir -p of `path` under `root` (both absolute; components made 0755, root's). */
static int make_dirs(const char *root, const char *path, mode_t last_mode) {
  char full[TEXT * 2];
  snprintf(full, sizeof full, "%s%s", root, path);
  size_t base = strlen(root);
  for (char *slash = full + base + 1; *slash; slash++) {
    if (*slash != '/') continue;
    *slash = 0;
    if (mkdir(full, 0755) != 0 && errno != EEXIST) return -1;
    *slash = '/';
  }
  if (mkdir(full, last_mode) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* The parent directories of `path` under `root`. */
static int make_parent(const char *root, const char *path) {
  char parent[TEXT];
  snprintf(parent, sizeof parent, "%s", path);
  char *slash = strrchr(parent, '/');
  if (slash == NULL || slash == parent) return 0;
  *slash = 0;
  return make_dirs(root, parent, 0755);
}

/*
 * Shows the host's `path` read-only (nosuid, nodev) at the same place under `root`: a directory or a
 * file is bound there (submounts included), a symlink (merged /usr: /bin -> usr/bin) is made again.
 * A path that does not exist on the host is skipped.
 */
static int show_read_only(const char *root, const char *path, char *error, size_t size) {
  struct stat host;
  if (lstat(path, &host) != 0) return 0;
  char target[TEXT * 2];
  snprintf(target, sizeof target, "%s%s", root, path);
  if (S_ISLNK(host.st_mode)) {
    char link[TEXT];
    ssize_t length = readlink(path, link, sizeof link - 1);
    if (length < 0) return fail(error, size, "readlink %s", path);
    link[length] = 0;
    if (make_parent(root, path) != 0) return fail(error, size, "mkdir for %s", target);
    if (symlink(link, target) != 0 && errno != EEXIST) return fail(error, size, "symlink %s", target);
    return 0;
  }
  if (S_ISDIR(host.st_mode)) {
    if (make_dirs(root, path, 0755) != 0) return fail(error, size, "mkdir %s", target);
  } else {
    if (make_parent(root, path) != 0) return fail(error, size, "mkdir for %s", target);
    int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0 && errno != EEXIST) return fail(error, size, "creating %s", target);
    if (fd >= 0) close(fd);
  }
  if (mount(path, target, NULL, MS_BIND | MS_REC, NULL) != 0) return fail(error, size, "bind %s", path);
  if (mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0) return fail(error, size, "read-only %s", path);
  return 0;
}

static int make_symlink(const char *root, const char *target, const char *path) {
  char full[TEXT * 2];
  snprintf(full, sizeof full, "%s%s", root, path);
  return symlink(target, full) == 0 || errno == EEXIST ? 0 : -1;
}

/* The run's root under `root` (a fresh tmpfs mounted there). */
static int build_root(const struct spec *spec, const char *root, char *error, size_t size) {
  static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};
  for (int i = 0; i < spec->layout_count; i++) {
    if (spec->layout_kind[i] == 'r') {
      if (show_read_only(root, spec->layout[i], error, size) != 0) return -1;
      continue;
    }
    /* Hidden (DATA_DIR, LOG_DIR, the checkout) where a read-only tree above showed it: an empty,
     * root-owned tmpfs over it; what the runs need from inside is shown again by later `ro` lines. */
    char hidden[TEXT * 2];
    struct stat there;
    snprintf(hidden, sizeof hidden, "%s%s", root, spec->layout[i]);
    if (stat(hidden, &there) != 0 || !S_ISDIR(there.st_mode)) continue;
    if (mount("coderun-hidden", hidden, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,nr_inodes=256,mode=0755") != 0) return fail(error, size, "hiding %s", spec->layout[i]);
  }
  char path[TEXT * 2];
  if (make_dirs(root, "/dev", 0755) != 0 || make_dirs(root, "/proc", 0555) != 0 || make_dirs(root, "/tmp", 01777) != 0 ||
      make_dirs(root, "/var/tmp", 01777) != 0 || make_dirs(root, "/run", 0755) != 0)
    return fail(error, size, "making the run's root");
  /* mkdir applies the umask: the sticky world-writable temp directories are set explicitly. */
  snprintf(path, sizeof path, "%s/tmp", root);
  if (chmod(path, 01777) != 0) return fail(error, size, "chmod /tmp");
  snprintf(path, sizeof path, "%s/var/tmp", root);
  if (chmod(path, 01777) != 0) return fail(error, size, "chmod /var/tmp");
  for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
    snprintf(path, sizeof path, "%s%s", root, devices[i]);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0) return fail(error, size, "creating %s", path);
    close(fd);
    if (mount(devices[i], path, NULL, MS_BIND, NULL) != 0) return fail(error, size, "bind %s", devices[i]);
    /* nosuid, noexec: device nodes only. */
    mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC, NULL);
  }
  if (make_symlink(root, "/proc/self/fd", "/dev/fd") || make_symlink(root, "/proc/self/fd/0", "/dev/stdin") ||
      make_symlink(root, "/proc/self/fd/1", "/dev/stdout") || make_symlink(root, "/proc/self/fd/2", "/dev/stderr"))
    return fail(error, size, "/dev links");
  if (make_dirs(root, "/dev/shm", 01777) != 0) return fail(error, size, "mkdir /dev/shm");
  char options[128];
  snprintf(path, sizeof path, "%s/dev/shm", root);
  snprintf(options, sizeof options, "size=%ldm,nr_inodes=%ld,mode=1777", spec->shm_mb, spec->inodes);
  if (mount("coderun-shm", path, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) return fail(error, size, "mounting /dev/shm");
  /* The run's directory: 0700, its own; parents root's (made by make_dirs). */
  if (make_dirs(root, spec->dir, 0700) != 0) return fail(error, size, "mkdir %s", spec->dir);
  snprintf(path, sizeof path, "%s%s", root, spec->dir);
  if (chown(path, (uid_t)spec->uid, (gid_t)spec->gid) != 0 || chmod(path, 0700) != 0) return fail(error, size, "chown %s", spec->dir);
  /* The root itself is read-only to the run: it is root's and 0755. */
  return 0;
}

/* SysV shared memory of the new IPC namespace within the shared-memory limit (its sysctls are per namespace). */
static void limit_sysv_shm(const struct spec *spec) {
  char text[64];
  long pages = spec->shm_mb * 256; /* 4 KiB pages */
  snprintf(text, sizeof text, "%ld", spec->shm_mb * 1024 * 1024);
  write_text("/proc/sys/kernel/shmmax", text);
  snprintf(text, sizeof text, "%ld", pages);
  write_text("/proc/sys/kernel/shmall", text);
  write_text("/proc/sys/kernel/shmmni", "64");
}

/*
 * The fork server's half (it stays root, outside every run's namespaces, and supervises its runs).
 *
 * coderun_pid_namespace(1) right before the fork: the fork's child is pid 1 of a new pid namespace,
 * so the run needs no second fork (a second copy of the runtime's page tables and a second exit
 * were a third of a fresh run's cost). coderun_pid_namespace(0) right after it, in the fork server:
 * its later children are its own namespace's again (unshare(CLONE_NEWPID) refuses to run twice
 * while the children's namespace differs from the caller's). Returns 0, or -1 with errno.
 */
long coderun_pid_namespace(int begin) {
  static int own = -1;
  if (own < 0) {
    own = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (own < 0) return -1;
  }
  if (begin) return unshare(CLONE_NEWPID) == 0 ? 0 : -1;
  return setns(own, CLONE_NEWPID) == 0 ? 0 : -1;
}

/* The `max` count of a pids.events file (cgroup v1 and v2): how often a fork failed at the limit; -1 unreadable. */
long coderun_pids_limit_hits(const char *pids_events) {
  int fd = open(pids_events, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[128];
  ssize_t length = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  if (length <= 0) return -1;
  text[length] = 0;
  const char *max = strstr(text, "max ");
  return max ? atol(max + 4) : 0;
}

static int disk_full(const char *path) {
  struct statvfs stats;
  if (statvfs(path, &stats) != 0) return 0;
  /* Less than 64 KiB left counts as full: a write loop stops at ENOSPC with a few blocks free. */
  return (unsigned long long)stats.f_bavail * stats.f_frsize < 64 * 1024ULL;
}

/*
 * The limit a live run `pid` hit, checked by its fork server every poll: 1 its process limit (the
 * pids cgroup's failed forks went past `baseline`, their count when the run was forked), 2 its disk
 * (the tmpfs that is its root), 3 its shared memory; 0 none. The run's tmpfs mounts are reached
 * through /proc/<pid>/root, the kernel's handle on the run's root, never through a path a run can
 * change (/ and /dev of its root are root's, 0755).
 */
long coderun_limit_hit(long pid, const char *pids_events, long baseline) {
  char path[64];
  if (pids_events != NULL && pids_events[0] != 0 && baseline >= 0 && coderun_pids_limit_hits(pids_events) > baseline) return 1;
  snprintf(path, sizeof path, "/proc/%ld/root/", pid);
  if (disk_full(path)) return 2;
  snprintf(path, sizeof path, "/proc/%ld/root/dev/shm", pid);
  if (disk_full(path)) return 3;
  return 0;
}

/* The hello lines, each completed with the run's pid as the runner sees it. */
static int send_hellos(const struct spec *spec, long pid) {
  char line[TEXT + 64];
  for (int i = 0; i < 3; i++) {
    if (spec->hello[i][0] == 0) continue;
    int length = snprintf(line, sizeof line, "%s,\"pid\":%ld}\n", spec->hello[i], pid);
    if (write_all(i + 1, line, (size_t)length) != 0) return -1;
  }
  return 0;
}

/* This process's pid in the fork server's namespace: the pid the host's /proc (still mounted) names it by. */
static long outer_pid(void) {
  char link[32];
  ssize_t length = readlink("/proc/self", link, sizeof link - 1);
  if (length <= 0) return -1;
  link[length] = 0;
  return atol(link);
}

long coderun_isolate(const char *text, char *error, size_t size) {
  struct spec *spec = malloc(sizeof *spec);
  if (spec == NULL) return fail(error, size, "sandbox: out of memory");
  if (parse(text, spec, error, size) != 0) return -1;
  /* Dies with the fork server, and ends at once if it already has. The run is pid 1 of its pid
   * namespace (coderun_pid_namespace): getppid() says 0 there, so the parent is read from the host's
   * /proc, still mounted, and held by its /proc directory (its files answer ESRCH once it is gone,
   * whatever process gets its pid later). */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  long pid = outer_pid();
  if (pid <= 0) return fail(error, size, "reading /proc/self");
  char parent_path[64];
  snprintf(parent_path, sizeof parent_path, "/proc/%ld", (long)spec->parent);
  int parent = spec->parent > 0 ? open(parent_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (spec->parent > 0 && (parent < 0 || faccessat(parent, "stat", R_OK, 0) != 0)) _exit(0);
  for (int i = 0; i < spec->join_count; i++) {
    char procs[TEXT + 32], number[32];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", spec->join[i]);
    /* A pid written to cgroup.procs is read in the writer's pid namespace: this process's own. */
    snprintf(number, sizeof number, "%d", (int)getpid());
    if (write_text(procs, number) != 0) return fail(error, size, "joining the cgroup %s", spec->join[i]);
  }
  int flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | (spec->net_none ? CLONE_NEWNET : 0);
  if (unshare(flags) != 0) return fail(error, size, "unshare");
  limit_sysv_shm(spec);
  if (sethostname("coderun", 7) != 0) return fail(error, size, "sethostname");
  /* Nothing mounted from here on reaches the host, nor does anything the host mounts reach the run. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return fail(error, size, "making / private");
  const char *root = "/tmp";
  char options[128];
  snprintf(options, sizeof options, "size=%ldm,nr_inodes=%ld,mode=0755", spec->disk_mb, spec->inodes);
  if (mount("coderun", root, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) return fail(error, size, "mounting the run's tmpfs");
  if (build_root(spec, root, error, size) != 0) return -1;
  if (chdir(root) != 0) return fail(error, size, "chdir to the run's root");
  if (syscall(SYS_pivot_root, ".", ".") != 0) return fail(error, size, "pivot_root");
  /* The host's tree was stacked under the new root: detached, nothing of it stays reachable. */
  if (umount2(".", MNT_DETACH) != 0) return fail(error, size, "detaching the host's tree");
  if (chdir("/") != 0) return fail(error, size, "chdir /");
  /* Its own /proc: this process is pid 1 of the run's pid namespace, which holds nothing else. */
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) return fail(error, size, "mounting /proc");
  /* A session of its own (the runner kills the group), unless its fork server's code made it already. */
  if (getsid(0) != getpid() && setsid() < 0) return fail(error, size, "setsid");
  /* The run's identity: no groups, no way back to root (setuid files, file capabilities). */
  if (setgroups(0, NULL) != 0 || setgid((gid_t)spec->gid) != 0 || setuid((uid_t)spec->uid) != 0) return fail(error, size, "dropping privileges");
  if (getuid() != (uid_t)spec->uid || geteuid() != (uid_t)spec->uid || getegid() != (gid_t)spec->gid) return fail(error, size, "dropping privileges (ids)");
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  /* The drop cleared the parent-death signal: set again, then make sure the fork server is still there. */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (parent >= 0) {
    if (faccessat(parent, "stat", R_OK, 0) != 0 && (errno == ESRCH || errno == ENOENT)) _exit(0);
    close(parent);
  }
  if (chdir(spec->dir) != 0) return fail(error, size, "chdir %s", spec->dir);
  /* Last: the runner takes the run as started once every channel said hello. */
  if (send_hellos(spec, pid) != 0) return fail(error, size, "sending the hellos");
  free(spec);
  return 0;
}
