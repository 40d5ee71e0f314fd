"""The Tensor API outside the engine ops: creation functions and dtype inference, metadata,
the version counter, ``__getitem__`` / ``__setitem__`` (basic views and advanced, copying
indexing, checked against NumPy), Python conversions and PyTorch-style ``repr``."""

from __future__ import annotations

import math
import operator
import pickle
import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as hs

import strata as st
from _strata_helpers import (
    CORE,
    NP2ST,
    ST2NP,
    assert_values,
    budget,
    laid_out,
    layouts,
    seeds,
    shapes,
    tensor_of,
    to_np,
    values,
)

# --------------------------------------------------------------------------------------
# Creation.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,dtype,shape",
    [
        (1.5, st.float32, ()),
        (3, st.int64, ()),
        (True, st.bool, ()),
        ([1.0, 2.0], st.float32, (2,)),
        ([1, 2], st.int64, (2,)),
        ([True, False], st.bool, (2,)),
        ([1, 2.5], st.float32, (2,)),
        ([True, 2], st.int64, (2,)),
        ([True, 2.0], st.float32, (2,)),
        ([[1, 2, 3], [4, 5, 6]], st.int64, (2, 3)),
        ((1, 2), st.int64, (2,)),
        ([(1.0,), (2.0,)], st.float32, (2, 1)),
        ([], st.float32, (0,)),
        ([[]], st.float32, (1, 0)),
        (range(3), st.int64, (3,)),
        ([st.tensor(1), st.tensor(2)], st.int64, (2,)),
        ([st.tensor([1.0, 2.0]), st.tensor([3.0, 4.0])], st.float32, (2, 2)),
        ([np.float32(1.5), np.int64(2)], st.float32, (2,)),
    ],
)
def test_tensor_dtype_inference(data, dtype, shape):
    for make in (st.tensor, st.Tensor, st.as_tensor):
        t = make(data)
        assert t.dtype == dtype
        assert t.shape == shape
    expected = np.array(
        [x.tolist() if isinstance(x, st.Tensor) else x for x in data]
        if isinstance(data, list)
        else data
    )
    assert_values(st.tensor(data), expected.astype(ST2NP[dtype]).reshape(shape))


@pytest.mark.parametrize("dt", CORE + [st.bfloat16, st.uint16, st.uint32, st.uint64])
def test_tensor_explicit_dtype(dt):
    t = st.tensor([[0, 1], [1, 0]], dtype=dt)
    assert t.dtype == dt
    assert t.tolist() == ([[False, True], [True, False]] if dt == st.bool else [[0, 1], [1, 0]])
    assert st.tensor([1.0], dtype=dt.name).dtype == dt
    if dt != st.bfloat16:
        assert st.tensor([1], dtype=ST2NP[dt]).dtype == dt
        assert st.tensor([1], dtype=ST2NP[dt].type).dtype == dt


def test_tensor_copies_tensors_and_converts():
    a = st.arange(6).view(2, 3).t()
    b = st.tensor(a)
    assert b.data_ptr() != a.data_ptr() and b.is_contiguous()
    assert b.tolist() == a.tolist()
    c = st.tensor(a, dtype=st.float64)
    assert c.dtype == st.float64 and c.tolist() == a.tolist()
    s = st.as_tensor(a)
    assert s.data_ptr() == a.data_ptr()  # as_tensor shares when it can


def test_zeros_ones_empty_full():
    for f, v in ((st.zeros, 0.0), (st.ones, 1.0), (st.empty, 0.0)):
        for args in ((2, 3), ((2, 3),), ([2, 3],)):
            t = f(*args)
            assert t.shape == (2, 3) and t.dtype == st.float32 and t.is_contiguous()
            assert t.tolist() == [[v] * 3] * 2
        assert f().shape == ()
        assert f(0).shape == (0,)
        assert f(2, dtype=st.int8).dtype == st.int8
        assert f(2, dtype="float64").dtype == st.float64
    assert st.full((2,), 3).dtype == st.int64
    assert st.full((2,), True).dtype == st.bool
    assert st.full((2,), 1.5).dtype == st.float32
    assert st.full([2, 2], 7, dtype=st.float16).tolist() == [[7.0, 7.0], [7.0, 7.0]]
    assert st.full((), 2.5).shape == ()


@pytest.mark.parametrize(
    "args,kwargs,expected,dtype",
    [
        ((5,), {}, np.arange(5), st.int64),
        ((2, 7), {}, np.arange(2, 7), st.int64),
        ((2, 7, 2), {}, np.arange(2, 7, 2), st.int64),
        ((5, 0, -2), {}, np.arange(5, 0, -2), st.int64),
        ((2.5,), {}, np.arange(2.5), st.float32),
        ((0, 1, 0.25), {}, np.arange(0, 1, 0.25), st.float32),
        ((1, 0, -0.3), {}, np.arange(1, 0, -0.3), st.float32),
        ((3,), {"dtype": st.float64}, np.arange(3.0), st.float64),
        ((0,), {}, np.arange(0), st.int64),
        ((3, 3), {}, np.arange(3, 3), st.int64),
        ((-3, 4, 3), {}, np.arange(-3, 4, 3), st.int64),
    ],
)
def test_arange(args, kwargs, expected, dtype):
    t = st.arange(*args, **kwargs)
    assert t.dtype == dtype
    assert_values(t, expected.astype(ST2NP[dtype]))


@pytest.mark.parametrize(
    "start,end,steps", [(0, 1, 5), (-1, 1, 4), (3, -2, 7), (0, 1, 0), (2, 2, 3), (0, 1, 2)]
)
@pytest.mark.parametrize("dt", [st.float32, st.float64])
def test_linspace(start, end, steps, dt):
    t = st.linspace(start, end, steps, dtype=dt)
    assert t.dtype == dt
    assert_values(t, np.linspace(start, end, steps).astype(ST2NP[dt]))
    assert st.linspace(start, end, steps).dtype == st.float32


