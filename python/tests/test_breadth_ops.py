"""The breadth ops against NumPy (values, shapes, dtypes) with PyTorch's semantics, on varied
dtypes and memory layouts, with their error paths and (float64 finite differences) gradients:

cat / concat / concatenate / stack (type promotion, the legacy skip of 1-D empty tensors),
sort / argsort (stable orders checked index by index, NaN last ascending and first
descending), topk, unique (inverse, counts, dim), searchsorted (1-D and batched sequences,
sorter, out_int32), tril / triu, roll, repeat / tile, gather / scatter / scatter_ /
scatter_add / scatter_add_ / take_along_dim, argwhere, isclose / allclose, einsum,
softmax / log_softmax, cross, diff, meshgrid (views), cumulative_sum; then gradcheck of the
differentiable ones on contiguous, transposed and negatively stepped inputs.
"""

import numpy as np
import pytest

import strata as st
from _strata_helpers import (
    LAYOUTS,
    NP2ST,
    ST2NP,
    assert_values,
    laid_out,
    np_sample,
    tensor_of,
    to_np,
    values,
)
from strata.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng


def rand(shape, dt=st.float64, seed=0, kind="nice"):
    return values(RNG(seed), shape, dt, kind)


def distinct(shape, seed=0):
    """float64 values without ties (gaps of 0.37), for sort/topk gradients."""
    n = int(np.prod(shape))
    return (RNG(seed).permutation(n).reshape(shape) * 0.37 - 1.0).astype(np.float64)


def same(t, expected):
    """Exact comparison (NaN equal to NaN), shape and NumPy-matching dtype."""
    expected = np.asarray(expected)
    got = to_np(t)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


ANY_ERROR = (IndexError, RuntimeError, ValueError, TypeError)
SHAPE_ERROR = (RuntimeError, ValueError)
INDEX_ERROR = (IndexError, RuntimeError, ValueError)


# ---------------------------------------------------------------------------------------
# cat / concat / concatenate / stack
# ---------------------------------------------------------------------------------------

CAT_FNS = ["cat", "concat", "concatenate"]


@pytest.mark.parametrize("fn", CAT_FNS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("layouts", [("contig", "contig"), ("transposed", "stepped"),
                                     ("flipped", "numpy_view")])
def test_cat_matches_numpy(fn, dim, layouts):
    base = [2, 3, 4]
    arrs = []
    for k, lay in enumerate(layouts + ("contig",)):
        shape = list(base)
        shape[dim] = k + 1
        arrs.append(rand(tuple(shape), st.float32, seed=k))
    ts = [laid_out(a, lay) for a, lay in zip(arrs, layouts + ("contig",))]
    kw = "axis" if fn == "concatenate" else "dim"  # torch.concatenate documents axis
    r = getattr(st, fn)(ts, **{kw: dim})
    same(r, np.concatenate(arrs, axis=dim))
    # positional dim, tuple of tensors
    same(getattr(st, fn)(tuple(ts), dim), np.concatenate(arrs, axis=dim))


@pytest.mark.parametrize("dt", [st.bool, st.uint8, st.int8, st.int32, st.int64, st.float16,
                                st.float32, st.float64])
def test_cat_dtypes_and_default_dim(dt):
    a, b = rand((2, 3), dt, 1), rand((1, 3), dt, 2)
    r = st.cat([tensor_of(a), tensor_of(b)])
    assert r.dtype == dt
    same(r, np.concatenate([a, b]))


# PyTorch's promotion (not NumPy's: int32 + float32 is float32 there).
PROMOTIONS = [
    (st.int32, st.float32, st.float32),
    (st.uint8, st.int8, st.int16),
    (st.bool, st.int64, st.int64),
    (st.float16, st.float32, st.float32),
    (st.int64, st.float16, st.float16),
    (st.bool, st.float64, st.float64),
    (st.int8, st.int16, st.int16),
    (st.bool, st.uint8, st.uint8),
]


@pytest.mark.parametrize("a_dt,b_dt,want", PROMOTIONS)
@pytest.mark.parametrize("op", ["cat", "stack"])
def test_cat_stack_promote(op, a_dt, b_dt, want):
    a, b = rand((2, 3), a_dt, 3), rand((2, 3), b_dt, 4)
    r = getattr(st, op)([tensor_of(a), tensor_of(b)], 0)
    assert r.dtype == want, (r.dtype, want)
    npfn = np.concatenate if op == "cat" else np.stack
    assert_values(r, npfn([a.astype(ST2NP[want]), b.astype(ST2NP[want])]), exact=True)


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_skips_legacy_1d_empty(dim):
    a, b = rand((2, 3), st.float32, 5), rand((2, 3), st.float32, 6)
    e = st.tensor(np.zeros(0, np.float32))
    r = st.cat([tensor_of(a), e, tensor_of(b), e], dim=dim)
    same(r, np.concatenate([a, b], axis=dim))
    # only empties
    assert st.cat([e, e]).shape == (0,)


def test_concatenate_takes_dim_too():
    """torch.concatenate is cat: its argument parser takes dim= as well as axis=."""
    a = rand((2, 3), st.float32, 8)
    same(st.concatenate([tensor_of(a), tensor_of(a)], dim=1), np.concatenate([a, a], 1))


def test_cat_with_empty_along_dim_and_single_input_copies():
    a = rand((2, 3), st.float64, 7)
    z = np.zeros((2, 0))
    same(st.cat([tensor_of(z), tensor_of(a), tensor_of(z)], 1), a)
    same(st.cat([tensor_of(np.zeros((0, 3))), tensor_of(a)], 0), a)
    t = tensor_of(a)
    r = st.cat([t])
    same(r, a)
    r[0, 0] = 99.0  # a new tensor, never the input
    assert to_np(t)[0, 0] == a[0, 0]


def test_cat_errors():
    a, b = st.zeros(2, 3), st.zeros(2, 4)
    with pytest.raises(SHAPE_ERROR, match="non-empty"):
        st.cat([])
    with pytest.raises(SHAPE_ERROR):
        st.cat([a, b], 0)  # sizes differ outside the cat dim
    same(st.cat([a, b], 1), np.zeros((2, 7), np.float32))
    with pytest.raises(IndexError):
        st.cat([a, a], 2)
    with pytest.raises(IndexError):
        st.cat([a, a], -3)
    with pytest.raises(SHAPE_ERROR):
        st.cat([a, st.zeros(2, 3, 1)], 0)  # ranks differ
    with pytest.raises(SHAPE_ERROR):
        st.cat([st.tensor(1.0), st.tensor(2.0)])  # 0-d


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -1, -4])
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped"])
def test_stack_matches_numpy(dim, layout):
    arrs = [rand((2, 3, 4), st.int32, s) for s in range(3)]
    r = st.stack([laid_out(a, layout) for a in arrs], dim=dim)
    same(r, np.stack(arrs, axis=dim))


def test_stack_of_0d_and_empty():
    same(st.stack([st.tensor(1.5), st.tensor(2.5)]), np.array([1.5, 2.5], np.float32))
    r = st.stack([st.zeros(0, 3), st.zeros(0, 3)], 1)
    assert tuple(r.shape) == (0, 2, 3)


