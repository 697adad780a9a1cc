/*
 * fork() for the node fork server (ops/worker/runtime/forkserver.cjs): what a node process needs to
 * fork itself into a fresh runtime process, as runtime/forkserver.py does for Python.
 *
 * Node has no fork. Three things stand between a plain fork() and a working child:
 * - V8 maps its heap MADV_DONTFORK, so that a spawn's fork does not copy it: a child would find its
 *   heap unmapped and crash on its first JavaScript call. forkChild() marks every mapping
 *   MADV_DOFORK (copy-on-write, like the rest of memory) right before each fork.
 * - libuv's event loop owns an epoll instance and wake-up fds that a child would share with the
 *   fork server: uv_loop_fork() gives the child its own (libuv's documented way).
 * - fork copies only the calling thread: V8's platform worker threads do not exist in the child.
 *   The fork server runs V8 single-threaded (--single-threaded: no background GC or compiler tasks),
 *   and the child never runs node's exit path (which joins those threads): exit() is _exit().
 *
 * The fork server itself stays in waitEvents() between forks (a blocking poll on its control
 * channel and on one pidfd per child), never on node's event loop, so at every fork its loop is idle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <node_api.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>
#include <uv.h>

#define MAX_CHILDREN 4096
#define MAPS_BYTES (4 << 20)

/* Children not reaped yet, with their pidfds (readable once the child has ended). */
static int child_pidfds[MAX_CHILDREN];
static pid_t child_pids[MAX_CHILDREN];
static int child_count = 0;
static char *maps_buffer = NULL;
/* SIGTERM arrived (the runner died: dieWithParent). */
static volatile sig_atomic_t terminated = 0;

static int32_t first_int(napi_env env, napi_callback_info info, int32_t fallback);

static napi_value throw_errno(napi_env env, const char *what, int error) {
  char message[512];
  snprintf(message, sizeof message, "%s: %s", what, strerror(error));
  napi_throw_error(env, NULL, message);
  return NULL;
}

static napi_value int_value(napi_env env, int32_t value) {
  napi_value out;
  napi_create_int32(env, value, &out);
  return out;
}

/* Every mapping copy-on-write in a child (V8's heap is MADV_DONTFORK). Mappings that refuse (the
 * vsyscall page, VM_IO) are skipped: they cannot be DONTFORK either. */
static int all_mappings_dofork(void) {
  if (maps_buffer == NULL && (maps_buffer = malloc(MAPS_BYTES)) == NULL) return ENOMEM;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t length = 0;
  ssize_t got;
  while ((got = read(fd, maps_buffer + length, MAPS_BYTES - 1 - length)) > 0) length += (size_t)got;
  int error = got < 0 ? errno : 0;
  close(fd);
  if (error) return error;
  /* A full buffer would leave mappings out: refuse rather than fork a child that crashes. */
  if (length >= MAPS_BYTES - 1) return E2BIG;
  maps_buffer[length] = 0;
  for (char *line = maps_buffer; *line;) {
    unsigned long start, end;
    if (sscanf(line, "%lx-%lx", &start, &end) == 2) madvise((void *)start, end - start, MADV_DOFORK);
    char *newline = strchr(line, '\n');
    if (newline == NULL) break;
    line = newline + 1;
  }
  return 0;
}

/* native/sandbox.c: the fork server's half of the run sandbox. */
long coderun_pid_namespace(int begin);
long coderun_pids_limit_hits(const char *pids_events);
long coderun_limit_hit(long pid, const char *pids_events, long baseline);

/*
 * forkChild(isolated): the child's pid in the fork server, 0 in the child (whose event loop is its
 * own). isolated: the child is pid 1 of a pid namespace of its own (a run sandbox, native/sandbox.c).
 */