def test_linspace_one_step_is_start():
    assert st.linspace(3, 10, 1).tolist() == [3.0]


def test_eye():
    assert_values(st.eye(3), np.eye(3, dtype=np.float32))
    assert_values(st.eye(2, 4), np.eye(2, 4, dtype=np.float32))
    assert_values(st.eye(4, 2, dtype=st.int32), np.eye(4, 2, dtype=np.int32))
    assert st.eye(0).shape == (0, 0)


@pytest.mark.parametrize("fn", [st.rand, st.randn])
@pytest.mark.parametrize("dt", [st.float32, st.float64, st.float16])
def test_random_reproducible_with_manual_seed(fn, dt):
    st.manual_seed(1234)
    a = fn(4, 5, dtype=dt)
    b = fn(4, 5, dtype=dt)
    st.manual_seed(1234)
    a2 = fn(4, 5, dtype=dt)
    b2 = fn(4, 5, dtype=dt)
    assert a.dtype == dt and a.shape == (4, 5)
    assert a.tolist() == a2.tolist() and b.tolist() == b2.tolist()
    assert a.tolist() != b.tolist()
    st.manual_seed(4321)
    assert fn(4, 5, dtype=dt).tolist() != a.tolist()


def test_random_distributions():
    st.manual_seed(0)
    u = to_np(st.rand(20000))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02
    n = to_np(st.randn(20000, dtype=st.float64))
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1.0) < 0.05
    assert st.rand(0).shape == (0,)
    st.manual_seed(0)
    assert st.rand_like(st.zeros(2, 3, dtype=st.float64)).dtype == st.float64
    assert st.randn_like(st.zeros(2, 3)).shape == (2, 3)


def test_like_functions():
    src = st.ones(2, 3, dtype=st.int8).t()
    for f, v in ((st.zeros_like, 0), (st.ones_like, 1), (st.empty_like, 0)):
        t = f(src)
        assert t.shape == (3, 2) and t.dtype == st.int8
        assert t.tolist() == [[v, v]] * 3
        assert f(src, dtype=st.float64).dtype == st.float64
    t = st.full_like(src, 7)
    assert t.dtype == st.int8 and t.tolist() == [[7, 7]] * 3
    assert st.full_like(src, 2.5, dtype=st.float32).tolist() == [[2.5, 2.5]] * 3
    assert st.rand_like(st.zeros(4)).shape == (4,)


# --------------------------------------------------------------------------------------
# dtype objects.
# --------------------------------------------------------------------------------------


def test_dtype_objects():
    assert repr(st.float32) == "strata.float32"
    assert (st.float32.name, st.float32.itemsize) == ("float32", 4)
    assert st.float16.is_floating_point and not st.int32.is_floating_point
    assert (
        st.int8.is_signed
        and st.float64.is_signed
        and not st.uint8.is_signed
        and not st.bool.is_signed
    )
    assert (st.half, st.float, st.double) == (st.float16, st.float32, st.float64)
    assert (st.short, st.int, st.long) == (st.int16, st.int32, st.int64)
    assert st.bfloat16.itemsize == 2
    assert len({st.float32, st.float32, st.int32}) == 2
    for dt, npdt in ST2NP.items():
        assert dt.itemsize == npdt.itemsize


def test_dtype_pickles():
    assert pickle.loads(pickle.dumps(st.float16)) == st.float16
    assert pickle.loads(pickle.dumps(st.float16)) is st.float16


def test_dtypes_are_singletons():
    """As PyTorch's: every dtype strata hands out is the module's object, so the idiom
    ``t.dtype is strata.float32`` works."""
    for dt in ST2NP:
        t = st.zeros(2, dtype=dt)
        assert t.dtype is dt and t[0].dtype is dt and t.T.dtype is dt
        assert st.result_type(t, t) is dt
        assert t.to(st.float64).dtype is st.float64
        assert st.from_numpy(np.zeros(2, dtype=ST2NP[dt])).dtype is dt
    assert st.ones(2).dtype is not st.float64
    assert (st.half, st.double, st.cfloat) == (st.float16, st.float64, st.complex64)
    assert st.half is st.float16 and st.long is st.int64


# --------------------------------------------------------------------------------------
# Metadata.
# --------------------------------------------------------------------------------------


def test_metadata():
    base = st.arange(24, dtype=st.int32).view(2, 3, 4)
    t = base[:, 1:, ::-2]
    assert t.shape == (2, 2, 2) == t.size()
    assert t.size(0) == 2 and t.size(-1) == 2
    assert t.dtype == st.int32
    assert t.device == "cpu"
    assert t.ndim == 3 == t.dim()
    assert t.numel() == 8
    assert t.stride() == (12, 4, -2)
    assert t.stride(-1) == -2 and t.stride(0) == 12
    assert t.storage_offset() == 4 + 3
    assert t.data_ptr() == base.data_ptr() + 7 * 4
    s = t.untyped_storage()
    assert s == base.untyped_storage()
    assert s.data_ptr() == base.data_ptr()
    assert s.nbytes() == 96 == s.size() == len(s)
    assert not s.is_read_only()
    assert s.tolist(st.int32) == list(range(24))
    assert s.tolist()[:8] == [0, 0, 0, 0, 1, 0, 0, 0]  # raw little-endian bytes
    assert "96 bytes" in repr(s)
    assert st.zeros(()).stride() == () and st.zeros(()).numel() == 1
    assert st.zeros(2, 0).numel() == 0
    assert st.zeros(3).T.shape == (3,)
    assert st.zeros(2, 3, 4).T.shape == (4, 3, 2)
    assert st.zeros(2, 3, 4).mT.shape == (2, 4, 3)


