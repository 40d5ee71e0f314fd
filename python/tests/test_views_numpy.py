"""Differential tests of every view op against NumPy: shape, strides, byte offset from the
base pointer, values, and memory sharing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import strata as st

settings.register_profile("ci", max_examples=150, deadline=None)
settings.load_profile("ci")


def base_pair(shape):
    n = int(np.prod(shape)) if shape else 1
    a = np.arange(n, dtype=np.int64).reshape(shape)
    t = st.from_numpy(a)
    return a, t


def check_same_view(t, a, base_t, base_a):
    """t (strata) and a (NumPy) must be the same view of the same memory."""
    assert tuple(t.shape) == a.shape
    if a.size > 0:
        assert _strides_equal_ignoring_unit(t, a), (t.stride(), a.strides)
        assert t.data_ptr() - base_t.data_ptr() == a.ctypes.data - base_a.ctypes.data
    np.testing.assert_array_equal(np.asarray(t.tolist(), dtype=a.dtype).reshape(a.shape), a)
    assert t.untyped_storage().data_ptr() == base_t.untyped_storage().data_ptr()


def _strides_equal_ignoring_unit(t, a):
    # Strides of size-1 dims carry no meaning; NumPy and PyTorch may differ there.
    return all(
        n == 1 or s * a.itemsize == sa for s, sa, n in zip(t.stride(), a.strides, a.shape)
    )


shapes = hs.lists(hs.integers(0, 5), min_size=0, max_size=4).map(tuple)
nonempty_shapes = hs.lists(hs.integers(1, 5), min_size=1, max_size=4).map(tuple)


@given(nonempty_shapes, hs.data())
def test_getitem_slices_negative_steps(shape, data):
    a, t = base_pair(shape)
    key = []
    for n in shape:
        kind = data.draw(hs.sampled_from(["int", "slice", "none", "full"]))
        if kind == "int":
            key.append(data.draw(hs.integers(-n, n - 1)))
        elif kind == "slice":
            start = data.draw(hs.one_of(hs.none(), hs.integers(-n - 2, n + 2)))
            stop = data.draw(hs.one_of(hs.none(), hs.integers(-n - 2, n + 2)))
            step = data.draw(hs.one_of(hs.none(), hs.integers(-3, 3).filter(lambda s: s != 0)))
            key.append(slice(start, stop, step))
        elif kind == "none":
            key.append(None)
            key.append(slice(None))
        else:
            key.append(Ellipsis if Ellipsis not in key else slice(None))
    key = tuple(key)
    # A trailing Ellipsis makes NumPy return a 0-d view instead of a scalar copy.
    np_key = key if Ellipsis in key else key + (Ellipsis,)
    v, w = t[key], a[np_key]
    check_same_view(v, w, t, a)
    if w.size:
        assert np.shares_memory(v.numpy(), a)


@given(nonempty_shapes, hs.data())
def test_transpose_permute_flip_movedim(shape, data):
    a, t = base_pair(shape)
    nd = len(shape)
    d0, d1 = data.draw(hs.integers(-nd, nd - 1)), data.draw(hs.integers(-nd, nd - 1))
    check_same_view(t.transpose(d0, d1), np.swapaxes(a, d0, d1), t, a)
    perm = data.draw(hs.permutations(range(nd)))
    check_same_view(t.permute(*perm), np.transpose(a, perm), t, a)
    dims = data.draw(hs.lists(hs.integers(0, nd - 1), unique=True))
    check_same_view(t.flip(dims), np.flip(a, dims) if dims else a, t, a)
    src = data.draw(hs.integers(0, nd - 1))
    dst = data.draw(hs.integers(0, nd - 1))
    check_same_view(t.movedim(src, dst), np.moveaxis(a, src, dst), t, a)
    check_same_view(t.T, a.T, t, a)


@given(shapes, hs.data())
def test_expand_squeeze_unsqueeze(shape, data):
    a, t = base_pair(shape)
    lead = data.draw(hs.lists(hs.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(data.draw(hs.integers(0, 3)) if n == 1 else n for n in shape)
    check_same_view(t.expand(*target) if target else t, np.broadcast_to(a, target), t, a)
    check_same_view(t.squeeze(), np.squeeze(a), t, a)
    d = data.draw(hs.integers(-len(shape) - 1, len(shape)))
    check_same_view(t.unsqueeze(d), np.expand_dims(a, d), t, a)


@given(hs.lists(hs.integers(1, 6), min_size=2, max_size=4).map(tuple), hs.data())
def test_diagonal_and_unfold(shape, data):
    a, t = base_pair(shape)
    nd = len(shape)
    d1, d2 = data.draw(hs.permutations(range(nd)))[:2]
    off = data.draw(hs.integers(-6, 6))
    check_same_view(t.diagonal(off, d1, d2), np.diagonal(a, off, d1, d2), t, a)
    dim = data.draw(hs.integers(0, nd - 1))
    size = data.draw(hs.integers(0, shape[dim]))
    step = data.draw(hs.integers(1, 3))
    win = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    win = win[(slice(None),) * dim + (slice(None, None, step),)]
    check_same_view(t.unfold(dim, size, step), win, t, a)


@given(shapes, hs.data())
def test_view_and_reshape(shape, data):
    a, t = base_pair(shape)
    n = a.size
    factors = [f for f in range(1, n + 1) if n % f == 0] or [1]
    f = data.draw(hs.sampled_from(factors))
    new = (f, n // f) if n else (0, 3)
    check_same_view(t.view(*new), a.reshape(new), t, a)
    tt = t.transpose(0, -1) if len(shape) >= 2 else t
    at = np.swapaxes(a, 0, -1) if len(shape) >= 2 else a
    r = tt.reshape(-1)
    np.testing.assert_array_equal(np.asarray(r.tolist()), at.reshape(-1))
    shares = np.shares_memory(r.numpy(), a) if r.numel() else True
    assert shares == (r.untyped_storage() == t.untyped_storage())


def test_as_strided_negative_and_bounds():
    a, t = base_pair((12,))
    v = t.as_strided((3, 2), (-4, 1), 8)
    w = np.lib.stride_tricks.as_strided(a[8:], (3, 2), (-32, 8))
    check_same_view(v, w, t, a)
    with pytest.raises(st.ShapeError, match="out of bounds for storage of size 96"):
        t.as_strided((3,), (5,), 3)
    with pytest.raises(st.ShapeError, match="before the start of the storage"):
        t.as_strided((3,), (-5,), 3)


def test_view_dtype():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = st.from_numpy(a)
    check_same_view(t.view(st.int32), a.view(np.int32), t.view(st.int32), a.view(np.int32))
    v = t.view(st.float64)
    assert v.shape == (3, 2)
    np.testing.assert_array_equal(v.numpy(), a.view(np.float64))
    with pytest.raises(st.DTypeError, match="must be divisible by 2"):
        t[:, :3].view(st.float64)


def test_split_chunk_unbind():
    a, t = base_pair((7, 3))
    parts = t.split(3)
    assert [p.shape for p in parts] == [(3, 3), (3, 3), (1, 3)]
    for p, w in zip(parts, np.split(a, [3, 6])):
        check_same_view(p, w, t, a)
    assert len(st.arange(6).chunk(4)) == 3
    for p, w in zip(t.unbind(1), [a[:, i] for i in range(3)]):
        check_same_view(p, w, t, a)
    with pytest.raises(st.ShapeError, match="split_with_sizes expects split_sizes to sum exactly to 7"):
        t.split([2, 2])


def test_view_error_texts():
    t = st.arange(12).view(3, 4)
    with pytest.raises(st.ShapeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        t.t().view(12)
    with pytest.raises(ValueError, match=r"shape '\[5, 5\]' is invalid for input of size 12"):
        t.view(5, 5)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        t.transpose(0, 2)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        t[5]
    with pytest.raises(st.StrataValueError, match="slice step cannot be zero"):
        t[::0]
    with pytest.raises(st.StrataError):
        t.permute(0, 0)


@pytest.mark.parametrize("step", [-(2**63), 2**63 - 1, -(2**63 - 1), 2**70, -(2**70)])
def test_extreme_slice_steps_match_numpy(step):
    a, t = base_pair((5, 3))
    check_same_view(t[::step], a[::step], t, a)
    check_same_view(t[:, 1::step], a[:, 1::step], t, a)


@pytest.mark.parametrize(
    "key",
    [
        slice(True, None),
        slice(None, True),
        slice(False, True),
        slice(None, None, True),
        slice(True, -1, True),
        (slice(None), slice(True, None)),
    ],
)
def test_bool_slice_bounds_are_ints(key):
    a, t = base_pair((5, 3))
    check_same_view(t[key], a[key], t, a)


def test_bool_slice_step_false_is_a_zero_step():
    _, t = base_pair((5, 3))
    with pytest.raises(st.StrataValueError, match="slice step cannot be zero"):
        t[::False]


def test_huge_strides_on_single_element_dims_are_harmless():
    t = st.arange(15).reshape(5, 3)
    for v in (t[::2**63 - 1], t[::-(2**63)], t.as_strided((1, 3), (2**63 - 1, 1))):
        a = np.asarray(v.tolist())
        assert ((v + 1).tolist() == (a + 1).tolist())
        assert v.sum().item() == a.sum()
        assert v.contiguous().tolist() == a.tolist()
        assert repr(v.T).startswith("tensor(")
        assert (v @ st.ones(3, 1, dtype=st.int64)).tolist() == (a @ np.ones((3, 1), np.int64)).tolist()
        assert np.asarray(v).tolist() == a.tolist()
