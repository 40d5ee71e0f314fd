"""``strata.array_api`` (the array API standard, 2024.12) against NumPy as the oracle.

The consortium's suite (``make array-api ARRAY_API_TESTS=...``) needs a checkout from
GitHub; these fast tests keep the namespace checked without it: its names, the info
object, the dtype functions (promotion table, finfo/iinfo, isdtype, can_cast), the
standard's keywords and copy semantics, and a sample of functions on several memory
layouts, including every function the namespace composes from strata ops.
"""

from __future__ import annotations

import ast
import math
import pathlib

import numpy as np
import pytest

import strata as st
from _strata_helpers import LAYOUTS, ST2NP, array_api_namespace, assert_values, laid_out, to_np


xp = pytest.fixture(array_api_namespace, scope="module", autouse=True, name="xp")


RNG = np.random.default_rng

STANDARD_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "uint64", "float32", "float64", "complex64", "complex128"]
INTEGER_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]

# The 2024.12 main namespace (without complex-only functions' absence: conj/real/imag are
# defined for real-valued arrays since 2024.12).
STANDARD_FUNCTIONS = """
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like
tril triu zeros zeros_like
astype can_cast finfo iinfo isdtype result_type
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert
bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp
expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal
log log1p log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum
multiply negative nextafter not_equal positive pow real reciprocal remainder round sign signbit
sin sinh square sqrt subtract tan tanh trunc
take take_along_axis
matmul matrix_transpose tensordot vecdot
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape roll
squeeze stack tile unstack
argmax argmin count_nonzero nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values
argsort sort
cumulative_prod cumulative_sum max mean min prod std sum var
all any diff
""".split()


def sample(shape, dt, seed=0):
    """NumPy values of strata dtype ``dt``: small integers, halves for floats."""
    rng = RNG(seed)
    npdt = ST2NP[dt]
    if dt == st.bool:
        return rng.random(shape) < 0.5
    if dt in (st.uint8, st.uint16, st.uint32, st.uint64):
        return rng.integers(0, 30, size=shape).astype(npdt)
    if npdt.kind == "i":
        return rng.integers(-20, 21, size=shape).astype(npdt)
    return (rng.integers(-8, 9, size=shape) / 2).astype(npdt)


# ---------------------------------------------------------------------- names and info

def test_version_constants_and_names(xp):
    assert xp.__array_api_version__ == "2024.12"
    assert xp.e == math.e and xp.pi == math.pi and xp.inf == math.inf and math.isnan(xp.nan)
    assert xp.newaxis is None
    for name in STANDARD_DTYPES:
        assert getattr(xp, name) == getattr(st, name)
    missing = [f for f in STANDARD_FUNCTIONS if not callable(getattr(xp, f, None))]
    assert not missing, missing
    assert set(STANDARD_FUNCTIONS) <= set(xp.__all__)
    for name in xp.__all__:
        assert hasattr(xp, name), name


def test_namespace_never_imports_numpy(xp):
    """The design rule: a naming layer over strata's ops, no round trip through NumPy."""
    for path in pathlib.Path(xp.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "numpy" for a in node.names), path
            elif isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "numpy", path


def test_info(xp):
    info = xp.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True,
                                   "max dimensions": 64}
    assert info.default_device() == "cpu" and "cpu" in info.devices()
    assert isinstance(info.devices(), list)
    d = info.default_dtypes(device="cpu")
    assert d["real floating"] == xp.float32
    assert d["integral"] == xp.int64 and d["indexing"] == xp.int64
    assert info.default_dtypes() == d
    assert sorted(info.dtypes()) == sorted(STANDARD_DTYPES)
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8",
                                                 "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert info.dtypes(kind="complex floating") == {"complex64": xp.complex64,
                                                    "complex128": xp.complex128}
    assert d["complex floating"] == xp.complex64
    assert set(info.dtypes(kind="numeric")) == set(STANDARD_DTYPES) - {"bool"}
    assert set(info.dtypes(kind=("bool", "real floating"))) == {"bool", "float32", "float64"}
    assert info.dtypes(kind="bool") == {"bool": xp.bool}
    with pytest.raises(ValueError):
        info.dtypes(device="tpu")
    # The defaults are what the creation functions give.
    assert xp.asarray(1.0).dtype == xp.float32 and xp.asarray(1).dtype == xp.int64
    assert xp.asarray(True).dtype == xp.bool and xp.zeros(2).dtype == xp.float32
    assert xp.arange(3).dtype == xp.int64 and xp.arange(3.0).dtype == xp.float32


# ------------------------------------------------------------------- data type functions

def _np_std(a, b):
    """The standard's promotion, from NumPy's (which adds only uint64 + signed -> float64)."""
    na, nb = np.dtype(a), np.dtype(b)
    if {na.kind, nb.kind} == {"u", "i"} and max(na.itemsize if na.kind == "u" else 0,
                                                    nb.itemsize if nb.kind == "u" else 0) == 8:
        return None
    return np.result_type(na, nb).name


def test_result_type_table(xp):
    names = STANDARD_DTYPES[1:]  # numeric; bool with bool below
    for a in names:
        for b in names:
            if (a[0] in "fc") != (b[0] in "fc"):
                continue  # mixed kinds: unspecified
            expected = _np_std(a, b)
            if expected is None:
                with pytest.raises(TypeError):
                    xp.result_type(getattr(xp, a), getattr(xp, b))
                continue
            got = xp.result_type(getattr(xp, a), getattr(xp, b))
            assert got.name == expected, (a, b, got)
            # Arrays (0-d and 1-D) promote as their dtypes do.
            x = xp.zeros((), dtype=getattr(xp, a))
            y = xp.zeros(2, dtype=getattr(xp, b))
            assert xp.result_type(x, y).name == expected
    assert xp.result_type(xp.bool, xp.bool) == xp.bool
    assert xp.result_type(xp.int8, xp.int16, xp.uint8) == xp.int16
    # Python scalars are weak (2024.12).
    assert xp.result_type(xp.int8, 1) == xp.int8
    assert xp.result_type(xp.float32, 1.0, 2) == xp.float32
    assert xp.result_type(xp.bool, True) == xp.bool
    assert xp.result_type(xp.uint8, 1, xp.zeros(1, dtype=xp.int8)) == xp.int16
    with pytest.raises(TypeError):
        xp.result_type(1, 2.0)


