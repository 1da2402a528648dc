"""The lit suite's tool runs as forked children of one server that imported the tools once.

Nearly all of a lit case's cost was the start of each `xnpu-opt` process (an interpreter
importing xDSL and defining xnpu's dialects, ~0.75 s of CPU against a few ms of the case's own
work), and of each `filecheck` (~0.15 s). lit.cfg starts `serve` once per lit run; each RUN
line's tool is `client` (a bare interpreter, ~15 ms), which hands the server its arguments,
working directory, environment and its stdin, stdout and stderr (the descriptors themselves:
pipes between the commands of a RUN line stay pipes). The server forks a child per run, which
runs the tool's `main` on those streams as its console script would (tools/fuzz.py
`exit_status_of`), and the client exits with the child's status (or dies of its signal).
Each child starts from the server as it was after the imports: no run sees another's state.

Where the server cannot be reached, the client runs the installed command itself; set
XNPU_LIT_PROCESSES=1 to have lit run the installed commands throughout (test_tools.py and
test_security.py run them as processes too).

    python forked_tools.py serve SOCKET          # lit.cfg does this
    python -I -S forked_tools.py client COMMAND [ARGS...]   # what a RUN line's tool becomes
"""

import json
import os
import socket
import sys

SOCKET_VARIABLE = "XNPU_TOOL_SERVER"


def client(command: str, args: list[str]) -> None:
    """Run `command args` through the server; the real command where there is none."""
    path = os.environ.get(SOCKET_VARIABLE)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path or "")
    except OSError:
        connection.close()
        os.execv(command, [command, *args])
    request = json.dumps({"tool": os.path.basename(command), "argv": [command, *args], "cwd": os.getcwd(),
                          "env": dict(os.environ)}).encode()
    try:
        socket.send_fds(connection, [request], [0, 1, 2])
        connection.shutdown(socket.SHUT_WR)
    except OSError:  # a stream that cannot be passed (closed): the command itself
        connection.close()
        os.execv(command, [command, *args])
    reply = b""
    while chunk := connection.recv(64):
        reply += chunk
    if not reply:
        sys.exit(f"{os.path.basename(command)}: error: the lit tool server ended before the run (forked_tools.py)")
    status = int(reply)
    if status < 0:  # killed by a signal: die of it too, so that lit sees the crash
        os.kill(os.getpid(), -status)
    sys.exit(status)


def serve(path: str) -> None:
    """Accept runs on the socket at `path` until lit (the parent) is gone."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)  # clients queue here while the imports below run
    from xnpu.tools.fuzz import exit_status_of, tool_mains

    mains = tool_mains()
    try:
        from filecheck.main import main as filecheck_main

        mains["filecheck"] = lambda args: filecheck_main()
    except ImportError:  # lit.cfg refuses to run without it
        pass
    preload()
    parent = os.getppid()
    listener.settimeout(1.0)
    while os.getppid() == parent:
        try:
            connection, _ = listener.accept()
        except socket.timeout:
            reap()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            try:
                connection.settimeout(None)
                handle(connection, mains, exit_status_of)
            finally:
                os._exit(0)
        connection.close()
        reap()


def handle(connection: socket.socket, mains: dict, exit_status_of) -> None:
    """One run: fork the tool's child on the client's streams, wait, send its status."""
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while chunk := connection.recv(1 << 16):
        data += chunk
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:
        connection.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        bind_streams()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        os._exit(exit_status_of(mains[request["tool"]], sys.argv[1:]))
    for fd in fds:  # the pipes' ends are the child's alone: a reader sees its writer's end
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    connection.sendall(str(os.waitstatus_to_exitcode(status)).encode())


def bind_streams() -> None:
    """sys.stdin, stdout and stderr on descriptors 0-2 as an interpreter's start makes them
    (the server's were made for its own: a stream made on /dev/null believes it can seek)."""
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        # stderr is line-buffered; stdin and stdout only on a terminal (open's own rule)
        stream = open(fd, "r" if fd == 0 else "w", buffering=1 if fd == 2 else -1, encoding=old.encoding,
                      errors=old.errors, closefd=False)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def preload() -> None:
    """Import what the lit cases' runs import (every dialect and pass), once for all of them."""
    from xnpu.driver.registry import all_passes
    from xnpu.ir.context import make_context

    context = make_context()
    for name in context.registered_dialect_names:
        context.get_optional_dialect(name)
    for factory in all_passes().values():
        factory()


def reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        client(sys.argv[2], sys.argv[3:])
