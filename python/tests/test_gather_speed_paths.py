"""The fast paths of arg-reductions, integer-array indexing and boolean masks against
NumPy: values, shapes and dtypes for contiguous and strided (negative, zero strides)
inputs of every element size, block-edge lengths, and the bad inputs (out-of-range and
wrongly typed indices: clear errors naming the op, the index and the size).

Each CPU level below the machine's runs the value checks again in a child interpreter
with STRATA_CPU capped (the level is chosen once per process)."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import strata as st
from _strata_helpers import rerun_at_level

DTYPES = ["uint8", "int8", "int16", "float16", "int32", "float32", "int64", "float64", "bool"]
EDGES = [1, 2, 7, 8, 31, 32, 33, 63, 64, 65, 511, 512, 513, 1025]


def lengths():
    return hs.one_of(hs.sampled_from(EDGES), hs.integers(0, 9))


def make(rng, shape, dtype, nan=False):
    """A random array of `shape` (few distinct values, so ties occur)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    a = rng.integers(-20, 21, size=shape)
    if dtype == "uint8":
        a = np.abs(a)
    a = a.astype(dtype)
    if nan and a.dtype.kind == "f" and a.size:
        flat = a.reshape(-1)
        for v in (np.nan, np.inf, -np.inf, -0.0):
            flat[rng.integers(0, a.size, size=max(1, a.size // 60))] = v
    return a


def strided(rng, a):
    """(numpy view, strata view) of `a` reached through flips, steps and transposes."""
    big = np.repeat(a, 2, axis=-1) if a.ndim else a
    s_big = st.from_numpy(np.ascontiguousarray(big))
    key = (Ellipsis, slice(None, None, 2)) if a.ndim else ()
    n_v, s_v = big[key], s_big[key]
    if a.ndim and rng.random() < 0.5:
        n_v, s_v = n_v[::-1], s_v.flip([0])
    if a.ndim >= 2 and rng.random() < 0.5:
        n_v, s_v = n_v.swapaxes(0, 1), s_v.transpose(0, 1)
    return n_v, s_v


def same(s_res, n_res):
    got = np.asarray(s_res)
    want = np.asarray(n_res)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype or want.dtype == np.intp, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def shapes():
    return hs.lists(lengths(), min_size=1, max_size=3).filter(
        lambda s: int(np.prod(s)) <= 40_000)


@settings(max_examples=120, deadline=None)
@given(shape=shapes(), dtype=hs.sampled_from(DTYPES[:-1]), seed=hs.integers(0, 2**32 - 1),
       contiguous=hs.booleans())
def test_arg_reductions_match_numpy(shape, dtype, seed, contiguous):
    rng = np.random.default_rng(seed)
    a = make(rng, shape, dtype, nan=True)
    n, s = (a, st.from_numpy(a)) if contiguous else strided(rng, a)
    n = np.ascontiguousarray(n)
    if n.size:
        # NumPy's argmax also returns the first NaN, and the first of ties.
        same(s.argmax(), np.argmax(n))
        same(s.argmin(), np.argmin(n))
    for d in range(n.ndim):
        if n.shape[d] == 0:
            continue
        same(s.argmax(dim=d), np.argmax(n, axis=d))
        same(s.argmin(dim=d), np.argmin(n, axis=d))
        vals, idx = s.max(dim=d)
        same(idx, np.argmax(n, axis=d))
        same(vals, np.take_along_axis(n, np.expand_dims(np.argmax(n, axis=d), d), d).squeeze(d))
        vals, idx = s.min(dim=d)
        same(idx, np.argmin(n, axis=d))


@settings(max_examples=120, deadline=None)
@given(shape=shapes(), dtype=hs.sampled_from(DTYPES), seed=hs.integers(0, 2**32 - 1),
       contiguous=hs.booleans(), k=lengths())
def test_integer_indexing_matches_numpy(shape, dtype, seed, contiguous, k):
    rng = np.random.default_rng(seed)
    a = make(rng, shape, dtype)
    n, s = (a, st.from_numpy(a)) if contiguous else strided(rng, a)
    for d in range(n.ndim):
        size = n.shape[d]
        if size == 0:
            continue
        idx = rng.integers(-size, size, size=k)
        sidx = st.from_numpy(idx)
        same(s.index_select(d, sidx), np.take(n, idx, axis=d))
        if d == 0:
            same(s[sidx], n[idx])
            same(s[sidx.flip([0])], n[idx[::-1]])  # a strided index tensor
        # gather = take_along_axis (an index no longer than the input off `d`).
        ishape = [rng.integers(0, 5) if j == d else rng.integers(0, n.shape[j] + 1)
                  for j in range(n.ndim)]
        gi = rng.integers(0, size, size=ishape)  # PyTorch's gather refuses negative indices
        want = np.take_along_axis(n[tuple(slice(0, m) if j != d else slice(None)
                                          for j, m in enumerate(ishape))], gi, axis=d)
        same(st.gather(s, d, st.from_numpy(gi)), want)  # one pass (a contiguous index)
        # A strided index takes the general way (offsets, then moves).
        same(st.gather(s, d, st.from_numpy(np.ascontiguousarray(gi[::-1])).flip([0])), want)
    if n.size:
        idx = rng.integers(-n.size, n.size, size=k)
        same(st.take(s, st.from_numpy(idx)), np.take(n, idx))
        same(s.take(st.from_numpy(idx.reshape(1, -1))), np.take(n, idx.reshape(1, -1)))


@settings(max_examples=120, deadline=None)
@given(shape=shapes(), dtype=hs.sampled_from(DTYPES), seed=hs.integers(0, 2**32 - 1),
       contiguous=hs.booleans(), density=hs.sampled_from([0.0, 0.01, 0.5, 0.99, 1.0]))
def test_masks_match_numpy(shape, dtype, seed, contiguous, density):
    rng = np.random.default_rng(seed)
    a = make(rng, shape, dtype)
    n, s = (a, st.from_numpy(a)) if contiguous else strided(rng, a)
    m = rng.random(n.shape) < density
    sm = st.from_numpy(m)
    same(s[sm], n[m])
    same(st.masked_select(s, sm), n[m])
    same(sm.nonzero(), np.stack(np.nonzero(m), axis=1).reshape(-1, m.ndim))
    for got, want in zip(sm.nonzero(as_tuple=True), np.nonzero(m)):
        same(got, want)
    # A strided mask.
    mm, smm = strided(rng, m)
    if mm.shape == n.shape:
        same(s[smm], n[mm])
    # masked_select broadcasts (the mask against a row).
    if n.ndim >= 2:
        row = rng.random(n.shape[-1]) < density
        same(st.masked_select(s, st.from_numpy(row)), n[np.broadcast_to(row, n.shape)])


@settings(max_examples=80, deadline=None)
@given(shape=shapes(), dtype=hs.sampled_from(DTYPES), seed=hs.integers(0, 2**32 - 1),
       k=lengths())
def test_index_put_matches_numpy(shape, dtype, seed, k):
    rng = np.random.default_rng(seed)
    a = make(rng, shape, dtype)
    if a.shape[0] == 0:
        return
    idx = rng.integers(-a.shape[0], a.shape[0], size=k)
    v = make(rng, (k, *a.shape[1:]), dtype)
    s = st.from_numpy(a.copy())
    s.index_put_((st.from_numpy(idx),), st.from_numpy(v))
    want = a.copy()
    want[idx] = v  # NumPy: the last write of a repeated index wins, as in strata
    same(s, want)
    m = rng.random(a.shape) < 0.5
    s2 = st.from_numpy(a.copy())
    mv = make(rng, (int(m.sum()),), dtype)
    s2[st.from_numpy(m)] = st.from_numpy(mv)
    want2 = a.copy()
    want2[m] = mv
    same(s2, want2)


def test_bad_indices_are_clear_errors():
    x = st.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[st.tensor([0, 3])]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        x.index_select(0, st.tensor([-4]))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x.index_select(1, st.tensor([0, 4]))
    with pytest.raises(IndexError, match="index 12 is out of bounds"):
        st.take(x, st.tensor([12]))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 4"):
        st.gather(x, 1, st.tensor([[5]]))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_put_((st.tensor([3]),), st.tensor(1.0))
    # Wrong dtypes of index tensors and masks.
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[st.tensor([0.0, 1.0])]
    with pytest.raises(TypeError, match="take.*float32"):
        st.take(x, st.tensor([0.0]))
    with pytest.raises(TypeError, match="gather.*int32"):
        st.gather(x, 0, st.tensor([[0]], dtype=st.int32))
    with pytest.raises(TypeError, match="masked_select.*float32"):
        st.masked_select(x, x)
    with pytest.raises(ValueError, match="no larger than self"):
        st.gather(x, 0, st.zeros((2, 5), dtype=st.int64))
    with pytest.raises(IndexError, match="same number of dimensions"):
        st.gather(x, 0, st.tensor([0]))
    with pytest.raises(IndexError, match="does not match"):
        x[st.tensor([True, False])]


@pytest.mark.parametrize("shape, dim", [((600, 300), 1), ((600, 300), 0), ((40, 50, 70), 1),
                                        ((40, 50, 70), 2), ((200_000,), 0)])
def test_gather_one_pass_in_parallel_and_its_bad_indices(shape, dim):
    # Over 2^17 elements the one-pass gather splits rows across threads: values against
    # NumPy, and an out-of-range value named as the first in row-major order, whichever
    # part finds it first.
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(np.float32)
    s = st.from_numpy(a)
    ishape = list(shape)
    ishape[dim] = max(1, (1 << 18) // (np.prod(shape) // shape[dim]))
    gi = rng.integers(0, shape[dim], size=ishape)
    same(st.gather(s, dim, st.from_numpy(gi)), np.take_along_axis(a, gi, axis=dim))
    same(st.gather(s.flip([0]), dim, st.from_numpy(gi)),
         np.take_along_axis(a[::-1], gi, axis=dim))
    flat = gi.reshape(-1)
    for bad in ([flat.size - 1], [flat.size // 2, flat.size - 1], [5, flat.size // 3]):
        g = flat.copy()
        g[bad[0]] = -1 - bad[0] % 3
        for j in bad[1:]:
            g[j] = shape[dim] + 7
        with pytest.raises(IndexError, match=f"index {g[bad[0]]} is out of bounds for "
                                             f"dimension {dim} with size {shape[dim]}"):
            st.gather(s, dim, st.from_numpy(g.reshape(ishape)))


def test_results_own_their_memory():
    a = np.arange(10, dtype=np.float32)
    s = st.from_numpy(a)
    r = st.take(s, st.tensor(3))
    assert r.shape == () and float(r) == 3.0
    r += 1
    assert a[3] == 3.0
    same(st.gather(st.tensor(7.0), 0, st.tensor(0)), np.float32(7.0))


@pytest.mark.parametrize("level", ["portable", "avx2"])
def test_every_cpu_level(level):
    rerun_at_level(level, "test_gather_speed_paths", ['test_arg_reductions_match_numpy', 'test_integer_indexing_matches_numpy', 'test_masks_match_numpy', 'test_index_put_matches_numpy'])
