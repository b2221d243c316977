"""Kernels forked from one process that has already imported what every chapter imports.

    python tools/forked_kernels.py serve SOCKET        # the server: imports, then forks on request
    python tools/forked_kernels.py connect SOCKET -f CONNECTION_FILE   # what jupyter_client launches

Why: a chapter's fresh kernel spends about 1 s starting and 2–5 s importing torch,
transformers' tokenizer, scikit-learn, pyplot and ctxlib before its first line of work, 22 times
in the book. A one-cell notebook making those imports took 6.25 s in a fresh kernel and 0.54 s
in a forked one; every chapter, with every model cached, executed in 164 s fresh and 123 s
forked (2026-12-06, two kernels at a time). The server pays the imports once; each kernel is a
``fork`` of it, in which nothing has run yet but the imports. ``tools/execute_chapters.py`` uses
it for the book build; a reader's kernel (Binder, Colab, JupyterLab) and
``bench/chapter_memory.py`` start the usual way, so the chapter budget is still measured on a
fresh kernel.

What differs from a fresh kernel: the interpreter's string-hash seed (one for the whole server,
where each fresh process draws its own) and NumPy's global random state before a page seeds it
(Python's ``random`` is reseeded at every fork); and ``tqdm.auto``, which transformers imports in
the server, chose tqdm's text bar there, where a fresh kernel's transformers gets the notebook
widget (ctxlib's own bars are ``tqdm.std``'s text bars either way). No chapter depends on any of
these: every chapter executed in fresh kernels and in forked ones, and forked under
``PYTHONHASHSEED=1`` and ``=2``, gave the same outputs but for timings, memory and bertviz's
random element ids (2026-12-06; the one that differed, a count printed in a set's order on page
5.1, now prints in order of frequency). ``tests/test_forked_kernels.py`` checks that a forked
kernel computes what a fresh one does.

``connect`` is the process jupyter_client starts and watches as the kernel. It hands the server
its connection file, working directory, environment and standard streams (``SCM_RIGHTS``), passes
on the signals jupyter_client sends (an interrupt), and exits when the forked kernel does. The
kernel exits when its ``connect`` does (it watches that process's socket), and ``connect`` ends
the kernel when the process that started it is gone, as a fresh kernel's parent poller would.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pkgutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator, Sequence
from typing import NoReturn

# What the server imports before it forks: everything the chapters' setup cells import, and the
# kernel itself. The inline backend is what ipykernel would select (kernelapp: MPLBACKEND), set
# before matplotlib reads it.
PRELOAD = ("torch", "transformers", "sklearn.metrics", "matplotlib.pyplot", "ipywidgets", "ipykernel.kernelapp")
# Every ctxlib module is imported too, but for the ONNX export (0.85 s of onnx), which only the
# Sphinx build's browser model uses.
NOT_PRELOADED = ("ctxlib.models.onnx_export",)
# How often connect checks that the process which started it is still there (seconds).
PARENT_POLL = 1.0


def _send(sock: socket.socket, message: dict, fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode() + b"\n"
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.sendall(data)


def _receive(sock: socket.socket, fds: int = 0) -> tuple[dict, list[int]]:
    data, received, _, _ = socket.recv_fds(sock, 1 << 20, fds)
    while not data.endswith(b"\n"):
        more = sock.recv(1 << 20)
        if not more:
            raise ConnectionError("the other side closed the socket mid-message")
        data += more
    return json.loads(data), received


def _preload() -> None:
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in PRELOAD:
        importlib.import_module(name)
    import ctxlib
    for module in pkgutil.walk_packages(ctxlib.__path__, "ctxlib."):
        if module.name not in NOT_PRELOADED:
            importlib.import_module(module.name)


def _become_kernel(conn: socket.socket, request: dict, streams: list[int]) -> NoReturn:
    """In the forked child: take the connect process's streams, folder and environment, then run
    ipykernel as ``python -m ipykernel_launcher -f CONNECTION_FILE`` would."""
    try:
        # Its own session, as jupyter_client starts a kernel: a Ctrl-C at the build's terminal
        # reaches the build, not the kernels, which jupyter_client interrupts through connect.
        os.setsid()
        for target, fd in enumerate(streams):
            os.dup2(fd, target)
            os.close(fd)
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # Without a parent handle ipykernel prints the "Ctrl-C will not work" notice of a kernel
        # started by hand. The handle is read from JPY_PARENT_PID when ipykernel is imported (in
        # the server), so it is passed here; as that pid is not this process's parent, ipykernel's
        # poller then ends the kernel only if the server goes (its parent becomes init).
        parent = [f"--IPKernelApp.parent_handle={request['env']['JPY_PARENT_PID']}"] \
            if "JPY_PARENT_PID" in request["env"] else []
        sys.argv = ["ipykernel_launcher", *request["argv"], *parent]
        sys.path[:] = request["path"]
        threading.Thread(target=_exit_with, args=(conn,), daemon=True).start()
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)


def _exit_with(conn: socket.socket) -> NoReturn:
    """End this kernel when its connect process is gone (its socket closes or breaks)."""
    try:
        while conn.recv(1):
            pass
    finally:
        os._exit(1)


def serve(path: str) -> None:
    """Import ``PRELOAD``, then fork a kernel for every ``connect`` until stopped (SIGTERM)."""
    _preload()
    path_without_tools = [entry for entry in sys.path if entry != os.path.dirname(os.path.abspath(__file__))]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    # Reap exited kernels as they end; the connect processes learn of it from their sockets.
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"forked_kernels: ready on {path}", flush=True)
    while True:
        conn, _ = server.accept()
        streams: list[int] = []
        try:
            request, streams = _receive(conn, fds=3)
            pid = os.fork()
            if pid == 0:
                server.close()
                _become_kernel(conn, {**request, "path": path_without_tools}, streams)
            _send(conn, {"pid": pid})
        except Exception:  # one failed request (its connect died, a fork failed) must not end the build's kernels
            traceback.print_exc()
        finally:
            for fd in streams:
                os.close(fd)
            conn.close()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def connect(path: str, argv: list[str]) -> int:
    """Ask the server for a kernel, forward signals to it, and return when it exits."""
    parent = os.getppid()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    _send(sock, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}, [0, 1, 2])
    pid = _receive(sock)[0]["pid"]
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, lambda signum, _: os.kill(pid, signum))
    sock.settimeout(PARENT_POLL)
    while True:
        try:
            if not sock.recv(1):
                return 0  # the kernel has exited
        except TimeoutError:
            if os.getppid() != parent:  # whoever started the kernel is gone: so goes the kernel
                os.kill(pid, signal.SIGTERM)
                return 1


@contextlib.contextmanager
def forked_kernels(env: dict[str, str]) -> Iterator[None]:
    """While the block runs, a notebook's ``python3`` kernel, started by this process or a child
    of it, is forked from a server started here with ``env`` (its threads setting, for one)."""
    with tempfile.TemporaryDirectory(prefix="ctxbook-kernels-") as folder:
        path = os.path.join(folder, "server.sock")
        spec = os.path.join(folder, "kernels", "python3")
        os.makedirs(spec)
        with open(os.path.join(spec, "kernel.json"), "w", encoding="utf-8") as file:
            json.dump({"argv": [sys.executable, os.path.abspath(__file__), "connect", path, "-f", "{connection_file}"],
                       "display_name": "Python 3 (forked)", "language": "python", "interrupt_mode": "signal"}, file)
        server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", path], env=env,
                                  stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            ready = server.stdout.readline()
            if not ready.startswith("forked_kernels: ready"):
                raise RuntimeError(f"the kernel server did not start; it said {ready!r}")
            previous = os.environ.get("JUPYTER_PATH")
            # JUPYTER_PATH comes first in jupyter_client's kernel search: this python3 wins.
            os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [folder, previous]))
            try:
                yield
            finally:
                if previous is None:
                    del os.environ["JUPYTER_PATH"]
                else:
                    os.environ["JUPYTER_PATH"] = previous
        finally:
            server.kill()
            server.wait()
            server.stdout.close()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "connect":
        sys.exit(connect(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(__doc__)
