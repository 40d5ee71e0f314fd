"""Elementwise functions of the array API standard, over strata's op table.

Each function calls the strata op of the same meaning. A Python scalar may stand for
either operand of a binary function (2024.12); it is passed to strata as it is, where it
stays "weak" (it takes the array's dtype), as the standard asks.
"""

from __future__ import annotations

import builtins

import strata as _st

from . import _dtypes as _d
from ._array import _as_array, wrap_module

Tensor = _st.Tensor

_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


def _check_operand(x, fn) -> None:
    if not isinstance(x, (Tensor, *_SCALARS)):
        raise TypeError(f"{fn}: expected an array or a Python scalar, got {type(x).__name__}")


def _operands(x1, x2, fn):
    """Both operands, cast to the standard's result dtype where strata's promotion differs
    from it: uint64 mixed with a signed integer dtype (strata refuses, as PyTorch; the
    standard leaves it to the library), and a 0-d array mixed with an array of another
    dtype (strata, as PyTorch, lets a 0-d array of the same kind not widen the result).
    Casting a 0-d operand costs one element."""
    _check_operand(x1, fn)
    _check_operand(x2, fn)
    if isinstance(x1, Tensor) and isinstance(x2, Tensor):
        a, b = x1.dtype, x2.dtype
        if a != b and (x1.ndim == 0 or x2.ndim == 0 or _d._needs_cast(a, b)):
            dt = _d._promote_pair(x1.dtype, x2.dtype)
            x1, x2 = x1.to(dt), x2.to(dt)
    elif not (isinstance(x1, Tensor) or isinstance(x2, Tensor)):
        raise TypeError(f"{fn}: at least one operand must be an array")
    return x1, x2


def _binary(std_name: str, st_name: str):
    op = getattr(_st, st_name)
    method = getattr(Tensor, st_name)

    def fn(x1, x2, /):
        if isinstance(x1, Tensor) and (
            isinstance(x2, _SCALARS) or (isinstance(x2, Tensor) and x1.dtype is x2.dtype)
        ):
            # Nothing to cast: strata's rule gives the standard's dtype.
            return _as_array(method(x1, x2))
        x1, x2 = _operands(x1, x2, std_name)
        return _as_array(op(x1, x2))

    fn._returns_arrays = True
    fn.__name__ = fn.__qualname__ = std_name
    fn.__doc__ = f"The array API's ``{std_name}`` (``strata.{st_name}``)."
    return fn


def _unary(std_name: str, st_name: str):
    op = getattr(Tensor, st_name)

    def fn(x, /):
        if not isinstance(x, Tensor):
            raise TypeError(f"{std_name}: expected an array, got {type(x).__name__}")
        return _as_array(op(x))

    fn._returns_arrays = True
    fn.__name__ = fn.__qualname__ = std_name
    fn.__doc__ = f"The array API's ``{std_name}`` (``Tensor.{st_name}``)."
    return fn


_UNARY = {
    "abs": "abs", "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh",
    "atan": "atan", "atanh": "atanh", "bitwise_invert": "bitwise_not", "cos": "cos",
    "cosh": "cosh", "exp": "exp", "expm1": "expm1", "isfinite": "isfinite", "isinf": "isinf",
    "isnan": "isnan", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
    "logical_not": "logical_not", "negative": "neg", "positive": "positive",
    "reciprocal": "reciprocal", "signbit": "signbit", "sin": "sin",
    "sinh": "sinh", "square": "square", "sqrt": "sqrt", "tan": "tan", "tanh": "tanh",
    "ceil": "ceil", "floor": "floor", "trunc": "trunc",
}

_BINARY = {
    "add": "add", "atan2": "atan2", "bitwise_and": "bitwise_and",
    "bitwise_left_shift": "bitwise_left_shift", "bitwise_or": "bitwise_or",
    "bitwise_right_shift": "bitwise_right_shift", "bitwise_xor": "bitwise_xor",
    "copysign": "copysign", "divide": "div", "equal": "eq",
    "greater": "gt", "greater_equal": "ge", "hypot": "hypot", "less": "lt", "less_equal": "le",
    "logaddexp": "logaddexp", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_xor": "logical_xor", "maximum": "maximum", "minimum": "minimum",
    "multiply": "mul", "nextafter": "nextafter", "not_equal": "ne", "pow": "pow",
    "subtract": "sub",
}

