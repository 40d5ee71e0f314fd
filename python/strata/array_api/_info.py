"""``__array_namespace_info__()``: the inspection API of the standard."""

from __future__ import annotations

import strata as _st

from . import _dtypes as _d

__all__ = ["__array_namespace_info__"]


def _devices() -> list:
    out = ["cpu"]
    try:
        if _st.cuda.is_available():
            out += [f"cuda:{i}" for i in range(_st.cuda.device_count())]
    except Exception:  # no driver: the CPU only
        pass
    return out


def _check_device(device) -> None:
    """``ValueError`` for a device strata does not have (``None`` is the default)."""
    if device is None or device == "cpu":
        return
    known = _devices()
    if str(device) not in known and not (str(device) == "cuda" and len(known) > 1):
        raise ValueError(f"unknown device {device!r} (devices: {known})")


class __array_namespace_info__:  # noqa: N801  (the standard's name)
    """What strata supports: capabilities, devices, dtypes and defaults."""

    __module__ = "strata.array_api"

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def devices(self) -> list:
        return _devices()

    def default_dtypes(self, *, device=None) -> dict:
        _check_device(device)
        return {
            "real floating": _d.DEFAULT_FLOAT,
            "complex floating": _d.DEFAULT_COMPLEX,
            "integral": _d.DEFAULT_INT,
            "indexing": _d.DEFAULT_INDEX,
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        _check_device(device)
        return {dt.name: dt for dt in _d._STANDARD if kind is None or _d.isdtype(dt, kind)}
