"""strata.fft: discrete Fourier transforms with PyTorch's ``torch.fft`` signatures.

Real input gives a complex result of its precision (float32 → complex64, float64 →
complex128; integers and bool compute in float32); half precision is refused, as on
PyTorch's CPU. ``n``/``s`` trim or zero-pad the input along the transformed dims; ``norm``
is ``"backward"`` (default: the inverse scaled by ``1/n``), ``"ortho"`` or ``"forward"``.
The rows are transformed in Rust through the ``rustfft`` and ``realfft`` crates (any
length), on several threads for large inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import _strata

if TYPE_CHECKING:
    from . import Tensor, dtype

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

def fft(input, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D discrete Fourier transform along ``dim`` of ``n`` points."""
    return _strata._fft_1d("fft", input, n, dim, norm)


def ifft(input, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fft`."""
    return _strata._fft_1d("ifft", input, n, dim, norm)


def rfft(input, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The transform of real input: its ``n // 2 + 1`` non-negative frequencies."""
    return _strata._fft_1d("rfft", input, n, dim, norm)


def irfft(input, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfft`: ``n`` real points (default ``2 * (m - 1)``)."""
    return _strata._fft_1d("irfft", input, n, dim, norm)


def hfft(input, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half (real result)."""
    return _strata._fft_1d("hfft", input, n, dim, norm)


def ihfft(input, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of :func:`hfft`."""
    return _strata._fft_1d("ihfft", input, n, dim, norm)


def fftn(input, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """The transform over ``dim`` (default: the last ``len(s)`` dims, or all)."""
    return _strata._fft_nd("fftn", input, s, dim, norm)


def ifftn(input, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`fftn`."""
    return _strata._fft_nd("ifftn", input, s, dim, norm)


def rfftn(input, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """:func:`rfft` over the last of ``dim``, then :func:`fft` over the others."""
    return _strata._fft_nd("rfftn", input, s, dim, norm)


def irfftn(input, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """The inverse of :func:`rfftn`."""
    return _strata._fft_nd("irfftn", input, s, dim, norm)


def fft2(input, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`fftn` over the last two dims."""
    return _strata._fft_nd("fftn", input, s, dim, norm)


def ifft2(input, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`ifftn` over the last two dims."""
    return _strata._fft_nd("ifftn", input, s, dim, norm)


def rfft2(input, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`rfftn` over the last two dims."""
    return _strata._fft_nd("rfftn", input, s, dim, norm)


def irfft2(input, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """:func:`irfftn` over the last two dims."""
    return _strata._fft_nd("irfftn", input, s, dim, norm)


def fftfreq(n: int, d: float = 1.0, *, dtype: dtype | None = None, device=None) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    out = _strata._fftfreq(n, float(d), dtype, False)
    return out if device is None else out.to(device)


def rfftfreq(n: int, d: float = 1.0, *, dtype: dtype | None = None, device=None) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point real transform."""
    out = _strata._fftfreq(n, float(d), dtype, True)
    return out if device is None else out.to(device)


def fftshift(input, dim: int | Sequence[int] | None = None) -> Tensor:
    """Rolls the zero frequency to the centre of ``dim`` (default all dims)."""
    return _strata._fftshift(input, dim, False)


def ifftshift(input, dim: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return _strata._fftshift(input, dim, True)