def test_stack_errors():
    with pytest.raises(SHAPE_ERROR, match="non-empty"):
        st.stack([])
    with pytest.raises(SHAPE_ERROR):
        st.stack([st.zeros(2, 3), st.zeros(3, 2)])
    with pytest.raises(IndexError):
        st.stack([st.zeros(2, 3), st.zeros(2, 3)], 3)
    with pytest.raises(IndexError):
        st.stack([st.zeros(2, 3), st.zeros(2, 3)], -4)


# ---------------------------------------------------------------------------------------
# sort / argsort
# ---------------------------------------------------------------------------------------


def np_stable_argsort(a, axis, descending):
    """PyTorch's stable order: equal elements keep their order, NaN greater than all."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    rev = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - rev, axis).astype(np.int64)


def np_sort(a, axis, descending):
    idx = np_stable_argsort(a, axis, descending)
    return np.take_along_axis(a, idx, axis), idx


def check_sorted(x, vals, idx, dim, descending, stable):
    """(vals, idx), strata's sort of x along dim, against NumPy."""
    want_v, want_i = np_sort(x, dim, descending)
    assert idx.dtype == st.int64
    same(vals, want_v)
    gi = to_np(idx)
    if stable:
        np.testing.assert_array_equal(gi, want_i)
    else:
        np.testing.assert_array_equal(np.sort(gi, axis=dim), np.sort(want_i, axis=dim))
        np.testing.assert_array_equal(np.take_along_axis(x, gi, dim), want_v)


SORT_DTYPES = [st.bool, st.uint8, st.int8, st.int16, st.int32, st.int64, st.float16,
               st.float32, st.float64]


def sort_input(shape, dt, seed):
    if dt in (st.int8, st.int16, st.int32, st.int64, st.uint8):
        # whole range of the narrow dtypes, small values with ties for the wide ones
        a = np_sample(shape, ST2NP[dt], seed) if dt in (st.int8, st.uint8) else rand(shape, dt, seed)
        return a
    a = rand(shape, dt, seed)  # multiples of 0.5: many ties
    if dt != st.bool:
        a.flat[::7] = np.nan
        a.flat[3::11] = np.inf
        a.flat[5::13] = -np.inf
    return a


@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dt", SORT_DTYPES)
def test_sort_dtypes(dt, descending, stable):
    x = sort_input((5, 37), dt, 11)
    v, i = tensor_of(x).sort(dim=-1, descending=descending, stable=stable)
    check_sorted(x, v, i, -1, descending, stable)
    assert v.dtype == dt


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_layouts_and_dims(layout, dim, descending):
    x = sort_input((3, 4, 5), st.float32, 12)
    t = laid_out(x, layout)
    res = t.sort(dim, descending, stable=True)
    check_sorted(x, res.values, res.indices, dim, descending, True)
    v, i = res  # unpacks as a pair
    same(v, to_np(res.values))
    res2 = st.sort(t, dim=dim, descending=descending, stable=True)
    check_sorted(x, res2[0], res2[1], dim, descending, True)
    same(t, x)  # the input is untouched


def test_sort_long_rows_with_ties_is_stable():
    x = RNG(3).integers(0, 5, size=(4, 3000)).astype(np.float64)
    for descending in (False, True):
        v, i = tensor_of(x).sort(stable=True, descending=descending)
        check_sorted(x, v, i, -1, descending, True)
    x = RNG(4).integers(-50, 50, size=2001).astype(np.int64)
    v, i = tensor_of(x).sort(descending=True, stable=True)
    check_sorted(x, v, i, 0, True, True)


def test_sort_signed_zeros_are_equal():
    x = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -1.0, 0.0], np.float32)
    for descending in (False, True):
        v, i = tensor_of(x).sort(descending=descending, stable=True)
        np.testing.assert_array_equal(to_np(i), np_stable_argsort(x, 0, descending))


def test_sort_nan_last_ascending_first_descending():
    x = np.array([2.0, np.nan, -np.inf, 1.0, np.nan, np.inf], np.float64)
    v, i = tensor_of(x).sort()
    np.testing.assert_array_equal(to_np(v), [-np.inf, 1.0, 2.0, np.inf, np.nan, np.nan])
    v, i = tensor_of(x).sort(descending=True)
    np.testing.assert_array_equal(to_np(v), [np.nan, np.nan, np.inf, 2.0, 1.0, -np.inf])
    assert sorted(to_np(i)[:2].tolist()) == [1, 4]


def test_sort_0d_and_empty():
    v, i = st.tensor(3.5).sort()
    assert v.shape == () and i.shape == ()
    assert float(v) == 3.5 and int(i) == 0
    v, i = st.tensor(3.5).sort(0)
    assert v.shape == () and int(i) == 0
    for shape, dim in [((0,), 0), ((2, 0, 3), 1), ((2, 0, 3), -1)]:
        v, i = st.zeros(*shape).sort(dim)
        assert tuple(v.shape) == shape and tuple(i.shape) == shape and i.dtype == st.int64
        assert tuple(st.zeros(*shape).argsort(dim=dim).shape) == shape


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped"])
def test_argsort(layout, descending):
    x = sort_input((4, 9), st.int32, 13)
    t = laid_out(x, layout)
    a = t.argsort(dim=0, descending=descending, stable=True)
    assert a.dtype == st.int64
    np.testing.assert_array_equal(to_np(a), np_stable_argsort(x, 0, descending))
    a = st.argsort(t, -1, descending, stable=True)
    np.testing.assert_array_equal(to_np(a), np_stable_argsort(x, 1, descending))
    a = t.argsort(descending=descending)  # unstable: any order among ties
    want = np_sort(x, 1, descending)[0]
    np.testing.assert_array_equal(np.take_along_axis(x, to_np(a), 1), want)


def test_sort_errors():
    with pytest.raises(IndexError):
        st.zeros(2, 3).sort(2)
    with pytest.raises(IndexError):
        st.zeros(2, 3).argsort(-3)


# ---------------------------------------------------------------------------------------
# topk
# ---------------------------------------------------------------------------------------


def check_topk(x, res, k, dim, largest, is_sorted=True):
    v, i = res
    assert i.dtype == st.int64
    want = np.take(np_sort(x, dim, largest)[0], np.arange(k), axis=dim)
    gv, gi = to_np(v), to_np(i)
    assert gv.shape == want.shape and gi.shape == want.shape
    assert gv.dtype == x.dtype
    if is_sorted:
        np.testing.assert_array_equal(gv, want)
    else:
        np.testing.assert_array_equal(np_sort(gv, dim, largest)[0], want)
    np.testing.assert_array_equal(np.take_along_axis(x, gi, dim), gv)
    # no index picked twice
    srt = np.sort(gi, axis=dim)
    assert not (np.diff(srt, axis=dim) == 0).any()


@pytest.mark.parametrize("k", [0, 1, 3, 5])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, -1, 1])
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped", "numpy_view"])
def test_topk(k, largest, dim, layout):
    x = rand((5, 6, 5), st.float32, 21)
    t = laid_out(x, layout)
    check_topk(x, t.topk(k, dim=dim, largest=largest), k, dim, largest)
    check_topk(x, st.topk(t, k, dim, largest), k, dim, largest)
    r = t.topk(k, dim, largest, sorted=False)
    check_topk(x, (r.values, r.indices), k, dim, largest, is_sorted=False)


