"""``strata.cuda``: CUDA devices, memory statistics, streams and events (PyTorch's
``torch.cuda``).

The CUDA driver, NVRTC and cuBLAS are loaded at run time: on a machine without them
:func:`is_available` is ``False`` and every CUDA request (``.cuda()``, ``device="cuda"``,
``pin_memory()``, a CUDA DLPack capsule) raises :class:`strata.DeviceError` saying why.
Kernels run on the calling thread's current stream (:func:`current_stream`, changed
with ``with strata.cuda.stream(s):``) and are not waited for; copies to the host wait.
"""

from __future__ import annotations

import contextlib as _contextlib

from . import _strata

Stream = _strata.Stream
Event = _strata.Event
current_stream = _strata.current_stream

__all__ = [
    "Event",
    "Stream",
    "current_stream",
    "default_stream",
    "device_count",
    "empty_cache",
    "is_available",
    "max_memory_allocated",
    "memory_allocated",
    "memory_reserved",
    "reset_peak_memory_stats",
    "set_stream",
    "stream",
    "synchronize",
]


def is_available() -> bool:
    """True when a CUDA driver was found and reports at least one device."""
    return _strata._cuda_is_available()


def device_count() -> int:
    """The number of CUDA devices (0 without a driver)."""
    return _strata._cuda_device_count()


def synchronize(device=None) -> None:
    """Waits for all work queued on ``device`` (0 by default)."""
    _strata._cuda_synchronize(device)


def memory_allocated(device=None) -> int:
    """Bytes held by live CUDA tensors of ``device`` (allocator size classes)."""
    return _strata._cuda_memory_allocated(device)


def max_memory_allocated(device=None) -> int:
    """The peak of :func:`memory_allocated` since start or :func:`reset_peak_memory_stats`."""
    return _strata._cuda_max_memory_allocated(device)


def reset_peak_memory_stats(device=None) -> None:
    """Resets the peak :func:`max_memory_allocated` reports to the current allocation."""
    _strata._cuda_reset_peak_memory_stats(device)


def memory_reserved(device=None) -> int:
    """Bytes the caching allocator holds from the driver (live and cached blocks)."""
    return _strata._cuda_memory_reserved(device)


def empty_cache() -> None:
    """Returns every unused cached block (device and pinned host) to the driver."""
    _strata._cuda_empty_cache()


def default_stream(device=None) -> Stream:
    """The legacy default stream of ``device``."""
    d = 0 if device is None else device
    return Stream(d, stream_ptr=0)


def set_stream(s: Stream) -> None:
    """Makes ``s`` the current stream of its device on this thread."""
    _strata._cuda_set_stream(s.device_index, s.cuda_stream)


@_contextlib.contextmanager
def stream(s: Stream | None):
    """``with strata.cuda.stream(s):`` runs the block with ``s`` as the current stream
    of its device (``None``: no change)."""
    if s is None:
        yield
        return
    prev = _strata._cuda_set_stream(s.device_index, s.cuda_stream)
    try:
        yield
    finally:
        _strata._cuda_set_stream(s.device_index, prev)
