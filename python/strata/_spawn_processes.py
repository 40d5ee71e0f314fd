"""``strata.multiprocessing.spawn`` / ``start_processes``: run a function in N processes
and fail as one, as ``torch.multiprocessing.spawn`` does.

Each process runs ``fn(i, *args)`` with its index ``i``. The arguments travel through
``multiprocessing``'s pickler, so tensors among them arrive as shared memory (see
:mod:`strata.multiprocessing`): writes in any process are seen by all. When one process
fails — raises, or exits with a non-zero status or a signal — the others are terminated
and the parent raises :class:`ProcessRaisedException` (with the child's traceback) or
:class:`ProcessExitedException` (with its exit code and signal name).
"""

from __future__ import annotations

import multiprocessing as _mp
import multiprocessing.connection as _connection
import signal
import sys
import time
import traceback
import warnings

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "spawn",
    "start_processes",
]


class ProcessException(Exception):
    """A process started by :func:`start_processes` failed."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The process raised an exception; the message carries its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero status, or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _run(fn, i: int, args: tuple, errors) -> None:
    # The child's entry point: a failure is reported to the parent as text (the
    # exception itself may not pickle), then the process exits with status 1.
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is tearing everything down
    except Exception:
        errors.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call, to be joined."""

    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues
        self._sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Waits (up to ``timeout`` seconds, for ever if ``None``) for a process to end.
        Returns ``True`` once all have ended successfully, ``False`` while some still run;
        raises when one failed, after terminating the others."""
        if not self._sentinels:
            return True
        ready = _connection.wait(list(self._sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self._sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self._sentinels
        self._terminate_others()
        self._raise(failed)
        return False  # not reached

    def _terminate_others(self) -> None:
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + 30
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join()

    def _raise(self, i: int) -> None:
        p = self.processes[i]
        queue = self.error_queues[i]
        if not queue.empty():
            tb = queue.get()
            msg = f"\n\n-- Process {i} terminated with the following error:\n{tb}"
            raise ProcessRaisedException(msg, i, p.pid)
        code = p.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            raise ProcessExitedException(
                f"process {i} terminated with signal {name}", i, p.pid, code, name)
        raise ProcessExitedException(
            f"process {i} terminated with exit code {code}", i, p.pid, code)


def start_processes(fn, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"):
    """Starts ``nprocs`` processes of ``start_method`` running ``fn(i, *args)``; joins them
    all (``join=True``, returns ``None``) or returns their :class:`ProcessContext`."""
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"start_processes: nprocs must be a positive int, got {nprocs!r}")
    ctx = _mp.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_run, args=(fn, i, tuple(args), q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """:func:`start_processes` with the *spawn* start method (another ``start_method``
    is ignored with a ``FutureWarning``, as in PyTorch: use :func:`start_processes`)."""
    if start_method != "spawn":
        warnings.warn(
            f"spawn only supports start_method='spawn' (got {start_method!r}); use "
            "strata.multiprocessing.start_processes for another start method",
            FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
