"""``strata.array_api.linalg``: the array API standard's linear algebra extension over
``strata.linalg`` (the factorisations in Rust through ``faer``, float32, float64,
complex64, complex128, batched over leading dims and read in place whatever the strides).

The standard's names and keywords (``axis``/``keepdims``, ``rtol`` that may be an array,
``solve`` whose ``x2`` is a vector only when 1-d) map onto strata's PyTorch-like
functions; the results are the standard's named tuples (``EighResult``, ``QRResult``,
``SlogdetResult``, ``SVDResult``).
"""

from __future__ import annotations

import builtins
from typing import NamedTuple

import strata as _st

from . import _dtypes as _d
from ._array import wrap_module
from ._functions import _axes, _check_array, _sum_dtype, matmul, matrix_transpose, tensordot, vecdot

Tensor = _st.Tensor

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
    "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
    "EighResult", "QRResult", "SlogdetResult", "SVDResult",
]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def _matrices(x, fn: str) -> None:
    _check_array(x, fn)
    if x.ndim < 2:
        raise ValueError(f"{fn}: x must have at least two dims, got shape {tuple(x.shape)}")


def _floating(x):
    """``x`` itself when floating-point or complex; integers and booleans are cast to the
    default floating dtype (the standard leaves them unspecified; NumPy does the same)."""
    if _d.isdtype(x.dtype, ("real floating", "complex floating")):
        return x
    return x.to(_d.DEFAULT_FLOAT)


def cholesky(x, /, *, upper=False) -> Tensor:
    _matrices(x, "cholesky")
    return _st.linalg.cholesky(_floating(x), upper=upper)


def cross(x1, x2, /, *, axis=-1) -> Tensor:
    """The cross product of 3-element vectors along ``axis`` (negative, counted from the
    end); the other dims broadcast, the compute axis does not."""
    _check_array(x1, "cross")
    _check_array(x2, "cross")
    axis = axis.__index__()
    if not -builtins.min(x1.ndim, x2.ndim) <= axis < 0:
        raise ValueError(
            f"cross: axis {axis} must be negative and within the dims of both arrays "
            f"(shapes {tuple(x1.shape)} and {tuple(x2.shape)})"
        )
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"cross: the axis {axis} must have size 3 in both arrays, got shapes "
            f"{tuple(x1.shape)} and {tuple(x2.shape)}"
        )
    if x1.dtype != x2.dtype:
        dt = _d.result_type(x1, x2)
        x1, x2 = x1.to(dt), x2.to(dt)
    a, b = _st.broadcast_tensors(x1, x2)
    return _st.cross(a, b, dim=axis)


def det(x, /) -> Tensor:
    _matrices(x, "det")
    return _st.linalg.det(_floating(x))


def diagonal(x, /, *, offset=0) -> Tensor:
    """The ``offset`` diagonal of each matrix: a view."""
    _matrices(x, "diagonal")
    return x.diagonal(offset, -2, -1)


def eigh(x, /) -> EighResult:
    _matrices(x, "eigh")
    return EighResult(*_st.linalg.eigh(_floating(x)))


def eigvalsh(x, /) -> Tensor:
    _matrices(x, "eigvalsh")
    return _st.linalg.eigvalsh(_floating(x))


def inv(x, /) -> Tensor:
    _matrices(x, "inv")
    return _st.linalg.inv(_floating(x))


def matrix_norm(x, /, *, keepdims=False, ord="fro") -> Tensor:
    _matrices(x, "matrix_norm")
    return _st.linalg.matrix_norm(_floating(x), ord, (-2, -1), keepdims)


def matrix_power(x, n, /) -> Tensor:
    """``x`` multiplied by itself ``n`` times (by repeated squaring); ``n = 0`` the identity
    and ``n < 0`` powers of the inverse."""
    _matrices(x, "matrix_power")
    return _st.linalg.matrix_power(x, n)


def _kept(s, rtol, m, n):
    """The singular values ``s`` (``(..., k)``) above the standard's tolerance: ``rtol``
    (a float or an array broadcast against the batch) times the largest one."""
    if rtol is None:
        rtol = builtins.max(m, n) * _d.finfo(s.dtype).eps
    if isinstance(rtol, Tensor):
        rtol = rtol.to(s.dtype)[..., None]
    return s > rtol * s.amax(-1, keepdim=True)


