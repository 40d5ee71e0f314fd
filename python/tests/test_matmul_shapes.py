"""The special matmul shapes against NumPy: batches of small matrices (the direct kernel),
``a @ a.T`` / ``a.T @ a`` (computed as a symmetric product: the result is exactly
symmetric) and matrix-vector / vector-matrix in both layouts of the matrix, with strided,
flipped and broadcast operands. The kernels are compared with the general gemm path in
the Rust tests (crates/strata/tests/matmul_shapes.rs); here the values are NumPy's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import strata as st

TOL = {"float32": 1e-4, "float64": 1e-11}


def check(got, want, dtype):
    got = np.asarray(got)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)


def layout(a: np.ndarray, how: int) -> tuple[np.ndarray, st.Tensor]:
    """The same values as ``a``, laid out as: 0 contiguous, 1 last two dims transposed in
    memory, 2 flipped everywhere (negative strides), 3 stepped (a view of every 2nd
    column of a wider array)."""
    if how == 1 and a.ndim >= 2:
        base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        t = st.from_numpy(base).transpose(-1, -2)
    elif how == 2:
        base = np.ascontiguousarray(np.flip(a))
        t = st.from_numpy(base).flip(list(range(a.ndim)))
    elif how == 3 and a.ndim >= 1:
        base = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        base[..., ::2] = a
        t = st.from_numpy(base)[..., ::2]
    else:
        t = st.from_numpy(np.ascontiguousarray(a))
    np.testing.assert_array_equal(np.asarray(t), a)
    return a, t


DIMS = hs.sampled_from([0, 1, 2, 3, 4, 7, 8, 15, 16, 17])


@settings(max_examples=150, deadline=None)
@given(m=DIMS, k=DIMS, n=DIMS, batch=hs.sampled_from([(), (0,), (1,), (5,), (3, 1), (40,)]),
       bcast=hs.booleans(), la=hs.integers(0, 3), lb=hs.integers(0, 3),
       dtype=hs.sampled_from(["float32", "float64"]), seed=hs.integers(0, 2**32 - 1))
def test_small_batches_match_numpy(m, k, n, batch, bcast, la, lb, dtype, seed):
    rng = np.random.default_rng(seed)
    bb = tuple(1 for _ in batch) if bcast else batch
    a, ta = layout(rng.standard_normal(batch + (m, k)).astype(dtype), la)
    b, tb = layout(rng.standard_normal(bb + (k, n)).astype(dtype), lb)
    check(ta @ tb, a @ b, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1000, 16, 16), (10000, 4, 4), (100, 5, 3)])
def test_bmm_of_many_small_matrices(shape, dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape[:1] + shape[2:] + shape[1:2]).astype(dtype)
    ta, tb = st.from_numpy(a), st.from_numpy(b)
    check(ta.bmm(tb), a @ b, dtype)
    check(ta @ tb, a @ b, dtype)
    # The right operand transposed, and a broadcast left operand.
    check(ta @ ta.transpose(1, 2), a @ a.transpose(0, 2, 1), dtype)
    check(ta[:1] @ tb, a[:1] @ b, dtype)


def assert_exactly_symmetric(t):
    x = np.asarray(t)
    assert np.array_equal(x, x.T), "not exactly symmetric"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n,k", [(1, 5), (130, 3), (200, 70), (300, 1), (257, 129)])
def test_symmetric_products(n, k, dtype):
    rng = np.random.default_rng(n * 1000 + k)
    base = rng.standard_normal((n + 2, 2 * k + 1)).astype(dtype)
    tb = st.from_numpy(base)
    for a, ta in [(base[1:-1, :k], tb[1:-1, :k]),
                  (base[1:-1, ::2][::-1], tb[1:-1, ::2].flip([0])),
                  (np.asfortranarray(base[:n, :k]), st.from_numpy(np.asfortranarray(base[:n, :k])))]:
        got = ta @ ta.T
        check(got, a @ a.T, dtype)
        assert_exactly_symmetric(got)
        got = ta.T @ ta
        check(got, a.T @ a, dtype)
        assert_exactly_symmetric(got)
        check(ta.mm(ta.t()), a @ a.T, dtype)
        check(st.matmul(ta, ta.T), a @ a.T, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_near_symmetric_products_are_not_mirrored(dtype):
    """a @ b.T where b is another view of a's storage (another offset) or a copy with one
    changed value: the result must be NumPy's, not a mirrored triangle."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((301, 200)).astype(dtype)
    tb = st.from_numpy(base)
    check(tb[:300] @ tb[1:].T, base[:300] @ base[1:].T, dtype)
    c = base[:300].copy()
    c[7, 3] += 1.0
    check(tb[:300] @ st.from_numpy(c).T, base[:300] @ c.T, dtype)
    sq = base[:200]
    check(tb[:200] @ tb[:200], sq @ sq, dtype)


@settings(max_examples=120, deadline=None)
@given(m=hs.sampled_from([0, 1, 2, 3, 5, 16, 17, 33, 100]),
       k=hs.sampled_from([0, 1, 2, 3, 5, 16, 17, 33, 100]),
       la=hs.integers(0, 3), lv=hs.sampled_from([0, 2, 3]), flip=hs.booleans(),
       dtype=hs.sampled_from(["float32", "float64"]), seed=hs.integers(0, 2**32 - 1))
def test_matrix_vector_in_every_layout(m, k, la, lv, flip, dtype, seed):
    rng = np.random.default_rng(seed)
    a, ta = layout(rng.standard_normal((m, k)).astype(dtype), la)
    if flip:
        a, ta = a[::-1], ta.flip([0])
    v, tv = layout(rng.standard_normal(k).astype(dtype), lv)
    w, tw = layout(rng.standard_normal(m).astype(dtype), lv)
    check(ta @ tv, a @ v, dtype)
    check(tw @ ta, w @ a, dtype)
    check(ta.mv(tv), a @ v, dtype)
    check(ta.T @ tw, a.T @ w, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_matrix_vector(dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((1500, 1300)).astype(dtype)
    v = rng.standard_normal(1300).astype(dtype)
    w = rng.standard_normal(1500).astype(dtype)
    ta, tv, tw = st.from_numpy(a), st.from_numpy(v), st.from_numpy(w)
    check(ta @ tv, a @ v, dtype)
    check(tw @ ta, w @ a, dtype)
    at = np.asfortranarray(a)
    tat = st.from_numpy(at)
    check(tat @ tv, at @ v, dtype)
    check(tw @ tat, w @ at, dtype)


def test_other_dtypes_keep_their_results():
    a = np.arange(2 * 4 * 4, dtype=np.int32).reshape(2, 4, 4)
    np.testing.assert_array_equal(np.asarray(st.from_numpy(a) @ st.from_numpy(a)), a @ a)
    h = (np.arange(3 * 4 * 4).reshape(3, 4, 4) / 50).astype(np.float16)
    got = np.asarray(st.from_numpy(h) @ st.from_numpy(h)).astype(np.float64)
    want = h.astype(np.float64) @ h.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
    with pytest.raises(TypeError):
        st.ones(2, 3, 3, dtype=st.float32) @ st.ones(2, 3, 3, dtype=st.float64)
