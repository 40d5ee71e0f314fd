"""Tensors across processes: ``multiprocessing`` sends handles, not bytes.

A drop-in for the standard :mod:`multiprocessing` (as ``torch.multiprocessing`` is):
every name it exports (``Process``, ``Queue``, ``Pool``, ``get_context``,
``set_start_method``, …) is re-exported here as the very same object, beside the
sharing-strategy functions below and :func:`spawn` / :func:`start_processes`, which run a
function in N processes and fail as one (``strata/_spawn_processes.py``).

Importing :mod:`strata` registers a reducer with
``multiprocessing.reduction.ForkingPickler``, so a :class:`~strata.Tensor` put on a
``Queue``, sent through a ``Pipe`` or passed to a ``Pool`` travels as a handle to its
storage plus its view (dtype, shape, strides, offset). The storage is first moved into
shared memory in place (``share_memory_()``), so the receiver maps the very same bytes:
writes on either side are seen by the other, and the same storage received twice is one
storage.

Two strategies, as in PyTorch:

- ``"file_descriptor"`` (the default): the storage is an anonymous, sealed memfd whose fd
  travels by ``SCM_RIGHTS`` (``multiprocessing.reduction.DupFd``: the resource sharer
  after start-up, fd inheritance while a spawn/forkserver child starts). The kernel frees
  it with its last fd and mapping, so nothing can leak, even on ``SIGKILL``. A process keeps
  at most a quarter of its fd limit open for shared storages; beyond that the mapping
  alone keeps a storage alive, so holding many received tensors never runs out of fds.
- ``"file_system"``: named segments in ``/dev/shm``, for when fds cannot be passed. Each
  send makes a one-use name that the receiver unlinks on open; the sender unlinks its
  unreceived names when it exits, and names left by killed processes are swept (no daemon)
  when a process selects this strategy or calls :func:`sweep`.

What cannot move is never copied behind the user's back. A file mapped shared
(``load(..., mmap_mode='r'/'r+')``, ``from_file(shared=True)``) is already shareable: it
travels as its file (an fd and the byte range), so writes on either side reach the file and
the other process. A copy-on-write map (``mmap=True``, ``'c'``) is private memory and is
copied like any other. Memory that belongs to NumPy, a DLPack producer or a buffer export
is refused with a ``StrataValueError`` (moving it would detach the tensor from its owner);
send a ``clone()``. A ``Queue`` pickles in its feeder thread, which prints that error;
``Pipe.send`` and ``SimpleQueue.put`` raise it.

A CUDA tensor travels as a CUDA IPC handle of its allocation plus its view: the receiver
maps the same device memory (``cuIpcOpenMemHandle``), so writes on either side are seen by
the other. The sender keeps every CUDA tensor it sent alive until it exits.

As with PyTorch, the sending process must still be alive when the receiver unpickles the
tensor. Plain ``pickle`` is unaffected: it copies (protocol 5 hands contiguous bytes
out-of-band).
"""

from __future__ import annotations

import multiprocessing as _mp
import os
from multiprocessing import util as _util
from multiprocessing.reduction import DupFd as _DupFd
from multiprocessing.reduction import ForkingPickler as _ForkingPickler

from multiprocessing import *  # noqa: F401,F403 (the drop-in: every name, re-exported)

from . import _spawn_processes, _strata
from ._errors import AutogradError, StrataValueError
from ._spawn_processes import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [
    "get_sharing_strategy",
    "set_sharing_strategy",
    "get_all_sharing_strategies",
    "sweep",
    *_spawn_processes.__all__,
    *_mp.__all__,
]

_STRATEGIES = ("file_descriptor", "file_system")


def get_all_sharing_strategies() -> set[str]:
    """The strategies :func:`set_sharing_strategy` accepts."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current strategy: ``"file_descriptor"`` (default) or ``"file_system"``."""
    return _strata._shm_strategy()