def matrix_rank(x, /, *, rtol=None) -> Tensor:
    _matrices(x, "matrix_rank")
    x = _floating(x)
    m, n = x.shape[-2:]
    if not isinstance(rtol, Tensor):
        return _st.linalg.matrix_rank(x, rtol=rtol)
    if builtins.min(m, n) == 0:
        return _st.zeros(tuple(x.shape[:-2]), dtype=_d.DEFAULT_INT)
    # Composition: an array tolerance broadcast over the batch.
    return _kept(_st.linalg.svdvals(x), rtol, m, n).sum(-1)


def outer(x1, x2, /) -> Tensor:
    _check_array(x1, "outer")
    _check_array(x2, "outer")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: x1 and x2 must be 1-d, got shapes {tuple(x1.shape)} and {tuple(x2.shape)}")
    if x1.dtype != x2.dtype:
        dt = _d.result_type(x1, x2)
        x1, x2 = x1.to(dt), x2.to(dt)
    return _st.outer(x1, x2)


def pinv(x, /, *, rtol=None) -> Tensor:
    _matrices(x, "pinv")
    x = _floating(x)
    m, n = x.shape[-2:]
    if not isinstance(rtol, Tensor) or builtins.min(m, n) == 0:
        return _st.linalg.pinv(x, rtol=None if isinstance(rtol, Tensor) else rtol)
    # Composition: V · diag(1/s, kept) · Uᴴ with an array tolerance.
    u, s, vh = _st.linalg.svd(x, full_matrices=False)
    sinv = _st.where(_kept(s, rtol, m, n), 1 / s, 0.0)
    return (vh.mH * sinv[..., None, :]) @ u.mH


def qr(x, /, *, mode="reduced") -> QRResult:
    _matrices(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*_st.linalg.qr(_floating(x), mode=mode))


def slogdet(x, /) -> SlogdetResult:
    _matrices(x, "slogdet")
    return SlogdetResult(*_st.linalg.slogdet(_floating(x)))


def solve(x1, x2, /) -> Tensor:
    """``X`` with ``x1 @ X = x2``: ``x2`` is a vector when 1-d, else a stack of matrices
    whose batch broadcasts with ``x1``'s (PyTorch also reads an ``x2`` of ``x1``'s shape
    less its last dim as vectors; the standard does not)."""
    _matrices(x1, "solve")
    _check_array(x2, "solve")
    if x1.dtype != x2.dtype:
        dt = _d.result_type(x1, x2)
        x1, x2 = x1.to(dt), x2.to(dt)
    x1, x2 = _floating(x1), _floating(x2)
    if x2.ndim >= 2 and x2.ndim + 1 == x1.ndim:
        # A leading batch dim of 1 keeps x2 a stack of matrices under PyTorch's rule.
        return _st.linalg.solve(x1, x2[None])
    return _st.linalg.solve(x1, x2)


def svd(x, /, *, full_matrices=True) -> SVDResult:
    _matrices(x, "svd")
    return SVDResult(*_st.linalg.svd(_floating(x), full_matrices=full_matrices))


def svdvals(x, /) -> Tensor:
    _matrices(x, "svdvals")
    return _st.linalg.svdvals(_floating(x))


def trace(x, /, *, offset=0, dtype=None) -> Tensor:
    """The sum of the ``offset`` diagonal of each matrix, with ``sum``'s dtype rule."""
    _matrices(x, "trace")
    out_dt = _sum_dtype(x.dtype, dtype)
    d = x.diagonal(offset, -2, -1)
    if out_dt != x.dtype:
        d = d.to(out_dt)
    out = d.sum(-1)
    return out if out.dtype == out_dt else out.to(out_dt)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2) -> Tensor:
    _check_array(x, "vector_norm")
    x = _floating(x)
    if isinstance(axis, (tuple, list)) and len(axis) == 0:
        # Over no axis: the norm of each element alone, |x| (or x != 0 for ord 0).
        return (x != 0).to(x.real.dtype) if ord == 0 else x.abs()
    dims = _axes(axis, x.ndim, "vector_norm")
    if x.ndim == 0:
        return _st.linalg.vector_norm(x, ord=ord)
    return _st.linalg.vector_norm(x, ord=ord, dim=dims, keepdim=keepdims)

wrap_module(globals(), __all__)
