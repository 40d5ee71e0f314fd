"""The array API's non-elementwise functions over strata's ops: data type conversion,
indexing, linear algebra, manipulation, searching, sets, sorting, statistics and utility.

Every function calls strata functions or tensor methods. Where strata has no op of the
standard's meaning the function composes strata ops; each such place is marked
``Composition:`` (candidates for the Rust core).
"""

from __future__ import annotations

import builtins
import math
from typing import NamedTuple

import strata as _st

from . import _dtypes as _d
from ._array import wrap_module
from ._elementwise import _operands

Tensor = _st.Tensor

__all__ = [
    "astype",
    "take", "take_along_axis",
    "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
    "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "argsort", "sort",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff",
]


# ----------------------------------------------------------------------------- helpers

def _check_array(x, fn: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: expected an array, got {type(x).__name__}")


def _axis(axis: builtins.int, ndim: builtins.int, fn: str) -> builtins.int:
    axis = axis.__index__()
    if not -ndim <= axis < ndim:
        raise IndexError(f"{fn}: axis {axis} is out of range for an array of {ndim} dims")
    return axis % ndim


def _axes(axis, ndim: builtins.int, fn: str) -> tuple:
    """``axis`` (None, an int or a tuple) as a tuple of non-negative dims."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(_axis(a, ndim, fn) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"{fn}: repeated axis in {axis}")
        return out
    return (_axis(axis, ndim, fn),)


def _no_axes(axis) -> builtins.bool:
    """``axis=()``: a reduction over no axis (strata, as PyTorch, reads ``()`` as all)."""
    return isinstance(axis, (tuple, list)) and len(axis) == 0


def _same_storage(a: Tensor, b: Tensor) -> builtins.bool:
    return a.untyped_storage() == b.untyped_storage()


def _common(arrays, fn: str) -> list:
    """The arrays, cast to the standard's common dtype when they differ (strata refuses
    some pairs and lets 0-d arrays be weak)."""
    arrays = list(arrays)
    for a in arrays:
        _check_array(a, fn)
    dts = {a.dtype for a in arrays}
    if len(dts) > 1:
        dt = _d.result_type(*dts)
        arrays = [a if a.dtype == dt else a.to(dt) for a in arrays]
    return arrays


def _broadcast_shapes(*shapes) -> tuple:
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -i:
                d = s[i]
                if d != 1:
                    if size not in (1, d):
                        raise ValueError(f"shapes {shapes} are not broadcast-compatible")
                    size = d
        out.append(size)
    return tuple(out)


# ------------------------------------------------------------------ data type functions

def astype(x, dtype, /, *, copy=True, device=None) -> Tensor:
    """``x`` cast to ``dtype`` (``copy=False``: ``x`` itself when nothing changes)."""
    _check_array(x, "astype")
    if not copy and dtype == x.dtype and (device is None or device == x.device):
        return x
    return x.to(dtype=dtype, device=device or x.device, copy=True)


# ------------------------------------------------------------------------------ indexing

def take(x, indices, /, *, axis=None) -> Tensor:
    _check_array(x, "take")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of more than one dim")
        axis = 0
    return x.index_select(axis, indices)


def take_along_axis(x, indices, /, *, axis=-1) -> Tensor:
    _check_array(x, "take_along_axis")
    axis = _axis(axis, x.ndim, "take_along_axis")
    # Composition: negative indices counted from the end (strata's gather refuses them).
    if not isinstance(indices, Tensor):
        indices = _st.tensor(indices)
    indices = _st.where(indices < 0, indices + x.shape[axis], indices)
    return x.take_along_dim(indices, axis)


# ------------------------------------------------------------------------ linear algebra

def matmul(x1, x2, /) -> Tensor:
    _check_array(x1, "matmul")
    _check_array(x2, "matmul")
    if x1.dtype != x2.dtype:  # strata's matmul wants one dtype
        dt = _d.result_type(x1, x2)
        x1, x2 = x1.to(dt), x2.to(dt)
    return _st.matmul(x1, x2)


def matrix_transpose(x, /) -> Tensor:
    _check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError("matrix_transpose: x must have at least two dims")
    return x.mT


def tensordot(x1, x2, /, *, axes=2) -> Tensor:
    """Sum of products over ``axes`` (an int: the last of ``x1`` with the first of ``x2``)."""
    _check_array(x1, "tensordot")
    _check_array(x2, "tensordot")
    if isinstance(axes, builtins.int):
        if axes < 0:
            raise ValueError("tensordot: axes must be non-negative")
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1, a2 = (list(a) for a in axes)
        if len(a1) != len(a2):
            raise ValueError("tensordot: both axes sequences must have one length")
    a1 = [_axis(a, x1.ndim, "tensordot") for a in a1]
    a2 = [_axis(a, x2.ndim, "tensordot") for a in a2]
    if x1.dtype != x2.dtype:
        dt = _d.result_type(x1, x2)
        x1, x2 = x1.to(dt), x2.to(dt)
    # Composition: permute the contracted dims together, reshape to matrices, matmul.
    free1 = [d for d in range(x1.ndim) if d not in a1]
    free2 = [d for d in range(x2.ndim) if d not in a2]
    # Contracted dims of size 1 broadcast against the other operand's.
    ksizes = [builtins.max(x1.shape[i], x2.shape[j]) for i, j in zip(a1, a2)]
    s1 = [x1.shape[d] for d in free1]
    s2 = [x2.shape[d] for d in free2]
    k = math.prod(ksizes)
    m1 = x1.permute(free1 + a1).broadcast_to(tuple(s1 + ksizes)).reshape(math.prod(s1), k)
    m2 = x2.permute(a2 + free2).broadcast_to(tuple(ksizes + s2)).reshape(k, math.prod(s2))
    return _st.matmul(m1, m2).reshape(tuple(s1 + s2))


def vecdot(x1, x2, /, *, axis=-1) -> Tensor:
    """The dot product of vectors along ``axis`` (after broadcasting)."""
    _check_array(x1, "vecdot")
    _check_array(x2, "vecdot")
    x1, x2 = _operands(x1, x2, "vecdot")
    dt = _d.result_type(x1, x2)
    shape = _broadcast_shapes(x1.shape, x2.shape)
    axis = _axis(axis, len(shape), "vecdot") - len(shape)  # counted from the end
    if axis < -builtins.min(x1.ndim, x2.ndim) or x1.shape[axis] != x2.shape[axis]:
        raise ValueError("vecdot: x1 and x2 must both have axis, of one size")
    # Composition: sum(conj(x1) * x2, axis) (no fused kernel).
    out = (x1.conj() * x2).sum(axis)
    return out if out.dtype == dt else out.to(dt)


# --------------------------------------------------------------------------- manipulation

def broadcast_arrays(*arrays) -> list:
    for a in arrays:
        _check_array(a, "broadcast_arrays")
    shape = _broadcast_shapes(*(a.shape for a in arrays))
    return [a.broadcast_to(shape) for a in arrays]


def broadcast_to(x, /, shape) -> Tensor:
    _check_array(x, "broadcast_to")
    return x.broadcast_to(tuple(shape))


def concat(arrays, /, *, axis=0) -> Tensor:
    arrays = _common(arrays, "concat")
    if axis is None:
        arrays = [a.reshape(-1) for a in arrays]
        axis = 0
    return _st.cat(arrays, dim=axis)


def expand_dims(x, /, axis) -> Tensor:
    _check_array(x, "expand_dims")
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(f"expand_dims: axis {axis} is out of range for {x.ndim} dims")
    return x.unsqueeze(axis)


def flip(x, /, *, axis=None) -> Tensor:
    _check_array(x, "flip")
    return x.flip(_axes(axis, x.ndim, "flip"))


def moveaxis(x, source, destination, /) -> Tensor:
    _check_array(x, "moveaxis")
    return x.movedim(source, destination)


def permute_dims(x, /, axes) -> Tensor:
    _check_array(x, "permute_dims")
    return x.permute(tuple(axes))


def repeat(x, repeats, /, *, axis=None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (NumPy's ``repeat``; the
    flattened array when ``axis`` is None)."""
    _check_array(x, "repeat")
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    axis = _axis(axis, x.ndim, "repeat")
    n = x.shape[axis]
    shape = list(x.shape)
    if not isinstance(repeats, Tensor):
        repeats = repeats.__index__()
        if repeats < 0:
            raise ValueError("repeat: repeats must be non-negative")
        # Composition: a broadcast view (..., n, repeats, ...) made contiguous.
        before, after = shape[:axis], shape[axis + 1:]
        view = x.unsqueeze(axis + 1).expand(tuple(before + [n, repeats] + after))
        return view.reshape(tuple(before + [n * repeats] + after))
    if repeats.ndim > 1:
        raise ValueError("repeat: repeats must be 0-d or 1-D")
    # Composition: source positions by searchsorted over the running total of repeats.
    ends = repeats.broadcast_to((n,)).to(_d.int64).cumsum(0)
    total = builtins.int(ends[-1]) if n else 0
    idx = _st.searchsorted(ends, _st.arange(total, device=x.device), side="right")
    return x.index_select(axis, idx)