@pytest.mark.parametrize("dt", [st.uint8, st.int8, st.int32, st.int64, st.float16, st.float64])
def test_topk_dtypes(dt):
    x = sort_input((3, 40), dt, 22)
    if dt in (st.float16, st.float64):
        x = np.nan_to_num(x, nan=0.25)
    check_topk(x, tensor_of(x).topk(7), 7, -1, True)
    check_topk(x, tensor_of(x).topk(7, largest=False), 7, -1, False)


def test_topk_nan_is_largest():
    x = np.array([1.0, np.nan, 3.0, -2.0])
    v, i = tensor_of(x).topk(2)
    np.testing.assert_array_equal(to_np(v), [np.nan, 3.0])
    np.testing.assert_array_equal(to_np(i), [1, 2])
    v, i = tensor_of(x).topk(2, largest=False)
    np.testing.assert_array_equal(to_np(v), [-2.0, 1.0])


def test_topk_errors():
    t = st.zeros(3, 4)
    with pytest.raises(ANY_ERROR):
        t.topk(5)
    with pytest.raises(ANY_ERROR):
        t.topk(4, dim=0)
    with pytest.raises(ANY_ERROR):
        t.topk(-1)
    with pytest.raises(IndexError):
        t.topk(1, dim=2)


# ---------------------------------------------------------------------------------------
# unique
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [st.bool, st.uint8, st.int8, st.int32, st.int64, st.float16,
                                st.float32, st.float64])
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped", "numpy_view"])
def test_unique_matches_numpy(dt, layout):
    x = rand((4, 6), dt, 31)
    t = laid_out(x, layout)
    u, inv, cnt = np.unique(x, return_inverse=True, return_counts=True)
    r = st.unique(t)
    assert isinstance(r, st.Tensor)
    same(r, u)
    r = st.unique(t, return_inverse=True)
    assert len(r) == 2
    same(r[0], u)
    same(r[1], inv.reshape(x.shape).astype(np.int64))
    r = st.unique(t, return_counts=True)
    assert len(r) == 2
    same(r[0], u)
    same(r[1], cnt.astype(np.int64))
    r = st.unique(t, sorted=True, return_inverse=True, return_counts=True)
    assert len(r) == 3
    same(r[0], u)
    same(r[1], inv.reshape(x.shape).astype(np.int64))
    same(r[2], cnt.astype(np.int64))
    same(t.unique(), u)


def test_unique_unsorted_is_consistent():
    x = rand((5, 7), st.int32, 32)
    u, inv, cnt = st.unique(tensor_of(x), sorted=False, return_inverse=True, return_counts=True)
    gu, ginv, gcnt = to_np(u), to_np(inv), to_np(cnt)
    np.testing.assert_array_equal(np.sort(gu), np.unique(x))
    np.testing.assert_array_equal(gu[ginv], x)
    np.testing.assert_array_equal(gcnt, [(x == v).sum() for v in gu])


def test_unique_nan_each_distinct_and_empty():
    x = np.array([np.nan, 1.0, np.nan, 1.0, -0.0, 0.0])
    u, inv, cnt = st.unique(tensor_of(x), return_inverse=True, return_counts=True)
    want_u, want_c = np.unique(x, return_counts=True, equal_nan=False)
    np.testing.assert_array_equal(to_np(u), want_u)  # [0, 1, nan, nan]
    np.testing.assert_array_equal(to_np(cnt), want_c)
    np.testing.assert_array_equal(to_np(u)[to_np(inv)], x)
    u, inv, cnt = st.unique(st.zeros(2, 0), return_inverse=True, return_counts=True)
    assert tuple(u.shape) == (0,) and tuple(inv.shape) == (2, 0) and tuple(cnt.shape) == (0,)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim(dim):
    x = RNG(33).integers(0, 2, size=(6, 5)).astype(np.int64)
    x[3] = x[1]
    x[:, 4] = x[:, 0]
    u, inv, cnt = np.unique(x, axis=dim, return_inverse=True, return_counts=True)
    r = st.unique(tensor_of(x), dim=dim, return_inverse=True, return_counts=True)
    same(r[0], u)
    same(r[1], inv.reshape(-1).astype(np.int64))
    same(r[2], cnt.astype(np.int64))
    same(st.unique(tensor_of(x), dim=dim), u)


# ---------------------------------------------------------------------------------------
# searchsorted
# ---------------------------------------------------------------------------------------


def np_searchsorted(seq, vals, side):
    if seq.ndim == 1:
        return np.searchsorted(seq, vals, side).astype(np.int64)
    out = np.empty(vals.shape, np.int64)
    for ix in np.ndindex(*seq.shape[:-1]):
        out[ix] = np.searchsorted(seq[ix], vals[ix], side)
    return out


@pytest.mark.parametrize("dt", [st.int32, st.int64, st.float32, st.float64])
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("layout", ["contig", "stepped", "flipped", "numpy_view"])
def test_searchsorted_1d_sequence(dt, right, layout):
    seq = np.sort(rand(20, dt, 41))  # with duplicates
    vals = rand((3, 4, 5), dt, 42)
    side = "right" if right else "left"
    r = st.searchsorted(laid_out(seq, layout), laid_out(vals, layout), right=right)
    same(r, np_searchsorted(seq, vals, side))
    r = st.searchsorted(tensor_of(seq), tensor_of(vals), side=side)
    same(r, np_searchsorted(seq, vals, side))
    r = st.searchsorted(tensor_of(seq), tensor_of(vals), out_int32=True, right=right)
    same(r, np_searchsorted(seq, vals, side).astype(np.int32))
    r = st.searchsorted(tensor_of(seq), tensor_of(vals[0, 0]), right=right)  # 1-D values
    same(r, np_searchsorted(seq, vals[0, 0], side))


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("layout", ["contig", "transposed", "numpy_view"])
def test_searchsorted_batched_sequence(right, layout):
    seq = np.sort(rand((2, 3, 7), st.float64, 43), axis=-1)
    vals = rand((2, 3, 5), st.float64, 44)
    side = "right" if right else "left"
    r = st.searchsorted(laid_out(seq, layout), laid_out(vals, layout), right=right)
    same(r, np_searchsorted(seq, vals, side))


def test_searchsorted_sorter_and_edges():
    raw = rand(12, st.float64, 45)
    sorter = np.argsort(raw, kind="stable")
    vals = np.array([-10.0, -4.0, 0.0, 0.25, 4.0, 10.0])
    for side in ("left", "right"):
        want = np.searchsorted(raw, vals, side, sorter=sorter)
        r = st.searchsorted(tensor_of(raw), tensor_of(vals), side=side,
                            sorter=tensor_of(sorter.astype(np.int64)))
        same(r, want.astype(np.int64))
    # batched sorter
    raw2 = rand((3, 8), st.int64, 46)
    sorter2 = np.argsort(raw2, axis=-1, kind="stable")
    v2 = rand((3, 4), st.int64, 47)
    r = st.searchsorted(tensor_of(raw2), tensor_of(v2), right=True, sorter=tensor_of(sorter2))
    same(r, np_searchsorted(np.take_along_axis(raw2, sorter2, -1), v2, "right"))
    # empty values
    r = st.searchsorted(tensor_of(np.arange(4.0)), tensor_of(np.zeros((2, 0))))
    assert tuple(r.shape) == (2, 0) and r.dtype == st.int64


