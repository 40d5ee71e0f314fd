"""Shared helpers for the strata test suites: dtype maps, value generators and tensors of the
same values laid out in different ways (transposed, stepped, flipped, NumPy-backed).

Not a test module (no ``test_`` prefix); the suites import it by name.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from hypothesis import settings
from hypothesis import strategies as hs

import strata as st

# strata dtype <-> NumPy dtype (bfloat16 has no NumPy equivalent).
ST2NP = {
    st.bool: np.dtype(np.bool_),
    st.uint8: np.dtype(np.uint8),
    st.int8: np.dtype(np.int8),
    st.int16: np.dtype(np.int16),
    st.uint16: np.dtype(np.uint16),
    st.int32: np.dtype(np.int32),
    st.uint32: np.dtype(np.uint32),
    st.int64: np.dtype(np.int64),
    st.uint64: np.dtype(np.uint64),
    st.float16: np.dtype(np.float16),
    st.float32: np.dtype(np.float32),
    st.float64: np.dtype(np.float64),
}
NP2ST = {v: k for k, v in ST2NP.items()}
# Kept apart from ST2NP, whose real dtypes many tests iterate over.
COMPLEX_NP2ST = {np.dtype(np.complex64): st.complex64, np.dtype(np.complex128): st.complex128}

NUMPY_DTYPES = list(ST2NP)
FLOATS = [st.float16, st.float32, st.float64]
SIGNED = [st.int8, st.int16, st.int32, st.int64]
UNSIGNED_WIDE = [st.uint16, st.uint32, st.uint64]
INTS = [st.uint8, *SIGNED]  # the integer dtypes that promote freely
# The dtypes whose promotion PyTorch defines fully (uint16/32/64 only promote with floats).
CORE = [
    st.bool,
    st.uint8,
    st.int8,
    st.int16,
    st.int32,
    st.int64,
    st.float16,
    st.float32,
    st.float64,
]


def is_float(dt) -> bool:
    return dt in (st.float16, st.bfloat16, st.float32, st.float64)


def is_int(dt) -> bool:
    return dt in (st.uint8, st.int8, st.int16, st.int32, st.int64, *UNSIGNED_WIDE)


def category(dt) -> int:
    """bool < int < float."""
    if dt == st.bool:
        return 0
    return 2 if is_float(dt) else 1


def tol(dt):
    """(rtol, atol) for comparing results of dtype ``dt``."""
    if dt == st.float16:
        return 2e-3, 2e-3
    if dt == st.bfloat16:
        return 1e-2, 1e-2
    if dt == st.float32:
        return 2e-5, 1e-5
    if dt == st.float64:
        return 1e-11, 1e-12
    return 0, 0


def to_np(t: st.Tensor) -> np.ndarray:
    """A NumPy copy of a tensor's values (bfloat16 through float32)."""
    if t.dtype == st.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def assert_values(t: st.Tensor, expected, dtype=None, exact=False):
    """``t`` has ``expected``'s shape and values (and ``dtype`` when given)."""
    expected = np.asarray(expected)
    if dtype is not None:
        assert t.dtype == dtype, (t.dtype, dtype)
    got = to_np(t)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if is_float(t.dtype) and not exact:
        rtol, atol = tol(t.dtype)
        np.testing.assert_allclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=rtol,
            atol=atol,
            equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(
            got, expected.astype(got.dtype) if got.dtype != expected.dtype else expected
        )


def values(rng: np.random.Generator, shape, dt, kind: str = "nice") -> np.ndarray:
    """Random values of strata dtype ``dt`` (as a NumPy array of the matching dtype).

    ``nice`` floats are multiples of 0.5 in [-4, 4], so sums and products of a few stay
    exact in every float dtype; ``normal`` floats are N(0, 2)."""
    return np.asarray(_values(rng, shape, dt, kind))


def _values(rng, shape, dt, kind):
    npdt = ST2NP[dt]
    if dt == st.bool:
        return rng.random(shape) < 0.5
    if dt in (st.uint8, *UNSIGNED_WIDE):
        return rng.integers(0, 30, size=shape).astype(npdt)
    if is_int(dt):
        return rng.integers(-20, 21, size=shape).astype(npdt)
    if kind == "nice":
        return (rng.integers(-8, 9, size=shape) / 2).astype(npdt)
    if kind == "positive":
        return (rng.random(shape) * 4 + 0.05).astype(npdt)
    return (rng.standard_normal(shape) * 2).astype(npdt)


