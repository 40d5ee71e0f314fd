"""The reduction table (``strata::Reduction``, exported as ``_strata._reduction_table()``)
against the Python surface (Tensor methods, module functions, ``__all__``), the stubs,
and the dtype rules against what the ops return; values against NumPy."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import strata as st

TABLE = st._strata._reduction_table()
NAMES = [e["name"] for e in TABLE]
STUB = pathlib.Path(st.__file__).with_name("__init__.pyi")

DTYPES = [
    st.bool, st.uint8, st.int8, st.int16, st.uint16, st.int32, st.uint32, st.int64,
    st.uint64, st.float16, st.bfloat16, st.float32, st.float64,
]
FLOATS = {st.float16, st.bfloat16, st.float32, st.float64}


def test_table_lists_every_reduction_once():
    assert NAMES == (
        "sum prod mean amax amin max min argmax argmin all any var std logsumexp cumsum cumprod"
    ).split()
    assert len(set(NAMES)) == len(NAMES)
    kinds = {e["name"]: e["kind"] for e in TABLE}
    assert {n for n, k in kinds.items() if k == "scan"} == {"cumsum", "cumprod"}
    assert {n for n, k in kinds.items() if k == "arg"} == {"argmax", "argmin"}
    assert {n for n, k in kinds.items() if k == "values_indices"} == {"max", "min"}
    assert all(e["doc"] for e in TABLE)


def _stub():
    return ast.parse(STUB.read_text())


def _stub_functions(body):
    return {n.name: n for n in body if isinstance(n, ast.FunctionDef)}


def _params(fn):
    a = fn.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]


@pytest.mark.parametrize("entry", TABLE, ids=NAMES)
def test_table_matches_python_surface_and_stubs(entry):
    name, kind = entry["name"], entry["kind"]
    assert callable(getattr(st.Tensor, name, None)), name
    assert callable(getattr(st, name, None)), name
    assert name in st.__all__
    tree = _stub()
    tensor_cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = {n.name for n in tensor_cls.body if isinstance(n, ast.FunctionDef)}
    assert name in methods, f"Tensor.{name} missing from the stub"
    params = set()
    for n in tensor_cls.body:
        if isinstance(n, ast.FunctionDef) and n.name == name:
            params |= set(_params(n))
    assert "dim" in params, name
    if kind != "scan":
        assert "keepdim" in params, name
    # The module function forwards to the method.
    x = st.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]])
    if kind == "scan":
        a, b = getattr(x, name)(1), getattr(st, name)(x, 1)
        assert a.shape == x.shape
    else:
        a, b = getattr(x, name)(dim=1, keepdim=True), getattr(st, name)(x, dim=1, keepdim=True)
        if kind == "values_indices":
            (a, ai), (b, bi) = a, b
            np.testing.assert_array_equal(ai.numpy(), bi.numpy())
        assert a.shape == (2, 1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def _rule_dtype(rule, dt):
    """The table's dtype rules, written out independently of the Rust code."""
    if rule == "sum_like":
        return dt if dt in FLOATS else st.int64
    if rule == "same":
        return dt
    if rule == "float_only":
        return dt if dt in FLOATS else TypeError
    if rule == "to_float":
        return dt if dt in FLOATS else st.float32
    if rule == "logical":
        return st.uint8 if dt == st.uint8 else st.bool
    if rule == "index":
        return st.int64
    raise AssertionError(f"unknown rule {rule}")


def _call(x, name, kind):
    if kind == "scan":
        return getattr(x, name)(0)
    r = getattr(x, name)(dim=0)
    return r[0] if kind == "values_indices" else r


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_dtype_rules_are_what_the_ops_return(dt):
    x = st.arange(1, 7).view(2, 3).to(dt)
    for e in TABLE:
        want = _rule_dtype(e["dtype_rule"], dt)
        if want is TypeError:
            with pytest.raises(TypeError):
                _call(x, e["name"], e["kind"])
        else:
            assert _call(x, e["name"], e["kind"]).dtype == want, (e["name"], dt)


def test_mean_of_ints_uses_pytorch_text():
    with pytest.raises(st.DTypeError, match=r"mean\(\): could not infer output dtype\. Input dtype must be either a floating point or complex dtype\. Got: Long"):
        st.arange(3).mean()


@pytest.mark.parametrize("dims", [None, 0, 1, (0, 2), -1])
def test_values_match_numpy(dims):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4, 5))
    x = st.from_numpy(a)[:, ::-1, ::2]
    v = a[:, ::-1, ::2]
    ax = dims
    for name, ref in {
        "sum": lambda: v.sum(axis=ax),
        "prod": lambda: v.prod(axis=ax),
        "mean": lambda: v.mean(axis=ax),
        "amax": lambda: v.max(axis=ax),
        "amin": lambda: v.min(axis=ax),
        "var": lambda: v.var(axis=ax, ddof=1),
        "std": lambda: v.std(axis=ax, ddof=1),
        "all": lambda: v.all(axis=ax),
        "any": lambda: v.any(axis=ax),
        "logsumexp": lambda: np.log(np.exp(v).sum(axis=ax)),
    }.items():
        if dims is None:
            # logsumexp has no all-dims default (as in PyTorch): name every dim.
            got = x.logsumexp(dim=(0, 1, 2)) if name == "logsumexp" else getattr(x, name)()
        else:
            got = getattr(x, name)(dim=dims)
        np.testing.assert_allclose(got.numpy(), ref(), rtol=1e-10, atol=1e-12, err_msg=name)
    if isinstance(dims, int):
        np.testing.assert_array_equal(x.argmax(dim=dims).numpy(), v.argmax(axis=dims))
        np.testing.assert_array_equal(x.argmin(dim=dims).numpy(), v.argmin(axis=dims))
        np.testing.assert_allclose(x.cumsum(dims).numpy(), v.cumsum(axis=dims), rtol=1e-12)
        np.testing.assert_allclose(x.cumprod(dims).numpy(), v.cumprod(axis=dims), rtol=1e-12)
        vals, idx = x.max(dim=dims)
        np.testing.assert_array_equal(vals.numpy(), v.max(axis=dims))
        np.testing.assert_array_equal(idx.numpy(), v.argmax(axis=dims))