def test_can_cast_isdtype(xp):
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.int16, xp.int8)
    assert xp.can_cast(xp.uint8, xp.int16) and not xp.can_cast(xp.uint16, xp.int16)
    assert xp.can_cast(xp.float32, xp.float64) and not xp.can_cast(xp.float64, xp.float32)
    assert not xp.can_cast(xp.int8, xp.float32) and not xp.can_cast(xp.float32, xp.int64)
    assert xp.can_cast(xp.bool, xp.bool) and not xp.can_cast(xp.bool, xp.int8)
    assert xp.can_cast(xp.zeros(2, dtype=xp.int8), xp.int32)
    cases = {
        "bool": ["bool"],
        "signed integer": ["int8", "int16", "int32", "int64"],
        "unsigned integer": ["uint8", "uint16", "uint32", "uint64"],
        "real floating": ["float32", "float64"],
        "complex floating": ["complex64", "complex128"],
    }
    for kind, members in cases.items():
        for name in STANDARD_DTYPES:
            assert xp.isdtype(getattr(xp, name), kind) == (name in members), (name, kind)
    assert xp.isdtype(xp.int8, "integral") and xp.isdtype(xp.uint64, "numeric")
    assert not xp.isdtype(xp.bool, "numeric")
    assert xp.isdtype(xp.float16, "real floating")  # strata's extension of the kind
    assert xp.isdtype(xp.int8, xp.int8) and not xp.isdtype(xp.int8, xp.int16)
    assert xp.isdtype(xp.int8, ("real floating", xp.int8))
    with pytest.raises(ValueError):
        xp.isdtype(xp.int8, "integer")


def test_finfo_iinfo(xp):
    for name in ["float32", "float64", "float16"]:
        got, ref = xp.finfo(getattr(xp, name)), np.finfo(name)
        assert got.bits == ref.bits and got.dtype == getattr(xp, name)
        assert got.eps == float(ref.eps) and got.max == float(ref.max) and got.min == float(ref.min)
        assert got.smallest_normal == float(ref.smallest_normal)
        assert all(isinstance(v, float) for v in (got.eps, got.max, got.min, got.smallest_normal))
    assert xp.finfo(xp.ones(1, dtype=xp.float64)).bits == 64
    for name in INTEGER_DTYPES:
        got, ref = xp.iinfo(getattr(xp, name)), np.iinfo(name)
        assert (got.bits, got.min, got.max) == (ref.bits, ref.min, ref.max)
        assert got.dtype == getattr(xp, name)
    for name, part in [("complex64", "float32"), ("complex128", "float64")]:
        got, ref = xp.finfo(getattr(xp, name)), np.finfo(name)
        assert got.bits == ref.bits and got.eps == float(ref.eps) and got.dtype == getattr(xp, part)
    with pytest.raises(ValueError):
        xp.finfo(xp.int32)
    with pytest.raises(ValueError):
        xp.iinfo(xp.float32)


def test_astype_copy_semantics(xp):
    x = xp.asarray([1.5, -2.5, 0.0])
    y = xp.astype(x, xp.float32)
    assert y is not x and y.untyped_storage() != x.untyped_storage()
    assert xp.astype(x, xp.float32, copy=False) is x
    z = xp.astype(x, xp.int32, copy=False)
    assert z.dtype == xp.int32 and z.tolist() == [1, -2, 0]
    assert xp.astype(x, xp.bool).tolist() == [True, True, False]
    assert xp.astype(x, xp.float64, device="cpu").dtype == xp.float64


# ------------------------------------------------------------------------------ creation

def test_asarray_copy_semantics(xp):
    x = xp.asarray([[1, 2], [3, 4]])
    assert x.dtype == xp.int64
    assert xp.asarray(x) is x and xp.asarray(x, copy=False) is x
    c = xp.asarray(x, copy=True)
    assert c.untyped_storage() != x.untyped_storage() and c.tolist() == x.tolist()
    assert xp.asarray(x, dtype=xp.int8).dtype == xp.int8
    with pytest.raises(ValueError):
        xp.asarray(x, dtype=xp.int8, copy=False)
    with pytest.raises(ValueError):
        xp.asarray([1, 2], copy=False)
    # Buffer-protocol input (a NumPy array) is shared unless a copy is asked for.
    a = np.arange(4.0)
    shared = xp.asarray(a)
    assert shared.dtype == xp.float64
    a[0] = 7.0
    assert shared.tolist()[0] == 7.0
    assert xp.asarray(a, copy=False).tolist()[0] == 7.0
    copied = xp.asarray(a, copy=True)
    a[0] = 8.0
    assert copied.tolist()[0] == 7.0
    # Nested sequences of Python scalars and 0-d arrays; the default dtypes.
    assert xp.asarray([xp.asarray(1.5), 2.0]).tolist() == [1.5, 2.0]
    assert xp.asarray([[True, False]]).dtype == xp.bool
    assert xp.asarray([1, 2.5]).dtype == xp.float32
    assert xp.asarray(2**64 - 1, dtype=xp.uint64).tolist() == 2**64 - 1


@pytest.mark.parametrize(
    "args",
    [(5,), (2, 9, 3), (9, 2, -3), (5, 0), (0, 5, -1), (0.0, 1.0, 0.25), (1, 0, -0.3), (3.0,), (-2, 2)],
)
def test_arange(xp, args):
    got = xp.arange(*args)
    ref = np.arange(*args)
    assert got.shape == ref.shape
    assert got.dtype == (xp.float32 if ref.dtype.kind == "f" else xp.int64)
    np.testing.assert_allclose(to_np(got), ref, rtol=1e-6, atol=1e-6)
    assert xp.arange(1, 7, 2, dtype=xp.int8).dtype == xp.int8