def test_searchsorted_errors():
    seq, v = st.tensor([1.0, 2.0, 3.0]), st.tensor([2.0])
    with pytest.raises(ANY_ERROR):
        st.searchsorted(seq, v, right=True, side="left")
    with pytest.raises(ANY_ERROR):
        st.searchsorted(seq, v, side="middle")
    with pytest.raises(ANY_ERROR):
        st.searchsorted(st.zeros(2, 3), st.zeros(3, 1))  # leading dims differ


# ---------------------------------------------------------------------------------------
# tril / triu
# ---------------------------------------------------------------------------------------

TRI_SHAPES = [(4, 4), (3, 5), (5, 3), (2, 3, 4), (2, 2, 4, 3), (0, 3), (2, 0, 0)]


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("shape", TRI_SHAPES)
@pytest.mark.parametrize("diagonal", [-6, -2, -1, 0, 1, 2, 6])
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped"])
def test_tril_triu(op, shape, diagonal, layout):
    x = rand(shape, st.float32, 51)
    t = laid_out(x, layout)
    want = getattr(np, op)(x, diagonal)
    same(getattr(st, op)(t, diagonal), want)
    same(getattr(st, op)(t, diagonal=diagonal), want)
    same(getattr(t, op)(diagonal), want)
    if diagonal == 0:
        same(getattr(st, op)(t), want)


@pytest.mark.parametrize("dt", [st.bool, st.uint8, st.int64, st.float16])
@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tril_triu_dtypes(op, dt):
    x = rand((3, 4), dt, 52)
    same(getattr(st, op)(tensor_of(x), 1), getattr(np, op)(x, 1))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tril_triu_need_two_dims(op):
    for t in (st.zeros(3), st.tensor(1.0)):
        with pytest.raises(SHAPE_ERROR):
            getattr(st, op)(t)


# ---------------------------------------------------------------------------------------
# roll
# ---------------------------------------------------------------------------------------

ROLLS = [
    (1, None), (-3, None), (25, None), (0, None),
    (1, 0), (-1, 1), (7, -1), ((1, 2), (0, 1)), ((-2, 5), (2, 0)), ((1, 1), (1, 1)),
    ((3,), (1,)),
]


@pytest.mark.parametrize("shifts,dims", ROLLS)
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped", "flipped", "numpy_view"])
def test_roll(shifts, dims, layout):
    x = rand((3, 4, 5), st.int32, 61)
    t = laid_out(x, layout)
    want = np.roll(x, shifts, dims)
    same(st.roll(t, shifts, dims), want)
    same(t.roll(shifts, dims), want)
    if dims is None:
        same(st.roll(t, shifts), want)
    else:
        same(st.roll(t, shifts=shifts, dims=dims), want)


def test_roll_edges():
    same(st.roll(tensor_of(np.array(3.0)), 2), np.roll(np.array(3.0), 2))
    same(st.roll(st.zeros(0, 3), 2, 0), np.zeros((0, 3), np.float32))
    same(st.roll(st.zeros(0, 3), 1), np.zeros((0, 3), np.float32))
    with pytest.raises(ANY_ERROR):
        st.roll(st.zeros(2, 3), (1, 2), (0,))
    with pytest.raises(IndexError):
        st.roll(st.zeros(2, 3), 1, 2)


# ---------------------------------------------------------------------------------------
# repeat / tile
# ---------------------------------------------------------------------------------------

REPEATS = [(1, 1), (2, 3), (1, 2, 3), (2, 1, 1, 2), (0, 2), (3, 0, 1)]


@pytest.mark.parametrize("sizes", REPEATS)
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped", "numpy_view"])
def test_repeat(sizes, layout):
    x = rand((2, 3), st.float64, 71)
    t = laid_out(x, layout)
    want = np.tile(x, sizes)
    same(t.repeat(*sizes), want)
    same(t.repeat(sizes), want)
    same(t.repeat(list(sizes)), want)


def test_repeat_copies_and_edges():
    t = tensor_of(np.arange(3.0))
    r = t.repeat(1)
    r[0] = 9.0
    assert to_np(t)[0] == 0.0
    same(st.tensor(5).repeat(3), np.tile(np.array(5), 3))
    same(tensor_of(np.array([True, False])).repeat(2, 2), np.tile([True, False], (2, 2)))
    with pytest.raises(SHAPE_ERROR):
        st.zeros(2, 3).repeat(2)
    with pytest.raises(ANY_ERROR):
        st.zeros(2, 3).repeat(2, -1)


@pytest.mark.parametrize("dims", [(2,), (1, 2), (2, 1, 3), (), (0,), (3, 1, 1, 1)])
@pytest.mark.parametrize("layout", ["contig", "stepped", "numpy_view"])
def test_tile(dims, layout):
    x = rand((2, 1, 3), st.int8, 72)
    t = laid_out(x, layout)
    want = np.tile(x, dims)
    same(st.tile(t, dims), want)
    same(t.tile(dims), want)
    if dims:
        same(t.tile(*dims), want)


# ---------------------------------------------------------------------------------------
# gather / scatter / scatter_add / take_along_dim
# ---------------------------------------------------------------------------------------


def np_gather(x, dim, idx):
    sub = x[tuple(slice(None) if d == dim % x.ndim else slice(0, s)
                  for d, s in enumerate(idx.shape))]
    return np.take_along_axis(sub, idx, dim)


def unique_index(x_shape, idx_shape, dim, seed):
    """An int64 index of idx_shape whose entries along ``dim`` are distinct per line."""
    rng = RNG(seed)
    dim = dim % len(x_shape)
    n, k = x_shape[dim], idx_shape[dim]
    moved = [s for d, s in enumerate(idx_shape) if d != dim]
    lines = np.stack([rng.permutation(n)[:k] for _ in range(int(np.prod(moved)))]) if k else \
        np.zeros((int(np.prod(moved)), 0), np.int64)
    return np.moveaxis(lines.reshape(*moved, k), -1, dim).astype(np.int64)


def np_scatter(x, dim, idx, src):
    out = x.copy()
    dim = dim % x.ndim
    view = out[tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(idx.shape))]
    if np.ndim(src):
        src = src[tuple(slice(0, s) for s in idx.shape)]
    np.put_along_axis(view, idx, src, dim)
    return out


def np_scatter_add(x, dim, idx, src):
    out = x.copy()
    dim = dim % x.ndim
    coords = list(np.indices(idx.shape))
    coords[dim] = idx
    np.add.at(out, tuple(coords), src[tuple(slice(0, s) for s in idx.shape)])
    return out


GATHER_CASES = [  # x shape, index shape, dim
    ((4, 5), (4, 5), 0), ((4, 5), (3, 2), 1), ((4, 5), (6, 5), 0), ((4, 5), (2, 7), -1),
    ((2, 3, 4), (2, 3, 1), 2), ((2, 3, 4), (1, 5, 2), 1), ((3,), (6,), 0), ((4, 5), (0, 5), 0),
]