@pytest.mark.parametrize(
    "make,contig",
    [
        (lambda: st.zeros(2, 3), True),
        (lambda: st.zeros(2, 3).t(), False),
        (lambda: st.zeros(2, 3)[:, ::2], False),
        (lambda: st.zeros(2, 3)[:1], True),
        (lambda: st.zeros(2, 3)[:, :1], False),
        (lambda: st.zeros(2, 3)[1:, :1], True),  # a single element
        (lambda: st.zeros(6).as_strided((2, 1, 3), (3, 7, 1)), True),  # size-1 dims ignored
        (lambda: st.zeros(2, 0).t(), True),  # empty tensors are contiguous
        (lambda: st.zeros(3).expand(2, 3), False),
        (lambda: st.zeros(3).flip(0), False),
        (lambda: st.zeros(()), True),
    ],
)
def test_is_contiguous_and_contiguous(make, contig):
    t = make()
    assert t.is_contiguous() == contig
    c = t.contiguous()
    assert c.is_contiguous()
    assert c.tolist() == t.tolist()
    if contig:
        assert c.data_ptr() == t.data_ptr()
    elif t.numel() > 1:
        assert c.untyped_storage() != t.untyped_storage()


def test_explain():
    t = st.arange(6, dtype=st.int32).view(2, 3).t()
    text = t.explain()
    assert isinstance(text, str)
    assert "shape [3, 2]" in text and "strides [1, 3]" in text and "offset 0" in text
    assert "int32" in text and "contiguous: no" in text
    assert "storage[0 + 1·i0 + 3·i1]" in text
    f = st.arange(12).view(3, 4).flip(0)
    assert "strides [-4, 1]" in f.explain() and "offset 8" in f.explain()


@pytest.mark.parametrize(
    "write",
    [
        lambda t: t.fill_(1),
        lambda t: t.zero_(),
        lambda t: t.copy_(st.ones(2, 3)),
        lambda t: t.__setitem__(0, 2.0),
        lambda t: t.__setitem__((slice(None), [0, 2]), 2.0),
        lambda t: t.__setitem__(t > 0.5, 2.0),
        lambda t: t.add_(1),
        lambda t: t.__iadd__(1),
        lambda t: t.__imul__(2),
        lambda t: t.clamp_(0, 1),
        lambda t: t.neg_(),
        lambda t: t.t().sub_(1),
        lambda t: t[1:].div_(2),
        lambda t: t.pow_(2),
        lambda t: t.maximum_(st.zeros(3)),
    ],
)
def test_version_bumps_on_every_inplace_write_and_is_shared(write):
    base = st.rand(2, 3)
    view = base[:, 1:]
    other = st.rand(2, 3)
    v0, o0 = base._version, other._version
    assert view._version == v0
    write(base)
    assert base._version > v0
    assert view._version == base._version  # shared by every view of the storage
    assert other._version == o0


def test_version_not_bumped_by_reads():
    t = st.rand(3, 3)
    v = t._version
    t + 1, t.sum(), t.t(), t[0], t[[0, 1]], t.tolist(), t.numpy(), t.contiguous(), t.clone()
    assert t._version == v
    # A failed write does not bump it either.
    with pytest.raises(st.StrataError):
        t.add_(st.ones(4))
    assert t._version == v


def test_clone_and_to():
    t = st.arange(6.0).view(2, 3).t()
    c = t.clone()
    assert c.untyped_storage() != t.untyped_storage()
    assert c.stride() == t.stride()  # preserves a dense layout's order
    assert c.tolist() == t.tolist()
    # Any layout, small (walked directly) and large (the planned copy): a fresh storage
    # holding every element, which is not left zeroed anywhere.
    for n in (3, 100):
        a = np.arange(n * n * 2, dtype=np.float32).reshape(n, 2 * n) + 1
        x = st.from_numpy(a)
        cases = (
            (x.flip(0)[:, ::3], a[::-1, ::3]),
            (x.T, a.T),
            (x[:1].expand(4, 2 * n), np.broadcast_to(a[:1], (4, 2 * n))),
            (x[1::2, None], a[1::2, None]),
        )
        for view, want in cases:
            c = view.clone()
            assert c.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
            np.testing.assert_array_equal(c.numpy(), want)
    assert t.to(st.float64).dtype == st.float64
    assert t.to("float16").dtype == st.float16
    assert t.to(np.int32).dtype == st.int32
    assert t.to("cpu").dtype == st.float32
    assert t.to(dtype=st.int64).dtype == st.int64
    assert t.to(st.float32).data_ptr() == t.data_ptr()  # no-op
    assert t.float().dtype == st.float32 and t.double().dtype == st.float64
    assert t.half().dtype == st.float16 and t.bfloat16().dtype == st.bfloat16
    assert t.int().dtype == st.int32 and t.long().dtype == st.int64 and t.bool().dtype == st.bool
    assert t.type_as(st.zeros(1, dtype=st.int8)).dtype == st.int8
    assert t.cpu() is t


def test_to_with_copy_true_copies():
    t = st.arange(3.0)
    c = t.to(st.float32, copy=True)
    assert c.data_ptr() != t.data_ptr()


# --------------------------------------------------------------------------------------
# Indexing vs NumPy.
# --------------------------------------------------------------------------------------


