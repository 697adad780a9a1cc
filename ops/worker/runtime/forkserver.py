"""Fork server ("zygote") of the Python runtime (ops/worker/ForkServer.ts).

Starting python3 costs ~47 ms of CPU (site and its .pth files, the stdlib imports); forking this
interpreter, which has done all of that once, costs ~1-2 ms. Every run still gets a fresh process:
a forked child serves one run (or reuse runs) and is never turned back into a fork server. This
process stays single-threaded (fork copies only the calling thread), keeps the service's uid (so
user code running as `runAs` can neither signal nor ptrace it) and never imports user code.

Control channel: JSON lines on fd 3 (a socket pair made by the runner), both directions.
  -> {"op": "ready", "pid": n}                                           once, when warm
  <- {"op": "fork", "token": hex, "dir": path, "memoryMb": n, "create": bool}  start one runtime process
     (create: the child makes `dir`, 0700 and owned by the run user, before dropping privileges;
     with "exec": {"executable": path, "args": [...]} the prepared child execs that program, the
     node runtime, instead of serving the Python one)
  -> {"op": "forked", "token": hex, "pid": n, "cgroup"?: path} | {"op": "fork_failed", "token": hex, "error": text}
  -> {"op": "exit", "pid": n, "code": n | null, "signal": name | null, "memory"?: true,
      "limit"?: {"limit": name, "setting": name, "value": n}}   each child, once reaped
EOF on the control channel (the runner is gone) ends this process; its children notice the same
on their own channels.

Each child connects twice to the runner's Unix socket (argv[1], in a 0700 directory of the
service's uid) and sends one hello line on each connection, then:
  {"token": hex, "pid": n, "channel": "output", "split": true}  raw stdout (fd 1 is this socket)
  {"token": hex, "pid": n, "channel": "error"}     raw stderr (fd 2 is this socket)
  {"token": hex, "pid": n, "channel": "protocol"}  the runtime.py protocol (this socket is fd 3)
Connections are made before privileges are dropped: a child running as `runAs` cannot reach the
socket directory afterwards, so it cannot pose as another run's process.
A fork request may name the child's own identity ("uid", "gid": distinct per live process, so
that one run cannot signal, ptrace or read /proc of another) and its process tree's memory limit
("treeMb"). Sandbox (docs/decisions.md, "Run processes never hold the service's rights"):
- this process dies with the runner (PR_SET_PDEATHSIG; the env variable CODERUN_PARENT_PID names
  the parent it must still have once that is set) and each child dies with this process (set
  after the privilege drop, which clears it);
- this process is a child subreaper: whatever a run started and left behind is reparented here
  (not to init) and reaped here;
- when the memory cgroup of this process is writable (root, cgroup v1), each child joins a run
  cgroup of its own (<own memory cgroup>/coderun-<this pid>/c<n>/t, limited at c<n>, made or taken
  from a pool here before the fork) before dropping privileges: the memory limit covers the whole
  tree and, once the child is reaped, every process left in it (setsid/double fork included) is
  SIGKILLed; the empty cgroup goes back to the pool. The "forked" report names it ("cgroup"), the
  "exit" report says "memory": true when the kernel killed a process of it at its limit.
Usage: python3 -I -u -B forkserver.py <socket path> [<uid> <gid>]
"""
import ctypes
import gc
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import traceback

CONTROL_FD = 3
HERE = os.path.dirname(os.path.abspath(__file__))