@pytest.mark.parametrize("xs,ishape,dim", GATHER_CASES)
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped", "numpy_view"])
def test_gather(xs, ishape, dim, layout):
    x = rand(xs, st.float32, 81)
    idx = RNG(82).integers(0, xs[dim], size=ishape).astype(np.int64)
    t = laid_out(x, layout)
    want = np_gather(x, dim, idx)
    same(st.gather(t, dim, laid_out(idx, layout)), want)
    same(t.gather(dim, tensor_of(idx)), want)


@pytest.mark.parametrize("dt", [st.bool, st.uint8, st.int16, st.int64, st.float16])
def test_gather_scatter_dtypes(dt):
    x, src = rand((3, 4), dt, 83), rand((3, 4), dt, 84)
    idx = unique_index((3, 4), (2, 4), 0, 85)
    same(st.gather(tensor_of(x), 0, tensor_of(idx)), np_gather(x, 0, idx))
    same(tensor_of(x).scatter(0, tensor_of(idx), tensor_of(src)), np_scatter(x, 0, idx, src))


SCATTER_CASES = [  # x shape, index shape, src shape, dim
    ((4, 5), (4, 5), (4, 5), 0), ((4, 5), (2, 3), (4, 5), 0), ((4, 5), (3, 2), (3, 2), 1),
    ((2, 3, 4), (2, 2, 3), (3, 3, 3), 1), ((2, 3, 4), (1, 3, 4), (2, 3, 4), -1),
    ((5,), (3,), (4,), 0), ((4, 5), (0, 5), (4, 5), 0),
]


@pytest.mark.parametrize("xs,ishape,sshape,dim", SCATTER_CASES)
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped", "numpy_view"])
def test_scatter(xs, ishape, sshape, dim, layout):
    x = rand(xs, st.float64, 86)
    src = rand(sshape, st.float64, 87) + 10
    idx = unique_index(xs, ishape, dim, 88)
    want = np_scatter(x, dim, idx, src)
    t = laid_out(x, layout)
    same(t.scatter(dim, laid_out(idx, layout), laid_out(src, layout)), want)
    same(st.scatter(t, dim, tensor_of(idx), tensor_of(src)), want)
    same(t, x)  # out of place
    # a Python number
    want_v = np_scatter(x, dim, idx, 2.5)
    same(t.scatter(dim, tensor_of(idx), 2.5), want_v)
    same(t.scatter(dim, tensor_of(idx), value=2.5), want_v)
    # in place, through a view when the layout is one
    r = t.scatter_(dim, tensor_of(idx), tensor_of(src))
    assert r is t
    same(t, want)


def test_scatter_int_value():
    x = np.zeros((3, 3), np.int64)
    idx = np.array([[0, 1, 2]], np.int64)
    r = tensor_of(x).scatter(0, tensor_of(idx), 7)
    assert r.dtype == st.int64
    same(r, np_scatter(x, 0, idx, 7))


@pytest.mark.parametrize("xs,ishape,sshape,dim", SCATTER_CASES)
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped"])
def test_scatter_add(xs, ishape, sshape, dim, layout):
    x = rand(xs, st.float64, 89)
    src = rand(sshape, st.float64, 90)
    idx = RNG(91).integers(0, xs[dim], size=ishape).astype(np.int64)  # duplicates
    want = np_scatter_add(x, dim, idx, src)
    t = laid_out(x, layout)
    same(t.scatter_add(dim, tensor_of(idx), laid_out(src, layout)), want)
    same(st.scatter_add(t, dim, laid_out(idx, layout), tensor_of(src)), want)
    same(t, x)
    r = t.scatter_add_(dim, tensor_of(idx), tensor_of(src))
    assert r is t
    same(t, want)


def test_scatter_add_int_many_duplicates():
    x = np.zeros(4, np.int64)
    idx = RNG(92).integers(0, 4, size=500).astype(np.int64)
    src = RNG(93).integers(-5, 6, size=500).astype(np.int64)
    same(tensor_of(x).scatter_add(0, tensor_of(idx), tensor_of(src)),
         np_scatter_add(x, 0, idx, src))


def test_gather_scatter_errors():
    x = st.zeros(3, 4)
    i5 = st.tensor([[5]])
    with pytest.raises(INDEX_ERROR):
        st.gather(x, 0, i5)
    with pytest.raises(INDEX_ERROR):
        x.scatter(0, i5, st.ones(1, 1))
    with pytest.raises(INDEX_ERROR):
        x.scatter(0, i5, 1.0)
    with pytest.raises(INDEX_ERROR):
        x.scatter_add(0, i5, st.ones(1, 1))
    with pytest.raises(INDEX_ERROR):
        x.scatter_add_(0, i5, st.ones(1, 1))
    assert to_np(x).sum() == 0
    with pytest.raises((TypeError, RuntimeError)):
        x.scatter(0, st.tensor([[0]], dtype=st.int32), st.ones(1, 1))
    with pytest.raises((TypeError, RuntimeError)):
        x.scatter_add(0, st.tensor([[0.0]]), st.ones(1, 1))
    with pytest.raises(IndexError):
        x.scatter(2, st.tensor([[0]]), st.ones(1, 1))
    with pytest.raises(ANY_ERROR):  # index rank differs from self
        x.scatter(0, st.tensor([0]), st.ones(1))
    with pytest.raises(ANY_ERROR):  # index larger than src
        x.scatter(0, st.tensor([[0, 1, 2]]), st.ones(1, 2))
    with pytest.raises(ANY_ERROR):  # index larger than self outside dim
        x.scatter_add(0, st.zeros(1, 5, dtype=st.int64), st.ones(1, 5))


@pytest.mark.parametrize("op", ["gather", "scatter", "scatter_add"])
def test_negative_index_is_out_of_bounds(op):
    """PyTorch's gather/scatter take indices in [0, size): -1 is an error, not a wrap."""
    x = st.zeros(2, 3)
    i = st.tensor([[-1]])
    with pytest.raises(INDEX_ERROR):
        if op == "gather":
            st.gather(x, 1, i)
        else:
            getattr(x, op)(1, i, st.ones(1, 1))


TAKE_CASES = [  # x shape, indices shape, dim
    ((3, 4), (3, 2), 1), ((3, 4), (5, 4), 0), ((3, 4), (1, 6), 1), ((3, 4), (3, 1), 0),
    ((2, 3, 4), (2, 1, 4), 1), ((2, 1, 4), (2, 3, 2), -1), ((3, 4), (2, 3), None),
    ((2, 3, 4), (7,), None),
]


@pytest.mark.parametrize("xs,ishape,dim", TAKE_CASES)
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped"])
def test_take_along_dim(xs, ishape, dim, layout):
    x = rand(xs, st.float32, 94)
    n = int(np.prod(xs)) if dim is None else xs[dim]
    idx = RNG(95).integers(0, n, size=ishape).astype(np.int64)
    if dim is None:
        want = x.reshape(-1)[idx.reshape(-1)]
    else:
        want = np.take_along_axis(x, idx, dim)  # broadcasts like PyTorch
    t = laid_out(x, layout)
    same(st.take_along_dim(t, laid_out(idx, layout), dim), want)
    same(t.take_along_dim(tensor_of(idx), dim=dim), want)
    if dim is None:
        same(st.take_along_dim(t, tensor_of(idx)), want)


