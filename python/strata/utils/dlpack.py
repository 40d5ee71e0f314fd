"""DLPack exchange under PyTorch's module-level names (``torch.utils.dlpack``).

``to_dlpack(t)`` is ``t.__dlpack__()``: a legacy ``"dltensor"`` capsule sharing ``t``'s
memory, for one consumer (a capsule is consumed once; its memory stays alive until the
consumer's tensor goes). ``from_dlpack(x)`` is :func:`strata.from_dlpack`: ``x`` may be
such a capsule or any object with ``__dlpack__`` (a NumPy array, a PyTorch or CuPy
tensor), imported without a copy. See the README's "DLPack" section.
"""

from __future__ import annotations

from .._strata import Tensor
from .._strata import from_dlpack as _from_dlpack

__all__ = ["to_dlpack", "from_dlpack"]


def to_dlpack(tensor: Tensor):
    """A DLPack capsule (``"dltensor"``, unversioned, as ``torch.utils.dlpack.to_dlpack``
    makes) that shares ``tensor``'s memory."""
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"to_dlpack: expected a strata.Tensor, got {type(tensor).__name__}")
    return tensor.__dlpack__()


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing the memory of a DLPack capsule or of an object with
    ``__dlpack__``."""
    return _from_dlpack(ext_tensor)
