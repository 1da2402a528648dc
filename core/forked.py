"""Parts of one job on the machine's cores: the calling process does the first part, a forked
copy of it each other part.

A fork copies everything the caller has prepared (a decoded program, its plan, loaded
libraries) without pickling it or importing anything again, and each copy has its own
interpreter, so Python-heavy work runs on several cores at once, which threads sharing the GIL
do not. Each part's result comes back pickled through a pipe, in the order of the parts.

Each process runs its BLAS (numpy's OpenBLAS) on one thread while the parts run, set by
threadpoolctl before the fork: the parts are what uses the cores, and a BLAS thread beyond
them only spins against them.

A part that raises raises the same exception in the caller (an XnpuError with its message,
MemoryError, KeyboardInterrupt), after the other parts have stopped: the caller kills and
reaps every child before it returns or raises, so none outlives the call. A child that dies
without its result (killed, out of memory) is an XnpuError naming how it ended. Ctrl-C reaches
the whole process group: the children end quietly and the caller raises KeyboardInterrupt.

`cores()` is how many parts the machine can run at once: the CPUs this process may run on, or
what the XNPU_WORKERS environment variable says (1: everything in the calling process);
`forced_workers()` is that variable alone, which a caller that decides by its own rule how many
parts pay obeys instead of its rule.
"""

from __future__ import annotations

import os
import pickle
import signal
import traceback
from collections.abc import Callable, Sequence
from typing import TypeVar

from xnpu.core.errors import XnpuError

WORKERS_VARIABLE = "XNPU_WORKERS"

Part = TypeVar("Part")
Result = TypeVar("Result")


def forced_workers() -> int | None:
    """XNPU_WORKERS's count where it is set (1 where the platform cannot fork), else None."""
    forced = os.environ.get(WORKERS_VARIABLE, "").strip()
    if not forced:
        return None
    try:
        count = int(forced)
    except ValueError:
        raise XnpuError(f"{WORKERS_VARIABLE}={forced!r}: give a whole number of workers "
                        "(1: no other process)") from None
    if count < 1:
        raise XnpuError(f"{WORKERS_VARIABLE}={forced!r}: give at least 1 worker")
    return count if hasattr(os, "fork") else 1


def cores() -> int:
    """The CPUs this process may run on (its affinity), or XNPU_WORKERS when set; 1 where the
    platform cannot fork."""
    forced = forced_workers()
    if forced is not None:
        return forced
    if not hasattr(os, "fork"):
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def run_parts(task: Callable[[Part], Result], parts: Sequence[Part]) -> list[Result]:
    """[task(part) for part in parts], the first part in this process and each other in a
    forked child, at the same time."""
    if len(parts) <= 1:
        return [task(part) for part in parts]
    from threadpoolctl import threadpool_limits  # imported by the runs that fork

    with threadpool_limits(1, user_api="blas"):  # the parts use the cores: more BLAS threads would only wait
        return _run_parts(task, parts)


def _run_parts(task: Callable[[Part], Result], parts: Sequence[Part]) -> list[Result]:
    children: list[tuple[int, int] | None] = []  # (pid, read end of its pipe) not yet collected, or None: here
    try:
        for part in parts[1:]:
            children.append(_fork(task, part))
        results = [task(parts[0])]
        for part in parts[1:]:
            child = children.pop(0)
            results.append(task(part) if child is None else _collect(*child))
        return results
    finally:
        for pid, reader in filter(None, children):  # the call failed or was interrupted: end the rest
            os.close(reader)
            _end(pid)


def _fork(task: Callable[[Part], Result], part: Part) -> tuple[int, int] | None:
    """A child running task(part): its pid and the read end of its pipe; None where the system
    refuses another process (the caller then does the part itself)."""
    reader, writer = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:  # no memory or no process left for a copy
        os.close(reader)
        os.close(writer)
        return None
    if pid:
        os.close(writer)
        return pid, reader
    # the child: never returns into the caller's stack, never runs its exit handlers or flushes its buffers
    status = 1
    try:
        os.close(reader)
        _end_with(parent)
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: end quietly, the caller reports it
        try:
            message = pickle.dumps(("result", task(part)), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: BLE001 (every failure goes back to the caller)
            message = _failure(error)
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(message)
        status = 0
    finally:
        os._exit(status)


def _end_with(parent: int) -> None:
    """Have the kernel kill this child when its parent ends (Linux's PR_SET_PDEATHSIG), as a
    parent killed outright (SIGKILL, SIGTERM) has no chance to end it."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the child ends when it finds no one to send its result to
        return
    if os.getppid() != parent:  # the parent ended before the request
        os._exit(1)


def _failure(error: BaseException) -> bytes:
    """The child's exception, pickled as it is where it can be (XnpuError, MemoryError, ...),
    else as a RuntimeError carrying its traceback."""
    try:
        message = pickle.dumps(("error", error), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(message)
        return message
    except Exception:  # noqa: BLE001 (an exception that does not pickle)
        text = "".join(traceback.format_exception(error))
        return pickle.dumps(("error", RuntimeError(f"in a worker process:\n{text}")))


def _collect(pid: int, reader: int) -> Result:
    """The child's result, once it has sent it and ended; its exception raised here."""
    try:
        with os.fdopen(reader, "rb") as pipe:
            message = pipe.read()
        _, status = os.waitpid(pid, 0)
    except BaseException:  # interrupted while waiting
        _end(pid)
        raise
    if not message:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT:
            raise KeyboardInterrupt
        how = (f"was killed by {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
               else f"exited with status {os.waitstatus_to_exitcode(status)}")
        raise XnpuError(f"a worker process (pid {pid}) {how} before it returned its part of the run "
                        f"(out of memory? {WORKERS_VARIABLE}=1 runs everything in one process)")
    kind, value = pickle.loads(message)
    if kind == "error":
        raise value
    return value


def _end(pid: int) -> None:
    """Kill the child and reap it (it may have ended, or been reaped, already)."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