def test_take_along_dim_errors():
    with pytest.raises(INDEX_ERROR):
        st.take_along_dim(st.zeros(3, 4), st.tensor([[4]]), 1)
    with pytest.raises(IndexError):
        st.take_along_dim(st.zeros(3, 4), st.tensor([[0]]), 2)


# ---------------------------------------------------------------------------------------
# argwhere
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (2, 0, 3)])
@pytest.mark.parametrize("dt", [st.bool, st.int32, st.float32])
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped", "numpy_view"])
def test_argwhere(shape, dt, layout):
    x = rand(shape, dt, 101)
    t = laid_out(x, layout)
    r = st.argwhere(t)
    assert r.dtype == st.int64
    same(r, np.argwhere(x).astype(np.int64))
    same(t.argwhere(), np.argwhere(x).astype(np.int64))


def test_argwhere_nan_and_signed_zero():
    x = np.array([[0.0, np.nan], [-0.0, 1.0]])
    same(st.argwhere(tensor_of(x)), np.argwhere(x).astype(np.int64))
    same(st.argwhere(st.tensor(0.0)), np.zeros((0, 0), np.int64))
    same(st.argwhere(st.tensor(2.0)), np.zeros((1, 0), np.int64))


# ---------------------------------------------------------------------------------------
# isclose / allclose
# ---------------------------------------------------------------------------------------

INF, NAN = np.inf, np.nan
CLOSE_A = [1.0, 1.0, INF, INF, -INF, NAN, NAN, 0.0, 1e-9, 100.0, 1.0, -INF, 5.0]
CLOSE_B = [1.0 + 1e-6, 1.1, INF, -INF, -INF, NAN, 1.0, 1e-9, 0.0, 100.0005, NAN, 3.0, 5.0]


@pytest.mark.parametrize("dt", [st.float32, st.float64])
@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("tols", [{}, {"rtol": 0.0, "atol": 0.2}, {"rtol": 0.2, "atol": 0.0},
                                  {"rtol": 0.0, "atol": 0.0}])
def test_isclose(dt, equal_nan, tols):
    a = np.array(CLOSE_A, ST2NP[dt])
    b = np.array(CLOSE_B, ST2NP[dt])
    want = np.isclose(a, b, equal_nan=equal_nan, **tols)
    r = st.isclose(tensor_of(a), tensor_of(b), equal_nan=equal_nan, **tols)
    assert r.dtype == st.bool
    same(r, want)
    same(tensor_of(a).isclose(tensor_of(b), equal_nan=equal_nan, **tols), want)
    al = st.allclose(tensor_of(a), tensor_of(b), equal_nan=equal_nan, **tols)
    assert type(al) is bool and al == bool(want.all())


def test_isclose_broadcast_layouts_and_ints():
    a = rand((3, 1), st.float64, 111)
    b = rand((4,), st.float64, 112)
    r = st.isclose(laid_out(a, "transposed"), laid_out(b, "flipped"), atol=0.6, rtol=0.0)
    same(r, np.isclose(a, b, atol=0.6, rtol=0.0))
    ai, bi = rand((3, 4), st.int64, 113), rand((3, 4), st.int64, 114)
    bi[0] = ai[0]
    same(st.isclose(tensor_of(ai), tensor_of(bi)), np.isclose(ai, bi))
    assert st.allclose(tensor_of(ai), tensor_of(ai)) is True
    x = rand((2, 3), st.float64, 115)
    assert st.allclose(tensor_of(x), tensor_of(x + 1e-9)) is True
    assert tensor_of(x).allclose(tensor_of(x + 1e-3)) is False
    assert st.allclose(tensor_of(x), tensor_of(x + 1e-3), atol=1e-2) is True


# ---------------------------------------------------------------------------------------
# einsum
# ---------------------------------------------------------------------------------------

EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ba,ac", [(3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("iij->j", [(3, 3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("Ab,bC->CA", [(3, 4), (4, 2)]),
    ("i...->...", [(3, 2, 4)]),
    ("ij,kl->ijkl", [(2, 3), (2, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUMS, ids=[f"{e}-{i}" for i, (e, _) in enumerate(EINSUMS)])
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped"])
def test_einsum(eq, shapes, layout):
    arrs = [rand(s, st.float64, 120 + k, "normal") for k, s in enumerate(shapes)]
    ts = [laid_out(a, layout) for a in arrs]
    want = np.einsum(eq, *arrs)
    assert_values(st.einsum(eq, *ts), want, dtype=st.float64)
    assert_values(st.einsum(eq, ts), want, dtype=st.float64)


@pytest.mark.parametrize("dt", [st.float32, st.int64])
def test_einsum_dtypes(dt):
    a, b = rand((3, 4), dt, 130), rand((4, 2), dt, 131)
    r = st.einsum("ij,jk->ik", tensor_of(a), tensor_of(b))
    assert r.dtype == dt
    assert_values(r, np.einsum("ij,jk->ik", a, b))


def test_einsum_errors():
    a = st.zeros(3, 4)
    with pytest.raises(ANY_ERROR):
        st.einsum("ij,jk->ik", a)  # too few operands
    with pytest.raises(ANY_ERROR):
        st.einsum("ijk->i", a)  # subscripts vs dims
    with pytest.raises(ANY_ERROR):
        st.einsum("ij,jk->ik", a, st.zeros(5, 2))  # j is 4 and 5
    with pytest.raises(ANY_ERROR):
        st.einsum("ij->k", a)  # output label not in the input


# ---------------------------------------------------------------------------------------
# softmax / log_softmax
# ---------------------------------------------------------------------------------------


def np_softmax(x, axis):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


SOFTMAXES = {"softmax": np_softmax, "log_softmax": np_log_softmax}


@pytest.mark.parametrize("op", sorted(SOFTMAXES))
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("dt", [st.float16, st.float32, st.float64])
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped", "numpy_view"])
def test_softmax(op, dim, dt, layout):
    x = rand((3, 4, 5), dt, 141, "normal")
    t = laid_out(x, layout)
    want = SOFTMAXES[op](x, dim)
    assert_values(getattr(st, op)(t, dim), want, dtype=dt)
    assert_values(getattr(t, op)(dim), want, dtype=dt)
    assert_values(getattr(st, op)(t, dim=dim), want, dtype=dt)


@pytest.mark.parametrize("op", sorted(SOFTMAXES))
def test_softmax_stable_and_infinities(op):
    big = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1003.0],
                    [-np.inf, 0.0, 1.0], [-np.inf, -np.inf, 2.0]])
    for dt in (st.float32, st.float64):
        r = getattr(st, op)(tensor_of(big.astype(ST2NP[dt])), 1)
        assert_values(r, SOFTMAXES[op](big, 1), dtype=dt)
        assert not np.isnan(to_np(r)).any()
    # a row of only -inf: NaN, as PyTorch
    r = getattr(st, op)(tensor_of(np.full((1, 3), -np.inf)), 1)
    assert np.isnan(to_np(r)).all()