__all__ = [*_UNARY, *_BINARY, "clip", "sign", "round", "floor_divide", "remainder"]

for _std, _name in _UNARY.items():
    globals()[_std] = _unary(_std, _name)
for _std, _name in _BINARY.items():
    globals()[_std] = _binary(_std, _name)
del _std, _name


def clip(x, /, min=None, max=None) -> Tensor:  # noqa: A002
    """``x`` limited to ``[min, max]`` (either may be ``None``, a scalar or an array); the
    result has ``x``'s dtype."""
    if not isinstance(x, Tensor):
        raise TypeError(f"clip: expected an array, got {type(x).__name__}")
    if min is None and max is None:
        return x.clone()
    return _st.clamp(x, min, max)


def _is_float(x) -> builtins.bool:
    return isinstance(x, Tensor) and _d.isdtype(x.dtype, "real floating")


def floor_divide(x1, x2, /) -> Tensor:
    """``x1 // x2`` (Python's and PyTorch's floor division), with the standard's special
    cases of infinities, which the Tensor operator does not give (it follows PyTorch):
    ``±inf // finite`` is an infinity of the quotient's sign (not NaN), and ``finite //
    ±inf`` of the other sign is ``-0`` (not ``-1``)."""
    x1, x2 = _operands(x1, x2, "floor_divide")
    out = _st.floor_divide(x1, x2)
    if not _is_float(out):
        return out
    # Composition: the infinities patched in, only when there are any.
    a = x1 if isinstance(x1, Tensor) else _st.full((), x1, dtype=out.dtype)
    b = x2 if isinstance(x2, Tensor) else _st.full((), x2, dtype=out.dtype)
    inf_a, inf_b = a.isinf(), b.isinf()
    if not (inf_a.any().item() or inf_b.any().item()):
        return out
    fin_a, fin_b = a.isfinite(), b.isfinite()
    quotient = a / b
    out = _st.where(inf_a & fin_b & (b != 0), quotient, out)
    return _st.where(fin_a & inf_b, _st.zeros_like(out).copysign(quotient), out)


def remainder(x1, x2, /) -> Tensor:
    """``x1 % x2`` with the sign of ``x2`` (Python's and PyTorch's floored modulo); a zero
    result takes ``x2``'s sign too (the standard's ``+0``/``-0`` cases; the Tensor operator
    keeps ``x1``'s, as PyTorch)."""
    x1, x2 = _operands(x1, x2, "remainder")
    out = _st.remainder(x1, x2)
    if not _is_float(out):
        return out
    b = x2 if isinstance(x2, Tensor) else _st.full((), x2, dtype=out.dtype)
    return _st.where(out == 0, _st.zeros_like(out).copysign(b), out)


def sign(x, /) -> Tensor:
    """-1, 0 or 1 for real values; ``x / |x|`` (0 at 0) for complex ones (strata's ``sgn``;
    its ``sign`` refuses complex input, as PyTorch's)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"sign: expected an array, got {type(x).__name__}")
    return x.sgn() if x.is_complex() else x.sign()


def round(x, /) -> Tensor:  # noqa: A001
    """Rounds half to even; a complex value's parts are rounded separately."""
    if not isinstance(x, Tensor):
        raise TypeError(f"round: expected an array, got {type(x).__name__}")
    if x.is_complex():
        return _st.complex(x.real.round(), x.imag.round())
    return x.round()


def conj(x, /) -> Tensor:
    """The complex conjugate (a new array); for a real-valued array a copy of ``x``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"conj: expected an array, got {type(x).__name__}")
    return x.conj_physical()


def real(x, /) -> Tensor:
    """The real component (a new array of the parts' dtype); a copy for real input."""
    if not isinstance(x, Tensor):
        raise TypeError(f"real: expected an array, got {type(x).__name__}")
    return x.real.clone()


def imag(x, /) -> Tensor:
    """The imaginary component (a new array); zeros for real-valued input."""
    if not isinstance(x, Tensor):
        raise TypeError(f"imag: expected an array, got {type(x).__name__}")
    if x.is_complex():
        return x.imag.clone()
    return _st.zeros_like(x)


__all__ += ["conj", "real", "imag"]

wrap_module(globals(), __all__)
