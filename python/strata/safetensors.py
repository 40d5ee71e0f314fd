"""safetensors files for strata tensors, with the API of the ``safetensors`` package.

``save_file`` / ``save`` write a dict of tensors (non-contiguous ones are compacted;
tensors whose memory overlaps are refused — save a ``clone()`` of one of them);
``load_file`` / ``load`` read them back; ``safe_open`` parses the header once and maps
tensors lazily, one by one, from the file it opened (replacing the path meanwhile, e.g.
with ``os.replace``, does not change what it reads), until the ``with`` block ends. Loaded tensors are private copy-on-write mappings of the file
when their data is aligned for their dtype (zero-copy: writable, the file never changes)
and copies otherwise.
"""

from __future__ import annotations

import os
from typing import Any

from . import _strata
from ._strata import Tensor

__all__ = ["save_file", "save", "load_file", "load", "safe_open"]


def save_file(
    tensors: dict[str, Tensor],
    filename: str | os.PathLike[str],
    metadata: dict[str, str] | None = None,
) -> None:
    """Writes ``tensors`` (and the optional str→str ``metadata``) to ``filename``."""
    _strata._st_save(tensors, os.fspath(filename), metadata)


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of a safetensors file holding ``tensors``."""
    return _strata._st_serialize(tensors, metadata)


def load_file(filename: str | os.PathLike[str], device: str = "cpu") -> dict[str, Tensor]:
    """Every tensor of the file, by name."""
    _check_device(device)
    with safe_open(filename, framework="strata", device=device) as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def load(data: bytes) -> dict[str, Tensor]:
    """Every tensor of a safetensors file held in memory (copied out of ``data``)."""
    tensors, _meta = _strata._st_deserialize(bytes(data))
    return tensors


def _check_device(device: Any) -> None:
    if str(device) != "cpu":
        raise ValueError(f"strata tensors live on the cpu; got device={device!r}")


class safe_open:
    """A safetensors file opened lazily: ``keys()``, ``get_tensor(name)``, ``metadata()``.

    Use it as a context manager, as with the ``safetensors`` package.
    """

    def __init__(
        self, filename: str | os.PathLike[str], framework: str = "strata", device: str = "cpu"
    ) -> None:
        if framework not in ("strata", "st"):
            raise ValueError(f"safe_open: framework must be 'strata', got {framework!r}")
        _check_device(device)
        self._file = _strata._SafeFile(os.fspath(filename))

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the file; tensors already returned stay valid (they hold their maps)."""
        self._file.close()

    def keys(self) -> list[str]:
        """Tensor names, in the order their data lies in the file."""
        return self._file.keys()

    def metadata(self) -> dict[str, str] | None:
        """The file's ``__metadata__`` dict, or None."""
        return self._file.metadata()

    def get_tensor(self, name: str) -> Tensor:
        """The tensor called ``name``."""
        return self._file.get_tensor(name)