def reshape(x, /, shape, *, copy=None) -> Tensor:
    """``x`` with ``shape`` (``copy=False``: a view or ``ValueError``)."""
    _check_array(x, "reshape")
    shape = tuple(shape)
    if copy is False:
        return x.view(shape)  # strata's ShapeError (a ValueError) when a copy is needed
    out = x.reshape(shape)
    if copy and _same_storage(out, x):
        out = out.clone()
    return out


def roll(x, /, shift, *, axis=None) -> Tensor:
    _check_array(x, "roll")
    return x.roll(shift, axis)


def squeeze(x, /, axis) -> Tensor:
    _check_array(x, "squeeze")
    axes = _axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    return x.squeeze(axes)


def stack(arrays, /, *, axis=0) -> Tensor:
    return _st.stack(_common(arrays, "stack"), dim=axis)


def tile(x, repetitions, /) -> Tensor:
    _check_array(x, "tile")
    return x.tile(tuple(repetitions))


def unstack(x, /, *, axis=0) -> tuple:
    _check_array(x, "unstack")
    return tuple(x.unbind(axis))


# ----------------------------------------------------------------------------- searching

def argmax(x, /, *, axis=None, keepdims=False) -> Tensor:
    _check_array(x, "argmax")
    return x.argmax(axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False) -> Tensor:
    _check_array(x, "argmin")
    return x.argmin(axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False) -> Tensor:
    """The number of non-zero elements (NaN counts) over ``axis``."""
    _check_array(x, "count_nonzero")
    # Composition: sum(x != 0).
    nz = x if x.dtype == _d.bool else x.ne(0)
    if _no_axes(axis):
        return nz.to(_d.DEFAULT_INDEX)
    out = nz.sum(axis, keepdims)
    return out if out.dtype == _d.DEFAULT_INDEX else out.to(_d.DEFAULT_INDEX)