static napi_value fork_child(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  bool isolated = false;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc >= 1) napi_get_value_bool(env, argv[0], &isolated);
  uv_loop_t *loop;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
    napi_throw_error(env, NULL, "no event loop");
    return NULL;
  }
  if (child_count >= MAX_CHILDREN) return throw_errno(env, "fork", EAGAIN);
  int error = all_mappings_dofork();
  if (error) return throw_errno(env, "reading /proc/self/maps", error);
  if (isolated && coderun_pid_namespace(1) != 0) return throw_errno(env, "unshare(CLONE_NEWPID)", errno);
  pid_t pid = fork();
  int fork_error = errno;
  /* Only here: the child could not go back (a pid namespace is entered only downwards). Its next
   * children are this process's namespace's again; were they not, never go on. */
  if (isolated && pid != 0 && coderun_pid_namespace(0) != 0) _exit(70);
  if (pid < 0) return throw_errno(env, "fork", fork_error);
  if (pid == 0) {
    for (int i = 0; i < child_count; i++) close(child_pidfds[i]);
    child_count = 0;
    /* A child whose loop is still the fork server's cannot do anything safely. */
    if (uv_loop_fork(loop) != 0) _exit(71);
    return int_value(env, 0);
  }
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) {
    /* Cannot watch it: never let it run unsupervised. */
    int saved = errno;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return throw_errno(env, "pidfd_open", saved);
  }
  child_pidfds[child_count] = pidfd;
  child_pids[child_count] = pid;
  child_count++;
  return int_value(env, pid);
}

/*
 * waitEvents(controlFd, timeoutMs): blocks until the control channel is readable, a child ended or
 * the timeout (-1: none) passed. Returns {control: boolean, exits: [[pid, code | null, signal | null]]},
 * every ended child reaped.
 */
static napi_value wait_events(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t control = -1, timeout = -1;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || napi_get_value_int32(env, argv[0], &control) != napi_ok || napi_get_value_int32(env, argv[1], &timeout) != napi_ok) {
    napi_throw_type_error(env, NULL, "waitEvents(controlFd, timeoutMs)");
    return NULL;
  }
  static struct pollfd fds[MAX_CHILDREN + 1];
  fds[0].fd = control;
  fds[0].events = POLLIN;
  fds[0].revents = 0;
  for (int i = 0; i < child_count; i++) {
    fds[i + 1].fd = child_pidfds[i];
    fds[i + 1].events = POLLIN;
    fds[i + 1].revents = 0;
  }
  int ready = poll(fds, (nfds_t)child_count + 1, timeout);
  if (ready < 0 && errno != EINTR) return throw_errno(env, "poll", errno);
  napi_value result, exits, flag;
  napi_create_object(env, &result);
  napi_create_array(env, &exits);
  napi_get_boolean(env, ready > 0 && fds[0].revents != 0, &flag);
  napi_set_named_property(env, result, "control", flag);
  napi_get_boolean(env, terminated != 0, &flag);
  napi_set_named_property(env, result, "terminated", flag);
  uint32_t reported = 0;
  /*
   * Every ended child, tracked or not: the fork server is a child subreaper, so what a run left
   * behind is reparented here once the run's process ends, and must be reaped here (untracked:
   * reaped, not reported). A tracked child that ended after the poll is reported now too.
   */
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    int index = -1;
    for (int i = 0; i < child_count; i++) {
      if (child_pids[i] == pid) {
        index = i;
        break;
      }
    }
    if (index < 0) continue;
    close(child_pidfds[index]);
    child_count--;
    child_pidfds[index] = child_pidfds[child_count];
    child_pids[index] = child_pids[child_count];
    napi_value entry, null_value;
    napi_get_null(env, &null_value);
    napi_create_array_with_length(env, 3, &entry);
    napi_set_element(env, entry, 0, int_value(env, pid));
    napi_set_element(env, entry, 1, WIFEXITED(status) ? int_value(env, WEXITSTATUS(status)) : null_value);
    napi_set_element(env, entry, 2, WIFSIGNALED(status) ? int_value(env, WTERMSIG(status)) : null_value);
    napi_set_element(env, exits, reported++, entry);
  }
  napi_set_named_property(env, result, "exits", exits);
  return result;
}

