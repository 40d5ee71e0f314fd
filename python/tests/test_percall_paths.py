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
    # The cached asarray is fixed at the first call: replacing numpy.asarray later does not
    # change t.numpy() (and nothing crashes at exit).
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