def nonzero(x, /) -> tuple:
    _check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one dim")
    return tuple(x.nonzero(as_tuple=True))


def searchsorted(x1, x2, /, *, side="left", sorter=None) -> Tensor:
    _check_array(x1, "searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    x1, x2 = _operands(x1, x2, "searchsorted")
    if isinstance(x2, Tensor) and x1.dtype != x2.dtype:
        dt = _d.result_type(x1, x2)
        x1, x2 = x1.to(dt), x2.to(dt)
    return _st.searchsorted(x1, x2, side=side, sorter=sorter)


def where(condition, x1, x2, /) -> Tensor:
    _check_array(condition, "where")
    x1, x2 = _operands(x1, x2, "where")
    return _st.where(condition, x1, x2)


# ---------------------------------------------------------------------------------- sets

class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _unique(flat, **kw):
    """``flat.unique(sorted=True, **kw)``; a complex array (which strata cannot sort) as
    the unique rows of its ``(re, im)`` pairs, ordered by real then imaginary part as
    NumPy orders complex values."""
    if not flat.is_complex():
        return flat.unique(sorted=True, **kw)
    # Composition: unique rows of the real pairs, back to complex.
    out = flat.view_as_real().unique(sorted=True, dim=0, **kw)
    if not isinstance(out, tuple):
        return out.contiguous().view_as_complex()
    return (out[0].contiguous().view_as_complex(), *out[1:])


def unique_all(x, /) -> UniqueAllResult:
    """The distinct values (each NaN distinct), the first index of each in the flattened
    ``x``, the inverse (``x``'s shape) and the counts."""
    _check_array(x, "unique_all")
    flat = x.reshape(-1)
    values, inverse, counts = _unique(flat, return_inverse=True, return_counts=True)
    # Composition: the first occurrence of each value is the first position of its group
    # in a stable sort of the inverse.
    order = inverse.argsort(stable=True)
    starts = _st.cumulative_sum(counts, dim=0, include_initial=True)[:-1]
    indices = order.index_select(0, starts)
    return UniqueAllResult(values, indices, inverse.reshape(x.shape), counts)


def unique_counts(x, /) -> UniqueCountsResult:
    _check_array(x, "unique_counts")
    values, counts = _unique(x.reshape(-1), return_counts=True)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /) -> UniqueInverseResult:
    _check_array(x, "unique_inverse")
    values, inverse = _unique(x.reshape(-1), return_inverse=True)
    return UniqueInverseResult(values, inverse.reshape(x.shape))


