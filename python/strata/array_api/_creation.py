"""Creation functions of the array API standard, over strata's constructors."""

from __future__ import annotations

import builtins
import math

import strata as _st

from . import _dtypes as _d
from ._array import wrap_module
from ._info import _check_device

Tensor = _st.Tensor

__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
]


def _shape(shape) -> tuple:
    if isinstance(shape, builtins.int) or hasattr(shape, "__index__"):
        return (shape.__index__(),)
    return tuple(s.__index__() for s in shape)


def asarray(obj, /, *, dtype=None, device=None, copy=None) -> Tensor:
    """``obj`` as a strata array: arrays, buffer-protocol / DLPack objects, Python scalars
    and nested sequences. ``copy=True`` always copies, ``copy=False`` never does (and
    raises ``ValueError`` when it would have to), ``None`` copies only when needed."""
    _check_device(device)
    if isinstance(obj, Tensor):
        same = (dtype is None or dtype == obj.dtype) and (device is None or device == obj.device)
        if same and not copy:
            return obj
        if copy is False:
            raise ValueError("asarray(copy=False): changing the dtype or device needs a copy")
        return obj.to(dtype=dtype or obj.dtype, device=device or obj.device, copy=True)
    if isinstance(obj, (builtins.bool, builtins.int, builtins.float, builtins.complex, list, tuple)):
        if copy is False:
            raise ValueError("asarray(copy=False): Python scalars and sequences need a copy")
        if dtype is None:
            dtype = _infer_dtype(obj)
        return _st.tensor(obj, dtype=dtype, device=device)
    # A buffer-protocol or DLPack producer (a NumPy array, a memoryview, ...): shared.
    if copy is True:
        return _st.tensor(obj, dtype=dtype, device=device)
    out = _st.as_tensor(obj)
    if (dtype or out.dtype) != out.dtype or (device or out.device) != out.device:
        if copy is False:
            raise ValueError("asarray(copy=False): changing the dtype or device needs a copy")
        out = out.to(dtype=dtype or out.dtype, device=device or out.device)
    return out


def _infer_dtype(obj):
    """The standard's default dtype of a Python scalar or a nested sequence (of Python
    scalars and 0-d arrays): bool, else the default integer dtype, else the default real
    floating dtype; arrays in the sequence promote with the scalars as weak operands."""
    arrays, scalars = [], []

    def walk(o):
        if isinstance(o, Tensor):
            arrays.append(o.dtype)
        elif isinstance(o, (list, tuple)):
            for e in o:
                walk(e)
        else:
            scalars.append(o)

    walk(obj)
    if arrays:
        return _d.result_type(*arrays, *scalars)
    if builtins.any(isinstance(s, builtins.complex) for s in scalars):
        return _d.DEFAULT_COMPLEX
    if builtins.any(isinstance(s, builtins.float) for s in scalars):
        return _d.DEFAULT_FLOAT
    if not builtins.all(isinstance(s, builtins.bool) for s in scalars):
        return _d.DEFAULT_INT
    if scalars:
        return _d.bool
    return None  # an empty sequence: strata's default (float32)


def _arange_len(start, stop, step) -> builtins.int:
    return builtins.max(0, math.ceil((stop - start) / step))


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Tensor:
    """``[start, stop)`` by ``step`` (``arange(n)`` is ``[0, n)``); empty when the range
    does not run in ``step``'s direction."""
    _check_device(device)
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if dtype is None:
        isfloat = builtins.any(isinstance(v, builtins.float) for v in (start, stop, step))
        dtype = _d.DEFAULT_FLOAT if isfloat else _d.DEFAULT_INT
    # Composition: the length computed here, so that a range running against step's
    # direction is empty (strata's arange raises there, as PyTorch's does).
    if _arange_len(start, stop, step) == 0:
        return _st.empty((0,), dtype=dtype, device=device)
    return _st.arange(start, stop, step, dtype=dtype, device=device)


def empty(shape, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    return _st.empty(_shape(shape), dtype=dtype or _d.DEFAULT_FLOAT, device=device)


def zeros(shape, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    return _st.zeros(_shape(shape), dtype=dtype or _d.DEFAULT_FLOAT, device=device)


def ones(shape, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    return _st.ones(_shape(shape), dtype=dtype or _d.DEFAULT_FLOAT, device=device)


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = _infer_dtype(fill_value)
    return _st.full(_shape(shape), fill_value, dtype=dtype, device=device)


def empty_like(x, /, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    return _st.empty_like(x, dtype=dtype, device=device)


def zeros_like(x, /, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    return _st.zeros_like(x, dtype=dtype, device=device)


def ones_like(x, /, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    return _st.ones_like(x, dtype=dtype, device=device)


def full_like(x, /, fill_value, *, dtype=None, device=None) -> Tensor:
    _check_device(device)
    return _st.full_like(x, fill_value, dtype=dtype, device=device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None) -> Tensor:
    """Ones on the ``k``-th diagonal (``k > 0`` above the main one)."""
    _check_device(device)
    dtype = dtype or _d.DEFAULT_FLOAT
    if n_cols is None:
        n_cols = n_rows
    if k == 0:
        return _st.eye(n_rows, n_cols, dtype=dtype, device=device)
    if not -n_rows < k < n_cols:
        return _st.zeros((n_rows, n_cols), dtype=dtype, device=device)
    # Composition: (col - row == k) for the other diagonals.
    rows = _st.arange(n_rows, device=device).reshape(n_rows, 1)
    cols = _st.arange(n_cols, device=device).reshape(1, n_cols)
    return _st.eq(cols - rows, k).to(dtype)


def from_dlpack(x, /, *, device=None, copy=None) -> Tensor:
    return _st.from_dlpack(x, device=device, copy=copy)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (left out with
    ``endpoint=False``)."""
    _check_device(device)
    cplx = isinstance(start, builtins.complex) or isinstance(stop, builtins.complex)
    dtype = dtype or (_d.DEFAULT_COMPLEX if cplx else _d.DEFAULT_FLOAT)
    if _d._kind(dtype) == "c":
        # Composition: the real and imaginary parts spaced on their own.
        part = _d.float64 if dtype == _d.complex128 else _d.float32
        start, stop = builtins.complex(start), builtins.complex(stop)
        re = linspace(start.real, stop.real, num, dtype=part, device=device, endpoint=endpoint)
        im = linspace(start.imag, stop.imag, num, dtype=part, device=device, endpoint=endpoint)
        return _st.complex(re, im)
    if endpoint:
        return _st.linspace(start, stop, num, dtype=dtype, device=device)
    # Composition: num + 1 points with the last one dropped.
    return _st.linspace(start, stop, num + 1, dtype=dtype, device=device)[:num]


def meshgrid(*arrays, indexing="xy") -> list:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    return list(_st.meshgrid(*arrays, indexing=indexing))


def tril(x, /, *, k=0) -> Tensor:
    return x.tril(k)


def triu(x, /, *, k=0) -> Tensor:
    return x.triu(k)

wrap_module(globals(), __all__)
