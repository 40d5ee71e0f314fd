"""``strata.array_api.fft``: the array API standard's Fourier transform extension over
``strata.fft`` (rows transformed in Rust through ``rustfft``/``realfft``).

The standard's keywords (``axis``, ``axes``, ``s`` with ``-1`` for "the whole axis",
``norm`` always a string, ``fftfreq``'s ``dtype``/``device``) map onto strata's
PyTorch-like functions; complex transforms keep their input's dtype, real ones give the
complex dtype of the input's precision.
"""

from __future__ import annotations

import strata as _st

from . import _dtypes as _d
from ._array import wrap_module
from ._functions import _axes, _check_array
from ._info import _check_device

Tensor = _st.Tensor

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")


def _norm(norm, fn: str) -> str:
    if norm not in _NORMS:
        raise ValueError(f"{fn}: norm must be one of {_NORMS}, got {norm!r}")
    return norm


def _one(name: str, x, n, axis, norm) -> Tensor:
    _check_array(x, name)
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least one dim")
    if n is not None:
        n = n.__index__()
        if n < 1:
            raise ValueError(f"{name}: n must be positive, got {n}")
    return getattr(_st.fft, name)(x, n=n, dim=axis, norm=_norm(norm, name))


def _many(name: str, x, s, axes, norm) -> Tensor:
    _check_array(x, name)
    if s is not None and axes is None:
        raise ValueError(f"{name}: axes must be given with s")
    dims = _axes(axes, x.ndim, name) if axes is not None else tuple(range(x.ndim))
    if s is not None:
        s = [int(v) for v in s]
        if len(s) != len(dims):
            raise ValueError(f"{name}: s and axes must have one length, got {len(s)} and {len(dims)}")
        # -1: the whole axis (for irfftn's last axis, the default 2·(m − 1) output points).
        whole = [x.shape[d] for d in dims]
        if name == "irfftn":
            whole[-1] = 2 * (whole[-1] - 1)
        s = [w if v == -1 else v for v, w in zip(s, whole)]
        for v in s:
            if v < 1:
                raise ValueError(f"{name}: every size in s must be positive (or -1), got {s}")
    return getattr(_st.fft, name)(x, s=s, dim=dims, norm=_norm(norm, name))


def fft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    return _one("fft", x, n, axis, norm)


def ifft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    return _one("ifft", x, n, axis, norm)


def fftn(x, /, *, s=None, axes=None, norm="backward") -> Tensor:
    return _many("fftn", x, s, axes, norm)


def ifftn(x, /, *, s=None, axes=None, norm="backward") -> Tensor:
    return _many("ifftn", x, s, axes, norm)


def rfft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    return _one("rfft", x, n, axis, norm)


def irfft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    return _one("irfft", x, n, axis, norm)


def rfftn(x, /, *, s=None, axes=None, norm="backward") -> Tensor:
    return _many("rfftn", x, s, axes, norm)


def irfftn(x, /, *, s=None, axes=None, norm="backward") -> Tensor:
    return _many("irfftn", x, s, axes, norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    return _one("hfft", x, n, axis, norm)


def ihfft(x, /, *, n=None, axis=-1, norm="backward") -> Tensor:
    return _one("ihfft", x, n, axis, norm)


def _freq(name: str, n, d, dtype, device) -> Tensor:
    _check_device(device)
    n = n.__index__()
    if n < 1:
        raise ValueError(f"{name}: n must be positive, got {n}")
    if dtype is None:
        dtype = _d.DEFAULT_FLOAT
    elif not _d.isdtype(dtype, "real floating"):
        raise ValueError(f"{name}: dtype must be a real floating-point dtype, got {dtype}")
    return getattr(_st.fft, name)(n, d, dtype=dtype)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None) -> Tensor:
    return _freq("fftfreq", n, d, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None) -> Tensor:
    return _freq("rfftfreq", n, d, dtype, device)


def fftshift(x, /, *, axes=None) -> Tensor:
    _check_array(x, "fftshift")
    return _st.fft.fftshift(x, dim=None if axes is None else list(_axes(axes, x.ndim, "fftshift")))


def ifftshift(x, /, *, axes=None) -> Tensor:
    _check_array(x, "ifftshift")
    return _st.fft.ifftshift(x, dim=None if axes is None else list(_axes(axes, x.ndim, "ifftshift")))

wrap_module(globals(), __all__)