@pytest.mark.parametrize("op", sorted(SOFTMAXES))
def test_softmax_dtype_keyword_0d_and_empty(op):
    x = rand((2, 5), st.float32, 142, "normal")
    r = getattr(st, op)(tensor_of(x), 1, dtype=st.float64)
    assert_values(r, SOFTMAXES[op](x, 1), dtype=st.float64)
    r = getattr(tensor_of(x), op)(0, dtype=st.float64)
    assert_values(r, SOFTMAXES[op](x, 0), dtype=st.float64)
    xi = rand((2, 5), st.int64, 143)
    r = getattr(st, op)(tensor_of(xi), -1, dtype=st.float32)
    assert_values(r, SOFTMAXES[op](xi, -1), dtype=st.float32)
    r = getattr(st, op)(st.tensor(3.0), 0)
    assert r.shape == () and float(r) == (1.0 if op == "softmax" else 0.0)
    assert tuple(getattr(st, op)(st.zeros(0, 3), 1).shape) == (0, 3)
    with pytest.raises(IndexError):
        getattr(st, op)(st.zeros(2, 3), 2)


# ---------------------------------------------------------------------------------------
# cross
# ---------------------------------------------------------------------------------------

CROSSES = [  # a shape, b shape, dim (None: first dim of size 3), NumPy axis
    ((3,), (3,), None, 0), ((4, 3), (4, 3), 1, 1), ((3, 5), (3, 5), 0, 0),
    ((3, 5), (3, 5), None, 0), ((2, 3, 3), (2, 3, 3), None, 1), ((2, 3, 3), (2, 3, 3), -1, -1),
    ((4, 3), (3,), -1, -1), ((2, 1, 3), (4, 3), 2, -1), ((5, 3, 2), (3, 1), 1, 1),
]


@pytest.mark.parametrize("ash,bsh,dim,axis", CROSSES)
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped"])
def test_cross(ash, bsh, dim, axis, layout):
    a, b = rand(ash, st.float64, 151), rand(bsh, st.float64, 152)
    nd = max(a.ndim, b.ndim)
    ab = np.broadcast_arrays(a.reshape((1,) * (nd - a.ndim) + a.shape),
                             b.reshape((1,) * (nd - b.ndim) + b.shape))
    want = np.cross(ab[0], ab[1], axis=axis)
    ta, tb = laid_out(a, layout), laid_out(b, layout)
    same(st.cross(ta, tb, dim=dim) if dim is not None else st.cross(ta, tb), want)
    same(ta.cross(tb, dim) if dim is not None else ta.cross(tb), want)


def test_cross_ints_and_errors():
    a, b = rand((4, 3), st.int64, 153), rand((4, 3), st.int64, 154)
    same(st.cross(tensor_of(a), tensor_of(b), dim=1), np.cross(a, b, axis=1))
    with pytest.raises(SHAPE_ERROR):
        st.cross(st.zeros(4, 2), st.zeros(4, 2), dim=1)
    with pytest.raises(SHAPE_ERROR):
        st.cross(st.zeros(4, 2), st.zeros(4, 2))  # no dim of size 3
    with pytest.raises(IndexError):
        st.cross(st.zeros(4, 3), st.zeros(4, 3), dim=2)


# ---------------------------------------------------------------------------------------
# diff
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", ["contig", "transposed", "stepped", "numpy_view"])
def test_diff(n, dim, layout):
    x = rand((4, 5), st.float64, 161, "normal")
    t = laid_out(x, layout)
    same(st.diff(t, n=n, dim=dim), np.diff(x, n=n, axis=dim))
    same(t.diff(n, dim), np.diff(x, n=n, axis=dim))


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("dim", [0, -1])
def test_diff_prepend_append(n, dim):
    x = rand((3, 4), st.float64, 162)
    pshape = (2, 4) if dim == 0 else (3, 2)
    p, a = rand(pshape, st.float64, 163), rand(pshape, st.float64, 164)
    tx, tp, ta = tensor_of(x), tensor_of(p), tensor_of(a)
    same(st.diff(tx, n, dim, prepend=tp), np.diff(x, n, dim, prepend=p))
    same(st.diff(tx, n, dim, append=ta), np.diff(x, n, dim, append=a))
    same(st.diff(tx, n, dim, tp, ta), np.diff(x, n, dim, prepend=p, append=a))
    same(st.diff(laid_out(x, "transposed"), n, dim, prepend=laid_out(p, "flipped")),
         np.diff(x, n, dim, prepend=p))


@pytest.mark.parametrize("dt", [st.bool, st.uint8, st.int32, st.int64, st.float16, st.float32])
def test_diff_dtypes(dt):
    x = rand((3, 6), dt, 165)
    r = st.diff(tensor_of(x))
    assert r.dtype == dt
    same(r, np.diff(x))  # bool: not-equal, like PyTorch's logical xor


def test_diff_errors():
    with pytest.raises(SHAPE_ERROR):
        st.diff(st.tensor(1.0))
    with pytest.raises(IndexError):
        st.diff(st.zeros(3, 4), dim=2)


# ---------------------------------------------------------------------------------------
# meshgrid
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [(3,), (2, 3), (2, 3, 4), (0, 3), (1, 1)])
def test_meshgrid(indexing, sizes):
    arrs = [rand((n,), st.float32, 170 + k) for k, n in enumerate(sizes)]
    ts = [tensor_of(a) for a in arrs]
    want = np.meshgrid(*arrs, indexing=indexing)
    for got in (st.meshgrid(*ts, indexing=indexing), st.meshgrid(ts, indexing=indexing)):
        assert len(got) == len(want)
        for g, w, t in zip(got, want, ts):
            same(g, w)
            if g.numel() > 1:  # a view of the input: one stride 0
                assert g.data_ptr() == t.data_ptr()
                assert 0 in tuple(g.stride()) or len(sizes) == 1


def test_meshgrid_default_ij_and_views_see_writes():
    a, b = tensor_of(np.arange(3.0)), tensor_of(np.arange(4.0))
    x, y = st.meshgrid(a, b, indexing="ij")
    same(x, np.meshgrid(np.arange(3.0), np.arange(4.0), indexing="ij")[0])
    x2, y2 = st.meshgrid(a, b)
    same(y2, to_np(y))
    a[1] = 10.0
    assert to_np(x)[1, 0] == 10.0  # shares a's storage
    with pytest.raises(ANY_ERROR):
        st.meshgrid(a, b, indexing="yx")
    with pytest.raises(ANY_ERROR):
        st.meshgrid(st.zeros(2, 2), b)


# ---------------------------------------------------------------------------------------
# cumulative_sum
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", ["contig", "transposed", "flipped", "numpy_view"])
def test_cumulative_sum(include_initial, dim, layout):
    x = rand((3, 4), st.float64, 181)
    t = laid_out(x, layout)
    want = np.cumulative_sum(x, axis=dim, include_initial=include_initial)
    same(st.cumulative_sum(t, dim=dim, include_initial=include_initial), want)


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("dt", [st.bool, st.int8, st.int32, st.int64, st.float16, st.float32])
def test_cumulative_sum_1d_dtypes(dt, include_initial):
    x = rand((7,), dt, 182)
    want = np.cumulative_sum(x, include_initial=include_initial)  # int -> int64, bool -> int64
    r = st.cumulative_sum(tensor_of(x), include_initial=include_initial)
    assert r.dtype == NP2ST[want.dtype], (r.dtype, want.dtype)
    assert_values(r, want)


