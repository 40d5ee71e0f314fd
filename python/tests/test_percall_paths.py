"""The per-call paths of small ops and of the NumPy exchange keep their results and their
semantics: values against NumPy, ``from_numpy`` / ``np.asarray(t)`` / ``t.numpy()`` stay
zero-copy, keep their owners alive, keep read-only memory read-only, and give the same
errors, however many times they are called in a row (cached lookups)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import strata as st
from _isolated import assert_clean


class Sub(np.ndarray):
    """An ndarray subclass (takes weak references and attributes)."""


def test_small_ops_match_numpy_repeatedly():
    a = (np.arange(100, dtype=np.float32) / 100).copy()
    m = a.reshape(10, 10)
    t, tm = st.from_numpy(a.copy()), st.from_numpy(m.copy())
    for _ in range(200):
        np.testing.assert_array_equal(np.asarray(t + t), a + a)
        np.testing.assert_array_equal(np.asarray(t * 2.0), a * 2.0)
        np.testing.assert_allclose(np.asarray(t.exp()), np.exp(a), rtol=1e-6)
        c = tm.T.contiguous()
        assert c.is_contiguous()
        np.testing.assert_array_equal(np.asarray(c), m.T)


@pytest.mark.parametrize("how", ["asarray", "numpy"])
def test_export_is_zero_copy_every_call(how):
    t = st.zeros(10, dtype=st.float64)
    for i in range(50):
        x = np.asarray(t) if how == "asarray" else t.numpy()
        assert x.ctypes.data == t.data_ptr()
        x[i % 10] = i
        assert t[i % 10].item() == i
    ro = st.from_numpy(np.broadcast_to(np.arange(3.0), (2, 3)))
    for _ in range(3):
        x = np.asarray(ro) if how == "asarray" else ro.numpy()
        assert not x.flags.writeable


def test_from_numpy_is_zero_copy_and_keeps_the_array_alive():
    for _ in range(50):
        a = np.arange(6.0).view(Sub)
        r = weakref.ref(a)
        t = st.from_numpy(a)
        assert t.data_ptr() == a.ctypes.data
        a[0] = 42.0
        assert t[0].item() == 42.0
        del a
        gc.collect()
        assert r() is not None, "the tensor must keep its array alive"
        assert t.sum().item() == 42.0 + 15.0
        del t
        gc.collect()
        assert r() is None, "the array must be freed with the tensor"


def test_numpy_of_tensor_keeps_the_storage_alive():
    t = st.arange(5, dtype=st.float32)
    x = t.numpy()
    y = np.asarray(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(x, np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(y, np.arange(5, dtype=np.float32))


def test_from_numpy_read_only_and_errors_unchanged():
    a = np.arange(4.0)
    a.flags.writeable = False
    t = st.from_numpy(a)
    with pytest.raises(Exception):
        t.add_(1.0)
    with pytest.raises(TypeError):
        st.from_numpy(object())
    with pytest.raises(Exception):
        st.from_numpy(np.array(["a", "b"]))
    with pytest.raises(Exception):
        st.zeros(2, dtype=st.bfloat16).numpy()


def test_numpy_after_numpy_module_attribute_is_replaced_in_child():
    # t.numpy() builds its array through NumPy's C API: replacing numpy.asarray does not
    # change it (and nothing crashes at exit).
    assert_clean(
        "import numpy as np, strata as st\n"
        "t = st.ones(3)\n"
        "x = t.numpy()\n"
        "orig = np.asarray\n"
        "np.asarray = None\n"
        "y = t.numpy()\n"
        "np.asarray = orig\n"
        "assert (y == 1).all() and y.ctypes.data == t.data_ptr()\n"
    )


# ----- the direct NumPy paths (crates/strata-py/src/ndarray.rs) -----

# Every NumPy integer spelling: int64 is NPY_LONG on LP64 systems, longlong a distinct
# type number of the same size; intc / uintc are NPY_INT / NPY_UINT.
DIRECT_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.intc, np.uintc,
                 np.int32, np.uint32, np.int64, np.uint64, np.longlong, np.ulonglong,
                 np.float16, np.float32, np.float64]


@pytest.mark.parametrize("dt", DIRECT_DTYPES, ids=lambda d: np.dtype(d).name + np.dtype(d).char)
def test_from_numpy_direct_path_every_dtype_spelling(dt):
    a = (np.arange(24) % 7).astype(dt).reshape(2, 3, 4)
    for v in (a, a[::-1, :, ::2], a.transpose(2, 0, 1), a[1], a[0, 0, 0:0], np.asarray(a[1, 2, 3])):
        t = st.from_numpy(v)
        assert t.shape == v.shape
        assert t.dtype.itemsize == v.dtype.itemsize
        assert t.stride() == tuple(s // v.itemsize for s in v.strides)
        if v.size:
            assert t.data_ptr() == v.ctypes.data
        back = t.numpy()
        assert back.dtype == v.dtype, (back.dtype, v.dtype)
        assert back.strides == v.strides and back.shape == v.shape
        np.testing.assert_array_equal(back, v)
        if v.size:
            assert back.ctypes.data == v.ctypes.data


def test_numpy_direct_path_flags_match_a_numpy_view():
    t = st.arange(24, dtype=st.float32).reshape(4, 6)
    for v in (t, t.T, t[:, ::2], t.flip(0), t[1:3], t[0, 0]):
        x = v.numpy()
        y = np.asarray(memoryview(v))
        assert x.flags.c_contiguous == y.flags.c_contiguous
        assert x.flags.f_contiguous == y.flags.f_contiguous
        assert x.flags.aligned and x.flags.writeable
        assert x.strides == y.strides and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_numpy_export_pins_the_storage_until_the_array_goes():
    # While an array from t.numpy() lives, the storage cannot move into shared memory
    # (the array would keep the old bytes); once it is gone, it can.
    t = st.zeros(8)
    x = t.numpy()
    with pytest.raises(Exception, match="export"):
        t.share_memory_()
    x[0] = 5.0
    assert t[0].item() == 5.0
    del x
    gc.collect()
    t.share_memory_()
    assert t.is_shared() and t[0].item() == 5.0


def test_from_numpy_direct_path_refusals_take_the_buffer_errors():
    with pytest.raises(Exception, match="byte order"):
        st.from_numpy(np.arange(3, dtype=">f4"))
    with pytest.raises(Exception, match="datetime|unsupported"):
        st.from_numpy(np.arange(3, dtype="datetime64[s]"))
    with pytest.raises(Exception, match="unsupported|format"):
        st.from_numpy(np.zeros(3, dtype=np.clongdouble))
    # Subclasses (np.memmap, np.matrix, user subclasses) take the buffer protocol.
    m = np.asmatrix(np.arange(6.0).reshape(2, 3))
    tm = st.from_numpy(m)
    assert tm.shape == (2, 3) and tm.data_ptr() == m.ctypes.data


def test_from_numpy_direct_path_hostile_extents_raise():
    from numpy.lib.stride_tricks import as_strided
    base = np.zeros(4, dtype=np.float64)
    huge = as_strided(base, shape=(3,), strides=(2**62,))
    with pytest.raises(Exception, match="from_numpy"):
        st.from_numpy(huge)
    odd = as_strided(base, shape=(2,), strides=(3,))
    with pytest.raises(Exception, match="multiple of the element size"):
        st.from_numpy(odd)


def test_from_numpy_direct_path_shows_the_array_to_the_collector():
    # The tensor's __traverse__ visits the array it holds (so cycles through it can be
    # collected), for the direct path as for the buffer path; a shared storage is not
    # visited.
    a = np.arange(5.0)
    t = st.from_numpy(a)
    assert any(r is a for r in gc.get_referents(t))
    v = t[1:]
    assert not any(r is a for r in gc.get_referents(t))
    del v
    assert any(r is a for r in gc.get_referents(t))


@pytest.mark.parametrize(
    "key",
    [
        [0, 2], [2, 0, 2], [-1, -4], [3], (0, 2), [[0, 2]], ([1, 3],), ([0, 2], [1, 3]),
        [[0, 1], [2, 3]], [True, False, True, False], [np.int64(2), 0],
        (slice(None), [0, 2]), [0, 2, 1, 3, 0, 0, 2],
    ],
    ids=repr,
)
def test_integer_list_indices_match_numpy_get_and_set(key):
    # Lists and tuples of plain ints are read straight into an index tensor; anything
    # else in them (bools, NumPy ints, nesting) takes the general
    # conversion. Both must index exactly as NumPy does.
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    t = st.from_numpy(a.copy())
    for _ in range(3):  # the same key again: no state kept between calls
        np.testing.assert_array_equal(t[key].numpy(), a[key])
    b, u = a.copy(), st.from_numpy(a.copy())
    b[key] = -1.0
    u[key] = -1.0
    np.testing.assert_array_equal(u.numpy(), b)


@pytest.mark.parametrize(
    "key, exc, match",
    [
        ([0, 4], IndexError, "out of bounds"),
        ([-5], IndexError, "out of bounds"),
        ([0, 2**70], OverflowError, "too large"),
        ([0, 1.5], IndexError, "integer or boolean"),
        ([0, "x"], Exception, None),
    ],
)
def test_integer_list_index_errors(key, exc, match):
    t = st.zeros(4, 4)
    with pytest.raises(exc, match=match):
        t[key]


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "int32", "float16", "float32", "float64", "int64"])
def test_small_fills_write_exactly_the_view(dtype):
    # Small contiguous views are filled as one run (kernel/fill.rs), others through the
    # loop planner: both against NumPy doing the same assignments.
    value = True if dtype == "bool" else 3
    for shape, key in [
        ((4, 4), np.s_[1:3]),
        ((4, 4), np.s_[2]),
        ((4, 4), np.s_[2:3, 1:]),   # (1, 3): contiguous at an offset
        ((4, 4), np.s_[:, 1:2]),    # (4, 1): strided
        ((4, 4), np.s_[::2]),
        ((2, 3, 4), np.s_[1, 1:, :]),
        ((2, 3, 4), np.s_[:, 2:3, 1:3]),
        ((7,), np.s_[3:3]),         # empty
        ((5,), np.s_[-1:]),
    ]:
        ref = np.zeros(shape, dtype=dtype)
        t = st.from_numpy(ref.copy())
        ref[key] = value
        t[key] = value
        np.testing.assert_array_equal(np.asarray(t), ref, err_msg=f"{shape} {key}")
    # A view with size-1 dims of arbitrary strides is still one run.
    base = st.zeros(16, dtype=getattr(st, dtype))
    v = base.as_strided((1, 3, 1), (7, 1, 5), 4)
    assert v.is_contiguous()
    v.fill_(value)
    want = np.zeros(16, dtype=dtype)
    want[4:7] = value
    np.testing.assert_array_equal(np.asarray(base), want)