static int get_string(napi_env env, napi_value value, char *out, size_t size);

/* pidsLimitHits(pidsEvents): the count of forks its pids cgroup refused so far (-1: unreadable). */
static napi_value pids_limit_hits(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  static char path[4096];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || get_string(env, argv[0], path, sizeof path)) {
    napi_throw_type_error(env, NULL, "pidsLimitHits(path)");
    return NULL;
  }
  napi_create_int64(env, coderun_pids_limit_hits(path), &out);
  return out;
}

/* limitHit(pid, pidsEvents, baseline): the limit a sandboxed run hit (native/sandbox.c: 0 none, 1-3). */
static napi_value limit_hit(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], out;
  static char path[4096];
  int64_t pid = 0, baseline = -1;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3 || napi_get_value_int64(env, argv[0], &pid) != napi_ok || get_string(env, argv[1], path, sizeof path) ||
      napi_get_value_int64(env, argv[2], &baseline) != napi_ok) {
    napi_throw_type_error(env, NULL, "limitHit(pid, pidsEvents, baseline)");
    return NULL;
  }
  napi_create_int64(env, coderun_limit_hit((long)pid, path, (long)baseline), &out);
  return out;
}

static int get_string(napi_env env, napi_value value, char *out, size_t size) {
  size_t length;
  if (napi_get_value_string_utf8(env, value, out, size, &length) != napi_ok) return -1;
  return length + 1 < size ? 0 : -1;
}

/* One connection to the runner's socket, announced by its hello line; the fd, or -errno. */
static int connect_with_hello(const char *socket_path, const char *hello) {
  struct sockaddr_un address;
  size_t path_length = strlen(socket_path);
  if (path_length >= sizeof address.sun_path) return -ENAMETOOLONG;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  memcpy(address.sun_path, socket_path, path_length);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    int saved = errno;
    close(fd);
    return -saved;
  }
  size_t length = strlen(hello), sent = 0;
  while (sent < length) {
    ssize_t written = write(fd, hello + sent, length - sent);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      int saved = written < 0 ? errno : EPIPE;
      close(fd);
      return -saved;
    }
    sent += (size_t)written;
  }
  return fd;
}

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t length = strlen(text);
  ssize_t written = write(fd, text, length);
  int error = written == (ssize_t)length ? 0 : (written < 0 ? errno : EIO);
  close(fd);
  return error;
}

/* This process into a run cgroup (made and limited by the fork server); 0 or an errno. */
static int join_cgroup(const char *directory) {
  char path[4200], text[64];
  snprintf(path, sizeof path, "%s/cgroup.procs", directory);
  snprintf(text, sizeof text, "%d", (int)getpid());
  return write_text(path, text);
}

/*
 * becomeChild({socketPath, outputHello, errorHello?, protocolHello, dir, create, uid, gid, controlFd})
 * in a forked child, before any user code: own session (the runner kills the group), the run
 * directory (0700, owned by the run user) when `create`, stdout on one connection to the runner,
 * stderr on another (with errorHello; else on the stdout one) and the protocol on a third as fd 3
 * (all made while the child may still reach the 0700 socket directory), then the run user's
 * identity when uid >= 0. Throws on any failure.
 */
/* native/sandbox.c: the run's namespaces, root and identity (the caller is pid 1 of its own pid namespace). */
long coderun_isolate(const char *spec, char *error, size_t size);

/* One connection to the runner's socket without its hello (the sandbox sends it, naming the run's pid); the fd, or -errno. */
static int connect_only(const char *socket_path) {
  return connect_with_hello(socket_path, "");
}