def test_creation_functions(xp):
    for n, m, k in [(3, None, 0), (3, 4, 1), (4, 3, -2), (2, 5, 7), (3, 3, -3), (0, 2, 1)]:
        assert_values(xp.eye(n, m, k=k), np.eye(n, m, k=k), dtype=xp.float32)
    assert xp.eye(3, dtype=xp.int8, k=1).dtype == xp.int8
    assert_values(xp.linspace(0, 1, 5), np.linspace(0, 1, 5), dtype=xp.float32)
    assert_values(xp.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False))
    assert_values(xp.linspace(2.0, -1.0, 7, dtype=xp.float64), np.linspace(2.0, -1.0, 7), dtype=xp.float64)
    assert xp.full((2, 3), 7).dtype == xp.int64 and xp.full(2, 1.5).dtype == xp.float32
    assert xp.full((), True).dtype == xp.bool
    assert xp.zeros(3).shape == (3,) and xp.ones((2, 0)).shape == (2, 0)
    assert xp.empty((2, 2), dtype=xp.uint16).dtype == xp.uint16
    x = xp.asarray([[1, 2, 3]], dtype=xp.int16)
    for fn, val in [(xp.zeros_like, 0), (xp.ones_like, 1)]:
        y = fn(x)
        assert y.dtype == xp.int16 and y.shape == (1, 3) and y.tolist() == [[val] * 3]
    assert xp.full_like(x, 9, dtype=xp.float64).tolist() == [[9.0] * 3]
    assert xp.empty_like(x, dtype=xp.bool).dtype == xp.bool
    a, b = np.arange(3.0), np.arange(4.0) * 2
    for indexing in ("xy", "ij"):
        got = xp.meshgrid(xp.asarray(a), xp.asarray(b), indexing=indexing)
        assert isinstance(got, list)
        for g, r in zip(got, np.meshgrid(a, b, indexing=indexing)):
            assert_values(g, r)
    m = sample((3, 4, 5), st.float32)
    for layout in LAYOUTS:
        t = laid_out(m, layout)
        for k in (-2, 0, 1):
            assert_values(xp.tril(t, k=k), np.tril(m, k=k))
            assert_values(xp.triu(t, k=k), np.triu(m, k=k))
    d = xp.from_dlpack(np.arange(3))
    assert d.tolist() == [0, 1, 2]


# --------------------------------------------------------------------------- elementwise

