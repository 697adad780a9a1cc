"""Python runtime shim for the sandboxed code runner (ops/worker/ProcessCodeRunner.ts).

Protocol: JSON lines on fd 3, both directions: a socket pair made by the parent when spawned, the
connection to the runner's Unix socket when forked by forkserver.py.
fd 0 is /dev/null; fd 1 and 2 belong to the user code (prints) and are captured, capped, by the parent
(pipes when spawned; one socket for both when forked).
  -> {"op": "ready", "pid": n}                                   once, when the interpreter is warm
  <- {"id": n, "op": "load", "file": path, "dir": path}           import the user module
  -> {"id": n, "ok": true, "functions": [names]}
  <- {"id": n, "op": "call", "fn": name, "args": [...]}           call a module-level function
  -> {"id": n, "ok": true, "value": json} | {"id": n, "ok": false, "error": {type, message, traceback, invalid?}}
  <- {"id": n, "op": "reset", "dir": path}                       forget the module, move to an existing dir
  -> {"id": n, "ok": true}
  <- {"id": n, "op": "recycle", "next": path}                    reuse: forget the run, clear the own dir, move to `next`
  <- {"id": n, "op": "install", "file": path, "code": text, "script": text | null}
                                                                 write the code file, then run the install step
  -> {"id": n, "ok": true} | {"id": n, "ok": false, "error": {"type": "BashblockFailed", "message": how, "traceback": stderr tail}}
  -> {"id": n, "op": "reset", "ok": bool, "error"?: text}
  <- {"id": n, "op": "exec", "plan": "operator"|"action", "file": path, "code"?: text, "args": [...],
      "pollIntervalMs": n, "checkCompletionTimeoutMs": n, "next"?: path, "clear"?: true}
     the whole run in one request: write `code` to `file` (when given), load it, then (operator)
     initialize -> run -> check_completion every pollIntervalMs while it answers running (until
     checkCompletionTimeoutMs after the first poll) -> finish; (action) run. One line per step, sent
     before the next user call starts (the runner must know what was in flight if the process hangs or
     dies; it reads each line as the answer to the call its own logic makes next):
  -> {"id": n, "fn": "load", "ok": true, "functions": [names]} | {"id": n, "fn": "load", "ok": false, "error": {...}}
  -> {"id": n, "fn": name, "ok": true, "value": json} | {"id": n, "fn": name, "ok": false, "error": {...}}
  -> {"id": n, "completion": "timeout"}                          check_completion still running at its timeout
  -> {"id": n, "interrupted": "load"|name|"sleep"}               after an abandon: where it was
     A line after which finish is called carries "next": "finish"; the last line carries "done": true.
     "clear" (a fresh process, code written by the exec): the few plain files the run left in the own
     dir are deleted just before the last line, so that the runner's removal is one rmdir.
     "next" (reuse): after the last line the process recycles itself into `next` (as the recycle op,
     but the module stays warm: the next exec sending the same `code` uses it again, see Exec.load)
     and reports {"id": n, "op": "reset", "ok": bool}: no request is needed between two runs.
     "mark" (exec, and load of the steps protocol): the run's token for output marks (see write_mark).
  <- {"op": "abandon", "id": n, "seen": lines}   the runner gives up (time limit, cancellation, finish
     budget) after reading `lines` of exec n; then SIGINT. See Exec for what it ends.
SIGINT interrupts the current user call or exec sleep (time limit or cancellation); during an exec, one
that lands between two steps gives up the next step (see Exec); the other ops ignore it outside a call.
Usage: python3 -I -u -B runtime.py <memoryMb>             (one spawned interpreter per process)
   or: imported by forkserver.py, whose forked children call start(memoryMb) then main().
Nothing here runs at import time but definitions: the fork server imports this module once and must
not install the per-run signal handler or memory limit in itself.
"""
import importlib.util
import inspect
import io
import json
import os
import resource
import signal
import stat
import sys
import time
import traceback

PROTO_FD = 3
MEMORY_MB = 0
TRACEBACK_LIMIT = 8192


class Interrupted(BaseException):
    pass