static napi_value become_child(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], field;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1) {
    napi_throw_type_error(env, NULL, "becomeChild(options)");
    return NULL;
  }
  static char socket_path[4096], output_hello[2048], error_hello[2048], protocol_hello[2048], dir[4096], cgroup[4096];
  bool create = false, split = false;
  int32_t uid = -1, gid = -1, control = -1, parent = -1;
  if (napi_get_named_property(env, argv[0], "socketPath", &field) != napi_ok || get_string(env, field, socket_path, sizeof socket_path) ||
      napi_get_named_property(env, argv[0], "outputHello", &field) != napi_ok || get_string(env, field, output_hello, sizeof output_hello) ||
      napi_get_named_property(env, argv[0], "protocolHello", &field) != napi_ok || get_string(env, field, protocol_hello, sizeof protocol_hello) ||
      napi_get_named_property(env, argv[0], "dir", &field) != napi_ok || get_string(env, field, dir, sizeof dir) ||
      napi_get_named_property(env, argv[0], "create", &field) != napi_ok || napi_get_value_bool(env, field, &create) != napi_ok ||
      napi_get_named_property(env, argv[0], "uid", &field) != napi_ok || napi_get_value_int32(env, field, &uid) != napi_ok ||
      napi_get_named_property(env, argv[0], "gid", &field) != napi_ok || napi_get_value_int32(env, field, &gid) != napi_ok ||
      napi_get_named_property(env, argv[0], "controlFd", &field) != napi_ok || napi_get_value_int32(env, field, &control) != napi_ok ||
      napi_get_named_property(env, argv[0], "parentPid", &field) != napi_ok || napi_get_value_int32(env, field, &parent) != napi_ok ||
      napi_get_named_property(env, argv[0], "cgroup", &field) != napi_ok || get_string(env, field, cgroup, sizeof cgroup)) {
    napi_throw_type_error(env, NULL, "becomeChild: bad options");
    return NULL;
  }
  /* A run sandbox of its own (native/sandbox.c): its spec, which names the hellos to send. */
  static char sandbox[65536];
  bool sandboxed = false;
  if (napi_has_named_property(env, argv[0], "sandbox", &sandboxed) != napi_ok) sandboxed = false;
  if (sandboxed && (napi_get_named_property(env, argv[0], "sandbox", &field) != napi_ok || get_string(env, field, sandbox, sizeof sandbox))) {
    napi_throw_type_error(env, NULL, "becomeChild: bad sandbox");
    return NULL;
  }
  if (napi_has_named_property(env, argv[0], "errorHello", &split) != napi_ok) split = false;
  if (split && (napi_get_named_property(env, argv[0], "errorHello", &field) != napi_ok || get_string(env, field, error_hello, sizeof error_hello))) {
    napi_throw_type_error(env, NULL, "becomeChild: bad errorHello");
    return NULL;
  }
  if (setsid() < 0) return throw_errno(env, "setsid", errno);
  /* The fork server's SIGTERM handling (dieWithParent) is not the runtime's. */
  signal(SIGTERM, SIG_DFL);
  /*
   * SCHED_BATCH: the same share of the CPU, but a run process woken by the service's request no
   * longer preempts the service's thread that woke it (docs/decisions.md, "Run processes are
   * batch-scheduled"). Best effort: a failure changes nothing else.
   */
  struct sched_param no_priority = {0};
  (void)sched_setscheduler(0, SCHED_BATCH, &no_priority);
  /* A distinct name in ps/top: without exec the child keeps the fork server's command line. */
  prctl(PR_SET_NAME, "node-run", 0, 0, 0);
  /* Its run's memory cgroup (before the privilege drop): the limit covers its whole process tree,
   * and the fork server kills whatever is left in it once this process is reaped. */
  if (cgroup[0] != 0) {
    int error = join_cgroup(cgroup);
    if (error) return throw_errno(env, "joining the run's cgroup", error);
  }
  if (sandboxed) {
    int channels[3];
    for (int i = 0; i < 3; i++) {
      channels[i] = connect_only(socket_path);
      if (channels[i] < 0) return throw_errno(env, "connecting a channel", -channels[i]);
    }
    for (int i = 0; i < 3; i++)
      if (dup2(channels[i], i + 1) < 0) return throw_errno(env, "dup2", errno);
    for (int i = 0; i < 3; i++)
      if (channels[i] > 3) close(channels[i]);
    if (control > 3) close(control);
    char error[1024];
    if (coderun_isolate(sandbox, error, sizeof error) != 0) {
      napi_throw_error(env, NULL, error);
      return NULL;
    }
    return NULL;
  }
  if (create) {
    if (mkdir(dir, 0700) != 0) return throw_errno(env, "mkdir", errno);
    if (uid >= 0 && chown(dir, (uid_t)uid, (gid_t)gid) != 0) return throw_errno(env, "chown", errno);
  }
  int output = connect_with_hello(socket_path, output_hello);
  if (output < 0) return throw_errno(env, "connecting the output channel", -output);
  int error = output;
  if (split) {
    error = connect_with_hello(socket_path, error_hello);
    if (error < 0) return throw_errno(env, "connecting the error channel", -error);
  }
  int protocol = connect_with_hello(socket_path, protocol_hello);
  if (protocol < 0) return throw_errno(env, "connecting the protocol channel", -protocol);
  /* dup2 clears close-on-exec on the copies: fds 1-3 are the runtime's, whatever it starts. */
  /* The control channel stays open until here, so that no connection can get its fd number. */
  if (dup2(output, 1) < 0 || dup2(error, 2) < 0 || dup2(protocol, 3) < 0) return throw_errno(env, "dup2", errno);
  if (output > 3) close(output);
  if (error > 3 && error != output) close(error);
  if (protocol > 3) close(protocol);
  if (control > 3) close(control);
  if (uid >= 0) {
    if (setgroups(0, NULL) != 0) return throw_errno(env, "setgroups", errno);
    if (setgid((gid_t)gid) != 0) return throw_errno(env, "setgid", errno);
    if (setuid((uid_t)uid) != 0) return throw_errno(env, "setuid", errno);
    if (getuid() != (uid_t)uid || geteuid() != (uid_t)uid) {
      napi_throw_error(env, NULL, "could not drop privileges");
      return NULL;
    }
  }
  /* Dies with the fork server (set after the privilege drop, which clears it). */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (parent > 0 && getppid() != parent) _exit(0);
  return NULL;
}