def set_sharing_strategy(strategy: str) -> None:
    """Selects how tensors are shared from now on in this process (children started with
    *spawn* start with the default; set it there too). Selecting ``"file_system"`` sweeps
    ``/dev/shm`` of names left by dead processes."""
    _strata._shm_set_strategy(strategy)


def sweep() -> int:
    """Unlinks ``/dev/shm/strata-<pid>-…`` names whose process is dead; returns how many."""
    return _strata._shm_sweep()


def _with_grad(t, requires_grad: bool):
    # A tensor that required grad arrives as a leaf that does (PyTorch's rule).
    return t.requires_grad_(True) if requires_grad else t


def _rebuild_buffer(buf, dtype: str, shape: tuple, requires_grad: bool = False):
    # A flat byte buffer (a PickleBuffer of the sender's bytes, bytes, a bytearray) is
    # imported as it is, so the tensor holds its real exporter, not a memoryview in between.
    if not isinstance(buf, memoryview):
        with memoryview(buf) as mv:
            flat = mv.ndim == 1 and mv.format == "B"
        if flat:
            return _with_grad(_strata._tensor_from_bytes(buf, dtype, list(shape)), requires_grad)
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    return _with_grad(_strata._tensor_from_bytes(mv, dtype, list(shape)), requires_grad)


def _rebuild_owned(buf, dtype: str, shape: tuple, requires_grad: bool = False):
    # An in-band copy made by the pickle stream for this tensor alone: nobody else holds
    # it, so the tensor may later move into shared memory (see share_memory_).
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    t = _strata._tensor_from_bytes(mv, dtype, list(shape), owned=True)
    return _with_grad(t, requires_grad)


def _rebuild_fd(df, record: bytes, requires_grad: bool = False):
    return _with_grad(_strata._shm_import(df.detach(), record), requires_grad)


def _rebuild_name(name: str, record: bytes, requires_grad: bool = False):
    return _with_grad(_strata._shm_import_name(name, record), requires_grad)


# CUDA tensors sent to other processes: kept alive here while this process lives, so a
# receiver's mapping never outlives the memory (PyTorch's rule too: the sender must stay
# alive while receivers use the tensor).
_cuda_sent: list = []


def _rebuild_cuda(handle, device, offset, nbytes, dtype, shape, strides, storage_offset):
    return _strata._cuda_ipc_import(
        handle, device, offset, nbytes, dtype, list(shape), list(strides), storage_offset
    )


def _reduce_cuda(t):
    # The storage travels as a CUDA IPC handle; the view as shape, strides and offset.
    handle, device, offset, nbytes = _strata._cuda_ipc_export(t)
    _cuda_sent.append(t)
    view = (t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset())
    return (_rebuild_cuda, (handle, device, offset, nbytes) + view)


def _reduce_tensor(t):
    if t.requires_grad and not t.is_leaf:
        raise AutogradError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue)."
        )
    if t.is_cuda:
        return _reduce_cuda(t)
    if _strata._shm_strategy() == "file_system":
        t.share_memory_()
        try:
            name, record = _strata._shm_export_name(t)
            return (_rebuild_name, (name, record, t.requires_grad))
        except StrataValueError:
            pass  # a storage already in a memfd has no name: it travels by fd
    fd, record = _strata._shm_export(t)
    popen = _mp.context.get_spawning_popen()
    df = _DupFd(fd)
    if popen is None:
        os.close(fd)  # the resource sharer holds its own dup until the receiver takes it
    else:
        # A child being spawned inherits this very fd number: keep it open until the
        # child has started (its Popen object goes away).
        _util.Finalize(popen, os.close, (fd,))
    return (_rebuild_fd, (df, record, t.requires_grad))


def _init() -> None:
    from ._strata import Tensor

    _ForkingPickler.register(Tensor, _reduce_tensor)
    # Unreceived send names of the file_system strategy (step 4 of Note [shared memory
    # lifetime]); multiprocessing children run these finalizers at exit too.
    _util.Finalize(None, _strata._shm_unlink_pending, exitpriority=-100)


_init()
