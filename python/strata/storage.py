"""Storages as Python objects: :class:`strata.UntypedStorage` (the bytes, in the native
module) and :class:`TypedStorage`, the typed view of them that ``Tensor.storage()``
returns, as PyTorch's ``torch.storage`` has them.

A ``TypedStorage`` is an ``UntypedStorage`` plus a dtype: indexing reads and writes whole
elements, ``len`` counts elements, and the shared-memory handles count elements where
PyTorch's do (``_share_filename_cpu_()`` returns the size in elements). PyTorch has
deprecated ``TypedStorage`` in favour of ``UntypedStorage``; strata keeps it for code (and
write-ups) that print ``t.storage()`` or rebuild a tensor from a typed handle, and warns
once per process as PyTorch does.
"""

from __future__ import annotations

import warnings

from . import _strata

UntypedStorage = _strata.UntypedStorage

_DEPRECATION = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be "
    "the only storage class. This should only matter to you if you are using storages "
    "directly.  To access UntypedStorage directly, use tensor.untyped_storage() instead of "
    "tensor.storage()"
)
_warned = False


def _warn_typed_storage_removal(stacklevel: int = 3) -> None:
    """PyTorch's deprecation warning for typed storages, once per process."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(_DEPRECATION, UserWarning, stacklevel=stacklevel)


def _dtype(d):
    """A strata dtype from a dtype or its name; float32 when ``None``."""
    import strata

    if d is None:
        return strata.float32
    if isinstance(d, str):
        return getattr(strata, d.removeprefix("strata."))
    return d


class TypedStorage:
    """The bytes of an :class:`UntypedStorage` read as elements of one dtype (PyTorch's
    ``torch.TypedStorage``). ``TypedStorage(n, dtype=...)`` makes ``n`` zeroed elements,
    ``TypedStorage(sequence, dtype=...)`` holds the values, and
    ``TypedStorage(wrap_storage=untyped, dtype=...)`` views existing bytes."""

    is_sparse = False

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        dtype = _dtype(dtype if dtype is not None else getattr(type(self), "_default_dtype", None))
        if wrap_storage is not None:
            if args:
                raise TypeError("TypedStorage(): wrap_storage= takes no positional arguments")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(
                    f"TypedStorage(): expected wrap_storage to be an UntypedStorage, got "
                    f"{type(wrap_storage).__name__}"
                )
            if device is not None and str(device) != wrap_storage.device:
                raise ValueError(
                    f"TypedStorage(): device={device} but the storage is on {wrap_storage.device}"
                )
            untyped = wrap_storage
        elif not args:
            untyped = UntypedStorage(0, device=device)
        elif len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool):
            n = args[0]
            if n < 0:
                raise ValueError(f"TypedStorage(): size must be non-negative, got {n}")
            untyped = UntypedStorage(n * dtype.itemsize, device=device)
        elif len(args) == 1:
            import strata

            t = strata.tensor(args[0], dtype=dtype)
            if t.ndim != 1:
                raise ValueError(
                    f"TypedStorage(): expected a flat sequence of values, got shape {tuple(t.shape)}"
                )
            if device is not None:
                t = t.to(device)
            untyped = t.untyped_storage()
        else:
            raise TypeError(f"TypedStorage() takes at most one positional argument ({len(args)} given)")
        self._untyped_storage = untyped
        self.dtype = dtype

    @classmethod
    def _wrap(cls, untyped, dtype) -> "TypedStorage":
        return cls(wrap_storage=untyped, dtype=dtype, _internal=True)

    def _tensor(self):
        """The whole storage as a 1-D tensor of the dtype, sharing it."""
        return self._untyped_storage._as_tensor(self.dtype)

    # ----- what it is
    @property
    def device(self) -> str:
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped_storage.is_cuda

    def untyped(self) -> UntypedStorage:
        """The bytes, as an :class:`UntypedStorage` (the same storage, not a copy)."""
        return self._untyped_storage

    def size(self) -> int:
        """The number of elements."""
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def is_pinned(self) -> bool:
        return self._untyped_storage.is_pinned()

    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def share_memory_(self) -> "TypedStorage":
        self._untyped_storage.share_memory_()
        return self

    # ----- elements
    def _check_index(self, idx) -> int:
        n = self.size()
        i = idx.__index__()
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for storage of size {n}")
        return i % n if n else i

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._tensor()[self._check_index(idx)].item()

    def __setitem__(self, idx, value) -> None:
        t = self._tensor()
        if isinstance(idx, slice):
            t[idx] = value
        else:
            t[self._check_index(idx)] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list:
        return self._tensor().tolist()

    def fill_(self, value) -> "TypedStorage":
        self._tensor().fill_(value)
        return self

    def copy_(self, source, non_blocking: bool = False) -> "TypedStorage":
        src = source._untyped_storage if isinstance(source, TypedStorage) else source
        if isinstance(source, TypedStorage) and source.dtype != self.dtype:
            # Element by element, converting, as PyTorch's typed copy does.
            if source.size() != self.size():
                raise ValueError(
                    f"copy_(): size mismatch: this storage has {self.size()} elements, "
                    f"the source {source.size()}"
                )
            self._tensor().copy_(source._tensor())
            return self
        self._untyped_storage.copy_(src, non_blocking)
        return self

    def clone(self) -> "TypedStorage":
        return self._wrap(self._untyped_storage.clone(), self.dtype)

    def cpu(self) -> "TypedStorage":
        if self.device == "cpu":
            return self
        return self._wrap(self._untyped_storage.cpu(), self.dtype)

    def resize_(self, size: int) -> None:
        self._untyped_storage.resize_(size * self.dtype.itemsize)

    def __repr__(self) -> str:
        info = (
            f"[strata.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
            f"of size {len(self)}]"
        )
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + info

    __str__ = __repr__

    def __reduce__(self):
        return (_rebuild_typed, (self._untyped_storage, str(self.dtype)))

    # ----- files and buffers
    @classmethod
    def from_buffer(cls, buffer, byte_order: str = "native", count: int = -1, offset: int = 0,
                    dtype=None) -> "TypedStorage":
        """A typed storage holding a copy of ``count`` elements (all when -1) of ``buffer``
        from byte ``offset``, converted from ``byte_order`` to native order."""
        d = _dtype(dtype if dtype is not None else getattr(cls, "_default_dtype", None))
        u = UntypedStorage.from_buffer(buffer, byte_order, count, offset, dtype=d)
        return cls._wrap(u, d)

    @classmethod
    def from_file(cls, filename, shared: bool = False, size: int = 0, *, dtype=None) -> "TypedStorage":
        """``size`` elements over the file ``filename`` (see ``UntypedStorage.from_file``)."""
        d = _dtype(dtype if dtype is not None else getattr(cls, "_default_dtype", None))
        return cls._wrap(UntypedStorage.from_file(filename, shared, size * d.itemsize), d)

    # ----- hand-made handles (PyTorch's private spellings; sizes in elements)
    def _share_filename_cpu_(self):
        """``(manager, name, size)``: the handle ``_new_shared_filename_cpu`` reopens in
        another process, size in elements (see ``UntypedStorage.share_filename``)."""
        manager, name, nbytes = self._untyped_storage._share_filename_cpu_()
        return manager, name, nbytes // self.dtype.itemsize

    _share_filename_ = _share_filename_cpu_

    @classmethod
    def _new_shared_filename_cpu(cls, manager, obj, size, *, device=None, dtype=None) -> "TypedStorage":
        d = _dtype(dtype if dtype is not None else getattr(cls, "_default_dtype", None))
        u = UntypedStorage._new_shared_filename_cpu(manager, obj, size * d.itemsize)
        return cls._wrap(u, d)

    _new_shared_filename = _new_shared_filename_cpu

    def _share_fd_cpu_(self):
        """``(fd, size)``: a new fd of the storage's memfd, owned by the caller, and the
        size in elements (see ``UntypedStorage.share_fd``)."""
        fd, nbytes = self._untyped_storage._share_fd_cpu_()
        return fd, nbytes // self.dtype.itemsize

    _share_fd_ = _share_fd_cpu_

    @classmethod
    def _new_shared_fd_cpu(cls, fd, size, *, device=None, dtype=None) -> "TypedStorage":
        d = _dtype(dtype if dtype is not None else getattr(cls, "_default_dtype", None))
        return cls._wrap(UntypedStorage._new_shared_fd_cpu(fd, size * d.itemsize), d)

    _new_shared_fd = _new_shared_fd_cpu


def _typed_storage_of(untyped, dtype) -> TypedStorage:
    """``Tensor.storage()``: the tensor's storage typed as its dtype, with PyTorch's
    deprecation warning (once)."""
    _warn_typed_storage_removal(stacklevel=3)
    return TypedStorage._wrap(untyped, dtype)


def _rebuild_untyped(t):
    """Unpickles an ``UntypedStorage`` from the byte tensor it was pickled as."""
    return t.untyped_storage()


def _rebuild_typed(untyped, dtype_name: str) -> TypedStorage:
    return TypedStorage._wrap(untyped, _dtype(dtype_name))
