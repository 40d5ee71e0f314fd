"""The elementwise op table (crates/strata/src/ops/table.rs) against the runtime surface and
the stubs, and the ops added through it against NumPy: values over dtypes (float16 and
bfloat16 through float32), special values, domain edges, in-place variants, promotion."""

from __future__ import annotations

import ast
import math
import pathlib

import numpy as np
import pytest

import strata as st
from strata import _strata

TABLE = [tuple(r) for r in _strata._op_table()]
STUB = pathlib.Path(st.__file__).with_name("__init__.pyi")


# ----- the table, the runtime surface and the stubs agree


@pytest.fixture(scope="module")
def stub():
    tree = ast.parse(STUB.read_text(), filename=str(STUB))
    module = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    return module, methods


def test_table_shape():
    names = [n for n, _, _ in TABLE]
    assert len(names) == len(set(names))
    for name, arity, inplace in TABLE:
        assert arity in (1, 2, 3)
        assert inplace is None or inplace == name + "_"
    assert {"sinh", "hypot", "copysign", "fmod", "signbit", "where", "clamp"} <= set(names)


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r[0])
def test_table_matches_runtime_and_stubs(row, stub):
    name, arity, inplace = row
    module, methods = stub
    if name != "where":
        assert callable(getattr(st.Tensor, name)), name
        assert name in methods, f"Tensor.{name} missing from __init__.pyi"
    if inplace is not None:
        assert callable(getattr(st.Tensor, inplace)), inplace
        assert inplace in methods, f"Tensor.{inplace} missing from __init__.pyi"
    else:
        assert not hasattr(st.Tensor, name + "_"), f"Tensor.{name}_ exists but not in the table"
    assert callable(getattr(st, name)), f"strata.{name}"
    assert name in module, f"strata.{name} missing from __init__.pyi"
    assert name in st.__all__
    assert (name in st._BINARY) == (arity == 2)


def test_no_elementwise_method_outside_the_table(stub):
    # Every in-place method of the stub whose base is an elementwise op is in the table.
    _, methods = stub
    names = {n for n, _, _ in TABLE}
    inplaces = {ip for _, _, ip in TABLE if ip}
    for m in methods:
        if m.endswith("_") and not m.startswith("_") and m[:-1] in names:
            assert m in inplaces, m


def test_every_rust_inplace_op_is_reachable_from_python():
    # The drift of issue 16: Python exposed 8 of the 25 in-place unary ops.
    for name, _, inplace in TABLE:
        if inplace:
            assert hasattr(st.tensor([1.0]), inplace), inplace


# ----- values against NumPy

SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -3.75, 1e-30, 1e30, 0.999, -1.0001, 100.0]


def _erf(v):
    return np.vectorize(math.erf, otypes=[np.float64])(v)


def _erfc(v):
    return np.vectorize(math.erfc, otypes=[np.float64])(v)


UNARY = {
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "log10": np.log10,
    "erf": _erf,
    "erfc": _erfc,
    "deg2rad": np.deg2rad,
    "rad2deg": np.rad2deg,
    "frac": lambda x: x - np.trunc(x),
}

BINARY = {
    "hypot": np.hypot,
    "copysign": np.copysign,
    "fmod": np.fmod,
    "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2,
    "heaviside": np.heaviside,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "xlogy": lambda a, b: np.where((a == 0) & ~np.isnan(b), 0.0, a * np.log(b)),
}

RTOL = {"float64": 1e-13, "float32": 3e-6, "float16": 2e-3, "bfloat16": 1.6e-2}


def _as(values, dtype):
    """(strata tensor of dtype, float64 NumPy view of its exact values)."""
    t = st.tensor(np.asarray(values, dtype=np.float64)).to(getattr(st, dtype))
    return t, t.double().numpy().astype(np.float64)