in_call = False
# A SIGINT arrived since the current exec began: it may land between two steps (while a result is being
# encoded or sent), where raising would break the protocol; the exec gives up at its next step instead.
interrupt_requested = False
# The process's own directory (its cwd at start): reuse runs happen in subdirectories of it, and a
# recycle clears it.
BASE = ""


# The exec in progress, if any.
current = None


def on_sigint(_signum, _frame):
    global interrupt_requested
    running = current
    if running is not None and not running.interrupt_wanted():
        return
    interrupt_requested = True
    if in_call:
        raise Interrupted("interrupted by the runner (time limit or cancellation)")


def vm_size_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


# Output marks. The runner reads stdout and stderr on channels of their own, apart from the protocol,
# so it cannot tell by arrival which step wrote what. What goes through sys.stdout / sys.stderr
# (print, logging, tracebacks) is preceded, on the same stream, by a mark naming the step whenever
# the step changed since that stream's last mark: "\x1e<token>:<step>\x1e" (the runner's RunOutput,
# ops/worker/runOutput.ts, reads and removes them). The token is the run's, sent with its exec or
# load; without one nothing is marked. A run that writes nothing writes no mark.
mark_token = None
step_now = "load"
# fd -> the step its last mark named, in the current run.
marked = {}


def write_mark(fd):
    marked[fd] = step_now
    view = memoryview(b"\x1e" + mark_token + b":" + step_now.encode("ascii") + b"\x1e")
    while view:
        view = view[os.write(fd, view):]


def begin_marks(token):
    """A run starts: its token (None: no marks), its first step (load), no stream marked yet."""
    global mark_token, step_now
    mark_token = token.encode("ascii") if isinstance(token, str) and token.isalnum() and len(token) <= 64 else None
    step_now = "load"
    marked.clear()


def set_step(step):
    """
    The run's next step. A stream written in this run is marked at once: what a subprocess or C
    code writes to it (which no mark precedes) then carries this step too. Others when written.
    """
    global step_now
    if step == step_now:
        return
    step_now = step
    if mark_token is not None:
        for fd in list(marked):
            write_mark(fd)


class MarkedFile(io.FileIO):
    """fd 1 or 2 under sys.stdout / sys.stderr: the step's mark first when it changed."""

    def write(self, data):
        if mark_token is not None and marked.get(self.fileno()) != step_now:
            write_mark(self.fileno())
        return super().write(data)


