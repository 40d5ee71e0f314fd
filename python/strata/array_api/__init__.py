"""``strata.array_api``: the Python array API standard (version 2024.12) over strata.

A naming layer: the standard's names and keywords (``axis``, ``keepdims``, ``copy=``,
``device=``, ``permute_dims``, ``concat``, ...) mapped onto strata's own ops; no data goes
through NumPy. Its functions return ``Array`` objects: ``strata.Tensor``s (a subclass
sharing the view, the storage and the autograd state) whose operators, ``size`` and
``T`` follow the standard where it and PyTorch disagree (``_array.py``). strata's
PyTorch-like API is unchanged, and a plain ``Tensor`` is accepted everywhere here.

    >>> import strata.array_api as xp
    >>> x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    >>> xp.sum(x, axis=0)
    Array([4., 6.])

The ``linalg`` and ``fft`` extensions are the submodules ``strata.array_api.linalg`` and
``strata.array_api.fft``. Extra dtypes: ``float16`` and ``bfloat16`` (kind "real
floating"). Defaults: float32 (real floating), complex64 (complex floating), int64
(integral and indexing), device ``"cpu"``.
"""

from __future__ import annotations

import math as _math

from . import _array, _creation, _elementwise, _functions, fft, linalg
from ._array import Array
from ._creation import *  # noqa: F403
from ._dtypes import (
    bfloat16,
    bool,  # noqa: A004
    can_cast,
    complex64,
    complex128,
    finfo,
    float16,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._elementwise import *  # noqa: F403
from ._functions import *  # noqa: F403
from ._functions import UniqueAllResult, UniqueCountsResult, UniqueInverseResult  # noqa: F401
from ._info import __array_namespace_info__

__array_api_version__ = "2024.12"

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

__all__ = [
    "__array_api_version__", "Array",
    "__array_namespace_info__",
    "fft", "linalg",
    "e", "inf", "nan", "newaxis", "pi",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128", "float16", "bfloat16",
    "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    *_creation.__all__,
    *_elementwise.__all__,
    *_functions.__all__,
]

# The operators of Array call the namespace's functions.
_array._FUNCTIONS.update(
    {name: globals()[name] for name in (*_elementwise.__all__, "matmul")}
)