def unique_values(x, /) -> Tensor:
    _check_array(x, "unique_values")
    return _unique(x.reshape(-1))


# ------------------------------------------------------------------------------- sorting

def argsort(x, /, *, axis=-1, descending=False, stable=True) -> Tensor:
    _check_array(x, "argsort")
    return x.argsort(axis, descending, stable)


def sort(x, /, *, axis=-1, descending=False, stable=True) -> Tensor:
    _check_array(x, "sort")
    return x.sort(axis, descending, stable).values


# ---------------------------------------------------------------------------- statistics

def _sum_dtype(dt, dtype):
    """The standard's result dtype of sum/prod/cumulative_*: small integers widen to the
    default integer dtype (unsigned ones to uint64)."""
    if dtype is not None:
        return dtype
    if dt == _d.bool or dt in _d._SIGNED:
        return _d.DEFAULT_INT
    if dt in _d._UNSIGNED:
        return _d.uint64
    return dt


def _accumulate(x, axis, dtype, keepdims, method: str, fn: str) -> Tensor:
    _check_array(x, fn)
    out_dt = _sum_dtype(x.dtype, dtype)
    if out_dt != x.dtype and out_dt in _d._FLOATS:
        x = x.to(out_dt)
    if _no_axes(axis):
        return x.to(out_dt, copy=True)
    axes = _axes(axis, x.ndim, fn)
    # strata sums integers in int64; the cast to a narrower (or unsigned) dtype wraps as
    # the narrower accumulation would.
    out = getattr(x, method)(axes if axis is not None else None, keepdims)
    return out if out.dtype == out_dt else out.to(out_dt)


def sum(x, /, *, axis=None, dtype=None, keepdims=False) -> Tensor:  # noqa: A001
    return _accumulate(x, axis, dtype, keepdims, "sum", "sum")


