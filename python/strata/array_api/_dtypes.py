"""Data types and data type functions of the array API standard (2024.12).

strata's dtype objects are used as they are. The promotion table is the standard's: it
differs from strata's (PyTorch's) rules only where strata refuses a pair — a uint16,
uint32 or uint64 operand mixed with another integer dtype — and there the namespace casts
both operands to the standard's result dtype before calling the strata op.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import strata as _st

bool = _st.bool  # noqa: A001
int8 = _st.int8
int16 = _st.int16
int32 = _st.int32
int64 = _st.int64
uint8 = _st.uint8
uint16 = _st.uint16
uint32 = _st.uint32
uint64 = _st.uint64
float16 = _st.float16  # not in the standard: an extension of "real floating"
bfloat16 = _st.bfloat16  # idem
float32 = _st.float32
float64 = _st.float64
complex64 = _st.complex64
complex128 = _st.complex128

_SIGNED = (int8, int16, int32, int64)
_UNSIGNED = (uint8, uint16, uint32, uint64)
_FLOATS = (float16, bfloat16, float32, float64)
_COMPLEX = (complex64, complex128)
_BITS = {bool: 8, int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8, uint16: 16, uint32: 32,
         uint64: 64, float16: 16, bfloat16: 16, float32: 32, float64: 64, complex64: 64,
         complex128: 128}
_SIGNED_BY_BITS = {8: int8, 16: int16, 32: int32, 64: int64}
_UNSIGNED_BY_BITS = {8: uint8, 16: uint16, 32: uint32, 64: uint64}

# The dtypes the standard names (the ones `__array_namespace_info__().dtypes()` lists).
_STANDARD = (bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64,
             complex64, complex128)

DEFAULT_FLOAT = float32
DEFAULT_COMPLEX = complex64
DEFAULT_INT = int64
DEFAULT_INDEX = int64


def _kind(dt) -> str:
    if dt == bool:
        return "b"
    if dt in _SIGNED:
        return "i"
    if dt in _UNSIGNED:
        return "u"
    if dt in _FLOATS:
        return "f"
    if dt in _COMPLEX:
        return "c"
    raise TypeError(f"not a strata dtype: {dt!r}")


def _promote_pair(a, b):
    """The standard's promotion of two dtypes (strata's for the mixes it leaves open)."""
    if a == b:
        return a
    ka, kb = _kind(a), _kind(b)
    if ka == "b":
        return b
    if kb == "b":
        return a
    if "c" in (ka, kb):
        # The complex dtype whose parts hold both (complex64 with float64: complex128).
        if ka in "iu":
            return b
        if kb in "iu":
            return a
        wide = builtins.any(d in (float64, complex128) for d in (a, b))
        return complex128 if wide else complex64
    if ka == kb == "f":
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if _BITS[a] >= _BITS[b] else b
    if ka == "f":
        return a
    if kb == "f":
        return b
    if ka == kb:
        return a if _BITS[a] >= _BITS[b] else b
    s, u = (a, b) if ka == "i" else (b, a)
    bits = builtins.max(_BITS[s], 2 * _BITS[u])
    if bits > 64:
        raise TypeError(f"{a.name} and {b.name} have no common dtype (uint64 and a signed integer)")
    return _SIGNED_BY_BITS[bits]


def _needs_cast(a, b) -> builtins.bool:
    """Whether strata's own promotion refuses (or differs from the standard on) a, b."""
    if a == b:
        return False
    ka, kb = _kind(a), _kind(b)
    if ka in "iu" and kb in "iu":
        return a in (uint16, uint32, uint64) or b in (uint16, uint32, uint64)
    return False


def _is_dtype(obj) -> builtins.bool:
    return isinstance(obj, _st.dtype)