@hs.composite
def basic_keys(draw, shape):
    """A basic index (ints, slices with any step, None, at most one Ellipsis)."""
    key = []
    dims_left = len(shape)
    used_ellipsis = False
    i = 0
    while i < len(shape):
        kind = draw(hs.sampled_from(["int", "slice", "none", "ellipsis", "full"]))
        n = shape[i]
        if kind == "int" and n > 0:
            key.append(draw(hs.integers(-n, n - 1)))
            i += 1
        elif kind == "slice":
            start = draw(hs.none() | hs.integers(-n - 2, n + 2))
            stop = draw(hs.none() | hs.integers(-n - 2, n + 2))
            step = draw(hs.sampled_from([None, 1, 2, 3, -1, -2]))
            key.append(slice(start, stop, step))
            i += 1
        elif kind == "none":
            key.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            skip = draw(hs.integers(0, len(shape) - i))
            key.append(Ellipsis)
            i += skip
        else:
            key.append(slice(None))
            i += 1
    del dims_left
    return tuple(key)


@budget(200)
@given(shape=shapes(max_dims=4, max_side=4), data=hs.data(), layout=layouts, seed=seeds)
def test_getitem_basic_is_a_view(shape, data, layout, seed):
    a = values(np.random.default_rng(seed), shape, st.int32)
    t = laid_out(a, layout)
    key = data.draw(basic_keys(shape))
    r = t[key]
    expected = a[key]
    assert r.shape == expected.shape
    np.testing.assert_array_equal(to_np(r), expected)
    assert r.untyped_storage() == t.untyped_storage()
    # Writes through the view land in the base.
    if r.numel():
        r.fill_(-999)
        a2 = a.copy()
        a2[key] = -999
        np.testing.assert_array_equal(to_np(t), a2)


@hs.composite
def advanced_keys(draw, shape):
    """A key mixing slices, None, at most one Ellipsis, integer lists / tensors (1-D or 2-D,
    negative values allowed) and boolean masks — no plain ints next to advanced indices
    (NumPy and PyTorch disagree there; see test_int_with_advanced_index_follows_pytorch).

    Returns (key for strata, key for NumPy, whether the advanced indices are unique)."""
    key_st, key_np = [], []
    i = 0
    used_ellipsis = False
    n_adv = 0
    adv_len = draw(hs.integers(0, 3))
    unique = True
    while i < len(shape):
        n = shape[i]
        kind = draw(
            hs.sampled_from(["list", "tensor", "tensor2d", "mask", "slice", "none", "ellipsis"])
        )
        if kind in ("list", "tensor", "tensor2d") and n > 0:
            if kind == "tensor2d":
                idx = draw(
                    hs.lists(hs.integers(-n, n - 1), min_size=adv_len * 2, max_size=adv_len * 2)
                )
                arr = np.array(idx, dtype=np.int64).reshape(2, adv_len)
                unique = False
            else:
                idx = draw(hs.lists(hs.integers(-n, n - 1), min_size=adv_len, max_size=adv_len))
                arr = np.array(idx, dtype=np.int64)
                if len(set(i_ % n for i_ in idx)) != len(idx):
                    unique = False
            if kind == "list":
                key_st.append(list(arr.tolist()))
            else:
                key_st.append(
                    st.tensor(arr, dtype=draw(hs.sampled_from([st.int64, st.int32, st.uint8])))
                    if arr.min(initial=0) >= 0
                    else st.tensor(arr)
                )
            key_np.append(arr)
            n_adv += 1
            i += 1
        elif kind == "mask" and n_adv == 0:
            k = draw(hs.integers(1, min(2, len(shape) - i)))
            size = int(np.prod(shape[i : i + k]))
            m = np.array(draw(hs.lists(hs.booleans(), min_size=size, max_size=size)), dtype=bool)
            m = m.reshape(shape[i : i + k])
            as_list = m.size > 0 and draw(hs.booleans())  # an empty nested list has no shape
            key_st.append(m.tolist() if as_list else st.tensor(m, dtype=st.bool))
            key_np.append(m)
            n_adv += 1
            i += k
            adv_len = int(m.sum())
        elif kind == "none":
            key_st.append(None)
            key_np.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            # An Ellipsis that stands for no dim between two advanced indices separates them
            # for NumPy but not for PyTorch (see test_empty_ellipsis_between_advanced_indices).
            lo = 1 if n_adv else 0
            skip = draw(hs.integers(min(lo, len(shape) - i), len(shape) - i))
            key_st.append(Ellipsis)
            key_np.append(Ellipsis)
            i += skip
        else:
            step = draw(hs.sampled_from([None, 1, 2, -1]))
            key_st.append(slice(None, None, step))
            key_np.append(slice(None, None, step))
            i += 1
    return tuple(key_st), tuple(key_np), unique


@budget(200)
@given(shape=shapes(max_dims=4, max_side=4, min_dims=1), data=hs.data(), layout=layouts, seed=seeds)
def test_getitem_advanced_vs_numpy(shape, data, layout, seed):
    a = values(np.random.default_rng(seed), shape, st.int64)
    t = laid_out(a, layout)
    key_st, key_np, _ = data.draw(advanced_keys(shape))
    try:
        expected = a[key_np]
    except IndexError:
        with pytest.raises(IndexError):
            t[key_st]
        return
    r = t[key_st]
    assert r.shape == expected.shape, (key_np, r.shape, expected.shape)
    np.testing.assert_array_equal(to_np(r), expected)
    if any(isinstance(k, (np.ndarray)) for k in key_np) and r.numel():
        # Advanced indexing copies.
        assert r.untyped_storage() != t.untyped_storage()
        r.fill_(12345)
        np.testing.assert_array_equal(to_np(t), a)


