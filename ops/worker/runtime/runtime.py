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
  <- {"id": n, "op": "reset", "dir": path}                       reuse: forget the module, move to a fresh dir
SIGINT interrupts the current user call (time limit or cancellation); it is ignored otherwise.
Usage: python3 -I -u -B runtime.py <memoryMb>             (one spawned interpreter per process)
   or: imported by forkserver.py, whose forked children call start(memoryMb) then main().
Nothing here runs at import time but definitions: the fork server imports this module once and must
not install the per-run signal handler or memory limit in itself.
"""
import importlib.util
import inspect
import json
import os
import resource
import signal
import sys
import traceback

PROTO_FD = 3
MEMORY_MB = 0
TRACEBACK_LIMIT = 8192


class Interrupted(BaseException):
    pass


in_call = False


def on_sigint(_signum, _frame):
    if in_call:
        raise Interrupted("interrupted by the runner (time limit or cancellation)")


def vm_size_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def start(memory_mb):
    """Per-process set-up of the process that serves runs (never of the fork server itself)."""
    global MEMORY_MB
    MEMORY_MB = memory_mb
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


def load(file, directory):
    global module, module_count, in_call
    module_count += 1
    if directory not in sys.path:
        sys.path.insert(0, directory)
    user_site = os.path.join(directory, ".local", "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    if os.path.isdir(user_site) and user_site not in sys.path:
        sys.path.insert(1, user_site)
    importlib.invalidate_caches()
    name = "user_code_%d" % module_count
    spec = importlib.util.spec_from_file_location(name, file)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    in_call = True
    try:
        spec.loader.exec_module(loaded)
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


def reset(directory):
    global module
    for name in [n for n in sys.modules if n.startswith("user_code_")]:
        del sys.modules[name]
    module = None
    old_dirs = [p for p in sys.path if p.startswith(os.environ.get("HOME", "\0"))]
    for p in old_dirs:
        sys.path.remove(p)
    os.chdir(directory)
    os.environ["HOME"] = directory
    os.environ["TMPDIR"] = directory


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
        try:
            functions = load(request["file"], request["dir"])
        except SyntaxError as error:
            return {"id": rid, "ok": False, "error": describe(error, invalid=True)}
        except BaseException as error:  # noqa: B902 - user code may raise anything, even SystemExit
            return {"id": rid, "ok": False, "error": describe(error, tb=error.__traceback__)}
        return {"id": rid, "ok": True, "functions": functions}
    if op == "call":
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
    if op == "reset":
        reset(request["dir"])
        return {"id": rid, "ok": True}
    return {"id": rid, "ok": False, "error": {"type": "ProtocolError", "message": "unknown op %r" % (op,), "traceback": ""}}


def remove_own_dir():
    """The parent is gone (it would have killed us otherwise): nobody else will remove the run dir."""
    directory = os.getcwd()
    if os.path.basename(directory).startswith("coderun-"):
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


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
        try:
            response = handle(request)
        except Interrupted as error:
            response = {"id": request.get("id"), "ok": False, "error": describe(error)}
        try:
            send(response)
        except MemoryError:
            send({"id": request.get("id"), "ok": False, "error": describe(MemoryError())})


if __name__ == "__main__":
    start(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    main()