def _check(got_t, want64, dtype, zero_sign=True, scale=None):
    """`got_t` equals the float64 oracle `want64` rounded to `dtype`, within the dtype's
    relative tolerance of the result (or of `scale`, the inputs' size, where the op
    cancels: a float32 `logaddexp2(-3.75, -3.75001)` is exact only to float32's ulp of 4)."""
    assert str(got_t.dtype).endswith(dtype)
    got = got_t.double().numpy()
    # The oracle in float64, rounded to the dtype, as the op rounds its float32 result.
    want = st.tensor(np.asarray(want64, dtype=np.float64)).to(getattr(st, dtype)).double().numpy()
    size = np.abs(want) if scale is None else np.maximum(np.abs(want), scale)
    with np.errstate(invalid="ignore"):
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)) | (np.abs(got - want) <= RTOL[dtype] * size))
    assert not bad.any(), (got[bad], want[bad])
    # Signed zeros and infinities exactly.
    exact = ((want == 0) & zero_sign) | np.isinf(want)
    assert np.array_equal(np.signbit(got[exact]), np.signbit(want[exact]))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values(name, dtype):
    rng = np.random.default_rng(7)
    values = SPECIAL + list(rng.uniform(-1.2, 1.2, 40)) + list(rng.uniform(-20, 20, 40))
    t, x = _as(values, dtype)
    with np.errstate(all="ignore"):
        want = UNARY[name](x)
    _check(getattr(t, name)(), want, dtype)
    _check(getattr(st, name)(t), want, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values(name, dtype):
    rng = np.random.default_rng(11)
    a = SPECIAL + list(rng.uniform(-30, 30, 60))
    b = list(reversed(SPECIAL)) + list(rng.uniform(-5, 5, 60))
    grid_a, grid_b = np.meshgrid(SPECIAL, SPECIAL)
    a += list(grid_a.ravel())
    b += list(grid_b.ravel())
    ta, xa = _as(a, dtype)
    tb, xb = _as(b, dtype)
    with np.errstate(all="ignore"):
        want = BINARY[name](xa, xb)
    # NumPy's fmax/fmin of -0.0 and 0.0 depend on its code path (scalar or SIMD).
    zero_sign = name not in ("fmax", "fmin")
    scale = np.maximum(np.abs(xa), np.abs(xb)) if name.startswith("logaddexp") else None
    _check(getattr(ta, name)(tb), want, dtype, zero_sign, scale)
    _check(getattr(st, name)(ta, tb), want, dtype, zero_sign, scale)


def test_nextafter_matches_numpy_in_each_precision():
    a = np.array([0.0, -0.0, 1.0, 1.0, -1.0, np.inf, np.nan, 65504.0, 1e-7], dtype=np.float32)
    b = np.array([1.0, -1.0, 2.0, 0.0, -np.inf, 0.0, 1.0, np.inf, 0.0], dtype=np.float32)
    for npdt in (np.float64, np.float32, np.float16):
        x, y = a.astype(npdt), b.astype(npdt)
        got = st.tensor(x).nextafter(st.tensor(y)).numpy()
        with np.errstate(all="ignore"):
            want = np.nextafter(x, y)
        assert got.dtype == want.dtype
        assert np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")), (npdt, got, want)
    # bfloat16 steps its own 16-bit pattern.
    one = st.tensor([1.0]).bfloat16()
    up = one.nextafter(st.tensor([2.0]).bfloat16()).float().item()
    assert up == 1.0 + 2.0**-7


def test_signbit_matches_numpy():
    x = np.array([-1.0, -0.0, 0.0, 2.0, -np.inf, np.inf, np.nan, -np.nan])
    for npdt in (np.float64, np.float32, np.float16):
        got = st.tensor(x.astype(npdt)).signbit()
        assert got.dtype == st.bool
        assert np.array_equal(got.numpy(), np.signbit(x.astype(npdt)))
    i = np.array([-3, 0, 5], dtype=np.int16)
    assert np.array_equal(st.signbit(st.tensor(i)).numpy(), np.signbit(i))
    assert st.tensor([True, False]).signbit().tolist() == [False, False]
    assert not hasattr(st.Tensor, "signbit_")


def test_erfinv_inverts_erf():
    y = np.array([-0.999999, -0.9, -0.5, -1e-10, 0.0, 1e-10, 0.3, 0.5, 0.99, 0.9999999])
    x = st.tensor(y, dtype=st.float64).erfinv().numpy()
    np.testing.assert_allclose(_erf(x), y, rtol=1e-14, atol=1e-300)
    assert abs(st.tensor([0.5], dtype=st.float64).erfinv().item() - 0.4769362762044699) < 1e-15
    edge = st.tensor([1.0, -1.0, 1.5, -2.0, np.nan, -0.0], dtype=st.float64).erfinv().numpy()
    assert edge[0] == np.inf and edge[1] == -np.inf
    assert np.isnan(edge[2:5]).all()
    assert edge[5] == 0 and np.signbit(edge[5])
    x32 = st.tensor(y.astype(np.float32)).erfinv().numpy()
    np.testing.assert_allclose(_erf(x32.astype(np.float64)), y.astype(np.float32), rtol=1e-5)


# ----- dtype rules (PyTorch's)

INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("dtype", INTS + ["bool"])
@pytest.mark.parametrize("name", ["sinh", "asin", "erf", "erfc", "erfinv", "log10", "deg2rad", "atanh"])
def test_float_ops_promote_ints_and_bool_to_float32(name, dtype):
    x = np.array([0, 1, 1, 0], dtype=dtype)
    got = getattr(st.tensor(x), name)()
    assert got.dtype == st.float32
    want = {**UNARY, "erfinv": None}.get(name)
    if want is not None:
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(got.numpy(), want(x.astype(np.float32)).astype(np.float32), rtol=3e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", INTS + ["bool"])
@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2", "nextafter"])
def test_float_only_binary_ops_refuse_ints(name, dtype):
    x = st.tensor(np.array([1, 0], dtype=dtype))
    with pytest.raises(st.DTypeError, match="not implemented for"):
        getattr(x, name)(x)


def test_copysign_of_ints_gives_float():
    got = st.copysign(st.tensor([3, -2, 0]), -1)
    assert got.dtype == st.float32
    assert got.tolist() == [-3.0, -2.0, -0.0]
    assert np.signbit(got.numpy()[2])


@pytest.mark.parametrize("dtype", INTS)
def test_fmod_keeps_int_dtypes_with_c_semantics(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, info.min, info.max, 0]).astype(dtype)
    b = np.array([3, 3, -3, -3, -1, 2, 5]).astype(dtype)
    got = st.fmod(st.tensor(a), st.tensor(b))
    assert got.dtype == getattr(st, dtype)
    with np.errstate(all="ignore"):
        assert np.array_equal(got.numpy(), np.fmod(a, b))


def test_fmod_refuses_integer_zero_divisors_like_remainder():
    t = st.tensor([5, 6, 7])
    for f in (lambda: t.fmod(0), lambda: st.fmod(t, st.tensor([1, 0, 1])), lambda: t.remainder(0)):
        with pytest.raises(st.StrataValueError, match="ZeroDivisionError"):
            f()
    with pytest.raises(st.StrataValueError, match="ZeroDivisionError"):
        t.fmod_(st.tensor([1, 0, 1]))
    assert t.tolist() == [5, 6, 7]  # nothing written
    assert st.tensor([1.0]).fmod(0).isnan().item()
    assert st.tensor([], dtype=st.int32).fmod(0).shape == (0,)


def test_heaviside_fmax_fmin_keep_dtype():
    i = st.tensor([-2, 0, 3], dtype=st.int16)
    assert st.heaviside(i, st.tensor([9, 9, 9], dtype=st.int16)).tolist() == [0, 9, 1]
    assert st.heaviside(i, st.tensor([9, 9, 9], dtype=st.int16)).dtype == st.int16
    assert st.fmax(i, 1).tolist() == [1, 1, 3]
    assert st.fmin(st.tensor([True, False]), True).tolist() == [True, False]


def test_positive_and_frac():
    x = st.tensor([-2.5, 0.0, 3.25])
    assert st.positive(x).tolist() == [-2.5, 0.0, 3.25]
    assert np.array_equal(st.positive(st.tensor([1, -2])).numpy(), np.positive(np.array([1, -2])))
    with pytest.raises(st.DTypeError):
        st.tensor([True]).positive()
    with pytest.raises(st.DTypeError, match="not implemented for 'Long'"):
        st.tensor([1, 2]).frac()


# ----- in-place variants


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_in_place(name):
    x = np.linspace(-0.9, 0.9, 7)
    t = st.tensor(x)
    r = getattr(t, name + "_")()
    assert r is t
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(t.numpy(), UNARY[name](x), rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("name", ["hypot", "copysign", "fmod", "xlogy", "heaviside", "nextafter"])
def test_binary_in_place(name):
    a = np.array([-2.5, -0.0, 0.0, 1.5, 4.0])
    b = np.array([1.5, 2.0, -1.0, -0.5, 3.0])
    t = st.tensor(a)
    assert getattr(t, name + "_")(st.tensor(b)) is t
    with np.errstate(all="ignore"):
        want = np.nextafter(a, b) if name == "nextafter" else BINARY[name](a, b)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-15)


def test_in_place_result_must_fit_the_dtype():
    t = st.tensor([1, 2])
    for op in ("sinh_", "erf_", "deg2rad_", "acos_"):
        with pytest.raises(st.DTypeError, match="can't be cast"):
            getattr(t, op)()
    with pytest.raises(st.DTypeError, match="can't be cast"):
        t.copysign_(-1)
    assert t.tolist() == [1, 2]


def test_previously_unexposed_in_place_ops():
    t = st.tensor([0.25, 4.0])
    t.rsqrt_().log2_()
    np.testing.assert_allclose(t.numpy(), np.log2(1 / np.sqrt([0.25, 4.0])))
    i = st.tensor([5, -3])
    i.bitwise_not_()
    assert i.tolist() == [~5, 2]
    i.bitwise_left_shift_(1)
    assert i.tolist() == [~5 * 2, 4]
    f = st.tensor([1.0, -1.0])
    f.atan2_(st.tensor([1.0, 1.0]))
    np.testing.assert_allclose(f.numpy(), np.arctan2([1.0, -1.0], [1.0, 1.0]))
    b = st.tensor([0.0, 3.0])
    b.logical_not_()
    assert b.tolist() == [1.0, 0.0]


def test_module_functions_take_a_scalar_first_for_new_binary_ops():
    t = st.tensor([1.0, -2.0])
    assert st.copysign(3, t).tolist() == [3.0, -3.0]
    assert st.fmod(7, st.tensor([2, 3])).tolist() == [1, 1]
