"""``strata.array_api``: the Python array API standard (version 2024.12) over strata.

A thin naming layer: the standard's names and keywords (``axis``, ``keepdims``, ``copy=``,
``device=``, ``permute_dims``, ``concat``, ...) mapped onto strata's own ops; the arrays
are ``strata.Tensor`` objects and no data goes through NumPy. strata's PyTorch-like API
is unchanged.

    >>> import strata.array_api as xp
    >>> x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    >>> xp.sum(x, axis=0)
    tensor([4., 6.])

The ``linalg`` and ``fft`` extensions are the submodules ``strata.array_api.linalg`` and
``strata.array_api.fft``. ``Tensor.size`` is PyTorch's method, not the standard's
attribute. Extra dtypes: ``float16`` and ``bfloat16`` (kind "real floating"). Defaults:
float32 (real floating), complex64 (complex floating), int64 (integral and indexing),
device ``"cpu"``.
"""

from __future__ import annotations

import math as _math

from . import _creation, _elementwise, _functions, fft, linalg
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
    "__array_api_version__",
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