static void on_terminate(int signal_number) {
  (void)signal_number;
  terminated = 1;
}

/*
 * dieWithParent(parentPid, catchTerm): a parent-death signal, and an exit at once if the parent is
 * gone already. catchTerm (the fork server): SIGTERM, caught here: waitEvents() then returns
 * {terminated: true} and the fork server cleans up as at the end of its control channel (SIGKILL
 * would leave what the runs started). Otherwise (a spawned runtime): SIGKILL, which no busy loop
 * of user code can delay.
 */
static napi_value die_with_parent(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t parent = -1;
  bool catch_term = false;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc > 0) napi_get_value_int32(env, argv[0], &parent);
  if (argc > 1) napi_get_value_bool(env, argv[1], &catch_term);
  if (catch_term) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_terminate;
    sigemptyset(&action.sa_mask);
    /* No SA_RESTART: the poll in waitEvents() returns EINTR. */
    sigaction(SIGTERM, &action, NULL);
  }
  prctl(PR_SET_PDEATHSIG, catch_term ? SIGTERM : SIGKILL, 0, 0, 0);
  if (parent > 0 && getppid() != parent) _exit(0);
  return NULL;
}

/* becomeSubreaper(): orphans of this process's descendants are reparented here, not to init. */
static napi_value become_subreaper(napi_env env, napi_callback_info info) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return throw_errno(env, "PR_SET_CHILD_SUBREAPER", errno);
  return NULL;
}

