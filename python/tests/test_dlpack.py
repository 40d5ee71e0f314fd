"""DLPack with NumPy as the peer: memory shared both ways for every dtype and kind of view,
read-only flags, copies, capsule rules (consume once, versioned vs legacy), bad devices and
streams, producer lifetimes, and no leaks over thousands of round trips."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import strata as st
from _isolated import assert_clean
from _strata_helpers import NP_DTYPES, np_sample

if tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 1):
    pytest.skip("versioned DLPack needs NumPy >= 2.1", allow_module_level=True)



def views(a):
    """(name, view) pairs of a 2-D array: the kinds of layout DLPack must carry."""
    return [
        ("contiguous", a),
        ("transposed", a.T),
        ("stepped", a[::2, 1::3]),
        ("negative", a[::-1, ::-2]),
        ("0-d", a[1, 2, ...]),
        ("empty", a[:0]),
    ]


def one(dtype):
    return np.array(1, dtype=dtype)


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_consumes_strata(dtype):
    base = st.from_numpy(np_sample((6, 7), dtype)).clone()
    for name, ref in views(base.numpy()):
        v = st.from_numpy(ref)
        b = np.from_dlpack(v)
        assert b.dtype == ref.dtype and b.shape == ref.shape, name
        np.testing.assert_array_equal(b, ref)
        if b.size:
            assert b.__array_interface__["data"][0] == v.data_ptr(), name
            if b.size > 1:
                assert b.strides == ref.strides, name
            # A write through NumPy shows in strata.
            b[(0,) * b.ndim] = one(dtype)
            assert v[(0,) * v.ndim].item() == one(dtype).item(), name


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_strata_consumes_numpy(dtype):
    a = np_sample((6, 7), dtype, seed=1)
    for name, ref in views(a):
        t = st.from_dlpack(ref)
        assert t.shape == ref.shape, name
        np.testing.assert_array_equal(t.numpy(), ref)
        if ref.size:
            assert t.data_ptr() == ref.__array_interface__["data"][0], name
            if ref.size > 1:
                assert tuple(s * ref.itemsize for s in t.stride()) == ref.strides, name
            t[(0,) * t.ndim] = one(dtype).item()
            assert ref[(0,) * ref.ndim] == one(dtype), name


def test_read_only_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    a.flags.writeable = False
    t = st.from_dlpack(a)
    with pytest.raises(st.ReadOnlyError):
        t[0, 0] = 1.0
    b = np.from_dlpack(t)  # versioned capsule with READ_ONLY
    assert not b.flags.writeable
    np.testing.assert_array_equal(b, a)
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()  # legacy protocol cannot say read-only
    cap = t.__dlpack__(copy=True)  # ... but a copy is fine
    c = st.from_dlpack(cap)
    c[0, 0] = 9.0
    assert a[0, 0] == 0.0
    # A writable tensor gives a writable NumPy array through the versioned protocol.
    w = np.from_dlpack(st.arange(3.0))
    assert w.flags.writeable


def test_copy_flags_and_devices():
    t = st.arange(12.0).view(3, 4).T
    assert t.__dlpack_device__() == (1, 0)
    c = np.from_dlpack(t, copy=True)
    assert c.__array_interface__["data"][0] != t.data_ptr()
    np.testing.assert_array_equal(c, t.numpy())
    n = np.from_dlpack(t, copy=False)
    assert n.__array_interface__["data"][0] == t.data_ptr()
    a = np.arange(5)
    s = st.from_dlpack(a, copy=True)
    s[0] = 100
    assert a[0] == 0
    assert st.from_dlpack(a, copy=False).data_ptr() == a.ctypes.data
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    with pytest.raises(BufferError):
        t.__dlpack__(stream=1)
    if not st.cuda.is_available():
        with pytest.raises(st.DeviceError, match="cuda:0 is not available"):
            st.from_dlpack(a, device="cuda")
    with pytest.raises(BufferError, match="copy=False"):
        st.from_dlpack(a, device=(2, 0), copy=False)
    with pytest.raises(BufferError, match=r"DLPack device \(4, 0\)"):
        st.from_dlpack(a, device=(4, 0))
    st.from_dlpack(a, device="cpu")
    with pytest.raises(TypeError, match="DLPack"):
        st.from_dlpack([1, 2, 3])


def test_capsules_are_named_and_consumed_once():
    t = st.arange(4, dtype=st.int32)
    cap = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    u = st.from_dlpack(cap)
    assert "used_dltensor_versioned" in repr(cap)
    assert u.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="consumed"):
        st.from_dlpack(cap)
    legacy = t.__dlpack__()
    assert '"dltensor"' in repr(legacy)
    assert st.from_dlpack(legacy).data_ptr() == t.data_ptr()
    assert "used_dltensor" in repr(legacy)
    # bfloat16 has no NumPy dtype, but travels between strata tensors through DLPack.
    bf = st.tensor([1.5, -2.0], dtype=st.bfloat16)
    back = st.from_dlpack(bf.__dlpack__(max_version=(1, 0)))
    assert back.dtype == st.bfloat16 and back.tolist() == [1.5, -2.0]
    assert back.data_ptr() == bf.data_ptr()
    # An older-style producer whose __dlpack__ takes no keywords.

    class Old:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self):
            return self.arr.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    o = np.arange(3.0)
    assert st.from_dlpack(Old(o)).data_ptr() == o.ctypes.data


def test_producer_dropped_while_consumer_lives():
    t = st.arange(1000.0)
    b = np.from_dlpack(t)
    del t
    gc.collect()
    assert b[999] == 999.0
    b[0] = -1.0
    a = np.arange(1000.0)
    u = st.from_dlpack(a)
    wa = weakref.ref(a) if hasattr(a, "__weakref__") else None
    del a
    gc.collect()
    assert u[999].item() == 999.0
    del u
    gc.collect()
    if wa is not None:
        assert wa() is None


def _rss_kib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import resource

    return pages * resource.getpagesize() // 1024


def test_thousands_of_round_trips_leak_nothing():
    a = np.ones(1 << 20)  # 8 MiB: a leak of the data would show in RSS at once
    base = sys.getrefcount(a)
    for _ in range(200):  # warm up allocator pools
        np.from_dlpack(st.from_dlpack(a))
    rss0 = _rss_kib()
    for i in range(3000):
        t = st.from_dlpack(a)
        b = np.from_dlpack(t)
        c = st.from_dlpack(b[::-1])
        cap = t.__dlpack__(max_version=(1, 0))  # never consumed: the destructor frees it
        del t, b, c, cap
    gc.collect()
    assert sys.getrefcount(a) == base
    assert _rss_kib() - rss0 < 16 * 1024
    # Unconsumed capsules release their tensor: the NumPy array behind it is freed.
    arr = np.zeros(10)
    w = weakref.finalize(arr, lambda: None)
    t = st.from_numpy(arr)
    caps = [t.__dlpack__(max_version=(1, 0)) for _ in range(100)]
    caps += [t.__dlpack__() for _ in range(100)]
    del arr, t, caps
    gc.collect()
    assert not w.alive


def test_capsules_alive_at_interpreter_shutdown():
    """Unconsumed capsules and imported tensors still alive at exit are torn down safely."""
    code = (
        "import numpy as np, strata as st\n"
        "a = np.arange(10.0)\n"
        "t = st.from_numpy(a)\n"
        "caps = [t.__dlpack__(max_version=(1, 0)), t.__dlpack__()]\n"
        "u = st.from_dlpack(np.arange(5.0))\n"
        "b = np.from_dlpack(st.arange(3.0))\n"
        "import builtins; builtins.keep = (caps, u, b)\n"
        "print('ok')\n"
    )
    r = assert_clean(code)
    assert r.stdout.strip() == "ok"