UNARY = {
    "abs": np.abs, "negative": np.negative, "positive": np.positive, "square": np.square,
    "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round,
    "exp": np.exp, "sin": np.sin, "tanh": np.tanh, "isnan": np.isnan, "signbit": np.signbit,
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "copysign": np.copysign, "hypot": np.hypot,
    "atan2": np.arctan2, "logaddexp": np.logaddexp, "greater": np.greater,
    "less_equal": np.less_equal, "equal": np.equal, "not_equal": np.not_equal,
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_elementwise_on_layouts(xp, layout):
    a = sample((3, 4), st.float32, seed=1)
    b = sample((3, 4), st.float32, seed=2)
    ta, tb = laid_out(a, layout), laid_out(b, layout)
    for name, ref in UNARY.items():
        assert_values(getattr(xp, name)(ta), ref(a))
    for name, ref in BINARY.items():
        assert_values(getattr(xp, name)(ta, tb), ref(a, b))
    i = sample((3, 4), st.int16, seed=3)
    j = np.abs(sample((3, 4), st.int16, seed=4)) % 5
    ti, tj = laid_out(i, layout), laid_out(j, layout)
    assert_values(xp.bitwise_left_shift(ti, tj), np.left_shift(i, j), dtype=xp.int16)
    assert_values(xp.bitwise_invert(ti), np.invert(i), dtype=xp.int16)
    assert_values(xp.floor_divide(ti, tj + 1), np.floor_divide(i, j + 1), dtype=xp.int16)
    assert_values(xp.remainder(ti, tj + 1), np.remainder(i, j + 1), dtype=xp.int16)
    assert_values(xp.abs(ti), np.abs(i), dtype=xp.int16)
    assert_values(xp.ceil(ti), i, dtype=xp.int16)  # identity on integers


def test_elementwise_scalars_and_promotion(xp):
    x = xp.asarray([1, 2, 3], dtype=xp.int8)
    assert xp.add(x, 1).dtype == xp.int8 and xp.add(1, x).tolist() == [2, 3, 4]
    assert xp.subtract(10, x).tolist() == [9, 8, 7] and xp.pow(2, x).tolist() == [2, 4, 8]
    f = xp.asarray([1.0, 2.0], dtype=xp.float64)
    assert xp.multiply(f, 2).dtype == xp.float64 and xp.divide(1, f).tolist() == [1.0, 0.5]
    assert xp.less(x, 2).tolist() == [True, False, False]
    assert xp.logical_and(xp.asarray([True, False]), True).tolist() == [True, False]
    with pytest.raises(TypeError):
        xp.add(1, 2)
    # The standard's promotion where strata's own differs: unsigned wide integers ...
    u8, u16 = xp.asarray([200], dtype=xp.uint8), xp.asarray([60000], dtype=xp.uint16)
    assert xp.add(u8, u16).dtype == xp.uint16 and xp.add(u8, u16).tolist() == [60200]
    assert xp.add(xp.asarray([-1], dtype=xp.int8), u16).dtype == xp.int32
    assert xp.equal(u16, xp.asarray([60000], dtype=xp.uint32)).tolist() == [True]
    assert xp.maximum(xp.asarray([1], dtype=xp.uint32), xp.asarray([-5], dtype=xp.int64)).dtype == xp.int64
    # ... and a 0-d array of a wider dtype of the same kind.
    assert xp.add(xp.asarray(1.0, dtype=xp.float64), xp.ones(2)).dtype == xp.float64
    assert xp.multiply(xp.ones(2, dtype=xp.int8), xp.asarray(300, dtype=xp.int16)).dtype == xp.int16
    assert xp.where(xp.asarray([True, False]), xp.asarray(1.0, dtype=xp.float64), xp.zeros(2)).dtype == xp.float64
    assert_values(xp.clip(xp.asarray([1, 5, 9], dtype=xp.int8), 2, 6), [2, 5, 6], dtype=xp.int8)
    assert_values(xp.clip(xp.asarray([1.0, 5.0, 9.0]), max=4.0), [1.0, 4.0, 4.0])
    assert xp.conj(f).tolist() == [1.0, 2.0] and xp.real(f).tolist() == [1.0, 2.0]
    assert xp.imag(f).tolist() == [0.0, 0.0]


# -------------------------------------------------------------------- indexing, linalg

@pytest.mark.parametrize("layout", LAYOUTS)
def test_indexing_and_linalg(xp, layout):
    a = sample((3, 4, 5), st.float64, seed=5)
    t = laid_out(a, layout)
    idx = np.array([0, -1, 2, -3])
    assert_values(xp.take(t, xp.asarray(idx), axis=1), np.take(a, idx, axis=1))
    assert_values(xp.take(t[0, 0], xp.asarray(idx)), np.take(a[0, 0], idx))
    ind = RNG(1).integers(-5, 5, size=(3, 4, 2))
    assert_values(xp.take_along_axis(t, xp.asarray(ind), axis=2), np.take_along_axis(a, ind, axis=2))
    ind2 = RNG(2).integers(-4, 4, size=(3, 2, 1))  # broadcasts along the last dim
    assert_values(xp.take_along_axis(t, xp.asarray(ind2), axis=-2), np.take_along_axis(a, ind2, axis=-2))
    assert_values(xp.matrix_transpose(t), np.swapaxes(a, -1, -2), exact=True)
    b = sample((5, 2), st.float64, seed=6)
    assert_values(xp.matmul(t, xp.asarray(b)), a @ b)
    assert_values(xp.matmul(t, xp.asarray(b, dtype=xp.float32)), a @ b)  # promoted
    assert_values(xp.tensordot(t, xp.asarray(b), axes=1), np.tensordot(a, b, axes=1))
    c = sample((4, 3, 6), st.float64, seed=7)
    assert_values(xp.tensordot(t, xp.asarray(c), axes=([0, 1], [1, 0])),
                  np.tensordot(a, c, axes=([0, 1], [1, 0])))
    assert_values(xp.tensordot(t, xp.asarray(c), axes=0), np.tensordot(a, c, axes=0))
    v = sample((4, 5), st.float64, seed=8)
    assert_values(xp.vecdot(t, xp.asarray(v)), np.sum(a * v, axis=-1))
    w = sample((3, 4, 1), st.float64, seed=9)  # broadcasts along the last dim
    assert_values(xp.vecdot(t, xp.asarray(w), axis=1), np.sum(a * w, axis=1))
    i = sample((2, 3), st.int8, seed=9)
    assert_values(xp.vecdot(xp.asarray(i), xp.asarray(i)), np.sum(i * i, axis=-1, dtype=np.int8),
                  dtype=xp.int8)


# --------------------------------------------------------------------------- manipulation

@pytest.mark.parametrize("layout", LAYOUTS)
def test_manipulation(xp, layout):
    a = sample((2, 3, 4), st.int32, seed=10)
    t = laid_out(a, layout)
    for axis in (None, 0, 1, -1):
        assert_values(xp.repeat(t, 3, axis=axis), np.repeat(a, 3, axis=axis), dtype=xp.int32)
    reps = np.array([2, 0, 1])
    assert_values(xp.repeat(t, xp.asarray(reps), axis=1), np.repeat(a, reps, axis=1))
    assert_values(xp.repeat(t, xp.asarray([2]), axis=0), np.repeat(a, [2], axis=0))
    assert_values(xp.repeat(t, 0, axis=2), np.repeat(a, 0, axis=2))
    assert_values(xp.permute_dims(t, (2, 0, 1)), np.transpose(a, (2, 0, 1)), exact=True)
    assert_values(xp.moveaxis(t, 0, -1), np.moveaxis(a, 0, -1))
    assert_values(xp.moveaxis(t, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    assert_values(xp.flip(t), np.flip(a))
    assert_values(xp.flip(t, axis=(0, 2)), np.flip(a, axis=(0, 2)))
    assert_values(xp.roll(t, 2), np.roll(a, 2))
    assert_values(xp.roll(t, (1, -1), axis=(0, 2)), np.roll(a, (1, -1), axis=(0, 2)))
    assert_values(xp.tile(t, (2, 1, 1, 2)), np.tile(a, (2, 1, 1, 2)))
    assert_values(xp.tile(t, (2,)), np.tile(a, (2,)))
    assert_values(xp.expand_dims(t, -1), np.expand_dims(a, -1))
    assert_values(xp.expand_dims(t, -4), np.expand_dims(a, -4))
    with pytest.raises(IndexError):
        xp.expand_dims(t, 4)
    assert_values(xp.squeeze(xp.expand_dims(t, 1), 1), a)
    with pytest.raises(ValueError):
        xp.squeeze(t, 0)
    parts = xp.unstack(t, axis=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    for p, r in zip(parts, np.moveaxis(a, 1, 0)):
        assert_values(p, r)
    assert_values(xp.broadcast_to(t[:, :1], (5, 2, 3, 4)), np.broadcast_to(a[:, :1], (5, 2, 3, 4)))
    b1, b2 = xp.broadcast_arrays(t[:, :1], xp.asarray(np.arange(4)))
    assert b1.shape == b2.shape == (2, 1, 4)
    # reshape: copy=None views when it can, copy=True never shares, copy=False never copies.
    assert_values(xp.reshape(t, (4, -1)), a.reshape(4, -1))
    r = xp.reshape(t, (24,), copy=True)
    assert r.untyped_storage() != t.untyped_storage()
    assert_values(r, a.reshape(24))
    if layout == "contig":
        v = xp.reshape(t, (6, 4), copy=False)
        assert v.untyped_storage() == t.untyped_storage()
    if layout == "transposed":
        with pytest.raises(ValueError):
            xp.reshape(t, (24,), copy=False)


def test_concat_stack(xp):
    a, b = sample((2, 3), st.int8, seed=11), sample((1, 3), st.int8, seed=12)
    assert_values(xp.concat([xp.asarray(a), xp.asarray(b)]), np.concatenate([a, b]))
    assert_values(xp.concat([xp.asarray(a), xp.asarray(a.T.copy())], axis=None),
                  np.concatenate([a, a.T], axis=None))
    assert_values(xp.concat((xp.asarray(a), xp.asarray(a)), axis=-1), np.concatenate([a, a], axis=-1))
    u16 = xp.asarray(b.astype(np.uint16) % 5)
    out = xp.concat([xp.asarray(b.astype(np.uint8) % 5), u16])
    assert out.dtype == xp.uint16
    assert xp.concat([xp.asarray(b), u16]).dtype == xp.int32
    s = xp.stack([xp.asarray(a), xp.asarray(a) * 2], axis=1)
    assert_values(s, np.stack([a, a * 2], axis=1))
    assert xp.stack([xp.asarray([1], dtype=xp.uint8), xp.asarray([2], dtype=xp.uint32)]).dtype == xp.uint32


# ----------------------------------------------------------- searching, sets and sorting

@pytest.mark.parametrize("layout", LAYOUTS)
def test_searching(xp, layout):
    a = sample((3, 4), st.float32, seed=13)
    a[1, 2] = np.nan
    t = laid_out(a, layout)
    for axis in (None, 0, 1):
        for keepdims in (False, True):
            assert_values(xp.count_nonzero(t, axis=axis, keepdims=keepdims),
                          np.count_nonzero(a, axis=axis, keepdims=keepdims), dtype=xp.int64)
    assert_values(xp.count_nonzero(t, axis=(0, 1)), np.count_nonzero(a, axis=(0, 1)))
    b = sample((3, 4), st.int16, seed=14)
    tb = laid_out(b, layout)
    assert_values(xp.argmax(tb, axis=1), np.argmax(b, axis=1), dtype=xp.int64)
    assert_values(xp.argmin(tb, axis=0, keepdims=True), np.argmin(b, axis=0, keepdims=True))
    assert_values(xp.argmax(tb, keepdims=True), np.argmax(b, keepdims=True).reshape(1, 1))
    got = xp.nonzero(tb)
    assert isinstance(got, tuple) and len(got) == 2
    for g, r in zip(got, np.nonzero(b)):
        assert_values(g, r)
    with pytest.raises(ValueError):
        xp.nonzero(xp.asarray(1))
    seq = np.sort(sample((10,), st.float64, seed=15))
    q = sample((2, 3), st.float64, seed=16)
    for side in ("left", "right"):
        assert_values(xp.searchsorted(xp.asarray(seq), xp.asarray(q), side=side),
                      np.searchsorted(seq, q, side=side))
    perm = RNG(0).permutation(10)
    unsorted = seq[perm]
    sorter = np.argsort(unsorted, kind="stable")
    assert_values(xp.searchsorted(xp.asarray(unsorted), xp.asarray(q), sorter=xp.asarray(sorter)),
                  np.searchsorted(unsorted, q, sorter=sorter))
    cond = sample((3, 4), st.bool, seed=17)
    assert_values(xp.where(xp.asarray(cond), t, 0.5), np.where(cond, a, np.float32(0.5)))
    assert_values(xp.where(xp.asarray(cond), -1, tb), np.where(cond, np.int16(-1), b))


def test_sets(xp):
    x = np.array([[3, 1, 3], [2, 1, 7]], dtype=np.int32)
    vals, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for layout in LAYOUTS:
        t = laid_out(x, layout)
        got = xp.unique_all(t)
        assert type(got).__name__ == "UniqueAllResult"
        assert_values(got.values, vals, dtype=xp.int32)
        assert_values(got.indices, index)
        assert_values(got.inverse_indices, inverse.reshape(x.shape))
        assert_values(got.counts, counts)
        c = xp.unique_counts(t)
        assert_values(c.values, vals) and assert_values(c.counts, counts)
        i = xp.unique_inverse(t)
        assert_values(i.values, vals) and assert_values(i.inverse_indices, inverse.reshape(x.shape))
        assert_values(xp.unique_values(t), vals)
    # NaNs are distinct.
    f = xp.asarray([1.0, math.nan, 1.0, math.nan])
    u = xp.unique_all(f)
    assert u.values.shape == (3,) and u.counts.tolist() == [2, 1, 1]
    assert u.indices.tolist()[0] == 0 and sorted(u.indices.tolist()[1:]) == [1, 3]
    assert xp.unique_values(xp.asarray(5)).tolist() == [5]
    e = xp.unique_all(xp.zeros((0, 2)))
    assert e.values.shape == e.indices.shape == e.counts.shape == (0,)
    assert e.inverse_indices.shape == (0, 2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sorting(xp, layout):
    a = RNG(18).integers(0, 4, size=(3, 8)).astype(np.float32)
    t = laid_out(a, layout)
    for axis in (0, -1):
        assert_values(xp.sort(t, axis=axis), np.sort(a, axis=axis))
        assert_values(xp.argsort(t, axis=axis), np.argsort(a, axis=axis, kind="stable"))
        # Descending and stable: ties keep their order.
        desc = np.flip(np.argsort(np.flip(-a, axis=axis), axis=axis, kind="stable"), axis=axis)
        ref = np.argsort(-a, axis=axis, kind="stable")
        assert_values(xp.argsort(t, axis=axis, descending=True), ref)
        assert_values(xp.sort(t, axis=axis, descending=True), np.take_along_axis(a, ref, axis=axis))
        del desc
    assert xp.argsort(t, stable=False).shape == (3, 8)


# ---------------------------------------------------------------------- statistics, utility

@pytest.mark.parametrize("layout", LAYOUTS)
def test_statistics(xp, layout):
    a = sample((3, 4, 2), st.float64, seed=19)
    t = laid_out(a, layout)
    for axis in (None, 0, (0, 2), -1):
        for keepdims in (False, True):
            kw = {"axis": axis, "keepdims": keepdims}
            assert_values(xp.sum(t, **kw), np.sum(a, **kw), dtype=xp.float64)
            assert_values(xp.prod(t, **kw), np.prod(a, **kw))
            assert_values(xp.mean(t, **kw), np.mean(a, **kw))
            assert_values(xp.max(t, **kw), np.max(a, **kw))
            assert_values(xp.min(t, **kw), np.min(a, **kw))
            for correction in (0, 1, 0.5):
                assert_values(xp.var(t, correction=correction, **kw), np.var(a, ddof=correction, **kw))
                assert_values(xp.std(t, correction=correction, **kw), np.std(a, ddof=correction, **kw))
    # axis=() reduces nothing.
    assert_values(xp.sum(t, axis=()), a)
    assert_values(xp.max(t, axis=()), a)
    assert_values(xp.var(t, axis=()), np.zeros_like(a))
    assert_values(xp.all(t, axis=()), a != 0, dtype=xp.bool)
    i = sample((3, 4), st.int8, seed=20)
    ti = laid_out(i, layout)
    assert_values(xp.sum(ti), np.sum(i, dtype=np.int64), dtype=xp.int64)
    assert xp.sum(xp.asarray(i.astype(np.uint8) % 7)).dtype == xp.uint64
    assert xp.prod(xp.asarray([True, True])).dtype == xp.int64
    assert_values(xp.sum(ti, axis=1, dtype=xp.float64), np.sum(i, axis=1, dtype=np.float64), dtype=xp.float64)
    assert_values(xp.sum(ti, dtype=xp.int16), np.sum(i, dtype=np.int16), dtype=xp.int16)
    assert xp.sum(xp.ones(2, dtype=xp.float32), dtype=xp.float64).dtype == xp.float64
    for axis in (0, 1, -1):
        for incl in (False, True):
            ref = np.cumsum(i, axis=axis, dtype=np.int64)
            refp = np.cumprod(i, axis=axis, dtype=np.int64)
            if incl:
                pad = [(0, 0)] * 2
                pad[axis] = (1, 0)
                ref = np.pad(ref, pad)
                refp = np.pad(refp, pad, constant_values=1)
            assert_values(xp.cumulative_sum(ti, axis=axis, include_initial=incl), ref, dtype=xp.int64)
            assert_values(xp.cumulative_prod(ti, axis=axis, include_initial=incl), refp, dtype=xp.int64)
    v = xp.asarray([1, 2, 3], dtype=xp.uint8)
    assert xp.cumulative_sum(v).dtype == xp.uint64
    assert_values(xp.cumulative_sum(v, dtype=xp.float32, include_initial=True), [0, 1, 3, 6], dtype=xp.float32)
    assert_values(xp.cumulative_prod(xp.asarray([1.5, 2.0])), [1.5, 3.0], dtype=xp.float32)
    with pytest.raises(ValueError):
        xp.cumulative_sum(ti)  # axis is required above 1-D


@pytest.mark.parametrize("layout", LAYOUTS)
def test_utility(xp, layout):
    a = RNG(21).integers(0, 3, size=(3, 4)).astype(np.uint8)
    t = laid_out(a, layout)
    for axis in (None, 0, (0, 1), -1):
        for keepdims in (False, True):
            for name in ("all", "any"):
                got = getattr(xp, name)(t, axis=axis, keepdims=keepdims)
                assert_values(got, getattr(np, name)(a, axis=axis, keepdims=keepdims), dtype=xp.bool)
    f = sample((3, 5), st.float32, seed=22)
    tf = laid_out(f, layout)
    assert_values(xp.diff(tf), np.diff(f))
    assert_values(xp.diff(tf, axis=0, n=2), np.diff(f, axis=0, n=2))
    pre, app = f[:, :1] * 3, f[:, :2]
    assert_values(xp.diff(tf, prepend=xp.asarray(pre), append=xp.asarray(app)),
                  np.diff(f, prepend=pre, append=app))


# ---------------------------------------------------------------------- the array object

def test_array_attributes(xp):
    x = xp.reshape(xp.arange(6, dtype=xp.float64), (2, 3))
    assert x.shape == (2, 3) and x.ndim == 2 and x.dtype == xp.float64 and x.device == "cpu"
    assert x.mT.shape == (3, 2) and x.T.shape == (3, 2)
    assert x.__dlpack_device__() == (1, 0)


def test_size_is_an_attribute(xp):
    """The namespace's arrays have the standard's attribute; strata's Tensor keeps
    PyTorch's method (test_array_api_array checks the rest of the Array type)."""
    assert xp.ones((2, 3)).size == 6
    assert st.ones((2, 3)).size() == (2, 3)


needs_namespace = pytest.mark.skipif(
    not hasattr(st.Tensor, "__array_namespace__"), reason="Tensor.__array_namespace__ not built in yet"
)


@needs_namespace
def test_array_namespace_method(xp):
    x = xp.ones(2)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2024.12") is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    for bad in ("2021.12", "2022.12", "2025.12", "latest"):
        with pytest.raises(ValueError):
            x.__array_namespace__(api_version=bad)


@pytest.mark.skipif(not hasattr(st.Tensor, "to_device"), reason="Tensor.to_device not built in yet")
def test_to_device(xp):
    x = xp.asarray([1.0, 2.0])
    y = x.to_device(x.device)
    assert y.device == x.device and y.tolist() == [1.0, 2.0]
    assert x.to_device("cpu", stream=None).device == "cpu"


def test_complex_dtypes_and_promotion(xp):
    assert xp.result_type(xp.float64, xp.complex64) == xp.complex128
    assert xp.result_type(xp.float32, xp.complex64) == xp.complex64
    assert xp.result_type(xp.complex64, xp.complex128) == xp.complex128
    assert xp.result_type(xp.int8, xp.complex64) == xp.complex64
    assert xp.result_type(xp.float64, 1j) == xp.complex128
    assert xp.result_type(xp.complex64, 2.5) == xp.complex64
    assert xp.can_cast(xp.float32, xp.complex64) and not xp.can_cast(xp.float64, xp.complex64)
    assert xp.can_cast(xp.complex64, xp.complex128) and not xp.can_cast(xp.complex64, xp.float64)
    assert not xp.can_cast(xp.int8, xp.complex64)
    x = xp.asarray([1 + 2j, 3])
    assert x.dtype == xp.complex64 and xp.asarray(1j).dtype == xp.complex64
    assert xp.full((2,), 1j).tolist() == [1j, 1j]
    assert xp.real(x).tolist() == [1.0, 3.0] and xp.imag(x).tolist() == [2.0, 0.0]
    assert xp.conj(x).tolist() == [1 - 2j, 3 - 0j]
    r = xp.real(x)
    r[0] = 9.0  # a new array, not a view
    assert x.tolist()[0] == 1 + 2j
    np.testing.assert_allclose(xp.linspace(0, 2 + 4j, 3).numpy(), np.linspace(0, 2 + 4j, 3))
    np.testing.assert_allclose(xp.linspace(0, 2 + 4j, 2, endpoint=False).numpy(), np.linspace(0, 2 + 4j, 2, endpoint=False))
    assert xp.linspace(0, 1j, 3, dtype=xp.complex128).dtype == xp.complex128
    assert xp.multiply(x, 1j).tolist() == [-2 + 1j, 3j]
    assert xp.abs(x).dtype == xp.float32


# ------------------------------------------------------------- the linalg and fft extensions

LINALG_FUNCTIONS = """
cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank
matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm
""".split()
FFT_FUNCTIONS = """
fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift ifftshift
""".split()


def test_extension_names(xp):
    for mod, names in [(xp.linalg, LINALG_FUNCTIONS), (xp.fft, FFT_FUNCTIONS)]:
        missing = [f for f in names if not callable(getattr(mod, f, None))]
        assert not missing, missing
        assert set(names) <= set(mod.__all__)
    assert "linalg" in xp.__all__ and "fft" in xp.__all__


def _crand(shape, npdt, seed):
    g = RNG(seed)
    x = g.standard_normal(shape)
    if np.issubdtype(npdt, np.complexfloating):
        x = x + 1j * g.standard_normal(shape)
    return x.astype(npdt)


LINALG_DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _tol(npdt):
    return dict(rtol=2e-4, atol=2e-4) if npdt in (np.float32, np.complex64) else dict(rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("npdt", LINALG_DTYPES)
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped", "numpy_view"])
def test_linalg_extension(xp, npdt, layout):
    L = xp.linalg
    tol = _tol(npdt)
    a = _crand((2, 4, 4), npdt, 1) + 4 * np.eye(4, dtype=npdt)
    t = laid_out(a, layout)
    np.testing.assert_allclose(to_np(L.det(t)), np.linalg.det(a), **tol)
    np.testing.assert_allclose(to_np(L.inv(t)), np.linalg.inv(a), **tol)
    sd = L.slogdet(t)
    ns = np.linalg.slogdet(a)
    np.testing.assert_allclose(to_np(sd.sign), ns.sign, **tol)
    np.testing.assert_allclose(to_np(sd.logabsdet), ns.logabsdet, **tol)
    h = a @ np.conj(np.swapaxes(a, -1, -2))
    th = laid_out(h, layout)
    np.testing.assert_allclose(to_np(L.cholesky(th)), np.linalg.cholesky(h), **tol)
    np.testing.assert_allclose(to_np(L.cholesky(th, upper=True)), np.conj(np.swapaxes(np.linalg.cholesky(h), -1, -2)), **tol)
    e = L.eigh(th)
    assert isinstance(e, tuple) and e.eigenvalues is e[0]
    np.testing.assert_allclose(to_np(e.eigenvalues), np.linalg.eigvalsh(h), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(to_np(L.eigvalsh(th)), np.linalg.eigvalsh(h), rtol=1e-3, atol=1e-3)
    m = _crand((3, 5, 3), npdt, 2)
    tm = laid_out(m, layout)
    q, r = L.qr(tm)
    np.testing.assert_allclose(to_np(q) @ to_np(r), m, **tol)
    assert L.qr(tm, mode="complete").Q.shape == (3, 5, 5)
    u, s, vh = L.svd(tm, full_matrices=False)
    np.testing.assert_allclose((to_np(u) * to_np(s)[..., None, :]) @ to_np(vh), m, **tol)
    np.testing.assert_allclose(to_np(L.svdvals(tm)), np.linalg.svd(m, compute_uv=False), **tol)
    np.testing.assert_allclose(to_np(L.pinv(tm)), np.linalg.pinv(m), **tol)
    assert to_np(L.matrix_rank(tm)).tolist() == np.linalg.matrix_rank(m).tolist()
    # An array rtol broadcast over the batch (one tolerance per matrix).
    rt = np.array([0.0, 0.5, 2.0])
    sv = np.linalg.svd(m, compute_uv=False)
    want = (sv > rt[:, None] * sv.max(-1, keepdims=True)).sum(-1)
    assert to_np(L.matrix_rank(tm, rtol=xp.asarray(rt))).tolist() == want.tolist()
    np.testing.assert_allclose(to_np(L.pinv(tm, rtol=xp.asarray(rt))), np.linalg.pinv(m, rtol=rt), **tol)
    # solve: x2 1-d is a vector, else a stack of matrices broadcast against x1's batch.
    b = _crand((4, 2), npdt, 3)
    np.testing.assert_allclose(to_np(L.solve(t, xp.asarray(b))), np.linalg.solve(a, b), **tol)
    v = _crand((4,), npdt, 4)
    np.testing.assert_allclose(to_np(L.solve(t, xp.asarray(v))), np.linalg.solve(a, v), **tol)
    for o in ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]:
        np.testing.assert_allclose(to_np(L.matrix_norm(tm, ord=o)), np.linalg.norm(m, ord=o, axis=(-2, -1)), **tol)
    assert L.matrix_norm(tm, keepdims=True).shape == (3, 1, 1)
    for o in [1, 2, 3, 0, math.inf, -math.inf]:
        np.testing.assert_allclose(to_np(L.vector_norm(tm, ord=o)), np.linalg.norm(m.ravel(), ord=o), **tol)
        np.testing.assert_allclose(to_np(L.vector_norm(tm, axis=(0, 2), ord=o)), _vnorm(m, o, (0, 2)), **tol)
    assert L.vector_norm(tm).dtype == laid_out(m.real.copy(), "contig").dtype
    np.testing.assert_allclose(to_np(L.trace(tm, offset=-1)), np.trace(m, offset=-1, axis1=-2, axis2=-1), **tol)
    np.testing.assert_array_equal(to_np(L.diagonal(tm, offset=1)), np.diagonal(m, offset=1, axis1=-2, axis2=-1))
    np.testing.assert_allclose(to_np(L.vecdot(tm, tm, axis=1)), np.vecdot(m, m, axis=1), **tol)
    np.testing.assert_allclose(to_np(L.matrix_power(t, 3)), np.linalg.matrix_power(a, 3), **tol)
    np.testing.assert_allclose(to_np(L.matrix_power(t, -2)), np.linalg.matrix_power(a, -2), rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(to_np(L.matrix_power(t, 0)), np.broadcast_to(np.eye(4), a.shape))
    x3, y3 = _crand((2, 3), npdt, 5), _crand((3,), npdt, 6)
    np.testing.assert_allclose(to_np(L.cross(xp.asarray(x3), xp.asarray(y3))), np.cross(x3, y3), **tol)
    np.testing.assert_allclose(to_np(L.outer(xp.asarray(y3), xp.asarray(y3))), np.outer(y3, y3), **tol)


def _vnorm(a, o, axes):
    x = np.abs(a)
    if o == math.inf:
        return x.max(axis=axes)
    if o == -math.inf:
        return x.min(axis=axes)
    if o == 0:
        return (x != 0).sum(axis=axes).astype(x.dtype)
    return (x**o).sum(axis=axes) ** (1 / o)


def test_linalg_extension_errors(xp):
    L = xp.linalg
    with pytest.raises(ValueError, match="cross: the axis -1 must have size 3"):
        L.cross(xp.ones((2, 4)), xp.ones((2, 4)))
    with pytest.raises(ValueError, match="cross: axis 0 must be negative"):
        L.cross(xp.ones((3, 3)), xp.ones((3, 3)), axis=0)
    with pytest.raises(ValueError, match="outer: x1 and x2 must be 1-d"):
        L.outer(xp.ones((2, 2)), xp.ones(2))
    with pytest.raises(ValueError, match="qr: mode must be 'reduced' or 'complete'"):
        L.qr(xp.ones((2, 2)), mode="r")
    with pytest.raises(ValueError, match="det: x must have at least two dims"):
        L.det(xp.ones(3))
    with pytest.raises(st.ShapeError, match="A must be batches of square matrices, but they are 2 by 3"):
        L.inv(xp.ones((2, 3)))
    with pytest.raises(st.ShapeError, match=r"linalg\.matrix_power: A must be batches of square matrices"):
        L.matrix_power(xp.ones((2, 3)), 2)
    with pytest.raises(st.LinAlgError, match="singular"):
        L.solve(xp.zeros((2, 2)), xp.ones(2))
    # Integer matrices compute in the default floating dtype; integer powers stay integer.
    assert L.det(xp.asarray([[2, 0], [0, 3]])).dtype == xp.float32
    assert L.matrix_power(xp.asarray([[1, 1], [1, 0]]), 10).tolist() == [[89, 55], [55, 34]]


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped", "numpy_view"])
def test_fft_extension(xp, npdt, layout):
    F = xp.fft
    tol = _tol(npdt)
    x = _crand((4, 6), npdt, 7)
    t = laid_out(x, layout)
    for norm in ["backward", "ortho", "forward"]:
        got = F.fft(t, norm=norm)
        assert got.dtype == t.dtype
        np.testing.assert_allclose(to_np(got), np.fft.fft(x, norm=norm), **tol)
        np.testing.assert_allclose(to_np(F.ifft(t, n=9, axis=0, norm=norm)), np.fft.ifft(x, n=9, axis=0, norm=norm), **tol)
        np.testing.assert_allclose(to_np(F.fftn(t, norm=norm)), np.fft.fftn(x, norm=norm), **tol)
        np.testing.assert_allclose(to_np(F.ifftn(t, s=[-1, 4], axes=[0, 1], norm=norm)), np.fft.ifftn(x, s=[4, 4], axes=[0, 1], norm=norm), **tol)
        np.testing.assert_allclose(to_np(F.irfft(t, norm=norm)), np.fft.irfft(x, norm=norm), **tol)
        np.testing.assert_allclose(to_np(F.irfftn(t, s=[-1, -1], axes=[0, 1], norm=norm)), np.fft.irfftn(x, s=[4, 10], axes=[0, 1], norm=norm), **tol)
        np.testing.assert_allclose(to_np(F.hfft(t, n=7, norm=norm)), np.fft.hfft(x, n=7, norm=norm), **tol)
    assert F.irfft(t).dtype == laid_out(x.real.copy(), "contig").dtype
    r = x.real.copy()
    tr = laid_out(r, layout)
    np.testing.assert_allclose(to_np(F.rfft(tr, axis=0)), np.fft.rfft(r, axis=0), **tol)
    np.testing.assert_allclose(to_np(F.rfftn(tr, s=[3, 5], axes=[1, 0])), np.fft.rfftn(r, s=[3, 5], axes=[1, 0]), **tol)
    np.testing.assert_allclose(to_np(F.ihfft(tr)), np.fft.ihfft(r), **tol)
    np.testing.assert_array_equal(to_np(F.fftshift(t)), np.fft.fftshift(x))
    np.testing.assert_array_equal(to_np(F.ifftshift(t, axes=[1])), np.fft.ifftshift(x, axes=[1]))
    f = F.fftfreq(7, d=0.5)
    assert f.dtype == xp.float32
    np.testing.assert_allclose(to_np(f), np.fft.fftfreq(7, d=0.5), rtol=1e-6)
    np.testing.assert_allclose(to_np(F.rfftfreq(8, dtype=xp.float64)), np.fft.rfftfreq(8))
    with pytest.raises(ValueError, match="fftn: axes must be given with s"):
        F.fftn(t, s=[2, 2])
    with pytest.raises(ValueError, match="fft: norm must be one of"):
        F.fft(t, norm=None)
    with pytest.raises(ValueError, match="fftfreq: dtype must be a real floating-point dtype"):
        F.fftfreq(4, dtype=xp.complex64)
    with pytest.raises(ValueError, match="fft: n must be positive, got 0"):
        F.fft(t, n=0)


def test_complex_sign_round_and_unique(xp):
    z = np.array([1 + 2j, 1 + 2j, -1j, 3, 0, 2.5 - 1.5j, 1 + 2j], dtype=np.complex128)
    t = xp.asarray(z)
    np.testing.assert_allclose(to_np(xp.sign(t)), np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z))))
    np.testing.assert_array_equal(to_np(xp.round(t)), np.round(z))
    assert xp.sign(xp.asarray([-2.0, 0.0, 3.0])).tolist() == [-1.0, 0.0, 1.0]
    vals = np.unique(z)  # NumPy orders complex values by real then imaginary part
    np.testing.assert_array_equal(to_np(xp.unique_values(t)), vals)
    u = xp.unique_all(t)
    np.testing.assert_array_equal(to_np(u.values), vals)
    np.testing.assert_array_equal(to_np(u.values)[to_np(u.inverse_indices)], z)
    np.testing.assert_array_equal(z[to_np(u.indices)], vals)
    assert to_np(u.counts).tolist() == [np.sum(z == v) for v in vals]
    c = xp.unique_counts(t)
    assert to_np(c.counts).tolist() == to_np(u.counts).tolist()
    inv = xp.unique_inverse(xp.reshape(t[:6], (2, 3)))
    assert inv.inverse_indices.shape == (2, 3)


def test_floor_divide_and_remainder_special_cases(xp):
    """The standard's values where PyTorch's operators differ (the Tensor operators keep
    PyTorch's): ±inf // finite is an infinity, finite // ±inf of the other sign is -0, and
    a zero remainder takes x2's sign. Elsewhere Python's floored semantics."""
    inf = math.inf
    a = np.array([inf, -inf, inf, -inf, 1.0, -1.0, 1.0, -1.0, 7.5, -7.5, -0.0, 0.0, 6.0])
    b = np.array([2.0, 2.0, -2.0, -2.0, inf, inf, -inf, -inf, 2.0, 2.0, 3.0, -3.0, -3.0])
    fd = to_np(xp.floor_divide(xp.asarray(a), xp.asarray(b)))
    want = np.array([inf, -inf, -inf, inf, 0.0, -0.0, -0.0, 0.0, 3.0, -4.0, -0.0, -0.0, -2.0])
    np.testing.assert_array_equal(fd, want)
    assert [math.copysign(1, v) for v in fd[4:8]] == [1, -1, -1, 1]
    r = to_np(xp.remainder(xp.asarray(a[10:]), xp.asarray(b[10:])))
    assert [math.copysign(1, v) for v in r] == [1, -1, -1]
    np.testing.assert_array_equal(to_np(xp.remainder(xp.asarray(a[8:10]), xp.asarray(b[8:10]))), np.remainder(a[8:10], b[8:10]))
    # Scalars on either side, integers unchanged.
    assert to_np(xp.floor_divide(inf, xp.asarray([2.0, -2.0]))).tolist() == [inf, -inf]
    assert to_np(xp.remainder(xp.asarray([-0.0]), 3.0)).tolist() == [0.0]
    assert xp.floor_divide(xp.asarray([7, -7]), 2).tolist() == [3, -4]
    assert xp.remainder(xp.asarray([7, -7]), 2).tolist() == [1, 1]