def mark_streams():
    """sys.stdout and sys.stderr write through MarkedFile, unbuffered (as -u makes them)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        current = getattr(sys, name)
        try:
            raw = MarkedFile(fd, "wb", closefd=False)
        except OSError:
            continue
        encoding = getattr(current, "encoding", None) or "utf-8"
        errors = getattr(current, "errors", None) or "strict"
        setattr(sys, name, io.TextIOWrapper(raw, encoding=encoding, errors=errors, write_through=True))


def start(memory_mb):
    """Per-process set-up of the process that serves runs (never of the fork server itself)."""
    global MEMORY_MB, BASE
    MEMORY_MB = memory_mb
    BASE = os.getcwd()
    mark_streams()
    known_modules.update(sys.modules)
    signal.signal(signal.SIGINT, on_sigint)
    os.set_inheritable(PROTO_FD, False)
    if memory_mb > 0:
        # Address-space limit: the runtime's current footprint plus the user budget. The hard limit
        # is lowered too, so user code cannot raise it again.
        limit = vm_size_bytes() + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


buffer = b""


def read_message():
    global buffer
    while b"\n" not in buffer:
        chunk = os.read(PROTO_FD, 65536)
        if not chunk:
            return None
        buffer += chunk
    line, buffer = buffer.split(b"\n", 1)
    return json.loads(line)


def abandon_seen(rid):
    """
    The `seen` of the runner's latest abandon line for exec `rid`: before its SIGINT the runner writes
    {"op": "abandon", "id": n, "seen": lines} (how many of the exec's lines it had read). Reads what
    the channel holds without blocking (nothing else reads it during an exec) and keeps other lines.
    """
    global buffer
    try:
        os.set_blocking(PROTO_FD, False)
        try:
            while True:
                chunk = os.read(PROTO_FD, 65536)
                if not chunk:
                    break
                buffer += chunk
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(PROTO_FD, True)
    except OSError:
        pass
    seen = None
    lines = buffer.split(b"\n")
    kept = []
    for line in lines[:-1]:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("op") == "abandon" and message.get("id") == rid:
            seen = max(seen or 0, int(message.get("seen") or 0))
        else:
            kept.append(line)
    kept.append(lines[-1])
    buffer = b"\n".join(kept)
    return seen


def send(message):
    """Writes one protocol line; `message` is a dict or an already encoded JSON object."""
    text = message if isinstance(message, str) else json.dumps(message, allow_nan=False, separators=(",", ":"))
    data = (text + "\n").encode("utf-8")
    view = memoryview(data)
    while view:
        written = os.write(PROTO_FD, view)
        view = view[written:]


def user_frames(tb):
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb


def describe(error, invalid=False, tb=None):
    if isinstance(error, SystemExit):
        message = "operator code called sys.exit(%s): ending the runtime process is not allowed" % (error.code,)
    elif isinstance(error, MemoryError):
        message = "memory limit of %d MB exceeded (MemoryError)" % MEMORY_MB
    elif isinstance(error, RecursionError):
        message = "RecursionError: %s" % error
    else:
        text = str(error)
        message = "%s: %s" % (type(error).__name__, text) if text else type(error).__name__
    tb = user_frames(tb)
    formatted = "".join(traceback.format_exception(type(error), error, tb))[-TRACEBACK_LIMIT:] if tb else ""
    described = {"type": type(error).__name__, "message": message, "traceback": formatted}
    if invalid:
        described["invalid"] = True
    return described


module = None
module_count = 0
# Reuse: (source, module, functions) of the module the last exec loaded from the code it was sent,
# kept for the next exec of the same code in this process (see Exec.load). None after any other
# load, a reset or a recycle op.
warm = None


def import_from(directory):
    """The run's directory comes first on sys.path: the run imports its own helper files."""
    if directory not in sys.path:
        sys.path.insert(0, directory)


def load(file, directory, source=None):
    """
    Imports `file` as a new module. `source` (its text, when the caller just wrote it) is compiled
    as the file loader would compile the file's bytes, without reading the file back or looking for
    its bytecode cache (~60 us of ~130 per load).
    """
    global module, module_count, in_call
    module_count += 1
    import_from(directory)
    user_site = os.path.join(directory, ".local", "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    if os.path.isdir(user_site) and user_site not in sys.path:
        sys.path.insert(1, user_site)
    importlib.invalidate_caches()
    name = "user_code_%d" % module_count
    spec = importlib.util.spec_from_file_location(name, file)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    if source is not None:
        code = compile(source.encode("utf-8"), file, "exec", dont_inherit=True)
    in_call = True
    try:
        if source is None:
            spec.loader.exec_module(loaded)
        else:
            exec(code, loaded.__dict__)
    finally:
        in_call = False
    module = loaded
    return [n for n in ("initialize", "run", "check_completion", "finish") if callable(getattr(loaded, n, None))]


def call(fn_name, args):
    global in_call
    fn = getattr(module, fn_name, None) if module is not None else None
    if not callable(fn):
        raise LookupError("function %s is not defined" % fn_name)
    in_call = True
    try:
        value = fn(*args)
        if inspect.isawaitable(value):
            import asyncio

            async def wait():
                return await value

            value = asyncio.run(wait())
    finally:
        in_call = False
    return value


def inside(path, directory):
    return isinstance(path, str) and (path == directory or path.startswith(directory + os.sep))


# Modules (by name, the very object) known not to come from user code: the runtime's own at start,
# then those kept by forget(). Only the others are looked at (all of sys.modules took ~100 us per reset);
# a known name now bound to another module object is looked at again.
known_modules = {}


def forget(directory, keep_warm=False):
    """
    Drops the user module, and every module, path entry and finder cache from under `directory`;
    the warm module too unless `keep_warm` (an exec's own recycle: the module outlives its files).
    """
    global module, warm
    if not keep_warm:
        warm = None
    for name, loaded in list(sys.modules.items()):
        if known_modules.get(name) is loaded:
            continue
        try:
            mine = name.startswith("user_code_") or inside(getattr(loaded, "__file__", None), directory)
        except Exception:  # noqa: B902 - a module object of the user's with a strange __getattr__
            mine = True
        if mine:
            del sys.modules[name]
        else:
            known_modules[name] = loaded
    module = None
    sys.path[:] = [p for p in sys.path if not inside(p, directory)]
    for p in [p for p in sys.path_importer_cache if inside(p, directory)]:
        del sys.path_importer_cache[p]
    cached = sys.modules.get("tempfile")
    if cached is not None:
        cached.tempdir = None


def move_to(directory):
    os.chdir(directory)
    os.environ["HOME"] = directory
    os.environ["TMPDIR"] = directory


def reset(directory):
    forget(os.environ.get("HOME") or os.getcwd())
    move_to(directory)


def remove_tree(path):
    """Removes a file or directory the user code left, also read-only folders (this user owns them)."""
    if not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
        return
    import shutil

    def retry(function, failed, _info):
        os.chmod(os.path.dirname(failed), 0o700)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, 0o700)
            shutil.rmtree(failed)
        else:
            function(failed)

    shutil.rmtree(path, onerror=retry)


def clear_own_files():
    """
    A fresh process's run is over: delete the files it left in the own dir, so that the runner's
    removal (on its event loop) is one rmdir. Only a few plain files, so that the last line is not
    delayed by much: anything more is left to the runner.
    """
    try:
        entries = list(os.scandir(BASE))
        if len(entries) > 16 or any(entry.is_dir(follow_symlinks=False) for entry in entries):
            return
        for entry in entries:
            os.unlink(entry.path)
    except OSError:
        pass


def recycle(next_dir, keep_warm=False):
    """
    Reuse: forget this run's modules, clear the own dir (every run's files) and move into `next_dir`.
    After an exec, the module it loaded stays warm (Exec.load).
    """
    forget(BASE, keep_warm)
    if not renamed_empty_run_dir(next_dir):
        os.chdir(BASE)
        for entry in os.listdir(BASE):
            remove_tree(os.path.join(BASE, entry))
        os.mkdir(next_dir, 0o700)
    move_to(next_dir)


def renamed_empty_run_dir(next_dir):
    """
    The common case of a reuse run that left no file: its run directory, still empty and as it was made
    (mode 0700, the only entry of the own dir), becomes `next_dir` by one rename instead of a removal and
    a creation (see runtime.cjs). A new path all the same. Whether it applied.
    """
    current = os.getcwd()
    if os.path.dirname(current) != BASE:
        return False
    own = os.listdir(BASE)
    if own != [os.path.basename(current)] or os.listdir(current):
        return False
    mode = os.lstat(current).st_mode
    if not stat.S_ISDIR(mode) or stat.S_IMODE(mode) != 0o700:
        return False
    os.rename(current, next_dir)
    return True


def not_serialisable(fn_name, error):
    text = str(error)
    if text.startswith("Object of type "):
        what = "a value of type %s" % text[len("Object of type "):].split(" ")[0]
    elif "Circular" in text or isinstance(error, RecursionError):
        what = "a circular reference"
    elif "float" in text:
        what = "NaN or Infinity"
    else:
        what = "a value (%s)" % text
    return "result of %s contains %s, which is not JSON-serialisable" % (fn_name, what)


def handle(request):
    op = request.get("op")
    rid = request.get("id")
    if op == "load":
        begin_marks(request.get("mark"))
        try:
            functions = load(request["file"], request["dir"])
        except SyntaxError as error:
            return {"id": rid, "ok": False, "error": describe(error, invalid=True)}
        except BaseException as error:  # noqa: B902 - user code may raise anything, even SystemExit
            return {"id": rid, "ok": False, "error": describe(error, tb=error.__traceback__)}
        return {"id": rid, "ok": True, "functions": functions}
    if op == "call":
        if request.get("fn") in STEPS:
            set_step(request["fn"])
        try:
            value = call(request["fn"], request.get("args", []))
        except BaseException as error:  # noqa: B902
            return {"id": rid, "ok": False, "error": describe(error, tb=error.__traceback__)}
        try:
            encoded = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as error:
            return {
                "id": rid,
                "ok": False,
                "error": {
                    "type": "NotSerialisable",
                    "message": not_serialisable(request["fn"], error),
                    "traceback": "",
                },
            }
        return '{"id":%d,"ok":true,"value":%s}' % (rid, encoded)
    if op == "install":
        begin_marks(request.get("mark"))
        set_step("install")
        return install(rid, request["file"], request["code"], request.get("script"))
    if op == "reset":
        reset(request["dir"])
        return {"id": rid, "ok": True}
    if op == "recycle":
        return recycled(rid, request["next"])
    return {"id": rid, "ok": False, "error": {"type": "ProtocolError", "message": "unknown op %r" % (op,), "traceback": ""}}


INSTALL_TAIL_BYTES = 2000
# The install step's shell, by absolute path (no lookup through PATH).
BASH = "/bin/bash"


def install(rid, file, code, script):
    """
    The run's code file, written by this process (the run's own uid, in its own directory: made
    exclusively, never through a link), then the install step: `bash -c script` in that directory
    with this process's environment, its stdout on the run's stdout, its stderr on the run's stderr
    (the last bytes kept for the error). Whatever it started in its process group is killed after it.
    """
    try:
        if os.path.lexists(file):
            os.unlink(file)
        descriptor = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(code)
    except OSError as error:
        return install_failed(rid, "could not write the code file: %s" % error)
    if not script:
        return {"id": rid, "ok": True}
    import subprocess

    if mark_token is not None:
        for fd in (1, 2):
            write_mark(fd)
    try:
        child = subprocess.Popen(
            [BASH, "-c", script], cwd=os.path.dirname(file), stdin=subprocess.DEVNULL, stdout=1, stderr=subprocess.PIPE, start_new_session=True
        )
    except OSError as error:
        return install_failed(rid, "could not start: %s" % error)
    import select

    tail = b""
    status = None
    drain_until = None
    try:
        # Until bash ended and its stderr is drained: a background job holding the pipe is killed
        # with bash's process group, and one that left it (setsid) gets 100 ms, not the run's time.
        while True:
            readable, _, _ = select.select([child.stderr], [], [], 0.05)
            if readable:
                chunk = os.read(child.stderr.fileno(), 65536)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(2, view):]
                tail = (tail + chunk)[-INSTALL_TAIL_BYTES:]
            if status is None:
                status = child.poll()
                if status is not None:
                    try:
                        os.killpg(child.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    drain_until = time.monotonic() + 0.1
            elif time.monotonic() > drain_until:
                break
        if status is None:
            status = child.wait()
    finally:
        # Its background jobs do not outlive it.
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        child.stderr.close()
    if status == 0:
        return {"id": rid, "ok": True}
    if status < 0:
        try:
            how = "signal %s" % signal.Signals(-status).name
        except ValueError:
            how = "signal SIG%d" % -status
    else:
        how = "exit code %d" % status
    return install_failed(rid, how, tail.decode("utf-8", "replace"))


def install_failed(rid, how, tail=""):
    """A failed install step as a protocol error: `message` says how it ended, `traceback` is its stderr's tail."""
    return {"id": rid, "ok": False, "error": {"type": "BashblockFailed", "message": how, "traceback": tail}}


def recycled(rid, next_dir, keep_warm=False):
    try:
        recycle(next_dir, keep_warm)
    except Exception as error:  # noqa: B902 - the runner then drops this process
        return {"id": rid, "op": "reset", "ok": False, "error": "%s: %s" % (type(error).__name__, error)}
    return {"id": rid, "op": "reset", "ok": True}


STEPS = ("initialize", "run", "check_completion", "finish")


def step_call(fn_name, args):
    """One user call of an exec: (True, value) or (False, error dict); Interrupted when SIGINT came."""
    if interrupt_requested:
        raise Interrupted()
    set_step(fn_name)
    try:
        value = call(fn_name, args)
    except BaseException as error:  # noqa: B902 - user code may raise anything, even SystemExit
        if interrupt_requested:
            raise Interrupted() from None
        return False, describe(error, tb=error.__traceback__)
    if interrupt_requested:
        # The user code swallowed the interrupt: the runner gave up on this call all the same.
        raise Interrupted()
    return True, value


def pause(seconds):
    """The exec's wait between two polls; SIGINT ends it like a user call."""
    global in_call
    if interrupt_requested:
        raise Interrupted()
    in_call = True
    try:
        time.sleep(seconds)
    finally:
        in_call = False


def is_running(value):
    """What the runner reads as running (pollCompletion.ts): an object whose status is running."""
    status = value.get("status") if isinstance(value, dict) else None
    return isinstance(status, str) and status.lower() == "running"


class Exec:
    """
    One `exec` request: the whole run, one protocol line per step (see the module docstring).

    An interrupt (SIGINT, after an abandon line saying how many lines the runner had read) means
    "give up and go to finish": before finish it ends the current step, or the next one when it comes
    between two; once the line announcing finish is out, only an interrupt sent after the runner read
    that line ends finish (its budget ran out), and an older one, which crossed that line, is ignored.
    """

    def __init__(self, request):
        self.rid = request["id"]
        self.request = request
        self.args = request.get("args", [])
        self.operator = request.get("plan") != "action"
        self.functions = []
        self.has_finish = False
        self.sent = 0
        self.finishing = False

    def interrupt_wanted(self):
        if not self.finishing:
            return True
        seen = abandon_seen(self.rid)
        return seen is None or seen >= self.sent

    def after(self, more):
        """What follows the line being sent: more steps, finish, or nothing."""
        if more:
            return None
        return "finish" if self.has_finish else "done"

    def line(self, message, after):
        """Sends one line; `after` ("finish", "done" or None) is marked on it."""
        global interrupt_requested
        text = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"))
        if after is not None:
            text = text[:-1] + (',"next":"finish"}' if after == "finish" else ',"done":true}')
        # Counted before it is sent, and before finishing is set: a SIGINT handled between these
        # statements is judged against what the runner can have read (see interrupt_wanted).
        self.sent += 1
        if after == "finish":
            # From here an interrupt aims at finish: the ones before this line are moot, the runner
            # reads this line and then waits for finish.
            self.finishing = True
            interrupt_requested = False
        elif after == "done" and self.request.get("clear"):
            clear_own_files()
        send(text)

    def result(self, fn_name, ok, value, more_if_ok=False):
        """Sends one call's step line; whether the call succeeded (its value encoded as JSON)."""
        if ok:
            try:
                encoded = json.dumps(value, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as error:
                ok, value = False, {"type": "NotSerialisable", "message": not_serialisable(fn_name, error), "traceback": ""}
            except MemoryError:
                ok, value = False, describe(MemoryError())
        if ok:
            self.line('{"id":%d,"fn":"%s","ok":true,"value":%s}' % (self.rid, fn_name, encoded), self.after(more_if_ok))
        else:
            self.line({"id": self.rid, "fn": fn_name, "ok": False, "error": value}, self.after(False))
        return ok

    def run(self):
        global interrupt_requested, current
        interrupt_requested = False
        current = self
        begin_marks(self.request.get("mark"))
        at = "load"
        try:
            if not self.load():
                return
            if not self.operator:
                at = "run"
                ok, value = step_call("run", self.args)
                self.result("run", ok, value)
                return
            if "initialize" in self.functions:
                at = "initialize"
                ok, value = step_call("initialize", self.args)
                if not self.result("initialize", ok, value, more_if_ok=True):
                    return self.finish()
            at = "run"
            polls = "check_completion" in self.functions
            ok, value = step_call("run", self.args)
            if not self.result("run", ok, value, more_if_ok=polls) or not polls:
                return self.finish()
            poll_s = max(0, self.request.get("pollIntervalMs", 0)) / 1000.0
            completion_deadline = time.monotonic() + max(0, self.request.get("checkCompletionTimeoutMs", 0)) / 1000.0
            while True:
                at = "check_completion"
                ok, value = step_call("check_completion", self.args)
                running = ok and is_running(value)
                if not self.result("check_completion", ok, value, more_if_ok=running) or not running:
                    return self.finish()
                now = time.monotonic()
                if now < completion_deadline:
                    at = "sleep"
                    pause(min(poll_s, completion_deadline - now))
                if time.monotonic() >= completion_deadline:
                    # The runner gives up before its next poll (or interrupts that poll at once).
                    self.line({"id": self.rid, "completion": "timeout"}, self.after(False))
                    return self.finish()
        except Interrupted:
            # Where the interrupt found the run; what was in flight is the runner's to say.
            loaded = at != "load"
            if not loaded:
                self.has_finish = False
            self.line({"id": self.rid, "interrupted": at}, self.after(False))
            if loaded:
                self.finish()
        finally:
            current = None
            # Output after the run (threads it left) is nobody's run: no marks.
            begin_marks(None)

    def load(self):
        """
        Writes the code (when sent) and imports it; whether the run goes on (a run function exists).
        Reuse ("next": this process serves another run after this one): when the code is the very
        text the last exec loaded, that module is used again, neither written nor executed again, so
        its module-level state carries over like a warm serverless function's (as runtime.cjs does;
        see its Exec.load for why). The run's directory still comes first on sys.path, so the run
        imports its own helper files. An install step (the runner wrote the file: no "code") always
        loads afresh.
        """
        global module, warm
        file = self.request["file"]
        source = self.request.get("code")
        keep = source is not None and isinstance(self.request.get("next"), str)
        if keep and warm is not None and warm[0] == source:
            module, functions = warm[1], warm[2]
            # Back under its name (the reset forgot it): pickle, dataclasses and the like look a
            # function's or class's module up in sys.modules.
            sys.modules[module.__name__] = module
            import_from(os.path.dirname(file))
            return self.loaded(functions)
        warm = None
        try:
            if source is not None:
                # The file stays the module's: __file__, tracebacks and inspect read it.
                descriptor = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                    out.write(source)
            functions = load(file, os.path.dirname(file), source)
            if keep:
                warm = (source, module, functions)
        except Interrupted:
            raise
        except BaseException as error:  # noqa: B902 - import-time code may raise anything
            if interrupt_requested:
                raise Interrupted() from None
            invalid = isinstance(error, SyntaxError)
            described = describe(error, invalid=True) if invalid else describe(error, tb=error.__traceback__)
            self.line({"id": self.rid, "fn": "load", "ok": False, "error": described}, "done")
            return False
        return self.loaded(functions)

    def loaded(self, functions):
        """The load step's line; whether the run goes on."""
        if interrupt_requested:
            raise Interrupted()
        self.functions = functions
        self.has_finish = self.operator and "finish" in functions
        # No run function: the runner fails the run without calling anything (finish included).
        self.line({"id": self.rid, "fn": "load", "ok": True, "functions": functions}, None if "run" in functions else "done")
        return "run" in functions

    def finish(self):
        """finish, whatever happened before (the runner's interrupt included): the last step of an exec."""
        if not self.has_finish:
            return
        self.has_finish = False  # its own line is the last one
        try:
            ok, value = step_call("finish", self.args)
        except Interrupted:
            self.line({"id": self.rid, "interrupted": "finish"}, "done")
            return
        self.result("finish", ok, value)


def main():
    send({"op": "ready", "pid": os.getpid()})
    while True:
        try:
            request = read_message()
        except Interrupted:
            continue
        if request is None:
            remove_own_dir()
            return
        if request.get("op") == "exec":
            run_exec(request)
            continue
        if request.get("op") == "abandon":
            # Read after its exec ended: nothing to give up.
            continue
        try:
            response = handle(request)
        except Interrupted as error:
            response = {"id": request.get("id"), "ok": False, "error": describe(error)}
        try:
            send(response)
        except MemoryError:
            send({"id": request.get("id"), "ok": False, "error": describe(MemoryError())})


def run_exec(request):
    try:
        Exec(request).run()
    except Interrupted:
        # Landed after the last step: nothing was given up.
        pass
    except BaseException:  # noqa: B902 - a broken exec must not leave the runner waiting for lines
        traceback.print_exc()
        os._exit(70)
    if request.get("next"):
        send(recycled(request.get("id"), request["next"], True))


def die_with_runner():
    """Spawned by the runner itself (not forked): SIGKILL when it ends (a busy loop of user code
    would otherwise keep this process alive: the end of the protocol channel is only read between
    calls). Forked runtimes got theirs from the fork server."""
    parent = os.environ.pop("CODERUN_PARENT_PID", None)
    if parent is None:
        return
    import ctypes

    ctypes.CDLL(None).prctl(1, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    if os.getppid() != int(parent):
        os._exit(0)


if __name__ == "__main__":
    die_with_runner()
    start(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    main()