@budget(200)
@given(
    shape=shapes(max_dims=4, max_side=4, min_dims=1),
    data=hs.data(),
    layout=layouts,
    value_kind=hs.sampled_from(["scalar", "full", "tensor_scalar", "list"]),
    seed=seeds,
)
def test_setitem_vs_numpy(shape, data, layout, value_kind, seed):
    rng = np.random.default_rng(seed)
    a = values(rng, shape, st.float64)
    t = laid_out(a, layout)
    if data.draw(hs.booleans()):
        key_st, key_np, unique = data.draw(advanced_keys(shape))
        assume(unique)
    else:
        key_st = key_np = data.draw(basic_keys(shape))
    try:
        target_shape = a[key_np].shape
    except IndexError:
        with pytest.raises(IndexError):
            t[key_st] = 1.0
        return
    if value_kind == "scalar":
        v_np = float(rng.integers(-50, 50))
        v_st = v_np
    elif value_kind == "tensor_scalar":
        v_np = np.asarray(float(rng.integers(-50, 50)))
        v_st = st.tensor(v_np.item(), dtype=st.float32)
    else:
        v_np = rng.integers(-50, 50, size=target_shape).astype(np.float64)
        as_list = value_kind == "list" and v_np.size > 0  # an empty nested list has no shape
        v_st = v_np.tolist() if as_list else tensor_of(v_np)
    expected = a.copy()
    expected[key_np] = v_np
    ptr = t.data_ptr()
    t[key_st] = v_st
    np.testing.assert_array_equal(to_np(t), expected)
    assert t.data_ptr() == ptr


def test_getitem_examples_vs_numpy():
    a = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    t = st.from_numpy(a.copy())
    keys = [
        ([0, 1], slice(None), [1, 2]),  # separated: advanced dims go first
        (slice(None), [0, 1], slice(None), [1, 2]),  # separated
        (slice(None), [0, 1], [1, 2]),  # adjacent: stay in place
        (Ellipsis, [0, 1]),
        (None, [0, 1], None),
        ([[0], [1]], [0, 1, 2]),  # broadcast index arrays
        (slice(None), [[0], [1]], [0, 1, 2]),
        ([0, 1], None, [0, 1]),  # None separates
        ([-1, -2],),
        (slice(None, None, -1), [0, 2]),
        (a[:, :, 0, 0] > 10,),
        (slice(None), a[0, :, :, 0] > 20),
        ([True, False],),
        ([],),
    ]
    for key in keys:
        # NumPy arrays as indices are a known bug (test_numpy_interop): pass tensors.
        key_st = tuple(st.from_numpy(k) if isinstance(k, np.ndarray) else k for k in key)
        np.testing.assert_array_equal(to_np(t[key_st]), a[key])


def test_int_with_advanced_index_follows_pytorch():
    """An int is a basic index (a select) in PyTorch, an advanced one in NumPy; strata
    follows PyTorch: t[1, :, [0, 1], [1, 2]] keeps the advanced dims in place."""
    a = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    t = st.from_numpy(a.copy())
    r = t[1, :, [0, 1], [1, 2]]
    assert r.shape == (3, 2)  # NumPy: (2, 3)
    np.testing.assert_array_equal(to_np(r), a[1][:, [0, 1], [1, 2]])
    r = t[0, :, [0, 1]]
    assert r.shape == (3, 2, 5)  # NumPy: (2, 3, 5)
    np.testing.assert_array_equal(to_np(r), a[0][:, [0, 1]])
    # Adjacent or leading ints agree with NumPy anyway.
    np.testing.assert_array_equal(to_np(t[[0, 1], 1, [1, 2]]), a[[0, 1], 1, [1, 2]])


def test_empty_ellipsis_between_advanced_indices_follows_pytorch():
    """An Ellipsis that stands for no dims does not separate advanced indices in PyTorch (the
    indexed dims are adjacent); NumPy counts it as a separator. strata follows PyTorch."""
    a = np.arange(4).reshape(2, 2)
    t = st.from_numpy(a.copy())
    r = t[None, [0, 1], ..., [1, 0]]
    assert r.shape == (1, 2)  # NumPy: (2, 1)
    assert r.tolist() == [[1, 2]]


def test_mask_shape_mismatch_raises():
    t = st.zeros(2, 3)
    with pytest.raises(IndexError):
        t[st.tensor([True, False, False])]
    with pytest.raises(IndexError):
        t[:, st.tensor([True, False])]


def test_setitem_advanced_value_broadcasts_like_numpy():
    t = st.zeros(2, 3)
    t[:, [0, 1]] = st.tensor([1.0, 2.0])
    assert t.tolist() == [[1.0, 2.0, 0.0], [1.0, 2.0, 0.0]]
    u = st.zeros(2, 3, 4)
    u[..., [1, 3]] = st.tensor([1.0, 2.0])
    expected = np.zeros((2, 3, 4))
    expected[..., [1, 3]] = [1.0, 2.0]
    np.testing.assert_array_equal(to_np(u), expected)


def test_setitem_casts_and_broadcasts_values():
    t = st.zeros(2, 3, dtype=st.int32)
    t[0] = st.tensor([1.7, -2.7, 3.2])  # float into int: truncated like copy_
    assert t.tolist() == [[1, -2, 3], [0, 0, 0]]
    t[:, 1:] = 9
    assert t.tolist() == [[1, 9, 9], [0, 9, 9]]
    t[1] = [4, 5, 6]
    assert t.tolist()[1] == [4, 5, 6]
    t[...] = st.tensor([7, 8, 9])
    assert t.tolist() == [[7, 8, 9], [7, 8, 9]]
    m = st.zeros(3, dtype=st.bool)
    m[1] = True
    assert m.tolist() == [False, True, False]
    f = st.zeros(4)
    f[st.tensor([True, False, True, False])] = st.tensor([1.0, 2.0])
    assert f.tolist() == [1.0, 0.0, 2.0, 0.0]


