"""The second round of arg-reduction, gather and mask fast paths against NumPy, at the
lengths where they change behaviour: the arg-reductions' scan block (2048 elements, 32
lanes) with NaNs, infinities and ties at its edges, rows of matrices (argmax(dim=1)),
nonzero of 1-D masks (table-driven compaction into the result, 8-byte words, parallel
chunks), and one index tensor alone (x[idx], index_select, take, index_put_) with
negative, repeated and out-of-range indices (a clear IndexError, nothing written).

Each CPU level below the machine's runs the value checks again in a child interpreter
with STRATA_CPU capped (the level is chosen once per process)."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import strata as st
from _strata_helpers import rerun_at_level

LENS = [1, 31, 32, 33, 2047, 2048, 2049, 4096, 4097, 6001, 131_073]


def same(got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(n=hs.sampled_from(LENS), dtype=hs.sampled_from(["float32", "float64", "int32", "int8"]),
       seed=hs.integers(0, 2**32 - 1), special=hs.sampled_from(["none", "nan", "inf", "rise"]))
def test_argmax_runs_match_numpy(n, dtype, seed, special):
    rng = np.random.default_rng(seed)
    a = rng.integers(-30, 30, size=n).astype(dtype)
    if special == "rise":
        a = (np.arange(n) % 97).astype(dtype)
    elif special != "none" and a.dtype.kind == "f":
        v = np.nan if special == "nan" else np.inf
        for p in rng.choice(n, size=min(n, 2), replace=False):
            a[p] = v
        if special == "inf":
            a[rng.integers(0, n)] = -np.inf
    s = st.from_numpy(a)
    same(s.argmax(), np.argmax(a))
    same(s.argmin(), np.argmin(a))
    vals, idx = s.max(dim=0)
    same(idx, np.argmax(a))
    same(vals, a[np.argmax(a)])


@settings(max_examples=40, deadline=None)
@given(rows=hs.integers(1, 40), cols=hs.sampled_from([1, 2, 33, 1000, 2049]),
       dtype=hs.sampled_from(["float32", "float64", "int64"]), seed=hs.integers(0, 2**32 - 1))
def test_argmax_rows_match_numpy(rows, cols, dtype, seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(-9, 9, size=(rows, cols)).astype(dtype)
    if m.dtype.kind == "f":
        m.reshape(-1)[rng.integers(0, m.size, size=3)] = np.nan
    s = st.from_numpy(m)
    for d in (0, 1):
        same(s.argmax(dim=d), np.argmax(m, axis=d))
        same(s.argmin(dim=d), np.argmin(m, axis=d))
        vals, idx = s.max(dim=d)
        same(idx, np.argmax(m, axis=d))
        same(vals, np.take_along_axis(m, np.expand_dims(np.argmax(m, axis=d), d), d).squeeze(d))


@settings(max_examples=60, deadline=None)
@given(n=hs.sampled_from([0, 1, 7, 8, 9, 63, 64, 65, 1000, 65_543, 300_001]),
       density=hs.sampled_from([0.0, 0.01, 0.5, 0.99, 1.0]), seed=hs.integers(0, 2**32 - 1))
def test_nonzero_matches_numpy(n, density, seed):
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < density
    s = st.from_numpy(mask)
    got = np.asarray(s.nonzero())
    assert got.dtype == np.int64 and got.shape == (int(mask.sum()), 1)
    same(got[:, 0], np.nonzero(mask)[0])
    a = np.arange(2 * n, dtype=np.float32)
    same(st.from_numpy(a)[::2][s], a[::2][mask])
    same(st.from_numpy(a[:n])[s], a[:n][mask])
    # A mask of bytes other than 0 and 1 (uint8 viewed as bool).
    raw = (rng.integers(0, 4, size=n) * 0x55).astype(np.uint8)
    same(np.asarray(st.from_numpy(raw.view(np.bool_)).nonzero())[:, 0], np.nonzero(raw)[0])


@settings(max_examples=60, deadline=None)
@given(size=hs.sampled_from([1, 7, 1000]), k=hs.sampled_from([0, 1, 33, 5000, 150_000]),
       seed=hs.integers(0, 2**32 - 1))
def test_one_index_tensor_matches_numpy(size, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(size).astype(np.float32)
    idx = rng.integers(-size, size, size=k)
    s, si = st.from_numpy(a), st.from_numpy(idx)
    same(s[si], a[idx])
    same(st.take(s, si), np.take(a, idx))
    m = rng.standard_normal((size, 3)).astype(np.float64)
    same(st.from_numpy(m).index_select(0, si), np.take(m, idx, axis=0))
    same(st.from_numpy(m.T.copy()).index_select(1, si), np.take(m.T, idx, axis=1))
    b, sb = a.copy(), st.from_numpy(a.copy())
    v = rng.standard_normal(k).astype(np.float32)
    # Repeated indices: the last write wins (NumPy's rule for a[idx] = v as well).
    b[idx] = v
    sb.index_put_((si,), st.from_numpy(v))
    same(sb, b)


def test_out_of_range_is_a_clear_index_error():
    a = np.arange(10, dtype=np.float32)
    s = st.from_numpy(a)
    for bad in (10, -11, 2**63 - 1, -(2**63)):
        idx = st.from_numpy(np.array([0, 9, bad, -10], dtype=np.int64))
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 0 "
                                             "with size 10"):
            s[idx]
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            st.take(s, idx)
        t = st.zeros(10)
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            t.index_put_((idx,), st.ones(4))
        same(t, np.zeros(10, dtype=np.float32))


@pytest.mark.parametrize("level", ["portable", "avx2"])
def test_every_cpu_level(level):
    rerun_at_level(level, "test_index_speed_paths", ['test_argmax_runs_match_numpy', 'test_argmax_rows_match_numpy', 'test_nonzero_matches_numpy', 'test_one_index_tensor_matches_numpy'])