/* The call's first argument as an int32, or `fallback` when it has none. */
static int32_t first_int(napi_env env, napi_callback_info info, int32_t fallback) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t value = fallback;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc > 0 && napi_get_value_int32(env, argv[0], &value) != napi_ok) value = fallback;
  return value;
}

/* exit(code): _exit, never node's exit path (it would join V8 threads a forked child does not have). */
static napi_value hard_exit(napi_env env, napi_callback_info info) {
  _exit(first_int(env, info, 0) & 0xff);
  return NULL;
}

/*
 * closeInherited(firstFd): closes every fd >= firstFd that is not close-on-exec, i.e. every fd this
 * process inherited across its exec from the service (which may itself have inherited strays from
 * its supervisor): node and libuv open all of theirs close-on-exec, so what is left is not theirs,
 * and children forked from here must not get it. Returns how many it closed.
 */
static napi_value close_inherited(napi_env env, napi_callback_info info) {
  int32_t first = first_int(env, info, 3);
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) return throw_errno(env, "opendir /proc/self/fd", errno);
  int own = dirfd(dir), found[1024], count = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL && count < 1024) {
    char *end;
    long fd = strtol(entry->d_name, &end, 10);
    if (*end != 0 || fd < first || fd == own) continue;
    int flags = fcntl((int)fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) found[count++] = (int)fd;
  }
  closedir(dir);
  for (int i = 0; i < count; i++) close(found[i]);
  return int_value(env, count);
}

/*
 * setDumpable(flag): PR_SET_DUMPABLE. In the bubblewrap sandbox (not root) every run process has the
 * service's uid: non-dumpable, its /proc/<pid>/environ and mem belong to root and ptrace is refused,
 * so a sibling run cannot read or steer it. Inherited by fork, reset by exec.
 */
static napi_value set_dumpable(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  bool flag = false;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc > 0) napi_get_value_bool(env, argv[0], &flag);
  if (prctl(PR_SET_DUMPABLE, flag ? 1 : 0, 0, 0, 0) != 0) return throw_errno(env, "PR_SET_DUMPABLE", errno);
  return NULL;
}

/*
 * peerPid(fd): the pid of the process at the other end of a connected Unix socket (SO_PEERCRED, as
 * of its connect), translated by the kernel into this process's pid namespace: the runner learns the
 * real pid of a child forked inside the sandbox's pid namespace (its signals, its RSS watchdog).
 */
static napi_value peer_pid(napi_env env, napi_callback_info info) {
  int32_t fd = first_int(env, info, -1);
  struct ucred cred;
  socklen_t length = sizeof cred;
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return throw_errno(env, "SO_PEERCRED", fd < 0 ? EBADF : errno);
  return int_value(env, (int32_t)cred.pid);
}

/* ownPid(): getpid(); node's process.pid is the fork server's, cached at its start. */
static napi_value own_pid(napi_env env, napi_callback_info info) {
  return int_value(env, (int32_t)getpid());
}

NAPI_MODULE_INIT() {
  static const struct {
    const char *name;
    napi_callback callback;
  } functions[] = {{"forkChild", fork_child}, {"waitEvents", wait_events}, {"becomeChild", become_child}, {"exit", hard_exit}, {"ownPid", own_pid}, {"closeInherited", close_inherited}, {"dieWithParent", die_with_parent}, {"becomeSubreaper", become_subreaper}, {"setDumpable", set_dumpable}, {"peerPid", peer_pid}, {"pidsLimitHits", pids_limit_hits}, {"limitHit", limit_hit}};
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
    napi_value fn;
    napi_create_function(env, functions[i].name, NAPI_AUTO_LENGTH, functions[i].callback, NULL, &fn);
    napi_set_named_property(env, exports, functions[i].name, fn);
  }
  /* becomeChild takes errorHello (stderr on a connection of its own): forkserver.cjs asks for it only then. */
  napi_value split;
  napi_get_boolean(env, true, &split);
  napi_set_named_property(env, exports, "splitsStderr", split);
  return exports;
}