def test_int_list_arguments_accept_integer_tensors():
    t = st.arange(6).view(2, 3)
    assert t.index_select(1, st.tensor([2, 0])).tolist() == [[2, 0], [5, 3]]
    assert t.permute(st.tensor([1, 0])).shape == (3, 2)
    assert t.sum(dim=st.tensor([0])).tolist() == [3, 5, 7]
    assert st.zeros(np.array([2, 3])).shape == (2, 3)


def test_index_select():
    t = st.arange(12).view(3, 4)
    assert t.index_select(1, [3, 0, 0]).tolist() == [[3, 0, 0], [7, 4, 4], [11, 8, 8]]
    assert st.index_select(t.t(), 0, (1,)).tolist() == [[1, 5, 9]]
    assert t.index_select(0, []).shape == (0, 4)


def test_index_tensors_of_every_integer_dtype():
    t = st.arange(10) * 10
    for dt in [st.int64, st.int32, st.int16, st.int8, st.uint8]:
        assert t[st.tensor([3, 1], dtype=dt)].tolist() == [30, 10]
    assert t[st.tensor(4)].tolist() == 40  # 0-d integer tensor: a basic index
    assert t[st.tensor(4)].untyped_storage() == t.untyped_storage()
    with pytest.raises(IndexError):
        t[st.tensor([1.0])]


# --------------------------------------------------------------------------------------
# Python conversions.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", list(ST2NP))
def test_tolist_and_item_match_numpy(dt):
    a = values(np.random.default_rng(3), (2, 3), dt, kind="normal")
    t = tensor_of(a)
    assert t.tolist() == a.tolist()
    assert t[1, 2].item() == a[1, 2].item()
    assert type(t[0, 0].item()) is type(a[0, 0].item())
    assert t[0].tolist() == a[0].tolist()
    assert tensor_of(np.asarray(a[0, 0])).tolist() == a[0, 0].item()


def test_uint64_values_above_int64_max():
    a = np.array([2**64 - 1, 2**63, 5], dtype=np.uint64)
    t = st.from_numpy(a)
    assert t.tolist() == [2**64 - 1, 2**63, 5]
    assert t[0].item() == 2**64 - 1
    assert (t > 5).tolist() == [True, True, False]
    assert st.tensor([2**63], dtype=st.uint64).tolist() == [2**63]


def test_uint64_int_float_repr():
    t = st.from_numpy(np.array([2**64 - 1], dtype=np.uint64))
    assert int(t) == 2**64 - 1
    assert float(t) == float(2**64 - 1)
    assert repr(t) == "tensor([18446744073709551615], dtype=strata.uint64)"


def test_tensor_of_int_above_int64_max_raises():
    with pytest.raises(OverflowError):
        st.tensor(2**64 - 1)


def test_len_iter_bool_float_int_index():
    t = st.arange(6).view(3, 2)
    assert len(t) == 3
    rows = list(t)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    assert all(r.untyped_storage() == t.untyped_storage() for r in rows)  # views
    assert [x.shape for x in st.arange(3)] == [(), (), ()]
    assert list(st.zeros(0, 2)) == []
    assert len(st.zeros(0, 2)) == 0
    with pytest.raises(TypeError):
        len(st.tensor(1.0))
    with pytest.raises(TypeError):
        iter(st.tensor(1.0))
    for v, b in ((0.0, False), (2.0, True), (float("nan"), True)):
        assert bool(st.tensor(v)) is b
        assert bool(st.tensor([[v]])) is b
    assert bool(st.tensor([True])) is True
    with pytest.raises(ValueError, match="ambiguous"):
        bool(st.tensor([1, 2]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(st.zeros(0))
    assert float(st.tensor([2.5])) == 2.5 and float(st.tensor(3)) == 3.0
    assert int(st.tensor([-2.7])) == -2 and int(st.tensor(2.7)) == 2
    assert int(st.tensor([[7]], dtype=st.uint8)) == 7
    assert int(st.tensor(True)) == 1
    assert [10, 20, 30][st.tensor(1)] == 20
    assert range(10)[st.tensor(3, dtype=st.int8)] == 3
    assert operator.index(st.tensor([5])) == 5
    assert hex(st.tensor(255)) == "0xff"
    with pytest.raises(TypeError):
        [1, 2][st.tensor(1.0)]
    with pytest.raises(ValueError):
        float(st.tensor([1.0, 2.0]))
    with pytest.raises(ValueError):
        int(st.zeros(0))
    x = st.tensor(1.5)
    assert math.isclose(math.sqrt(x), math.sqrt(1.5))
    assert hash(x) == hash(x) and hash(x) != hash(st.tensor(1.5))


# --------------------------------------------------------------------------------------
# repr, as PyTorch prints.
# --------------------------------------------------------------------------------------

REPRS = [
    (lambda: st.arange(4.0).view(2, 2), "tensor([[0., 1.],\n        [2., 3.]])"),
    (
        lambda: st.arange(6, dtype=st.int32).view(2, 3),
        "tensor([[0, 1, 2],\n        [3, 4, 5]], dtype=strata.int32)",
    ),
    (lambda: st.tensor([1.5, -2.25, 3.0]), "tensor([ 1.5000, -2.2500,  3.0000])"),
    (lambda: st.tensor([0.1, 0.25]), "tensor([0.1000, 0.2500])"),
    (lambda: st.tensor([100.0, 1.5]), "tensor([100.0000,   1.5000])"),
    (lambda: st.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: st.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda: st.tensor([123456789.0]), "tensor([1.2346e+08])"),
    (lambda: st.tensor(1e20), "tensor(1.0000e+20)"),
    (lambda: st.tensor([1.0, 2.0]), "tensor([1., 2.])"),
    (lambda: st.tensor([-0.0, 1.0]), "tensor([-0., 1.])"),
    (lambda: st.tensor(3), "tensor(3)"),
    (lambda: st.tensor(3.0), "tensor(3.)"),
    (lambda: st.tensor(1.5), "tensor(1.5000)"),
    (lambda: st.tensor(True), "tensor(True)"),
    (lambda: st.tensor([True, False]), "tensor([ True, False])"),
    (lambda: st.tensor([[True]]), "tensor([[True]])"),
    (lambda: st.tensor([1, 2]), "tensor([1, 2])"),
    (lambda: st.tensor([-1, 10, 100]), "tensor([ -1,  10, 100])"),
    (lambda: st.tensor([1, 2, 3], dtype=st.uint8), "tensor([1, 2, 3], dtype=strata.uint8)"),
    (lambda: st.tensor(-5, dtype=st.int8), "tensor(-5, dtype=strata.int8)"),
    (lambda: st.tensor([1.0, 2.0], dtype=st.float64), "tensor([1., 2.], dtype=strata.float64)"),
    (lambda: st.tensor([1.0, 2.0], dtype=st.float16), "tensor([1., 2.], dtype=strata.float16)"),
    (lambda: st.tensor([1.0, 2.0], dtype=st.bfloat16), "tensor([1., 2.], dtype=strata.bfloat16)"),
    (
        lambda: st.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
        "tensor([nan, inf, -inf, 1.])",
    ),
    (lambda: st.tensor([1e-5, float("nan")]), "tensor([1.0000e-05,        nan])"),
    (lambda: st.zeros(0), "tensor([])"),
    (lambda: st.zeros(2, 0, 3), "tensor([], size=(2, 0, 3))"),
    (lambda: st.zeros(0, dtype=st.int64), "tensor([], dtype=strata.int64)"),
    (lambda: st.zeros(0, dtype=st.bool), "tensor([], dtype=strata.bool)"),
    (lambda: st.zeros(2, 0, dtype=st.int32), "tensor([], size=(2, 0), dtype=strata.int32)"),
    (
        lambda: st.arange(8).view(2, 2, 2),
        "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])",
    ),
    (
        lambda: st.arange(6.0).view(2, 3).t(),
        "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])",
    ),
    (lambda: st.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (
        lambda: st.arange(2000.0),
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])",
    ),
    (
        lambda: st.arange(30.0),
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])",
    ),
]