def load_runtime():
    # A private module name: user code doing `import runtime` must still find its own file.
    spec = importlib.util.spec_from_file_location("_coderunner_runtime", os.path.join(HERE, "runtime.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


runtime = load_runtime()
# What runtime.py imports lazily, imported once here instead of in every child: asyncio for async
# user functions (it also pulls in ssl, whose OpenSSL generator reseeds itself in a forked child),
# shutil for removing the run directory when the runner is gone.
import asyncio  # noqa: E402,F401
import shutil  # noqa: E402,F401

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    return _libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0


def die_with_parent(expected_parent, signum=signal.SIGKILL):
    """`signum` when the parent ends; exits at once if it has ended already (or was never it)."""
    prctl(PR_SET_PDEATHSIG, signum)
    if os.getppid() != expected_parent:
        os._exit(0)


def runner_gone(_signum, _frame):
    """SIGTERM (the runner died: parent-death signal): the loop ends as at EOF, cleaning up on the way.
    A flag, not an exception: raised while the cleanup has begun (EOF arrives a moment earlier), an
    exception would cut it short."""
    global terminated
    terminated = True


def own_memory_cgroup():
    """This process's memory cgroup directory (cgroup v1), or None."""
    try:
        with open("/proc/self/cgroup") as lines:
            for line in lines:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "memory" in controllers.split(","):
                    directory = "/sys/fs/cgroup/memory" + path
                    return directory if os.path.isdir(directory) else None
    except OSError:
        pass
    return None


def make_cgroup_base():
    """coderun-<pid> under the own memory cgroup when it is writable; removes those of dead fork servers."""
    own = own_memory_cgroup()
    if own is None or os.environ.get("CODERUN_CGROUPS") == "off":
        return None
    try:
        for name in os.listdir(own):
            if not name.startswith("coderun-") or not name[8:].isdigit():
                continue
            try:
                os.kill(int(name[8:]), 0)
                continue
            except ProcessLookupError:
                pass
            except OSError:
                continue
            stale = os.path.join(own, name)
            for child in os.listdir(stale):
                if is_run_cgroup(child):
                    kill_cgroup(os.path.join(stale, child))
            try:
                os.rmdir(stale)
            except OSError:
                pass
        base = os.path.join(own, "coderun-%d" % os.getpid())
        os.mkdir(base)
        return base
    except OSError:
        return None


def kill_cgroup(directory):
    """SIGKILL to every process in a run cgroup (its tasks leaf), then rmdir both; True once it is gone."""
    tasks = os.path.join(directory, "t")
    for pid in cgroup_procs(tasks) or []:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    try:
        for level in (tasks, directory):
            try:
                os.rmdir(level)
            except FileNotFoundError:
                pass
        return True
    except OSError:
        return False


def cgroup_procs(directory):
    """The pids in a cgroup (strings), or None when it is gone."""
    try:
        with open(os.path.join(directory, "cgroup.procs")) as procs:
            return procs.read().split()
    except FileNotFoundError:
        return None
    except OSError:
        return []


def is_run_cgroup(name):
    return name.startswith("c") and name[1:].isdigit()


# A run cgroup is two levels: c<n> holds the memory limit, c<n>/t the processes. node sizes the heap
# of each new isolate (worker threads) from the limit of the cgroup it is in (libuv's constrained
# memory); in a 192 MB one, a forked node's worker thread ended up waiting forever for its exit
# (docs/decisions.md, "JavaScript fork server": a background task the child has no thread for).
# The kernel enforces the parent's limit on the leaf all the same.
# Run cgroups are pooled: an empty one goes back to the pool after its run (mkdir + rmdir per run
# were ~160 us). Entry: [directory, limit in MB (None: not set yet), oom_kill count seen so far].
FREE_CGROUPS_MAX = 64
# A cgroup still charged with more than this once its processes are gone (files a run left in a
# tmpfs outside its directory) is removed (its charge moves to the parent), not reused.
REUSE_USAGE_BYTES = 4 << 20
free_cgroups = []
cgroup_count = 0


def take_cgroup(tree_mb):
    """A run cgroup limited to tree_mb (0: no limit), from the pool or new."""
    global cgroup_count
    while free_cgroups:
        entry = free_cgroups.pop()
        if set_cgroup_limit(entry, tree_mb):
            return entry
        kill_cgroup(entry[0])
    cgroup_count += 1
    directory = os.path.join(CGROUP_BASE, "c%d" % cgroup_count)
    os.mkdir(directory, 0o755)
    os.mkdir(os.path.join(directory, "t"), 0o755)
    entry = [directory, None, 0]
    if not set_cgroup_limit(entry, tree_mb):
        kill_cgroup(directory)
        raise OSError("could not set the memory limit of the run's cgroup")
    return entry


def set_cgroup_limit(entry, tree_mb):
    if entry[1] == tree_mb:
        return True
    try:
        with open(os.path.join(entry[0], "memory.limit_in_bytes"), "w") as limit:
            limit.write(str(tree_mb * 1024 * 1024) if tree_mb > 0 else "-1")
    except OSError:
        return False
    entry[1] = tree_mb
    return True


def oom_kills(directory):
    """How many times the kernel killed a process of this run cgroup at its memory limit (cgroup v1, 4.13+)."""
    kills = 0
    for level in (directory, os.path.join(directory, "t")):
        try:
            with open(os.path.join(level, "memory.oom_control")) as control:
                for line in control:
                    if line.startswith("oom_kill "):
                        kills += int(line.split()[1])
        except (OSError, ValueError):
            pass
    return kills


def settle_cgroup(entry):
    """After its run: SIGKILL to what is left in it; once empty, back to the pool (or removed). True when settled."""
    pids = cgroup_procs(os.path.join(entry[0], "t"))
    if pids is None:
        return True
    if pids:
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        return False
    try:
        with open(os.path.join(entry[0], "memory.usage_in_bytes")) as usage_file:
            usage = int(usage_file.read())
    except (OSError, ValueError):
        usage = REUSE_USAGE_BYTES
    if usage < REUSE_USAGE_BYTES and len(free_cgroups) < FREE_CGROUPS_MAX:
        free_cgroups.append(entry)
        return True
    return kill_cgroup(entry[0])


def join_cgroup(directory):
    """In the child, before the privilege drop: into its run's cgroup (its whole tree's memory limit)."""
    with open(os.path.join(directory, "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))


SOCKET_PATH = sys.argv[1]
RUN_AS = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else None
# Control bytes read but not handled yet (further fork requests, with their tokens). A bytearray so
# that a child can wipe its copy in place before user code runs.
pending = bytearray()
SERVER_PID = os.getpid()
CGROUP_BASE = None
# Children not reaped yet (orphans of runs are reaped too, but not reported).
children = set()
# Run cgroups (entries) of children not reaped yet, by pid.
run_cgroups = {}
# Run cgroups whose processes were killed but are not gone yet, by directory.
draining = {}
# Each child's run directory, removed here if the runner dies before it could remove them.
run_dirs = {}
terminated = False
# Inside a bubblewrap sandbox (the runner's CODERUN_SANDBOX=bwrap): see main() and kill_orphans().
SANDBOXED = os.environ.pop("CODERUN_SANDBOX", None) == "bwrap"


def send(message):
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
    view = memoryview(data)
    while view:
        view = view[os.write(CONTROL_FD, view):]


def hello(token, pid, channel, **extra):
    return json.dumps({"token": token, "pid": pid, "channel": channel, **extra}, separators=(",", ":"))


def connect(token, pid, channel, announce=True, **extra):
    """One connection to the runner, announced by its hello line (unless the sandbox announces it
    later, with the run's pid); the raw fd (kept open)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(SOCKET_PATH)
    if announce:
        sock.sendall(hello(token, pid, channel, **extra).encode("utf-8") + b"\n")
    return sock.detach()


# The per-run sandbox (native/sandbox.c, built by `npm ci` as coderunsandbox.so): loaded here, once,
# so that every child has it without opening a file.
SANDBOX_LIBRARY = os.path.join(HERE, "..", "native", "build", "Release", "coderunsandbox.so")
_sandbox = None


def sandbox_library():
    global _sandbox
    if _sandbox is None:
        _sandbox = ctypes.CDLL(SANDBOX_LIBRARY, use_errno=True)
        _sandbox.coderun_isolate.restype = ctypes.c_long
        _sandbox.coderun_isolate.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        _sandbox.coderun_pid_namespace.restype = ctypes.c_long
        _sandbox.coderun_pid_namespace.argtypes = [ctypes.c_int]
        _sandbox.coderun_pids_limit_hits.restype = ctypes.c_long
        _sandbox.coderun_pids_limit_hits.argtypes = [ctypes.c_char_p]
        _sandbox.coderun_limit_hit.restype = ctypes.c_long
        _sandbox.coderun_limit_hit.argtypes = [ctypes.c_long, ctypes.c_char_p, ctypes.c_long]
    return _sandbox


# The sandboxed runs alive, supervised here: pid -> [pids.events path (bytes), its count at the
# fork, the run's limits, the limit it hit (or None)]. Checked every SUPERVISE_SECONDS.
supervised = {}
SUPERVISE_SECONDS = 0.1
# What coderun_limit_hit answers: the limit, its setting and the spec key of its value.
LIMITS = {1: ("processes", "WORKER_MAX_PROCESSES", "limit_pids"), 2: ("disk", "WORKER_DISK_MB", "disk_mb"), 3: ("shared memory", "WORKER_SHM_MB", "shm_mb")}


def supervise():
    """A sandboxed run that hit a limit of its sandbox is killed (its pid namespace with it); its
    exit report names the limit (native/sandbox.c)."""
    library = sandbox_library()
    for pid, entry in supervised.items():
        if entry[3] is not None:
            continue
        hit = library.coderun_limit_hit(pid, entry[0], entry[1])
        if hit in LIMITS:
            limit, setting, key = LIMITS[hit]
            value = entry[2].get(key)
            entry[3] = {"limit": limit, "setting": setting, "value": value if isinstance(value, int) else 0}
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def isolate(request, token, run_as):
    """In the child (pid 1 of its own pid namespace), root, channels connected as fds 1-3 without
    their hellos: native/sandbox.c makes the run's other namespaces and root, drops to the run's
    uid, sends the hellos (naming this process by its pid in the runner's namespace) and returns,
    in the run's directory."""
    sandbox = request["sandbox"]
    lines = ["parent=%d" % SERVER_PID, "uid=%d" % run_as[0], "gid=%d" % run_as[1], "dir=%s" % request["dir"]]
    for key in ("disk_mb", "shm_mb", "inodes", "net"):
        if key in sandbox:
            lines.append("%s=%s" % (key, sandbox[key]))
    lines += ["ro=%s" % path for path in sandbox.get("ro", [])]
    lines += ["hide=%s" % path for path in sandbox.get("hide", [])]
    lines += ["ro=%s" % path for path in sandbox.get("after", [])]
    lines += ["join=%s" % path for path in sandbox.get("join", [])]
    for number, (channel, extra) in enumerate((("output", {"split": True}), ("error", {}), ("protocol", {})), start=1):
        lines.append("hello%d=%s" % (number, json.dumps({"token": token, "channel": channel, **extra}, separators=(",", ":"))[:-1]))
    for line in lines:
        if "\n" in line:
            raise ValueError("sandbox spec: a value has a newline")
    error = ctypes.create_string_buffer(1024)
    if sandbox_library().coderun_isolate("\n".join(lines).encode("utf-8"), error, len(error)) != 0:
        raise RuntimeError("run sandbox: %s" % error.value.decode("utf-8", "replace"))


def batch_scheduled():
    """SCHED_BATCH: the same share of the CPU as any process, but a run process woken by a request
    from the service no longer preempts the service's thread that woke it (docs/decisions.md,
    "Run processes are batch-scheduled"). Best effort: a kernel without it changes nothing."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):
        pass


def become_runtime(request, cgroup):
    """In the forked child: a runtime process of its own, then serve the run protocol until EOF."""
    # Other forks' tokens are no business of this one.
    pending[:] = bytes(len(pending))
    del pending[:]
    # The fork server's signal set-up is not the runtime's.
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Own session and process group: the runner's killGroup(pid) reaches the child and whatever it
    # starts, never the fork server.
    os.setsid()
    batch_scheduled()
    # Nothing of the fork server stays open: control channel, wake-up pipe (close_range is cheap).
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    # Without exec the child keeps the fork server's command line; a distinct name in ps/top at least.
    try:
        with open("/proc/self/comm", "w") as comm:
            comm.write("python3-run")
    except OSError:
        pass
    token, pid = request["token"], os.getpid()
    directory = request["dir"]
    run_as = RUN_AS
    if isinstance(request.get("uid"), int) and isinstance(request.get("gid"), int):
        run_as = (request["uid"], request["gid"])
    if cgroup is not None:
        join_cgroup(os.path.join(cgroup[0], "t"))
    isolated = isinstance(request.get("sandbox"), dict)
    if isolated:
        if run_as is None:
            raise RuntimeError("run sandbox: no run identity")
        output = connect(token, pid, "output", announce=False)
        error = connect(token, pid, "error", announce=False)
        protocol = connect(token, pid, "protocol", announce=False)
        for fd, target in ((output, 1), (error, 2), (protocol, runtime.PROTO_FD)):
            os.dup2(fd, target)
        for fd in (output, error, protocol):
            if fd not in (1, 2, runtime.PROTO_FD):
                os.close(fd)
        isolate(request, token, run_as)
        # From here on: the runtime process, pid 1 of the run's namespace, as the run's uid.
        run_as = None
    elif request.get("create"):
        # Here rather than in the runner: a directory creation per process was a synchronous
        # mkdtemp on the service's event loop. Exclusive: a name that exists fails the fork.
        os.mkdir(directory, 0o700)
        if run_as is not None:
            os.chown(directory, run_as[0], run_as[1])
    if not isolated:
        # stdout and stderr apart (the runner logs them at different levels), then the protocol.
        output = connect(token, pid, "output", split=True)
        error = connect(token, pid, "error")
        protocol = connect(token, pid, "protocol")
        os.dup2(output, 1)
        os.dup2(error, 2)
        for fd in (output, error):
            if fd not in (1, 2):
                os.close(fd)
        if protocol != runtime.PROTO_FD:
            os.dup2(protocol, runtime.PROTO_FD)
            os.close(protocol)
    if run_as is not None:
        uid, gid = run_as
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise RuntimeError("could not drop privileges to uid %d" % uid)
    if not isolated:
        # After the drop, which clears it; survives the exec of node below. (The sandbox set its own.)
        die_with_parent(SERVER_PID)
        os.chdir(directory)
    os.environ["HOME"] = directory
    os.environ["TMPDIR"] = directory
    program = request.get("exec")
    if program is not None:
        # Another interpreter (node) in this prepared process: the same fds, session, identity,
        # directory and environment a spawn would give it, started from this small process instead
        # of the service's (whose fork copies page tables: ~10 ms of its event loop at 2 GB).
        # Python ignores SIGPIPE and SIGXFSZ and an ignored signal survives exec: back to default,
        # as subprocess's restore_signals does.
        for name in ("SIGPIPE", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        executable = program["executable"]
        os.execve(executable, [executable] + list(program["args"]), dict(os.environ))
    # random reseeds itself at fork (os.register_at_fork); tempfile's name generator checks the pid.
    # tempfile caches the temp dir it found first: forget the fork server's (if anything asked).
    cached = sys.modules.get("tempfile")
    if cached is not None:
        cached.tempdir = None
    memory_mb = int(request.get("memoryMb") or 0)
    sys.argv = [os.path.join(HERE, "runtime.py"), str(memory_mb)]
    runtime.start(memory_mb)
    runtime.main()


def restore_pid_namespace(library):
    """In this process after a sandboxed run's fork: its next children are its own namespace's again."""
    if library.coderun_pid_namespace(0) != 0:
        # Its next forks would land in the run's namespace: never go on so.
        os._exit(70)


def fork(request):
    token = request.get("token")
    cgroup = None
    try:
        if CGROUP_BASE is not None:
            cgroup = take_cgroup(int(request.get("treeMb") or 0))
        sandbox = request.get("sandbox")
        if isinstance(sandbox, dict):
            # Here, before the fork: loaded in the child it was a dlopen and ctypes set-up per run,
            # and pages of this interpreter written again in both processes of the run.
            library = sandbox_library()
            events = sandbox.get("pids_events")
            events = events.encode("utf-8") if isinstance(events, str) else b""
            # The pooled cgroup's count so far: only what this run adds is its.
            baseline = library.coderun_pids_limit_hits(events) if events else -1
            # The child is pid 1 of a pid namespace of its own (no second fork in the sandbox).
            if library.coderun_pid_namespace(1) != 0:
                raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID): %s" % os.strerror(ctypes.get_errno()))
            try:
                pid = os.fork()
            except OSError:
                restore_pid_namespace(library)
                raise
            if pid != 0:
                restore_pid_namespace(library)
                supervised[pid] = [events, baseline, sandbox, None]
        else:
            pid = os.fork()
    except OSError as error:
        if cgroup is not None:
            free_cgroups.append(cgroup)
        send({"op": "fork_failed", "token": token, "error": str(error)})
        return
    if pid == 0:
        code = 0
        try:
            become_runtime(request, cgroup)
        except BaseException:  # noqa: B902 - whatever happens, the child never returns into this loop
            code = 70
            try:
                traceback.print_exc()
            except BaseException:  # noqa: B902
                pass
        finally:
            os._exit(code)
    children.add(pid)
    # A sandboxed run's directory is in its own tmpfs, gone with it: nothing to remove on the host.
    run_dirs[pid] = None if isinstance(request.get("sandbox"), dict) else request.get("dir")
    forked = {"op": "forked", "token": token, "pid": pid}
    if cgroup is not None:
        run_cgroups[pid] = cgroup
        forked["cgroup"] = os.path.join(cgroup[0], "t")
    send(forked)


def exit_status(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return None, signal.Signals(number).name
        except ValueError:
            return None, "SIG%d" % number
    return os.waitstatus_to_exitcode(status), None


def reap():
    reap_children()
    if SANDBOXED:
        kill_orphans()


def kill_orphans():
    """Bubblewrap sandbox (not root: no cgroups): whatever a run left behind is reparented here
    (subreaper) once its parent ends, and is killed at once; its own children come next, at the
    SIGCHLD of its end. A run's detached processes do not outlive it (nor, double-forked, its parent)."""
    try:
        with open("/proc/self/task/%d/children" % SERVER_PID) as listing:
            pids = [int(pid) for pid in listing.read().split()]
    except OSError:
        return
    for pid in pids:
        if pid not in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def reap_children():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid not in children:
            # An orphan a run left behind, reparented here (subreaper): reaped, nothing to report.
            continue
        children.discard(pid)
        run_dirs.pop(pid, None)
        code, name = exit_status(status)
        report = {"op": "exit", "pid": pid, "code": code, "signal": name}
        entry = supervised.pop(pid, None)
        if entry is not None and entry[3] is not None:
            report["limit"] = entry[3]
        cgroup = run_cgroups.pop(pid, None)
        if cgroup is not None:
            kills = oom_kills(cgroup[0])
            if name == "SIGKILL" and kills > cgroup[2]:
                report["memory"] = True
            cgroup[2] = kills
            # Whatever the run started is killed with it (setsid and double forks included).
            if not settle_cgroup(cgroup):
                draining[cgroup[0]] = cgroup
        send(report)


def drain():
    for directory, cgroup in list(draining.items()):
        if settle_cgroup(cgroup):
            del draining[directory]


def main():
    global CGROUP_BASE
    # The runner's end closes the control channel (EOF: the loop below returns); its death also sends
    # SIGTERM (not SIGKILL: the cleanup below, killing what the runs left, must still happen).
    signal.signal(signal.SIGTERM, runner_gone)
    if SANDBOXED:
        # The runs have this process's uid (bubblewrap, not root): non-dumpable, its memory and
        # /proc files are out of their reach (no ptrace into the fork server to steer later forks);
        # every fork inherits it.
        if not prctl(PR_SET_DUMPABLE, 0):
            raise RuntimeError("could not make the fork server non-dumpable")
    parent = os.environ.pop("CODERUN_PARENT_PID", None)
    if parent is not None:
        die_with_parent(int(parent), signal.SIGTERM)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    CGROUP_BASE = make_cgroup_base()
    os.set_inheritable(CONTROL_FD, False)
    # SIGCHLD wakes the select below through a self-pipe, so that children are reaped and reported
    # from the main loop: a Python signal handler could run in the middle of another send().
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    # Everything imported so far is shared copy-on-write with the children; frozen, their garbage
    # collector does not walk (and so does not copy) those objects.
    gc.freeze()
    send({"op": "ready", "pid": os.getpid(), "cgroups": CGROUP_BASE is not None})
    try:
        serve(wake_read)
    finally:
        cleanup()


def cleanup():
    """The runner is gone: every child and whatever the runs left are killed, the cgroups removed (<= 1 s)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    # The runner can no longer remove its runs' directories (coderun-* left in the temp dir).
    for directory in run_dirs.values():
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
    if CGROUP_BASE is None:
        return
    for _ in range(50):
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        # The run cgroups are named by pid; the rest of the listing is the cgroup's own control files.
        runs = [name for name in os.listdir(CGROUP_BASE) if is_run_cgroup(name)]
        left = [name for name in runs if not kill_cgroup(os.path.join(CGROUP_BASE, name))]
        if not left:
            break
        select.select([], [], [], 0.02)
    try:
        os.rmdir(CGROUP_BASE)
    except OSError:
        pass


def serve(wake_read):
    while True:
        readable, _, _ = select.select([CONTROL_FD, wake_read], [], [], 0.05 if draining else SUPERVISE_SECONDS if supervised else None)
        if terminated:
            return
        if supervised:
            supervise()
        if draining:
            reap()
            drain()
        if wake_read in readable:
            try:
                while os.read(wake_read, 512):
                    pass
            except BlockingIOError:
                pass
            reap()
        if CONTROL_FD in readable:
            chunk = os.read(CONTROL_FD, 65536)
            if not chunk:
                return
            pending.extend(chunk)
            del chunk
            end = pending.find(b"\n")
            while end != -1:
                request = json.loads(pending[:end])
                del pending[: end + 1]
                fork(request)
                end = pending.find(b"\n")


main()