def result_type(*arrays_and_dtypes):
    """The dtype of an operation on the arguments (arrays, dtypes and Python scalars)."""
    dtypes = []
    scalars = []
    for a in arrays_and_dtypes:
        if isinstance(a, _st.Tensor):
            dtypes.append(a.dtype)
        elif _is_dtype(a):
            dtypes.append(a)
        elif isinstance(a, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
            scalars.append(a)
        else:
            kind = type(a).__name__
            raise TypeError(f"result_type: expected arrays, dtypes or Python scalars, got {kind}")
    if not dtypes:
        raise TypeError("result_type: at least one argument must be an array or a dtype")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote_pair(out, d)
    for s in scalars:
        out = _scalar_dtype(out, s)
    return out


def _scalar_dtype(dt, s):
    """The dtype of an array of dtype ``dt`` combined with the Python scalar ``s``."""
    if isinstance(s, builtins.complex):
        k = _kind(dt)
        if k == "c":
            return dt
        if k == "f":
            return complex128 if dt == float64 else complex64
        return DEFAULT_COMPLEX
    if isinstance(s, builtins.bool):
        return dt
    if isinstance(s, builtins.int):
        return DEFAULT_INT if dt == bool else dt
    # float
    return dt if _kind(dt) in "fc" else DEFAULT_FLOAT


def can_cast(from_, to, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or array) promotes to ``to`` under the standard's table."""
    if isinstance(from_, _st.Tensor):
        from_ = from_.dtype
    if not (_is_dtype(from_) and _is_dtype(to)):
        raise TypeError("can_cast: expected dtypes (or an array first)")
    if from_ == to:
        return True
    kf, kt = _kind(from_), _kind(to)
    if kf == "b":
        return kt == "b"
    if kt == "b":
        return False
    if kf == "c" and kt != "c":
        return False
    if kf == "f" and kt not in "fc":
        return False
    if kf in "iu" and kt in "fc":
        return False  # cross-kind casts are not promotions in the standard
    try:
        return _promote_pair(from_, to) == to
    except TypeError:
        return False


_KINDS = {
    "bool": lambda d: d == bool,
    "signed integer": lambda d: d in _SIGNED,
    "unsigned integer": lambda d: d in _UNSIGNED,
    "integral": lambda d: d in _SIGNED or d in _UNSIGNED,
    "real floating": lambda d: d in _FLOATS,
    "complex floating": lambda d: d in _COMPLEX,
    "numeric": lambda d: d != bool,
}


def isdtype(dtype, kind) -> builtins.bool:
    """Whether ``dtype`` is ``kind``: a dtype, a kind name, or a tuple of them."""
    if not _is_dtype(dtype):
        raise TypeError(f"isdtype: expected a dtype, got {type(dtype).__name__}")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if _is_dtype(kind):
        return dtype == kind
    if isinstance(kind, str):
        try:
            return _KINDS[kind](dtype)
        except KeyError:
            raise ValueError(f"isdtype: unknown kind {kind!r}") from None
    raise TypeError(f"isdtype: kind must be a dtype, a str or a tuple, got {type(kind).__name__}")


@dataclass(frozen=True)
class finfo_object:  # noqa: N801  (the standard's name)
    bits: builtins.int
    eps: builtins.float
    max: builtins.float
    min: builtins.float
    smallest_normal: builtins.float
    dtype: object


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    bits: builtins.int
    max: builtins.int
    min: builtins.int
    dtype: object


def _float_info(dt, mant: builtins.int, emax: builtins.int) -> finfo_object:
    eps = 2.0 ** -mant
    big = (2.0 - eps) * 2.0 ** emax
    return finfo_object(_BITS[dt], eps, big, -big, 2.0 ** (1 - emax), dt)


_FINFO = {
    float16: _float_info(float16, 10, 15),
    bfloat16: _float_info(bfloat16, 7, 127),
    float32: _float_info(float32, 23, 127),
    float64: _float_info(float64, 52, 1023),
}
# A complex dtype's limits are those of its parts (the standard's rule).
_FINFO[complex64] = _FINFO[float32]
_FINFO[complex128] = _FINFO[float64]


def finfo(type, /) -> finfo_object:  # noqa: A002
    """Machine limits of a floating-point dtype (or of an array's dtype)."""
    dt = type.dtype if isinstance(type, _st.Tensor) else type
    try:
        return _FINFO[dt]
    except (KeyError, TypeError):
        raise ValueError(f"finfo: not a floating-point dtype: {dt!r}") from None


def iinfo(type, /) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype (or of an array's dtype)."""
    dt = type.dtype if isinstance(type, _st.Tensor) else type
    if dt in _SIGNED:
        b = _BITS[dt]
        return iinfo_object(b, 2 ** (b - 1) - 1, -(2 ** (b - 1)), dt)
    if dt in _UNSIGNED:
        b = _BITS[dt]
        return iinfo_object(b, 2**b - 1, 0, dt)
    raise ValueError(f"iinfo: not an integer dtype: {dt!r}")