def np_sample(shape, dtype, seed=0) -> np.ndarray:
    """Random values of NumPy dtype ``dtype``: booleans, integers over the dtype's whole
    range, floats N(0, 100)."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return np.asarray(rng.integers(0, 2, size=shape).astype(np.bool_))
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True))
    return np.asarray((rng.standard_normal(size=shape) * 100).astype(dtype))


# The NumPy scalar types of every dtype NumPy and strata share.
NP_DTYPES = [d.type for d in ST2NP.values()]

LAYOUTS = ["contig", "transposed", "stepped", "flipped", "numpy_view"]


def tensor_of(arr) -> st.Tensor:
    """A contiguous copy of a NumPy array with its dtype (``st.tensor`` of a 0-d array loses
    the dtype, see test_tensor_api)."""
    arr = np.asarray(arr)
    return st.tensor(arr, dtype={**NP2ST, **COMPLEX_NP2ST}[arr.dtype])


def laid_out(arr: np.ndarray, layout: str) -> st.Tensor:
    """A tensor holding ``arr``'s values with the given memory layout (made by strata's
    own view ops, or for ``numpy_view`` by sharing a strided NumPy view)."""
    nd = arr.ndim
    if nd == 0 or layout == "contig":
        return tensor_of(arr)
    if layout == "transposed":
        base = tensor_of(np.ascontiguousarray(arr.transpose()))
        return base.permute(*reversed(range(nd)))
    if layout == "stepped":
        big = np.zeros(tuple(2 * n + 1 for n in arr.shape), dtype=arr.dtype)
        big[(slice(1, None, 2),) * nd] = arr
        return tensor_of(big)[(slice(1, None, 2),) * nd]
    if layout == "flipped":
        base = tensor_of(np.ascontiguousarray(arr[(slice(None, None, -1),) * nd]))
        return base.flip(*range(nd))
    if layout == "numpy_view":
        # Reversed dim order, every other element, last dim flipped.
        rev = arr.transpose()[..., ::-1]
        big = np.zeros(tuple(2 * n for n in rev.shape), dtype=arr.dtype)
        big[(slice(None, None, 2),) * nd] = rev
        view = big[(slice(None, None, 2),) * nd][..., ::-1].transpose()
        np.testing.assert_array_equal(view, arr)
        return st.from_numpy(view)
    raise ValueError(layout)


def shapes(max_dims: int = 3, max_side: int = 4, min_dims: int = 0, min_side: int = 0):
    return hs.lists(hs.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(
        tuple
    )


seeds = hs.integers(0, 2**32 - 1)
layouts = hs.sampled_from(LAYOUTS)


def budget(n: int) -> settings:
    """Hypothesis settings with ``n`` examples, scaled by $STRATA_TEST_SCALE (a float, for
    long bug-hunting runs); no deadline (the debug build is slow and timing varies)."""
    scale = float(os.environ.get("STRATA_TEST_SCALE", "1"))
    return settings(max_examples=max(1, int(n * scale)), deadline=None)


LEVELS = ["portable", "avx2", "avx512"]


def rerun_at_level(level: str, module: str, tests) -> None:
    """Runs ``tests`` (names of functions in test module ``module``) in a child process
    whose kernels are capped at CPU ``level`` (``STRATA_CPU``, read once per process);
    skips when this process is capped already or the level is not below this machine's."""
    import subprocess
    import sys

    import pytest

    if os.environ.get("STRATA_CPU"):
        pytest.skip("already capped")
    if LEVELS.index(level) >= LEVELS.index(st.cpu_level()):
        pytest.skip(f"{level} is this process's level (or above the machine's)")
    here = os.path.dirname(os.path.abspath(__file__))
    code = "\n".join(
        [f"import sys; sys.path.insert(0, {here!r})", f"import {module} as t",
         "import strata as st", f"assert st.cpu_level() == {level!r}, st.cpu_level()"]
        + [f"t.{name}()" for name in tests])
    env = dict(os.environ, STRATA_CPU=level)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even; NaN made quiet keeping the top of
    its payload (the model of strata's float32 -> bfloat16 conversion)."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    nan = ((b >> 16) | 0x40) & 0xFFFF
    isnan = (b & 0x7FFFFFFF) > 0x7F800000
    return np.where(isnan, nan, rounded).astype(np.uint16)


def array_api_namespace():
    """``strata.array_api``, imported for one test module only (a module-scoped fixture's
    body): importing a submodule sets it as an attribute of ``strata``, which test_stubs
    would count as an undeclared public name, so the module is removed again after."""
    had = "strata.array_api" in sys.modules
    import strata.array_api as ns

    yield ns
    if not had:
        for name in [m for m in sys.modules if m == "strata.array_api" or m.startswith("strata.array_api.")]:
            del sys.modules[name]
        if hasattr(st, "array_api"):
            delattr(st, "array_api")