def prod(x, /, *, axis=None, dtype=None, keepdims=False) -> Tensor:
    return _accumulate(x, axis, dtype, keepdims, "prod", "prod")


def _reduce(x, axis, keepdims, method: str, fn: str, empty_axes) -> Tensor:
    _check_array(x, fn)
    if _no_axes(axis):
        return empty_axes(x)
    axes = _axes(axis, x.ndim, fn)
    return getattr(x, method)(axes if axis is not None else None, keepdims)


def max(x, /, *, axis=None, keepdims=False) -> Tensor:  # noqa: A001
    return _reduce(x, axis, keepdims, "amax", "max", Tensor.clone)


def min(x, /, *, axis=None, keepdims=False) -> Tensor:  # noqa: A001
    return _reduce(x, axis, keepdims, "amin", "min", Tensor.clone)


def mean(x, /, *, axis=None, keepdims=False) -> Tensor:
    return _reduce(x, axis, keepdims, "mean", "mean", Tensor.clone)


def _spread(x, axis, correction, keepdims, method: str) -> Tensor:
    _check_array(x, method)
    if _no_axes(axis):
        # One sample per element: 0 / max(1 - correction, 0), NaN when that is 0 / 0.
        return _st.full_like(x, math.nan) if correction >= 1 else _st.zeros_like(x)
    axes = _axes(axis, x.ndim, method)
    dims = axes if axis is not None else None
    return getattr(x, method)(dims, correction=correction, keepdim=keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False) -> Tensor:
    return _spread(x, axis, correction, keepdims, "var")


def std(x, /, *, axis=None, correction=0.0, keepdims=False) -> Tensor:
    return _spread(x, axis, correction, keepdims, "std")


def _cumulative_axis(x, axis, fn) -> builtins.int:
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{fn}: axis is required for arrays of other than one dim")
        return 0
    return _axis(axis, x.ndim, fn)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) -> Tensor:
    _check_array(x, "cumulative_sum")
    axis = _cumulative_axis(x, axis, "cumulative_sum")
    out_dt = _sum_dtype(x.dtype, dtype)
    if out_dt != x.dtype and out_dt in _d._FLOATS:
        x = x.to(out_dt)
    out = _st.cumulative_sum(x, dim=axis, include_initial=include_initial)
    return out if out.dtype == out_dt else out.to(out_dt)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False) -> Tensor:
    _check_array(x, "cumulative_prod")
    axis = _cumulative_axis(x, axis, "cumulative_prod")
    out_dt = _sum_dtype(x.dtype, dtype)
    if out_dt != x.dtype and out_dt in _d._FLOATS:
        x = x.to(out_dt)
    out = x.cumprod(axis)
    if out.dtype != out_dt:
        out = out.to(out_dt)
    if include_initial:
        # Composition: a leading slice of ones (the multiplicative identity).
        shape = list(out.shape)
        shape[axis] = 1
        out = _st.cat([_st.ones(tuple(shape), dtype=out_dt, device=x.device), out], dim=axis)
    return out


# ------------------------------------------------------------------------------- utility

def _truth(x, axis, keepdims, method: str) -> Tensor:
    _check_array(x, method)
    if _no_axes(axis):
        return x.to(_d.bool, copy=True)
    axes = _axes(axis, x.ndim, method)
    out = getattr(x, method)(axes if axis is not None else None, keepdims)
    # strata (as PyTorch) keeps uint8 for uint8 input; the standard wants bool.
    return out if out.dtype == _d.bool else out.to(_d.bool)


def all(x, /, *, axis=None, keepdims=False) -> Tensor:  # noqa: A001
    return _truth(x, axis, keepdims, "all")


def any(x, /, *, axis=None, keepdims=False) -> Tensor:  # noqa: A001
    return _truth(x, axis, keepdims, "any")


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None) -> Tensor:
    _check_array(x, "diff")
    return x.diff(n, axis, prepend, append)

wrap_module(globals(), __all__)