@pytest.mark.parametrize("make,expected", REPRS, ids=[repr(e)[:40] for _, e in REPRS])
def test_repr_like_pytorch(make, expected):
    t = make()
    assert repr(t) == expected
    assert str(t) == expected


def test_repr_of_views_and_numpy_backed():
    t = st.from_numpy(np.arange(12, dtype=np.int64).reshape(3, 4)[::-1, ::2])
    assert repr(t) == "tensor([[ 8, 10],\n        [ 4,  6],\n        [ 0,  2]])"
    assert repr(st.arange(3.0).expand(2, 3)) == "tensor([[0., 1., 2.],\n        [0., 1., 2.]])"


def test_delitem_is_an_error_not_a_crash():
    t = st.arange(3)
    with pytest.raises((TypeError, NotImplementedError)):
        del t[0]
    assert t.tolist() == [0, 1, 2]


def test_dtype_of_indexing_results_and_numpy_dtype_maps():
    for dt, npdt in ST2NP.items():
        t = st.zeros(3, dtype=dt)
        assert t[[0, 1]].dtype == dt
        assert t[1:].dtype == dt
        assert NP2ST[npdt] == dt


# --------------------------------------------------------------------------------------
# Threads: kernels release the GIL; the per-storage borrow serialises writers.
# --------------------------------------------------------------------------------------


_BIG = st.ones(1 << 24)  # 64 MB: tens of milliseconds per pass
_COL, _ROW = st.ones((4000, 1)), st.ones((1, 4000))  # 4000 elements each, 16M out


@pytest.mark.parametrize(
    "kernel",
    [
        lambda: _BIG.mul(2.0).sum(),
        # The work is the broadcast output's size, not the inputs'.
        lambda: _COL + _ROW,
        lambda: st.where(_COL > 0, _COL, _ROW),
    ],
    ids=["mul-sum", "broadcast-add", "broadcast-where"],
)
def test_large_kernels_release_the_gil(kernel):
    """While one thread is inside a large kernel, another runs Python code.

    The switch interval is made so long that the GIL only changes hands when a thread
    gives it up: the main thread, woken by ``started``, can run only if the worker's
    kernel released the GIL, and it then sees ``in_kernel`` still set.
    """
    import sys
    import threading

    started, in_kernel, seen = threading.Event(), [False], []

    def worker():
        in_kernel[0] = True
        started.set()
        kernel()
        in_kernel[0] = False

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        seen.append(in_kernel[0])
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert seen == [True]


def test_concurrent_inplace_writes_from_threads_are_not_lost():
    import threading

    x = st.zeros(300_000)  # above the engine's parallel threshold (2**18 elements)
    small = st.zeros(10, dtype=st.int64)
    errors = []

    def writer(x=x, small=small):
        try:
            for _ in range(10):
                x.add_(1.0)
                x += 1
                x[1:] += 1
                small.add_(1)
                x.sum()
                np.asarray(x[::1000]).sum()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert x[0].item() == 4 * 10 * 2
    assert x[1:].amin().item() == x[1:].amax().item() == 4 * 10 * 3
    assert small.tolist() == [40] * 10