def test_cumulative_sum_dtype_keyword_unsigned_and_errors():
    x = rand((2, 5), st.int32, 183)
    r = st.cumulative_sum(tensor_of(x), dim=1, dtype=st.float64)
    same(r, np.cumulative_sum(x, axis=1, dtype=np.float64))
    u = np_sample((9,), np.uint8, 184)
    r = st.cumulative_sum(tensor_of(u))
    # the array API gives the default unsigned integer (uint64); PyTorch's cumsum int64
    assert r.dtype in (st.uint64, st.int64)
    np.testing.assert_array_equal(to_np(r).astype(np.uint64), np.cumulative_sum(u))
    assert tuple(st.cumulative_sum(st.zeros(0), include_initial=True).shape) == (1,)
    with pytest.raises(ANY_ERROR):
        st.cumulative_sum(st.zeros(2, 3))  # dim needed beyond 1-D
    with pytest.raises(IndexError):
        st.cumulative_sum(st.zeros(2, 3), dim=2)


# ---------------------------------------------------------------------------------------
# method forms where PyTorch has them
# ---------------------------------------------------------------------------------------

METHODS = ["sort", "argsort", "topk", "unique", "tril", "triu", "roll", "repeat", "tile",
           "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "take_along_dim",
           "argwhere", "isclose", "allclose", "softmax", "log_softmax", "cross", "diff"]


@pytest.mark.parametrize("name", METHODS)
def test_method_exists(name):
    assert callable(getattr(st.Tensor, name))


# ---------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------

GIDX = np.array([[0, 2, 1, 3], [3, 3, 0, 1], [1, 0, 0, 2]], np.int64)  # into dim 1 of (3, 4)
UIDX = unique_index((3, 4), (2, 4), 0, 7)  # distinct rows per column, for scatter
DIDX = np.array([[0, 2, 2, 1], [2, 2, 0, 1]], np.int64)  # duplicates, for scatter_add


def g(shape, seed):
    return RNG(seed).uniform(-1.5, 1.5, shape)


# name: (function of the leaves, the leaves' values); the first leaf is the one laid out.
GRADS = {
    "cat": (lambda a, b: st.cat([a, b], 1), lambda: [g((3, 4), 1), g((3, 2), 2)]),
    "cat dim0": (lambda a, b: st.cat([b, a, b], 0), lambda: [g((3, 4), 1), g((1, 4), 2)]),
    "stack": (lambda a, b: st.stack([a, b], 1), lambda: [g((3, 4), 1), g((3, 4), 2)]),
    "sort": (lambda a: a.sort(0)[0], lambda: [distinct((3, 4), 3)]),
    "sort desc": (lambda a: a.sort(-1, descending=True).values, lambda: [distinct((3, 4), 4)]),
    "topk": (lambda a: a.topk(2).values, lambda: [distinct((3, 4), 5)]),
    "topk smallest dim0": (lambda a: a.topk(2, 0, largest=False)[0], lambda: [distinct((3, 4), 6)]),
    "gather": (lambda a: st.gather(a, 1, st.tensor(GIDX)), lambda: [g((3, 4), 7)]),
    "scatter": (lambda a, s: a.scatter(0, st.tensor(UIDX), s),
                lambda: [g((3, 4), 8), g((2, 4), 9)]),
    "scatter value": (lambda a: a.scatter(0, st.tensor(UIDX), 0.5), lambda: [g((3, 4), 8)]),
    "scatter_add": (lambda a, s: a.scatter_add(0, st.tensor(DIDX), s),
                    lambda: [g((3, 4), 10), g((2, 4), 11)]),
    "take_along_dim": (lambda a: st.take_along_dim(a, st.tensor(GIDX), 1), lambda: [g((3, 4), 12)]),
    "take_along_dim flat": (lambda a: st.take_along_dim(a, st.tensor([5, 0, 5, 11])),
                            lambda: [g((3, 4), 12)]),
    "tril": (lambda a: st.tril(a, -1), lambda: [g((3, 4), 13)]),
    "triu": (lambda a: a.triu(1), lambda: [g((3, 4), 14)]),
    "roll": (lambda a: st.roll(a, (1, -2), (0, 1)), lambda: [g((3, 4), 15)]),
    "roll flat": (lambda a: st.roll(a, 5), lambda: [g((3, 4), 15)]),
    "repeat": (lambda a: a.repeat(2, 1, 2), lambda: [g((2, 3), 16)]),
    "tile": (lambda a: st.tile(a, (2,)), lambda: [g((2, 3), 17)]),
    "softmax": (lambda a: st.softmax(a, 1), lambda: [g((3, 4), 18)]),
    "log_softmax": (lambda a: a.log_softmax(0), lambda: [g((3, 4), 19)]),
    "cross": (lambda a, b: st.cross(a, b, dim=1), lambda: [g((4, 3), 20), g((4, 3), 21)]),
    "diff": (lambda a: st.diff(a, n=2, dim=1), lambda: [g((3, 4), 22)]),
    "diff prepend": (lambda a, p: st.diff(a, dim=0, prepend=p, append=p),
                     lambda: [g((3, 4), 23), g((1, 4), 24)]),
    "einsum": (lambda a, b: st.einsum("ij,jk->ik", a, b), lambda: [g((3, 4), 25), g((4, 2), 26)]),
    "einsum trace": (lambda a: st.einsum("ii", a), lambda: [g((3, 3), 27)]),
    "einsum batched": (lambda a, b: st.einsum("bij,bjk->bik", a, b),
                       lambda: [g((2, 2, 3), 28), g((2, 3, 2), 29)]),
    "einsum three": (lambda a, b, c: st.einsum("ij,jk,k->i", a, b, c),
                     lambda: [g((2, 3), 30), g((3, 2), 31), g((2,), 32)]),
}


def make_layout(arr, layout):
    """(leaf, view): a float64 leaf and a view of it holding arr's values in ``layout``."""
    nd = arr.ndim
    if layout == "contig":
        x = st.tensor(arr, requires_grad=True)
        return x, lambda x: x
    if layout == "transposed":
        x = st.tensor(np.ascontiguousarray(arr.transpose()), requires_grad=True)
        return x, lambda x: x.permute(*reversed(range(nd)))
    # negatively stepped
    x = st.tensor(np.ascontiguousarray(arr[::-1]), requires_grad=True)
    return x, lambda x: x[::-1]


@pytest.mark.parametrize("layout", ["contig", "transposed", "reversed"])
@pytest.mark.parametrize("name", list(GRADS))
def test_gradcheck(name, layout):
    fn, make = GRADS[name]
    arrs = make()
    x0, view = make_layout(arrs[0], layout)
    rest = [st.tensor(a, requires_grad=True) for a in arrs[1:]]
    assert gradcheck(lambda x, *r: fn(view(x), *r), (x0, *rest))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "cross", "einsum", "diff prepend",
                                  "scatter_add"])
def test_gradgradcheck(name):
    fn, make = GRADS[name]
    leaves = [st.tensor(a, requires_grad=True) for a in make()]
    assert gradgradcheck(fn, tuple(leaves))


def test_cat_gradient_routes_to_inputs():
    a = st.tensor(np.ones((2, 2)), requires_grad=True)
    b = st.tensor(np.ones((1, 2)), requires_grad=True)
    w = st.tensor(np.arange(6.0).reshape(3, 2))
    (st.cat([a, b]) * w).sum().backward()
    np.testing.assert_array_equal(to_np(a.grad), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(to_np(b.grad), [[4, 5]])
