"""The indexing surface added with advanced indexing in the core (crates/strata/src/ops/
index.rs): ``Tensor.nonzero``, ``strata.nonzero``, ``Tensor.index_put_``, against NumPy."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

import strata as st
from _strata_helpers import budget, laid_out, layouts, seeds, shapes, to_np, values


@budget(100)
@given(shape=shapes(max_dims=4, max_side=4), layout=layouts, seed=seeds)
def test_nonzero_matches_numpy(shape, layout, seed):
    a = values(np.random.default_rng(seed), shape, st.int64) % 3
    t = laid_out(a, layout)
    nz = t.nonzero()
    assert nz.dtype == st.int64
    np.testing.assert_array_equal(to_np(nz), np.argwhere(a))
    cols = t.nonzero(as_tuple=True)
    want = np.nonzero(a) if a.ndim else (np.flatnonzero(a),)
    assert len(cols) == len(want)
    for c, w in zip(cols, want):
        np.testing.assert_array_equal(to_np(c), w)
    np.testing.assert_array_equal(to_np(st.nonzero(t)), np.argwhere(a))
    if a.ndim:
        np.testing.assert_array_equal(to_np(t[cols]), a[np.nonzero(a)])


def test_nonzero_of_floats_and_bools():
    f = st.tensor([0.0, float("nan"), -0.0, 2.5])
    assert f.nonzero().tolist() == [[1], [3]]
    assert st.nonzero(st.tensor([[True, False], [False, True]]), as_tuple=True)[1].tolist() == [0, 1]
    assert st.tensor(0).nonzero().shape == (0, 0)
    assert st.tensor(7).nonzero().shape == (1, 0)


def test_index_put_matches_setitem():
    a = np.arange(12.0).reshape(3, 4)
    t = st.from_numpy(a.copy())
    r = t.index_put_((st.tensor([2, 0]), st.tensor([1, 3])), st.tensor([-1.0, -2.0]))
    assert r is t
    a[[2, 0], [1, 3]] = [-1.0, -2.0]
    np.testing.assert_array_equal(to_np(t), a)
    # Lists and slices as entries, a scalar value, as a key of [].
    t.index_put_([slice(None), [0, 2]], 9)
    a[:, [0, 2]] = 9
    np.testing.assert_array_equal(to_np(t), a)
    # A mask.
    t.index_put_((t > 5,), 0.5)
    a[a > 5] = 0.5
    np.testing.assert_array_equal(to_np(t), a)


def test_index_put_accumulate_adds_repeats():
    t = st.zeros(4)
    t.index_put_((st.tensor([0, 0, 3, 0]),), st.tensor([1.0, 2.0, 3.0, 4.0]), accumulate=True)
    want = np.zeros(4)
    np.add.at(want, [0, 0, 3, 0], [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(to_np(t), want)
    # Without accumulate the last write wins.
    t.index_put_((st.tensor([1, 1]),), st.tensor([5.0, 6.0]))
    assert t.tolist()[1] == 6.0


def test_index_put_errors():
    t = st.zeros(2, 3)
    with pytest.raises(st.TensorIndexError, match="index 5 is out of bounds for dimension 1 with size 3"):
        t.index_put_((slice(None), st.tensor([5])), 1.0)
    with pytest.raises(TypeError, match="tuple or list"):
        t.index_put_(st.tensor([0]), 1.0)
    with pytest.raises(st.TensorIndexError, match="does not match the shape of the indexed tensor"):
        t.index_put_((st.tensor([True, False, True]),), 1.0)
    assert t.tolist() == [[0.0] * 3] * 2


@budget(100)
@given(
    shape=shapes(max_dims=3, max_side=4, min_dims=1),
    layout=layouts,
    seed=seeds,
    data=hs.data(),
)
def test_index_put_vs_numpy_add_at(shape, layout, seed, data):
    rng = np.random.default_rng(seed)
    a = values(rng, shape, st.float64)
    t = laid_out(a, layout)
    n = shape[0]
    if n == 0:
        return
    idx = np.array(data.draw(hs.lists(hs.integers(-n, n - 1), max_size=6)), dtype=np.int64)
    v = rng.integers(-9, 9, size=(len(idx),) + tuple(shape[1:])).astype(np.float64)
    want = a.copy()
    np.add.at(want, idx, v)
    t.index_put_((st.tensor(idx),), st.tensor(v), accumulate=True)
    np.testing.assert_array_equal(to_np(t), want)