class _Idx:
    """An int through ``__index__``: keeps a key off the fast path of ``__getitem__``."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


def _slow(entry):
    if type(entry) is int:
        return _Idx(entry)
    if isinstance(entry, slice):
        return slice(*(_Idx(b) if type(b) is int else b for b in (entry.start, entry.stop, entry.step)))
    return entry


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001  (comparing whatever is raised)
        return type(e), str(e)
    return r.shape, r.stride(), r.storage_offset(), r.tolist()


@pytest.mark.parametrize(
    "key",
    [
        0, -1, 3, -4, 4, -5, 2**62, slice(1, 3), slice(None), slice(None, None, -1),
        slice(-100, 100, 2), slice(3, 0, -2), slice(0, 0), slice(None, None, 0),
        slice(2**63 - 1, None, -1), slice(-(2**63), 2**63 - 1), None, Ellipsis,
        (0, 1), (1, slice(None)), (slice(None), 1), (Ellipsis, None), (None, Ellipsis, 0),
        (Ellipsis, Ellipsis), (0, 0, 0), (slice(None), slice(None), slice(None)),
        (None,) * 7 + (0,), (None,) * 9 + (0,), (0, None, slice(1, None, 2)), (),
        (slice(None, None, -1), -1), (slice(0, 1), 5),
    ],
)
def test_getitem_fast_path_matches_general_path(key):
    """Plain-int / slice / None / ... keys take an allocation-free path in the bindings.
    A key with a plain int goes the general path once that int is an ``_Idx``: results and
    errors (type and text) must agree. Slices are read by one function on both paths, so
    every key is also checked against NumPy: shape, strides, offset and values, or an
    error of NumPy's builtin type (IndexError, ValueError)."""
    base = np.arange(20, dtype=np.float32).reshape(4, 5)
    a = base.T
    t = st.from_numpy(base).T
    got = _outcome(lambda: t[key])
    entries = key if isinstance(key, tuple) else (key,)
    if any(type(e) is int for e in entries):
        slow = tuple(map(_slow, key)) if isinstance(key, tuple) else _slow(key)
        assert got == _outcome(lambda: t[slow])
    if isinstance(got[0], type):
        with pytest.raises(Exception) as np_err:  # noqa: PT011  (whatever NumPy raises)
            a[key]
        assert issubclass(got[0], np_err.type), (got, np_err.type)
        return
    n = a[key]
    assert got[0] == np.shape(n)
    assert got[3] == n.tolist()
    if not isinstance(n, np.ndarray):  # all-int keys: NumPy gives a scalar copy
        return
    # Strides of size-1 dims are a convention (PyTorch's and NumPy's differ); they step
    # nowhere.
    mine = [s for s, k in zip(got[1], n.shape) if k > 1]
    assert mine == [s // 4 for s, k in zip(n.strides, n.shape) if k > 1]
    if n.size > 0:
        offset = n.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        assert got[2] * 4 == offset


def test_getitem_zero_step_and_raising_index():
    t = st.arange(12).view(3, 4)
    for key in (slice(None, None, 0), (0, slice(1, None, _Idx(0))), ([0, 1], slice(None, None, 0))):
        with pytest.raises(st.StrataError, match="slice step cannot be zero") as e:
            t[key]
        assert isinstance(e.value, ValueError)

    class Bad:
        def __index__(self):
            raise RuntimeError("no index here")

    for key in (slice(Bad(), None), (slice(None), slice(None, Bad())), ([0], slice(Bad(), None))):
        with pytest.raises(RuntimeError, match="no index here"):
            t[key]


@pytest.mark.parametrize(
    "key",
    [True, False, (0, True), (True, 1), (Ellipsis, False), (slice(1, None), True, None), (st.tensor(True), [2, 0])],
)
def test_zero_dim_boolean_keys_follow_numpy(key):
    """A Python bool or a 0-d bool tensor is a 0-d mask: a new dim of size 1 (True) or 0
    (False) where it stands (NumPy's and PyTorch's rule), for reads and writes."""
    a = np.arange(12).reshape(3, 4)
    t = st.from_numpy(a.copy())
    np_key = tuple(k.numpy() if isinstance(k, st.Tensor) else k for k in key) if isinstance(key, tuple) else key
    want = a[np_key]
    got = t[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    b = a.copy()
    b[np_key] = -1
    t[key] = -1
    np.testing.assert_array_equal(t.numpy(), b)


@pytest.mark.parametrize(
    "key, error, text",
    [
        (1.0, st.TensorIndexError, "valid indices (got float)"),
        ("a", st.TensorIndexError, "valid indices (got str)"),
        ((slice(0.5, None),), st.DTypeError, "slice indices must be integers or None"),
        (slice(None, "x"), st.DTypeError, "slice indices must be integers or None"),
    ],
)
def test_getitem_entries_off_the_fast_path_raise_clear_errors(key, error, text):
    t = st.arange(12).view(3, 4)
    with pytest.raises(error, match=re.escape(text)) as e:
        t[key]
    assert str(e.value).startswith("index:")


@pytest.mark.parametrize(
    "key",
    [[0, 2], (slice(None), [3, 0]), slice(True, None), (slice(None), slice(False, True)),
     slice(_Idx(1), _Idx(3), _Idx(1)), slice(None, 2**80), slice(-(2**80), None, 2)],
)
def test_getitem_entries_off_the_fast_path_match_numpy(key):
    a = np.arange(12).reshape(3, 4)
    t = st.from_numpy(a)
    assert t[key].tolist() == a[key].tolist()


def test_setitem_off_the_fast_path():
    u = st.zeros(3, 4)
    u[1, ::2] = 5.0
    u[_Idx(2), slice(None, None, _Idx(-1))] = 7.0
    assert u.tolist() == [[0.0] * 4, [5.0, 0.0, 5.0, 0.0], [7.0] * 4]
